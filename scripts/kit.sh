#!/usr/bin/env bash
# Runs the official A2A test kit (github.com/a2aproject/a2a-tck, branch 1.0-dev)
# against tck-sut in its three configurations: `full` (every capability
# declared), `minimal` (no streaming, push or extended card) and
# `required-extension`, for the kit's tests of a capability's absence.
# Usage: scripts/kit.sh KIT_DIR [STORE] [gateway]   (KIT_DIR: a checkout of
# the kit outside this repository, with its Python dependencies installed in
# the current environment; STORE: memory (default), sqlite:DIR or
# postgres://…; `gateway`: the agent is agent `tck` of a gateway, beside
# another agent, and the kit starts from the gateway's root card)
set -euo pipefail
kit=$(cd "$1" && pwd); store=${2:-memory}; mode=()
[ "${3:-}" = gateway ] && mode=(--gateway)
cd "$(dirname "$0")/.."
cargo build --release -q -p e2e --bin tck-sut
sut=$PWD/target/release/tck-sut
for caps in full minimal required-extension; do
  "$sut" --port 9999 --store "$store" --capabilities "$caps" "${mode[@]}" >/dev/null &
  pid=$!
  for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/9999) 2>/dev/null && break; sleep 0.1; done
  printf '%-20s ' "$caps:"
  (cd "$kit" && python -m pytest tests/compatibility/ --sut-host=http://127.0.0.1:9999 \
     --transport=jsonrpc,http_json,grpc -q -p no:cacheprovider 2>&1 | tail -1) || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
