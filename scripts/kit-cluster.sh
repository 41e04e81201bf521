#!/usr/bin/env bash
# Runs the official A2A test kit against a two-node cluster: two tck-sut nodes
# on one fresh PostgreSQL database behind the round-robin proxy (each request
# to the other node in turn), in the three configurations of scripts/kit.sh.
# Usage: scripts/kit-cluster.sh KIT_DIR [SERVER_URL] [gateway]   (SERVER_URL:
# a PostgreSQL server, default postgres://postgres@127.0.0.1:5432; a database
# is made for each configuration and dropped after it; `gateway`: each node
# is a gateway whose agent `tck` (beside another agent) is the one tested,
# every agent in its own schema, and the kit starts from the root card)
set -euo pipefail
kit=$(cd "$1" && pwd); server=${2:-postgres://postgres@127.0.0.1:5432}; mode=()
[ "${3:-}" = gateway ] && mode=(--gateway)
cd "$(dirname "$0")/.."
cargo build --release -q -p e2e --bin tck-sut --bin round-robin
bin=$PWD/target/release
wait_port() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; }
for caps in full minimal required-extension; do
  db="a2a_kit_cluster_$$"
  psql -q "$server/postgres" -c "CREATE DATABASE $db"
  pids=()
  for port in 9001 9002; do
    "$bin/tck-sut" --port "$port" --store "$server/$db" --node-id "node-$port" \
      --public-addr 127.0.0.1:9999 --capabilities "$caps" "${mode[@]}" >/dev/null &
    pids+=($!)
    wait_port "$port"
  done
  "$bin/round-robin" --port 9999 --to 127.0.0.1:9001 --to 127.0.0.1:9002 >/dev/null &
  pids+=($!)
  wait_port 9999
  printf '%-20s ' "$caps:"
  (cd "$kit" && python -m pytest tests/compatibility/ --sut-host=http://127.0.0.1:9999 \
     --transport=jsonrpc,http_json,grpc -q -p no:cacheprovider 2>&1 | tail -1) || true
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
  psql -q "$server/postgres" -c "DROP DATABASE $db WITH (FORCE)"
done
