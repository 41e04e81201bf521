#!/usr/bin/env bash
# Usage: scripts/sqlite-pairs.sh BASE_BINARY NEW_BINARY [ROUNDS]
# The default configuration (SQLite + conversation log) of two a2a-bench
# builds back to back (alternating order), each round beside the new build's
# in-memory rate: blocking JSON-RPC SendMessage, 64 connections, the server
# alone on core 0, the load on core 1, a fresh data directory per run.
# Unlike scripts/sqlite-ab.sh (both servers on one core at the same moment,
# which hides how a server's own threads share its core), this shows changes
# to the writer's scheduling. Runs last 30 s (SECONDS_PER_RUN): long enough
# for the log's checkpoints to be paid inside the run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BASE=$1
NEW=$2
ROUNDS=${3:-3}
S=${SECONDS_PER_RUN:-30}
PORT=${PORT:-18191}
ulimit -n 65536 2>/dev/null || true
if (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; then
  echo "port $PORT is in use: another server would answer for the builds" >&2
  exit 1
fi
pid=""
dir=""
start() { # binary [args...]
  taskset -c 0 "$1" sdk --port "$PORT" "${@:2}" >/dev/null 2>&1 & pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return; sleep 0.1; done
}
stop() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""
  [ -n "$dir" ] && rm -rf "$dir"; dir=""
}
trap stop EXIT
load() { taskset -c 1 "$NEW" load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$S" --warmup 2; }
throughput() { sed -n 's/.*throughput=\([0-9]*\).*/\1/p' <<< "$1"; }
for round in $(seq "$ROUNDS"); do
  echo "round $round"
  start "$NEW" --store memory
  out=$(load); memory=$(throughput "$out")
  printf '%-8s %s\n' memory "$out"
  stop
  if [ $((round % 2)) = 1 ]; then order=(base new); else order=(new base); fi
  for which in "${order[@]}"; do
    if [ "$which" = base ]; then bin=$BASE; else bin=$NEW; fi
    dir=$(mktemp -d)
    start "$bin" --store sqlite:"$dir"/db --conversation-log "$dir"/log
    out=$(load)
    printf '%-8s %s (%s of memory)\n' "$which" "$out" \
      "$(python3 -c "print(f'{$(throughput "$out") / $memory:.1%}')")"
    stop
  done
done
