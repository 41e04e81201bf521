#!/usr/bin/env bash
# Usage: scripts/gateway-instructions.sh [A2A_BENCH_BINARY]   (needs valgrind)
# Server user-space instructions per SendMessage over HTTP: plain vs gateway (/agents/bench and / by tenant).
B=${1:-target/release/a2a-bench}
run() { # mode path seconds
  local flag=""; [ "$1" = gateway ] && flag=--gateway
  valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out $B sdk --port 7102 $flag >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/7102) 2>/dev/null && break; sleep 0.2; done
  local req=$($B load --addr 127.0.0.1:7102 --path "$2" --connections 8 --seconds $3 --warmup 0 | sed -n 's/^requests=\([0-9]*\).*/\1/p')
  kill -TERM $pid; wait $pid 2>/dev/null
  local ir=$(callgrind_annotate /tmp/cg.out 2>/dev/null | grep -m1 "PROGRAM TOTALS" | tr -d ',' | awk '{print $1}')
  echo "$req $ir"
}
for cfg in "plain /" "gateway /agents/bench" "gateway /"; do
  set -- $cfg
  a=($(run $1 $2 3)); b=($(run $1 $2 9))
  echo "$1 $2: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instr/request (requests ${a[0]} / ${b[0]})"
done
