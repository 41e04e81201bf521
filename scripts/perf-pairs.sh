#!/usr/bin/env bash
# Usage: scripts/perf-pairs.sh [A2A_BENCH_BINARY]
# Wall-clock figures of issue #18 in pairs, same run, server on core 0 and
# load on core 1: JSON-RPC SDK vs bare (64 connections: throughput and p99),
# gRPC vs JSON-RPC on one SDK server (a2a-bench's tonic client, its raw
# hyper h2 client (grpc-load --raw), and h2load
# when installed, a second generator to tell the server's limit from the
# generator's), first-event latency of 1,000 streams (three runs, each
# beside the bare handler's), and the
# server's resident memory with 10,000 streams held open.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=${1:-${CARGO_TARGET_DIR:-target}/release/a2a-bench}
S=${SECONDS_PER_RUN:-10}
PORT=${PORT:-18180}
ROUNDS=${ROUNDS:-2}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
pid=""
start() { # mode [args...]
  taskset -c 0 "$B" "$1" --port "$PORT" "${@:2}" 2>/dev/null & pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return; sleep 0.1; done
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
trap stop EXIT
cpu() { awk '{print $14 + $15}' /proc/"$pid"/stat; } # server user+system ticks
for round in $(seq "$ROUNDS"); do
  for mode in bare sdk; do
    start "$mode"
    printf '%-4s round %s: ' "$mode" "$round"
    taskset -c 1 "$B" load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$S"
    stop
  done
done
tick=$(getconf CLK_TCK)
for round in $(seq "$ROUNDS"); do
  start sdk
  for gen in jsonrpc grpc grpc-raw h2load; do
    before=$(cpu); t0=$(date +%s.%N)
    case $gen in
      jsonrpc) out=$(taskset -c 1 "$B" load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$S" --warmup 0) ;;
      grpc) out=$(taskset -c 1 "$B" grpc-load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$S" --warmup 0) ;;
      grpc-raw) out=$(taskset -c 1 "$B" grpc-load --raw --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$S" --warmup 0) ;;
      h2load)
        command -v h2load >/dev/null || continue
        body=$(mktemp)
        # SendMessage("hello benchmark"), gRPC framed (see a2a-bench grpc-load).
        printf '\x00\x00\x00\x00\x26\x12\x24\x0a\x0dbench-message\x20\x01\x2a\x11\x0a\x0fhello benchmark' > "$body"
        out=$(taskset -c 1 h2load -c 64 -m 1 -D "$S" -d "$body" -H 'content-type: application/grpc' \
          -H 'te: trailers' -H 'a2a-version: 1.0' "http://127.0.0.1:$PORT/lf.a2a.v1.A2AService/SendMessage" \
          | grep -E '^finished in|^requests:|^ +time for request')
        rm -f "$body"; out=$(echo "$out" | tr '\n' ' ') ;;
    esac
    busy=$(echo "$(cpu) $before $tick $(date +%s.%N) $t0" | awk '{printf "%.0f", 100 * ($1 - $2) / $3 / ($4 - $5)}')
    printf 'round %s sdk %-7s server cpu %s%%: %s\n' "$round" "$gen" "$busy" "$out"
  done
  stop
done
# Each SDK run beside one of the bare handler (its task as one SSE event):
# a host that slows down shows in both.
for run in 1 2 3; do
  for mode in bare sdk; do
    start "$mode"
    printf 'streams run %s %-4s: ' "$run" "$mode"
    taskset -c 1 "$B" streams --addr 127.0.0.1:"$PORT" --count 1000 --server-pid "$pid"
    stop
  done
done
start sdk
taskset -c 1 "$B" streams --addr 127.0.0.1:"$PORT" --count "${HELD:-10000}" --hold --server-pid "$pid"
stop
