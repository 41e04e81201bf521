#!/usr/bin/env bash
# The platform as one system, end to end (issue 30's closing run): a gateway
# with three agents and the hub; alpha (a process agent) calls beta twice,
# then again after a restart, in one conversation; a person posts and two
# agents answer; `a2a log chain` on the last answer prints the exchange back
# to the post; `a2a conversations list` shows the pairs; `a2a jobs list`
# shows every agent's jobs; a loop-guard trip lands in #ops.
# Usage: scripts/one-system.sh [PORT]   (builds `a2a`; state in a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-9797}
cargo build -q -p agent2agent-cli
a2a=$PWD/target/debug/a2a
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
url=http://127.0.0.1:$port
cat > "$work/gateway.toml" <<EOF
[gateway]
name = "demo"
default = "alpha"

[agents.alpha]
kind = "process"
command = ["python3", "$PWD/a2a-gateway/tests/agents/caller.py"]

[agents.beta]
kind = "rust"
executor = "echo"

[agents.gamma]
kind = "rust"
executor = "echo"

[hub]
default_channel = "general"
operator_channel = "ops"

[hub.channels.general]
default_agent = "alpha"

[hub.guards]
pair_limit = 3
pair_window_secs = 300
EOF

start() {
  "$a2a" serve --port "$port" --config "$work/gateway.toml" --data-dir "$work/data" \
    >"$work/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.1; done
  echo "the gateway did not start:" >&2; cat "$work/serve.log" >&2; exit 1
}
stop() { kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=; }
step() { printf '\n$ %s\n' "$*"; }

start
step "a2a send $url/agents/alpha 'call beta hello' (twice, then after a restart)"
"$a2a" send --json "$url/agents/alpha" "call beta hello" >/dev/null
"$a2a" send --json "$url/agents/alpha" "call beta hello again" >/dev/null
stop
start
"$a2a" send --json "$url/agents/alpha" "call beta after the restart" >/dev/null
step "a2a conversations list"
"$a2a" conversations list --data-dir "$work/data"
step "a2a conversations show alpha|beta"
"$a2a" conversations show 'alpha|beta' --data-dir "$work/data"

step "a2a hub post --wait '@beta @gamma please both look at the login page'"
"$a2a" hub --url "$url" post --wait "@beta @gamma please both look at the login page"
last=$("$a2a" log --data-dir "$work/data" --json today | tail -1 |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
step "a2a log chain $last"
"$a2a" log --data-dir "$work/data" chain "$last"

step "a2a hub collaborate beta ... (4 times: the pair limit is 3)"
for i in 1 2 3 4; do
  "$a2a" hub --url "$url" collaborate beta "review part $i" || true
done
step "a2a hub messages --channel ops"
"$a2a" hub --url "$url" messages --channel ops

stop
step "a2a jobs list --data-dir (every agent)"
"$a2a" jobs list --data-dir "$work/data"
