#!/usr/bin/env bash
# Usage: scripts/otel-instructions.sh OFF_DIR ON_DIR   (needs valgrind)
# Server user-space instructions per SendMessage over JSON-RPC, all threads
# counted (so the exporter's work is in):
#  - a2a-bench sdk (no subscriber at all): the otel feature compiled out vs in;
#  - a2a serve --store memory (its log installed): compiled out, compiled in
#    without an endpoint, and exporting over OTLP/HTTP to scripts/otlp-sink.py
#    (every trace, then 10% of them; then each signal alone).
# OFF_DIR and ON_DIR hold a2a and a2a-bench built without / with the otel
# feature: `cargo build --release -p agent2agent-cli -p a2a-bench --no-default-features`
# and `cargo build --release -p agent2agent-cli -p a2a-bench --features a2a-bench/otel`
# (agent2agent-cli has it by default).
cd "$(dirname "$0")/.." || exit 1
off=$1; on=$2
# PORT and SINK_PORT move the server and the collector off the defaults.
port=${PORT:-7103}; sink_port=${SINK_PORT:-7304}
python3 scripts/otlp-sink.py $sink_port 2>/dev/null & sink=$!
trap 'kill $sink 2>/dev/null' EXIT
run() { # seconds env... -- command... -> "requests instructions"
  local seconds=$1; shift; local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file=$d/cg.out "$@" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 150); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.2; done
  local req=$($on/a2a-bench load --addr 127.0.0.1:$port --path / --connections 8 --seconds $seconds --warmup 0 | sed -n 's/^requests=\([0-9]*\).*/\1/p')
  kill -TERM $pid; wait $pid 2>/dev/null
  local ir=$(callgrind_annotate $d/cg.out 2>/dev/null | grep -m1 "PROGRAM TOTALS" | tr -d ',' | awk '{print $1}')
  echo "$req $ir"
}
measure() { # label env... -- command...
  local label=$1; shift
  a=($(run 3 "$@")); c=($(run 9 "$@"))
  echo "$label: $(( (c[1]-a[1]) / (c[0]-a[0]) )) instr/request (requests ${a[0]} / ${c[0]})"
}
d=$(mktemp -d); trap 'kill $sink 2>/dev/null; rm -rf $d' EXIT
serve=(serve --store memory --no-conversation-log --data-dir $d --port $port)
export_env=(OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port)
# SERVE_ONLY=1 skips the a2a-bench servers.
if [ "${SERVE_ONLY:-0}" != 1 ]; then
  measure "a2a-bench sdk, otel compiled out" -- $off/a2a-bench sdk --port $port
  measure "a2a-bench sdk, otel compiled in" -- $on/a2a-bench sdk --port $port
fi
measure "a2a serve, otel compiled out" -- $off/a2a "${serve[@]}"
measure "a2a serve, otel compiled in, no endpoint" -- $on/a2a "${serve[@]}"
measure "a2a serve, exporting to a no-op collector" "${export_env[@]}" -- $on/a2a "${serve[@]}"
measure "a2a serve, exporting 10% of traces" "${export_env[@]}" OTEL_TRACES_SAMPLER=parentbased_traceidratio \
  OTEL_TRACES_SAMPLER_ARG=0.1 -- $on/a2a "${serve[@]}"
# Each signal alone: what the metrics cost, and what the spans cost.
measure "a2a serve, exporting metrics only" "${export_env[@]}" OTEL_TRACES_EXPORTER=none -- $on/a2a "${serve[@]}"
measure "a2a serve, exporting every trace, no metrics" "${export_env[@]}" OTEL_METRICS_EXPORTER=none -- $on/a2a "${serve[@]}"
measure "a2a serve, exporting 10% of traces, no metrics" "${export_env[@]}" OTEL_METRICS_EXPORTER=none \
  OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 -- $on/a2a "${serve[@]}"
