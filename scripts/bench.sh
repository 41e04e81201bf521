#!/usr/bin/env bash
# Usage: scripts/bench.sh [--report DIR]
# Server benchmarks: blocking SendMessage over JSON-RPC (SDK vs a bare axum
# handler, same run), stream first-event latency, memory per stored task, and
# the durable stores: SendMessage on memory, SQLite and PostgreSQL (same run),
# recovery of a stored backlog, and p99/RSS with 1 million stored tasks.
# The server runs on core 0, the load generator on core 1.
# PG_URL is the PostgreSQL server (a fresh database is made and dropped);
# set it empty to skip PostgreSQL. SKIP_BASE=1 runs only the store benchmarks.
# A2A_BENCH=PATH runs that a2a-bench binary instead of building one; PORT
# (default 18180) is the servers' port.
# --report DIR also records every figure of the run in DIR/raw.tsv and, when
# the run is done, writes DIR/results.json, DIR/results.csv, DIR/report.md
# and the report's SVG charts (scripts/bench_report.py).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 [--report DIR]" >&2; exit 2; }
report=""
case $# in
  0) ;;
  2) [ "$1" = --report ] || usage; report=$2 ;;
  *) usage ;;
esac
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
if [ -n "${A2A_BENCH:-}" ]; then
  bench=$A2A_BENCH
else
  cargo build --release -q -p a2a-bench
  bench=${CARGO_TARGET_DIR:-target}/release/a2a-bench
fi
ulimit -n 65536 2>/dev/null || true

PG_URL=${PG_URL-postgres://postgres@127.0.0.1:5432}
MILLION_TASKS=${MILLION_TASKS:-1000000}
PORT=${PORT:-18180}

scratch=$(mktemp -d)
# The server's process id lives in this run's scratch directory: another run
# on the machine keeps its own.
server_pid_file=$scratch/server.pid
run_server() { # mode [args...]
  taskset -c 0 "$bench" "$1" --port "$PORT" "${@:2}" & echo $! > "$server_pid_file"
  for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return; sleep 0.1; done
}
stop_server() {
  [ -f "$server_pid_file" ] && kill "$(cat "$server_pid_file")" 2>/dev/null || true
  wait 2>/dev/null || true
}
pg_db=""
cleanup() {
  stop_server
  rm -rf "$scratch"
  if [ -n "$pg_db" ]; then psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS $pg_db" || true; fi
}
trap cleanup EXIT
# A fresh PostgreSQL database named $1, its URL in pg_url. Not called in a
# subshell: cleanup reads pg_db to drop what a failed run leaves.
fresh_pg() {
  psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null
  pg_db=$1
  pg_url=$PG_URL/$1
}
drop_pg() { psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS $pg_db" >/dev/null; pg_db=""; }
throughput() { sed -n 's/.*throughput=\([0-9]*\).*/\1/p'; }
load() { taskset -c 1 "$bench" load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$SECONDS_PER_RUN"; }

streams_args=()
if [ -n "$report" ]; then
  mkdir -p "$report"
  : > "$report/raw.tsv"
  # Every stream's first-event latency, for the distribution chart, when the
  # binary can write them (an older one prints only percentiles).
  if "$bench" streams --help | grep -q -- --latencies; then
    rm -f "$report/stream-first-events.txt"
    streams_args=(--latencies "$report/stream-first-events.txt")
  fi
  # The machine, the commit and the settings, as they are when the run starts.
  python3 scripts/bench_report.py meta "$report" --binary "$bench" \
    --setting "SECONDS_PER_RUN=$SECONDS_PER_RUN" --setting "MILLION_TASKS=$MILLION_TASKS" \
    --setting "PG_URL=${PG_URL:-(empty: PostgreSQL skipped)}" --setting "SKIP_BASE=${SKIP_BASE:-0}" \
    --setting "load: 64 connections, blocking SendMessage, 2 s warm-up" \
    --setting "streams: 1000 at once" --setting "memory: 200000 tasks" \
    --setting "server on core 0, load generator on core 1" \
    ${A2A_BENCH:+--setting "A2A_BENCH=$A2A_BENCH (a binary built apart from this run: the commit names the scripts)"}
fi

# Runs COMMAND, prints LABEL and its output; with --report, also records each
# line of the output in raw.tsv as GROUP, CONFIG, PEER, ROUND, LINE for
# bench_report.py. PEER is the implementation measured: "ours" for this
# workspace's servers, another SDK's name for its servers run beside ours.
measure() { # group config round label command...
  local out
  out=$("${@:5}")
  printf '%s %s\n' "$4" "$out"
  if [ -n "$report" ]; then
    while IFS= read -r line; do
      printf '%s\t%s\tours\t%s\t%s\n' "$1" "$2" "$3" "$line" >> "$report/raw.tsv"
    done <<< "$out"
  fi
}

if [ "${SKIP_BASE:-0}" != 1 ]; then

for round in 1 2; do
  for mode in bare sdk; do
    run_server "$mode"
    measure base "$mode" "$round" "$(printf '%-5s round %s:' "$mode" "$round")" load
    stop_server
  done
done

# The same agent over JSON-RPC and gRPC, same run.
run_server sdk
measure binding "sdk JSON-RPC" 1 'sdk jsonrpc:' load
measure binding "sdk gRPC" 1 'sdk grpc:   ' \
  taskset -c 1 "$bench" grpc-load --addr 127.0.0.1:"$PORT" --connections 64 --seconds "$SECONDS_PER_RUN"
stop_server

run_server sdk
measure streams "sdk JSON-RPC" 1 'streams:' \
  taskset -c 1 "$bench" streams --addr 127.0.0.1:"$PORT" --count 1000 "${streams_args[@]}"
stop_server

measure memory "memory store" 1 'memory:' "$bench" memory --tasks 200000
fi

# Blocking SendMessage with the conversation log on and off (memory store), same run.
for round in 1 2; do
  for log in off on; do
    extra=()
    [ "$log" = on ] && extra=(--conversation-log "$scratch/log-$round")
    run_server sdk "${extra[@]}"
    measure log "log $log" "$round" "$(printf 'conversation log %-3s round %s:' "$log" "$round")" load
    stop_server
  done
done

# Blocking SendMessage on each store, same load settings, same run.
declare -A rps
stores=(memory "sqlite:$scratch/send")
if [ -n "$PG_URL" ]; then fresh_pg a2a_bench_send; stores+=("$pg_url"); fi
for store in "${stores[@]}"; do
  run_server sdk --store "$store"
  name=${store%%:*}
  out=$(measure store "$name" 1 "$(printf 'store %-8s' "$name")" load)
  echo "$out"
  rps[$name]=$(echo "$out" | throughput)
  stop_server
done
if [ -n "$pg_db" ]; then drop_pg; fi
echo "sqlite/memory throughput: $(( 100 * ${rps[sqlite]} / ${rps[memory]} ))% (target >= 50%)"
[ -n "$PG_URL" ] && echo "postgres/memory throughput: $(( 100 * ${rps[postgres]} / ${rps[memory]} ))%"

# Recovery: 100,000 stored tasks and 1,000 pending jobs; target < 2 s.
measure recovery sqlite 1 'recovery sqlite:' \
  taskset -c 0 "$bench" recovery --store "sqlite:$scratch/recovery" --tasks 100000 --pending 1000
if [ -n "$PG_URL" ]; then
  fresh_pg a2a_bench_recovery
  measure recovery postgres 1 'recovery postgres:' \
    taskset -c 0 "$bench" recovery --store "$pg_url" --tasks 100000 --pending 1000
  drop_pg
fi

# p99 latency and resident memory with 1 million stored tasks on SQLite.
measure seed sqlite 1 'seed:' taskset -c 0 "$bench" seed --store "sqlite:$scratch/million" --tasks "$MILLION_TASKS"
run_server sdk --store "sqlite:$scratch/million"
measure stored "sqlite $MILLION_TASKS stored" 1 "sqlite $MILLION_TASKS stored:" load
measure stored "sqlite $MILLION_TASKS stored" 1 'server' \
  echo "resident memory: $(awk '/VmRSS/ {print $2, $3}' /proc/"$(cat "$server_pid_file")"/status)"
stop_server

if [ -n "$report" ]; then
  python3 scripts/bench_report.py meta "$report" --end
  python3 scripts/bench_report.py render "$report"
  echo "report: $report/report.md"
fi
