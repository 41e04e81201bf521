#!/usr/bin/env bash
# Instructions per blocking 1.0 SendMessage through the whole router in
# process (HTTP+JSON and gRPC; no sockets), counted by callgrind. Two runs of
# different length; their difference divided by the extra calls cancels
# start-up. Run it on two builds to show that a change (the 0.3 routes, say)
# leaves the 1.0 path as it was.
# Usage: scripts/router-instructions.sh [a2a-bench binary]   (needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:-}
if [ -z "$bench" ]; then
  cargo build --release -q -p a2a-bench
  bench=target/release/a2a-bench
fi
total() { # binding count
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" router --binding "$1" --count "$2" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"; rm -f "$out"
}
small=${SMALL:-500}; large=${LARGE:-2500}
for binding in http_json grpc; do
  a=$(total "$binding" "$small"); b=$(total "$binding" "$large")
  echo "$binding: $(( (b - a) / (large - small) )) instructions per SendMessage (router, in process)"
done
