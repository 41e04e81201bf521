#!/usr/bin/env bash
# Usage: scripts/store-pairs.sh sqlite|postgres BASE_BINARY NEW_BINARY [ROUNDS]
# A durable store's SendMessage throughput on two a2a-bench builds, back to
# back in alternating order, each round beside the new build's in-memory
# rate: blocking JSON-RPC SendMessage, 64 connections, the server alone on
# core 0, the load on core 1, a fresh store per run.
# - sqlite: the default configuration (SQLite + conversation log) in a fresh
#   data directory. Runs last 30 s (SECONDS_PER_RUN), long enough for the
#   log's checkpoints to be paid inside the run. Unlike scripts/sqlite-ab.sh
#   (both servers on one core at the same moment, where each hides how the
#   other's threads share it), this shows changes to the writer's scheduling.
# - postgres: a fresh database on $PG_URL (PostgreSQL itself unpinned);
#   runs last 8 s.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 3 ] || { echo "usage: $0 sqlite|postgres BASE_BINARY NEW_BINARY [ROUNDS]" >&2; exit 2; }
STORE=$1
BASE=$2
NEW=$3
ROUNDS=${4:-3}
PORT=${PORT:-18190}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432}
case $STORE in
  sqlite) S=${SECONDS_PER_RUN:-30} ;;
  postgres) S=${SECONDS_PER_RUN:-8} ;;
  *) echo "unknown store $STORE: sqlite or postgres" >&2; exit 2 ;;
esac
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
pg() { psql -q "$PG_URL/postgres" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS a2a_store_pairs" "$@" >/dev/null; }
cleanup() { stop; [ "$STORE" = postgres ] && pg; }
trap cleanup EXIT
# The store a run starts on, made fresh.
fresh_store() {
  if [ "$STORE" = sqlite ]; then
    dir=$(mktemp -d)
    store_args=(--store sqlite:"$dir"/db --conversation-log "$dir"/log)
  else
    pg -c "CREATE DATABASE a2a_store_pairs"
    store_args=(--store "$PG_URL/a2a_store_pairs")
  fi
}
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
    fresh_store
    start "$bin" "${store_args[@]}"
    out=$(load)
    printf '%-8s %s (%s of memory)\n' "$which" "$out" \
      "$(python3 -c "print(f'{$(throughput "$out") / $memory:.1%}')")"
    stop
  done
done
