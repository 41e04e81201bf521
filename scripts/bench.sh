#!/usr/bin/env bash
# Server benchmarks: blocking SendMessage over JSON-RPC (SDK vs a bare axum
# handler, same run), stream first-event latency, memory per stored task, and
# the durable stores: SendMessage on memory, SQLite and PostgreSQL (same run),
# recovery of a stored backlog, and p99/RSS with 1 million stored tasks.
# The server runs on core 0, the load generator on core 1.
# PG_URL is the PostgreSQL server (a fresh database is made and dropped);
# set it empty to skip PostgreSQL. SKIP_BASE=1 runs only the store benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
cargo build --release -q -p a2a-bench
bench=${CARGO_TARGET_DIR:-target}/release/a2a-bench
ulimit -n 65536 2>/dev/null || true

PG_URL=${PG_URL-postgres://postgres@127.0.0.1:5432}
MILLION_TASKS=${MILLION_TASKS:-1000000}

run_server() { # mode port [args...]
  taskset -c 0 "$bench" "$1" --port "$2" "${@:3}" & echo $! > /tmp/a2a-bench.pid
  for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/"$2") 2>/dev/null && return; sleep 0.1; done
}
stop_server() { kill "$(cat /tmp/a2a-bench.pid)" 2>/dev/null || true; wait 2>/dev/null || true; }
scratch=$(mktemp -d)
pg_db=""
cleanup() {
  stop_server
  rm -rf "$scratch"
  if [ -n "$pg_db" ]; then psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS $pg_db" || true; fi
}
trap cleanup EXIT
# A fresh PostgreSQL database named $1; prints its URL.
fresh_pg() {
  psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null
  pg_db=$1
  echo "$PG_URL/$1"
}
drop_pg() { psql -q "$PG_URL/postgres" -c "DROP DATABASE IF EXISTS $pg_db" >/dev/null; pg_db=""; }
throughput() { sed -n 's/.*throughput=\([0-9]*\).*/\1/p'; }

if [ "${SKIP_BASE:-0}" != 1 ]; then

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
fi

# Blocking SendMessage with the conversation log on and off (memory store), same run.
for round in 1 2; do
  for log in off on; do
    extra=()
    [ "$log" = on ] && extra=(--conversation-log "$scratch/log-$round")
    run_server sdk 18180 "${extra[@]}"
    printf 'conversation log %-3s round %s: ' "$log" "$round"
    taskset -c 1 "$bench" load --addr 127.0.0.1:18180 --connections 64 --seconds "$SECONDS_PER_RUN"
    stop_server
  done
done

# Blocking SendMessage on each store, same load settings, same run.
declare -A rps
stores=(memory "sqlite:$scratch/send")
[ -n "$PG_URL" ] && stores+=("$(fresh_pg a2a_bench_send)")
for store in "${stores[@]}"; do
  run_server sdk 18180 --store "$store"
  name=${store%%:*}
  out=$(taskset -c 1 "$bench" load --addr 127.0.0.1:18180 --connections 64 --seconds "$SECONDS_PER_RUN")
  printf 'store %-8s %s\n' "$name" "$out"
  rps[$name]=$(echo "$out" | throughput)
  stop_server
done
[ -n "$pg_db" ] && drop_pg
echo "sqlite/memory throughput: $(( 100 * ${rps[sqlite]} / ${rps[memory]} ))% (target >= 50%)"
[ -n "$PG_URL" ] && echo "postgres/memory throughput: $(( 100 * ${rps[postgres]} / ${rps[memory]} ))%"

# Recovery: 100,000 stored tasks and 1,000 pending jobs; target < 2 s.
taskset -c 0 "$bench" recovery --store "sqlite:$scratch/recovery" --tasks 100000 --pending 1000
[ -n "$PG_URL" ] && taskset -c 0 "$bench" recovery --store "$(fresh_pg a2a_bench_recovery)" --tasks 100000 --pending 1000 && drop_pg

# p99 latency and resident memory with 1 million stored tasks on SQLite.
taskset -c 0 "$bench" seed --store "sqlite:$scratch/million" --tasks "$MILLION_TASKS"
run_server sdk 18180 --store "sqlite:$scratch/million"
printf 'sqlite %s stored: ' "$MILLION_TASKS"
taskset -c 1 "$bench" load --addr 127.0.0.1:18180 --connections 64 --seconds "$SECONDS_PER_RUN"
echo "server resident memory: $(awk '/VmRSS/ {print $2, $3}' /proc/"$(cat /tmp/a2a-bench.pid)"/status)"
stop_server
