#!/usr/bin/env bash
# Two `a2a serve` nodes on one PostgreSQL database: a cluster. A task sent
# to one node is read from the other; with the first node killed (kill -9),
# the second still has every task and takes new ones.
#
#   examples/cluster/two_nodes.sh [--exit] [POSTGRES_URL]
#
# POSTGRES_URL defaults to postgres://postgres@127.0.0.1:5432/test (a
# database that exists; the nodes create their tables in it). The nodes
# listen on 127.0.0.1:$PORT1 and :$PORT2 (default 9001 and 9002; 0 takes a
# free port, and the script reads which from the node's log) and keep
# serving after the demo until Ctrl-C, or stop at once with --exit. The `a2a`
# binary is $A2A, or built with cargo. Each node's log is in $LOGS (default:
# a temporary directory, removed on exit).
set -euo pipefail

exit_after=false
if [ "${1:-}" = "--exit" ]; then exit_after=true; shift; fi
url=${1:-postgres://postgres@127.0.0.1:5432/test}
port1=${PORT1:-9001}
port2=${PORT2:-9002}

if [ -z "${A2A:-}" ]; then
  cd "$(dirname "$0")/../.."
  cargo build -q -p agent2agent-cli
  A2A=${CARGO_TARGET_DIR:-target}/debug/a2a
fi
logs=${LOGS:-$(mktemp -d)}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -z "${LOGS:-}" ]; then rm -rf "$logs"; fi
}
trap cleanup EXIT

# One node: its own --node-id, the shared store. --lease-timeout is how
# long a dead node's running work waits before another node takes it over.
start() {
  "$A2A" serve --port "$2" --store "$url" --node-id "$1" --lease-timeout 2 \
    --no-conversation-log >"$logs/$1.log" 2>&1 &
  pids+=($!)
}

# Waits up to 20 s for node $1 to say where it listens, and prints its URL.
url_of() {
  for _ in $(seq 200); do
    local line
    line=$(grep -m1 '^Agent card: ' "$logs/$1.log" 2>/dev/null || true)
    if [ -n "$line" ]; then
      line=${line#Agent card: }
      echo "${line%/.well-known/agent-card.json}"
      return 0
    fi
    sleep 0.1
  done
  echo "$1 did not start; its log:" >&2
  cat "$logs/$1.log" >&2
  return 1
}

start node-1 "$port1"
start node-2 "$port2"
node1=$(url_of node-1)
node2=$(url_of node-2)
echo "node-1: $node1"
echo "node-2: $node2"

# `a2a send` prints `task ID [STATE] context ID`, then the answer.
task=$("$A2A" send "$node1" "hello from node one" | awk 'NR == 1 { print $2 }')
echo "sent to node-1: task $task"
echo "read from node-2:"
"$A2A" get "$node2" "$task" | sed 's/^/  /'

echo "killing node-1 (kill -9)"
kill -9 "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=("${pids[@]:1}")

second=$("$A2A" send "$node2" "node two carries on" | awk 'NR == 1 { print $2 }')
echo "sent to node-2: task $second"
echo "both tasks, from node-2:"
"$A2A" get "$node2" "$task" | sed -n 1p | sed 's/^/  /'
"$A2A" get "$node2" "$second" | sed -n 1p | sed 's/^/  /'

if [ "$exit_after" = true ]; then exit 0; fi
echo "node-2 serves on $node2 until Ctrl-C (logs in $logs)"
wait
