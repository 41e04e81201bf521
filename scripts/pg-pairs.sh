#!/usr/bin/env bash
# Usage: scripts/pg-pairs.sh BASE_BINARY NEW_BINARY [ROUNDS]
# PostgreSQL SendMessage throughput of two a2a-bench builds in same-run
# pairs (alternating order), each beside the new build's in-memory rate:
# blocking JSON-RPC SendMessage, 64 connections, server on core 0, load on
# core 1, PostgreSQL ($PG_URL) unpinned, a fresh database per run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BASE=$1
NEW=$2
ROUNDS=${3:-3}
S=${SECONDS_PER_RUN:-8}
PORT=${PORT:-18190}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432}
ulimit -n 65536 2>/dev/null || true
pid=""
start() { # binary [args...]
  taskset -c 0 "$1" sdk --port "$PORT" "${@:2}" 2>/dev/null & pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return; sleep 0.1; done
}
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""; }
trap stop EXIT
fresh() { psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS a2a_pg_pairs" -c "CREATE DATABASE a2a_pg_pairs" >/dev/null; }
load() { taskset -c 1 "$NEW" load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$S"; }
run() { # label binary [args...]
  start "${@:2}"
  printf '%-8s %s\n' "$1" "$(load)"
  stop
}
for round in $(seq "$ROUNDS"); do
  echo "round $round"
  run memory "$NEW" --store memory
  if [ $((round % 2)) = 1 ]; then order=(base new); else order=(new base); fi
  for which in "${order[@]}"; do
    fresh
    if [ "$which" = base ]; then bin=$BASE; else bin=$NEW; fi
    run "pg-$which" "$bin" --store "$PG_URL/a2a_pg_pairs"
  done
done
psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS a2a_pg_pairs" >/dev/null
