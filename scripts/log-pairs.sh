#!/usr/bin/env bash
# Same-run pairs: SendMessage throughput with the conversation log off vs on.
# Usage: scripts/log-pairs.sh [memory|sqlite] [PAIRS]   (after cargo build --release -p a2a-bench)
B=${A2A_BENCH:-target/release/a2a-bench}; store=${1:-memory}; pairs=${2:-8}
one() { # log(0/1) -> throughput
  local d=$(mktemp -d); local s=memory; [ "$store" = sqlite ] && s=sqlite:$d/db
  local extra=(); [ "$1" = 1 ] && extra=(--conversation-log $d/log)
  taskset -c 0 $B sdk --port 7201 --store $s "${extra[@]}" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/7201) 2>/dev/null && break; sleep 0.1; done
  local t=$(taskset -c 1 $B load --addr 127.0.0.1:7201 --connections 64 --seconds 8 --warmup 2 | sed -n 's/.*throughput=\([0-9]*\).*/\1/p')
  kill -TERM $pid; wait $pid 2>/dev/null; rm -rf $d; echo $t
}
for i in $(seq $pairs); do
  if [ $((i % 2)) = 1 ]; then off=$(one 0); on=$(one 1); else on=$(one 1); off=$(one 0); fi
  echo "pair $i: off=$off on=$on delta=$(python3 -c "print(f'{($on-$off)/$off*100:+.1f}%')")"
done
