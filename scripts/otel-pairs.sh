#!/usr/bin/env bash
# Same-run pairs: SendMessage throughput of `a2a serve --store memory` built
# with the otel feature, exporting spans and metrics over OTLP/HTTP to a local
# no-op collector (scripts/otlp-sink.py) vs not exporting.
# Usage: scripts/otel-pairs.sh [PAIRS]
#   (after cargo build --release -p agent2agent-cli -p a2a-bench, agent2agent-cli having otel by default;
#    A2A and A2A_BENCH point elsewhere)
A2A=${A2A:-target/release/a2a}; B=${A2A_BENCH:-target/release/a2a-bench}; pairs=${1:-6}
cd "$(dirname "$0")/.." || exit 1
python3 scripts/otlp-sink.py 7302 & sink=$!
trap 'kill $sink 2>/dev/null' EXIT
one() { # export(0/1) -> throughput
  local d=$(mktemp -d) env=()
  [ "$1" = 1 ] && env=(OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:7302)
  env "${env[@]}" taskset -c 0 $A2A serve --store memory --no-conversation-log --data-dir $d --port 7301 >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/7301) 2>/dev/null && break; sleep 0.1; done
  local t=$(taskset -c 1 $B load --addr 127.0.0.1:7301 --connections 64 --seconds 8 --warmup 2 | sed -n 's/.*throughput=\([0-9]*\).*/\1/p')
  kill -TERM $pid; wait $pid 2>/dev/null; rm -rf $d; echo $t
}
for i in $(seq $pairs); do
  if [ $((i % 2)) = 1 ]; then off=$(one 0); on=$(one 1); else on=$(one 1); off=$(one 0); fi
  echo "pair $i: off=$off export=$on delta=$(python3 -c "print(f'{($on-$off)/$off*100:+.1f}%')")"
done
