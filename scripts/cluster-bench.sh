#!/usr/bin/env bash
# Cluster mode's cost on this machine: blocking SendMessage throughput with 1,
# 2 and 3 nodes (a2a-bench's echo agent, one worker thread each) on one
# PostgreSQL database, with the CPU each request costs the nodes and the
# database. On 2 cores more nodes cannot add throughput; CPU per request and
# the database's share say how it scales where cores are plenty.
# Usage: scripts/cluster-bench.sh [SERVER_URL] [SECONDS] [gateway]
# (SERVER_URL: a PostgreSQL server, default postgres://postgres@127.0.0.1:5432;
# a database is made per run and dropped after it; CPU of all `postgres`
# processes on the machine counts as the database's; `gateway`: each node is
# `a2a serve --config` of a gateway file with the echo agent, its store in
# the agent's schema, loaded at /agents/echo, with the hub on; `a2a serve` runs as many worker
# threads as the machine has cores)
# The two modes run different agents: a2a-bench's echo answers with one
# event (one task write per SendMessage), the gateway's `echo` (a2a serve's
# built-in agent) streams working, an artifact per word and the completion
# (three writes, each with its count triggers, and a push-config lookup per
# event). pg_stat_statements shows the same statements per SendMessage for
# `a2a serve` with and without `--config`: the gateway's extra database CPU
# is its agent's, not the gateway's.
set -euo pipefail
server=${1:-postgres://postgres@127.0.0.1:5432}; secs=${2:-10}; gateway=${3:-}
cd "$(dirname "$0")/.."
cargo build --release -q -p a2a-bench
bench=$PWD/target/release/a2a-bench
path=/
if [ "$gateway" = gateway ]; then
  cargo build --release -q -p agent2agent-cli
  work=$(mktemp -d)
  # The hub on too (its record in the database's schema a2a_hub), as a
  # gateway with people in it runs.
  printf '[agents.echo]\nkind = "rust"\nexecutor = "echo"\n\n[hub]\ndefault_channel = "general"\n\n[hub.channels.general]\ndescription = "people"\n' > "$work/gateway.toml"
  path=/agents/echo
fi
# Node $1 on database $2 (cluster flags after them), in the background.
start_node() {
  local port=$1 db=$2; shift 2
  if [ "$gateway" = gateway ]; then
    mkdir -p "$work/$port"
    "$PWD/target/release/a2a" serve --port "$port" --config "$work/gateway.toml" \
      --store "$server/$db" --no-conversation-log --data-dir "$work/$port" "$@" >/dev/null 2>&1 &
  else
    "$bench" sdk --port "$port" --store "$server/$db" "$@" >/dev/null &
  fi
}
hz=$(getconf CLK_TCK)
ticks() { local t=0 p; for p in "$@"; do
  [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
wait_port() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; }
out=$(mktemp -d)
printf '%-6s %10s %14s %14s %9s\n' nodes 'req/s' 'node µs/req' 'db µs/req' 'db share'
# "alone": one server on the same database without cluster mode, the baseline.
for n in alone 1 2 3; do
  alone=$([ "$n" = alone ] && echo 1 || echo 0)
  [ "$alone" = 1 ] && n=1
  db="a2a_cluster_bench_$$_${n}_$alone"
  psql -q "$server/postgres" -c "CREATE DATABASE $db"
  nodes=(); ports=()
  for i in $(seq "$n"); do
    port=$((9100 + i))
    cluster=(--node-id "node-$i"); [ "$alone" = 1 ] && cluster=()
    start_node "$port" "$db" "${cluster[@]}"
    nodes+=($!); ports+=("$port")
    wait_port "$port"
  done
  pg_before=$(ticks $(pgrep -x postgres)); nodes_before=$(ticks "${nodes[@]}")
  loads=()
  for port in "${ports[@]}"; do
    "$bench" load --addr "127.0.0.1:$port" --connections $((64 / n)) --seconds "$secs" --warmup 0 --path "$path" \
      > "$out/$port" &
    loads+=($!)
  done
  wait "${loads[@]}"
  pg_after=$(ticks $(pgrep -x postgres)); nodes_after=$(ticks "${nodes[@]}")
  requests=$(sed -n 's/^requests=\([0-9]*\).*/\1/p' "$out"/91* | paste -sd+ | bc)
  label=$n; [ "$alone" = 1 ] && label=alone
  awk -v r="$requests" -v s="$secs" -v hz="$hz" -v n="$label" \
      -v nd=$((nodes_after - nodes_before)) -v pg=$((pg_after - pg_before)) 'BEGIN {
    printf "%-6s %10.0f %14.1f %14.1f %8.0f%%\n", n, r / s, nd * 1e6 / hz / r, pg * 1e6 / hz / r,
      100 * pg / (pg + nd) }'
  kill "${nodes[@]}"; wait "${nodes[@]}" 2>/dev/null || true
  rm -f "$out"/91*
  psql -q "$server/postgres" -c "DROP DATABASE $db WITH (FORCE)"
done
