#!/usr/bin/env bash
# Runs the example gateway: a remote A2A agent on port 9998 (a second
# `a2a serve`), then the gateway of gateway.toml on port 9999. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -q -p agent2agent-cli
data=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$data"' EXIT
target/debug/a2a serve --port 9998 --store memory --no-conversation-log >/dev/null &
# The gateway starts whether the remote is up or not, but its card for the
# remote is better once the remote answers.
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/9998) 2>/dev/null && break; sleep 0.1; done
target/debug/a2a serve --port 9999 --data-dir "$data" --config examples/gateway/gateway.toml
