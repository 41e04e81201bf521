#!/usr/bin/env bash
# Runs the example gateway: a remote A2A agent on port 9998 (a second
# `a2a serve`), then the gateway of gateway.toml on port 9999. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -q -p a2a-cli
data=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$data"' EXIT
target/debug/a2a serve --port 9998 --store memory --no-conversation-log >/dev/null &
target/debug/a2a serve --port 9999 --data-dir "$data" --config examples/gateway/gateway.toml
