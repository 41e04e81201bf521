#!/usr/bin/env bash
# Runs the whole test suite. Installs what the interop tests need into
# git-ignored folders of the repository (.venv, e2e/interop/node_modules);
# needs only cargo, python3 (>= 3.10) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

# Interop peers: the official Python and JavaScript SDKs, pinned.
if ! .venv/bin/python -c 'import a2a, uvicorn' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet 'a2a-sdk[all]==1.3.0' 'uvicorn>=0.30'
fi
if [ ! -d e2e/interop/node_modules/@a2a-js/sdk ]; then
  (cd e2e/interop && npm install --silent --no-audit --no-fund)
fi

cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
# The interop suites (ignored by a plain `cargo test`, which lacks the peers).
cargo test --locked -p e2e --test interop -- --ignored

# Fuzz smoke: ~15 s of real fuzzing per target where a nightly toolchain
# works (cargo-fuzz needs one). The committed corpora are replayed on stable
# above either way, by e2e/tests/fuzz_corpus.rs.
if cargo +nightly --version >/dev/null 2>&1; then
  ./scripts/fuzz-smoke.sh
else
  echo "fuzz smoke skipped: no nightly toolchain"
fi
