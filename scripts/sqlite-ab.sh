#!/usr/bin/env bash
# Usage: scripts/sqlite-ab.sh BINARY_A BINARY_B [ROUNDS]   (a2a-bench builds)
# (Both servers share one core, so a change to how a server shares its own
# core with its threads does not show here: scripts/store-pairs.sh sqlite.)
# Two builds on SQLite + conversation log at the same moment: both servers
# share core 0 and both load generators (64 connections each) core 1, so a
# host that slows down slows both, and B/A is the figure. Back-to-back runs
# on this kind of machine drift by 10-20% from one to the next, more than
# most changes are worth; at the same moment an A/A run reads 0.99-1.00.
# SQL_A / SQL_B: statements run on that side's database (made and migrated
# by its server) before its load, to try a schema change without a build.
# NOLOG_B=1: B runs without the conversation log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
A=$1; B=$2; ROUNDS=${3:-3}; S=${SECONDS_PER_RUN:-10}
PORT_A=${PORT:-7321}; PORT_B=$((PORT_A + 1))
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
# Every server this run starts goes when it ends, however it ends.
trap 'kill -TERM $(jobs -p) 2>/dev/null' EXIT
for port in "$PORT_A" "$PORT_B"; do
  if (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
    echo "port $port is in use: another server would answer for one of the builds" >&2
    exit 1
  fi
done
ready() { for _ in $(seq 150); do (echo > /dev/tcp/127.0.0.1/"$1") 2>/dev/null && return; sleep 0.1; done; }
start() { # binary port dir sql -> the server's pid in $started
  if [ -n "$4" ]; then
    "$1" sdk --port "$2" --store sqlite:"$3"/db >/dev/null 2>&1 &
    local first=$!
    # It listens before its store is open: one answered call says the
    # database is made and migrated.
    ready "$2"
    for _ in $(seq 50); do
      "$1" load --addr 127.0.0.1:"$2" --connections 1 --seconds 1 --warmup 0 2>/dev/null \
        | grep -q '^requests=[1-9]' && break
      sleep 0.1
    done
    kill -TERM $first; wait $first 2>/dev/null
    python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' \
      "$3/db/a2a.db" "$4" || exit 1
  fi
  local args=(--store sqlite:"$3"/db --conversation-log "$3"/log)
  [ "$2" = "$PORT_B" ] && [ "${NOLOG_B:-0}" = 1 ] && args=(--store sqlite:"$3"/db)
  taskset -c 0 "$1" sdk --port "$2" "${args[@]}" >/dev/null 2>&1 &
  started=$!
}
throughput() { sed -n 's/.*throughput=\([0-9]*\).*/\1/p' "$1"; }
for round in $(seq "$ROUNDS"); do
  da=$(mktemp -d); db=$(mktemp -d)
  start "$A" "$PORT_A" "$da" "${SQL_A:-}"; pa=$started
  start "$B" "$PORT_B" "$db" "${SQL_B:-}"; pb=$started
  ready "$PORT_A"; ready "$PORT_B"
  taskset -c 1 "$A" load --addr 127.0.0.1:"$PORT_A" --connections 64 --seconds "$S" --warmup 2 > "$da/out" &
  la=$!
  taskset -c 1 "$A" load --addr 127.0.0.1:"$PORT_B" --connections 64 --seconds "$S" --warmup 2 > "$db/out"
  wait $la
  a=$(throughput "$da/out"); b=$(throughput "$db/out")
  echo "round $round: A=$a/s B=$b/s B/A=$(python3 -c "print(f'{$b / $a:.3f}')")"
  kill -TERM $pa $pb; wait $pa $pb 2>/dev/null
  rm -rf "$da" "$db"
done
