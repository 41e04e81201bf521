#!/usr/bin/env bash
# Server benchmarks: blocking SendMessage over JSON-RPC (SDK vs a bare axum
# handler, same run), stream first-event latency, memory per stored task.
# The server runs on core 0, the load generator on core 1.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
cargo build --release -q -p e2e --bin a2a-bench
bench=target/release/a2a-bench
ulimit -n 65536 2>/dev/null || true

run_server() { # mode port
  taskset -c 0 "$bench" "$1" --port "$2" & echo $! > /tmp/a2a-bench.pid
  for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/"$2") 2>/dev/null && return; sleep 0.1; done
}
stop_server() { kill "$(cat /tmp/a2a-bench.pid)" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop_server EXIT

for round in 1 2; do
  for mode in bare sdk; do
    run_server "$mode" 18180
    printf '%-5s round %s: ' "$mode" "$round"
    taskset -c 1 "$bench" load --addr 127.0.0.1:18180 --connections 64 --seconds "$SECONDS_PER_RUN"
    stop_server
  done
done

# The same agent over JSON-RPC and gRPC, same run.
run_server sdk 18180
printf 'sdk jsonrpc: '
taskset -c 1 "$bench" load --addr 127.0.0.1:18180 --connections 64 --seconds "$SECONDS_PER_RUN"
printf 'sdk grpc:    '
taskset -c 1 "$bench" grpc-load --addr 127.0.0.1:18180 --connections 64 --seconds "$SECONDS_PER_RUN"
stop_server

run_server sdk 18180
taskset -c 1 "$bench" streams --addr 127.0.0.1:18180 --count 1000
stop_server

"$bench" memory --tasks 200000
