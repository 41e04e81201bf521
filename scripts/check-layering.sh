#!/usr/bin/env bash
# Usage: scripts/check-layering.sh [CARGO_TREE_ARGS...]   (e.g. --locked in CI)
# The SDK never depends on the platform (docs: architecture, "Two tiers"):
# fails when the normal dependencies of an SDK crate, with all its features
# on, include a platform crate, and prints the path that pulls it in.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# Package names (`cargo tree` prints those), not the directories' a2a-* names.
sdk=(agent2agent-core agent2agent-server agent2agent-client agent2agent-grpc
  agent2agent-signing agent2agent-store-suite)
platform=(agent2agent-conversation agent2agent-store-sql agent2agent-gateway
  agent2agent-hub agent2agent-mcp agent2agent-model agent2agent-cli)
status=0
for crate in "${sdk[@]}"; do
  if ! tree=$(cargo tree "$@" -p "$crate" -e normal --all-features --prefix none --format '{p}'); then
    echo "layering: cannot read the dependencies of $crate" >&2
    exit 2
  fi
  for dep in "${platform[@]}"; do
    if grep -q "^$dep v" <<<"$tree"; then
      echo "layering: SDK crate $crate depends on platform crate $dep:" >&2
      cargo tree "$@" -p "$crate" -e normal --all-features -i "$dep" >&2
      status=1
    fi
  done
done
if [ "$status" = 0 ]; then
  echo "layering: no SDK crate (${sdk[*]}) depends on a platform crate (${platform[*]})"
fi
exit "$status"
