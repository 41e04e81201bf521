#!/usr/bin/env bash
# Same-run pairs: SendMessage throughput of an agent served alone vs as an
# agent of a gateway (/agents/bench). Usage: scripts/gateway-pairs.sh [PAIRS]
B=${A2A_BENCH:-target/release/a2a-bench}
one() { # gateway(0/1) -> throughput
  local flag=(); local path=/; [ "$1" = 1 ] && flag=(--gateway) && path=/agents/bench
  taskset -c 0 $B sdk --port 7301 "${flag[@]}" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/7301) 2>/dev/null && break; sleep 0.1; done
  local t=$(taskset -c 1 $B load --addr 127.0.0.1:7301 --path $path --connections 64 --seconds 8 --warmup 2 | sed -n 's/.*throughput=\([0-9]*\).*/\1/p')
  kill -TERM $pid; wait $pid 2>/dev/null; echo $t
}
for i in $(seq ${1:-6}); do
  if [ $((i % 2)) = 1 ]; then a=$(one 0); g=$(one 1); else g=$(one 1); a=$(one 0); fi
  echo "pair $i: alone=$a gateway=$g delta=$(python3 -c "print(f'{($g-$a)/$a*100:+.1f}%')")"
done
