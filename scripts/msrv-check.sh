#!/usr/bin/env bash
# Usage: scripts/msrv-check.sh
# Builds (cargo check) every publishable crate, with all its features, on the
# workspace's `rust-version` toolchain, installing it with rustup if it is
# missing. Library and binary targets only: the MSRV is a promise to the
# crates' users, and dev-dependencies may need a newer compiler (criterion
# 0.8, used by the benches, says rust-version 1.86).
# Set MSRV_TARGET_DIR to keep the 1.85 build apart (default target/msrv: a
# different compiler rebuilds everything anyway, and must not evict the
# stable build's artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys
print("\n".join(sorted({str(p["rust_version"]) for p in json.load(sys.stdin)["packages"] if p["publish"] is None})))')
if [ "$(wc -l <<<"$msrv")" != 1 ] || [ -z "$msrv" ] || [ "$msrv" = null ]; then
  echo "msrv-check: the publishable crates do not share one rust-version: $msrv" >&2
  exit 2
fi
if ! cargo "+$msrv" --version >/dev/null 2>&1; then
  rustup toolchain install "$msrv" --profile minimal
fi

mapfile -t crates < <(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys
print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] is None))')
args=()
for crate in "${crates[@]}"; do args+=(-p "$crate"); done

CARGO_TARGET_DIR="${MSRV_TARGET_DIR:-target/msrv}" \
  cargo "+$msrv" check --locked --lib --bins --all-features "${args[@]}"
echo "msrv-check: ${crates[*]} build with Rust $msrv"
