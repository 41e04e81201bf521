#!/usr/bin/env bash
# Usage: scripts/peers-bench.sh [--report DIR] [ROUNDS]
# Our SDK against other Rust A2A SDKs, same run: the echo agent with an
# in-memory store on ours (a2a-bench sdk), on the official SDK (a2aproject's
# a2a-rs: a2a-server-lf, a2a-grpc) and on a2a-protocol-sdk (bench/peers/),
# blocking SendMessage from 64 connections over JSON-RPC, then over gRPC.
# Per binding, ROUNDS rounds (default 2) of ours, a2a-rs, a2a-protocol-sdk in
# turn, so that the machine's drift falls on every server alike; then each
# server's rate per round and the ratio of ours to the best peer.
# The server runs on core 0 (one tokio worker, mimalloc, for every SDK), the
# load generator on core 1. Before a server is measured, bench/peers/check.py
# sends it the load's request and checks the answer is a completed task
# echoing the text (A2A 1.0); a server that fails it is not measured. The
# load generator stops at the first non-2xx answer, JSON-RPC error status or
# gRPC status other than OK: a run that ends with its figures had none.
# gRPC load is `a2a-bench grpc-load --raw` (hyper's HTTP/2 client, the
# leaner generator: the figure is the server's).
# PEERS="a2a-rs" (or a2a-protocol-sdk) runs one peer only.
# SECONDS_PER_RUN (default 10) per run; PORT (default 18180) the servers'
# port; A2A_BENCH=PATH runs that a2a-bench instead of building one.
# The peers build in bench/peers/ (a workspace of its own, Cargo.lock
# committed) into $CARGO_TARGET_DIR or bench/peers/target.
# --report DIR appends every figure to DIR/raw.tsv (PEER = the SDK's name;
# a bench.sh --report directory can be given) and renders DIR/report.md.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 [--report DIR] [ROUNDS]" >&2; exit 2; }
report=""
rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --report) [ $# -ge 2 ] || usage; report=$2; shift 2 ;;
    *[!0-9]* | "") usage ;;
    *) rounds=$1; shift ;;
  esac
done
[ "$rounds" -ge 1 ] || usage
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
PORT=${PORT:-18180}

if [ -n "${A2A_BENCH:-}" ]; then
  bench=$A2A_BENCH
else
  cargo build --release -q -p a2a-bench
  bench=${CARGO_TARGET_DIR:-target}/release/a2a-bench
fi
# The peers' own workspace; a relative CARGO_TARGET_DIR is the caller's.
peers_target=$(realpath -m "${CARGO_TARGET_DIR:-bench/peers/target}")
# PEERS (default both) names the peers to run beside ours.
read -ra peers <<< "${PEERS:-a2a-rs a2a-protocol-sdk}"
declare -A package=([a2a-rs]=peer-official [a2a-protocol-sdk]=peer-protocol-sdk)
# One package at a time: each peer's dependencies built with its own features
# only, as in a project of its own, not unified with the other SDK's.
# PEERS_BIN=DIR runs the peers' binaries in DIR instead of building them.
peers_bin=${PEERS_BIN:-$peers_target/release}
for peer in "${peers[@]}"; do
  [ -n "${package[$peer]:-}" ] || { echo "unknown peer $peer (a2a-rs, a2a-protocol-sdk)" >&2; exit 2; }
  [ -n "${PEERS_BIN:-}" ] ||
    (cd bench/peers && CARGO_TARGET_DIR=$peers_target cargo build --release -q --locked -p "${package[$peer]}")
done
ulimit -n 65536 2>/dev/null || true

# name, command (the port and binding are appended), in the order they run.
servers=(ours "${peers[@]}")
declare -A server_command=([ours]="$bench sdk")
for peer in "${peers[@]}"; do server_command[$peer]=$peers_bin/${package[$peer]}; done
# What each name measured, for the report's settings and the summary.
versions="ours: this commit; a2a-rs: a2a-server-lf 0.5.3, a2a-grpc 0.3.11; a2a-protocol-sdk: a2a-protocol-server 0.15.0 (bench/peers/Cargo.lock)"

scratch=$(mktemp -d)
server_pid_file=$scratch/server.pid
run_server() { # name binding
  local args=(--port "$PORT")
  # Ours serves both bindings on one port; a peer serves the one it is given.
  [ "$1" = ours ] || args+=(--binding "$2")
  # shellcheck disable=SC2086 # the command is a path and a subcommand
  taskset -c 0 ${server_command[$1]} "${args[@]}" & echo $! > "$server_pid_file"
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return; sleep 0.1; done
  echo "$1 did not open port $PORT" >&2
  return 1
}
stop_server() {
  [ -f "$server_pid_file" ] && kill "$(cat "$server_pid_file")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -f "$server_pid_file"
}
cleanup() { stop_server; rm -rf "$scratch"; }
trap cleanup EXIT

load() { # binding
  case $1 in
    jsonrpc) taskset -c 1 "$bench" load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$SECONDS_PER_RUN" ;;
    grpc) taskset -c 1 "$bench" grpc-load --raw --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$SECONDS_PER_RUN" ;;
  esac
}
throughput() { sed -n 's/.*throughput=\([0-9]*\).*/\1/p'; }

if [ -n "$report" ]; then
  mkdir -p "$report"
  # Appended to a bench.sh run's figures when DIR holds one; its own otherwise.
  if [ ! -f "$report/meta.json" ]; then
    python3 scripts/bench_report.py meta "$report" --binary "$bench" \
      --setting "SECONDS_PER_RUN=$SECONDS_PER_RUN" --setting "rounds=$rounds" \
      --setting "load: 64 connections, blocking SendMessage, 2 s warm-up; gRPC: grpc-load --raw" \
      --setting "server on core 0 (one tokio worker, mimalloc), load generator on core 1" \
      --setting "$versions"
  fi
  touch "$report/raw.tsv"
fi

declare -A rates   # "binding server" -> the rates of its rounds, space-separated
declare -A wrong   # "binding server" -> why it was not measured
label() { case $1 in jsonrpc) echo JSON-RPC ;; grpc) echo gRPC ;; esac; }

for binding in jsonrpc grpc; do
  for round in $(seq "$rounds"); do
    for server in "${servers[@]}"; do
      key="$binding $server"
      [ -n "${wrong[$key]:-}" ] && continue
      if ! run_server "$server" "$binding"; then
        wrong[$key]="the server did not start"
        stop_server
        continue
      fi
      if ! why=$(python3 bench/peers/check.py "$binding" 127.0.0.1:"$PORT" 2>&1); then
        wrong[$key]=$why
        printf '%-9s %-17s round %s: not measured: %s\n' "$(label "$binding")" "$server" "$round" "$why"
        stop_server
        continue
      fi
      if out=$(load "$binding"); then
        printf '%-9s %-17s round %s: %s\n' "$(label "$binding")" "$server" "$round" "$out"
        rates[$key]="${rates[$key]:-}$(echo "$out" | throughput) "
        if [ -n "$report" ]; then
          printf 'peers\t%s\t%s\t%s\t%s\n' "$(label "$binding")" "$server" "$round" "$out" >> "$report/raw.tsv"
        fi
      else
        wrong[$key]="the load generator stopped on an error answer"
        printf '%-9s %-17s round %s: %s\n' "$(label "$binding")" "$server" "$round" "${wrong[$key]}"
      fi
      stop_server
    done
  done
done

echo
echo "Same run, $rounds round(s) of ${SECONDS_PER_RUN} s per server and binding ($versions)."
for binding in jsonrpc grpc; do
  best="" best_mean=0
  ours_mean=0
  for server in "${servers[@]}"; do
    key="$binding $server"
    if [ -z "${rates[$key]:-}" ]; then
      printf '%-9s %-17s not measured: %s\n' "$(label "$binding")" "$server" "${wrong[$key]:-no run}"
      continue
    fi
    mean=$(echo "${rates[$key]}" | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.0f", s / NF }')
    printf '%-9s %-17s %8s/s mean (rounds: %s)\n' "$(label "$binding")" "$server" "$mean" "${rates[$key]% }"
    if [ "$server" = ours ]; then
      ours_mean=$mean
    elif [ "$mean" -gt "$best_mean" ]; then
      best=$server best_mean=$mean
    fi
  done
  if [ -n "$best" ] && [ "$ours_mean" -gt 0 ]; then
    ratio=$(awk -v a="$ours_mean" -v b="$best_mean" 'BEGIN { printf "%.2f", a / b }')
    # Each round's own ratio too: the spread says how much the mean can be trusted.
    per_round=$(paste -d' ' <(echo "${rates[$binding ours]}" | tr ' ' '\n' | sed '/^$/d') \
      <(echo "${rates[$binding $best]}" | tr ' ' '\n' | sed '/^$/d') |
      awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 / $2 }')
    echo "$(label "$binding"): ours / best peer ($best) = ${ratio}x (per round: $per_round; target >= 1.5x)"
  fi
done

if [ -n "$report" ]; then
  python3 scripts/bench_report.py meta "$report" --end
  python3 scripts/bench_report.py render "$report"
  echo "report: $report/report.md"
fi
