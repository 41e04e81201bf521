#!/usr/bin/env bash
# Usage: scripts/package-check.sh [--no-verify]
# Packages every publishable crate of the workspace (each member without
# `publish = false`) the way `cargo publish` would, and fails on any error.
#
# One `cargo package` for all of them: cargo packages them in dependency
# order into a local overlay registry, so a crate that depends on an
# unpublished workspace crate resolves it from the .crate just made rather
# than from crates.io (`cargo package -p one` alone cannot). The verify step
# then builds each .crate as a download from crates.io would be built, all
# in one target directory, so the dependencies are compiled once, not once
# per crate. `--no-verify` only checks the manifests and the file lists.
#
# The overlay does not shadow crates.io: where crates.io has a higher
# semver-compatible version of the same name, the verify step resolves to
# it. Hence the packages' agent2agent-* names: crates.io's a2a-client,
# a2a-core, a2a-grpc and a2a-cli are other projects'.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t crates < <(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys
print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] is None))')
if [ "${#crates[@]}" = 0 ]; then
  echo "package-check: no publishable crate found" >&2
  exit 2
fi
args=()
for crate in "${crates[@]}"; do args+=(-p "$crate"); done

# --allow-dirty: CI checks out a clean tree; locally this checks the tree
# as it is. Packaging never uploads anything.
cargo package --locked --allow-dirty "${args[@]}" "$@"
echo "package-check: packaged ${crates[*]}"
