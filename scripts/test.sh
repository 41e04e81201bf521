#!/usr/bin/env bash
# Runs the whole test suite. Installs what the interop tests need into
# git-ignored folders of the repository (.venv, .venv03, e2e/interop/node_modules),
# the hub's browser test its driver (a2a-hub/tests/browser/node_modules) and
# Debian's Chromium when it is missing, and mdBook into a cache of its own
# (~/.cache/a2a-tools, kept between clones: it takes minutes to build) and,
# with rustup, the toolchain of the workspace's rust-version; needs only
# cargo, python3 (>= 3.10) and npm (and apt-get for Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

# Interop peers: the official Python and JavaScript SDKs, pinned.
if ! .venv/bin/python -c 'import a2a, uvicorn' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet 'a2a-sdk[all]==1.3.0' 'uvicorn>=0.30'
fi
# The A2A 0.3 peer: the Python SDK's last 0.3 release, in a venv of its own
# (it cannot share one with 1.x), with its HTTP+JSON (FastAPI) and gRPC extras.
if ! .venv03/bin/python -c 'import a2a.server.apps, a2a.grpc.a2a_pb2_grpc, fastapi, uvicorn' 2>/dev/null; then
  python3 -m venv .venv03
  .venv03/bin/pip install --quiet 'a2a-sdk[http-server,grpc]==0.3.26' 'uvicorn>=0.30'
fi
if [ ! -d e2e/interop/node_modules/@a2a-js/sdk ]; then
  (cd e2e/interop && npm install --silent --no-audit --no-fund)
fi
# The hub's page test: puppeteer-core, pinned by its package-lock.json, and
# headless Chromium. Outside CI a failed install only skips that test; under
# CI=true the test fails loudly when either is missing.
if [ ! -d a2a-hub/tests/browser/node_modules/puppeteer-core ]; then
  (cd a2a-hub/tests/browser && npm ci --silent --no-audit --no-fund) ||
    echo "warning: npm ci in a2a-hub/tests/browser failed; the browser test will be skipped"
fi
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 &&
  ! command -v chromium-browser >/dev/null 2>&1; then
  apt=(apt-get)
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then apt=(sudo apt-get); fi
  { "${apt[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq chromium; } ||
    echo "warning: could not install Chromium (apt-get); the browser test will be skipped"
fi

# The book (docs/): mdBook, pinned, builds it with the snippets it includes
# from examples/ (an include it cannot read is only logged by mdBook, so any
# error or warning fails here); then scripts/check-book.py checks that Rust
# blocks are includes of existing anchors, and every relative link and
# #anchor of the HTML (external links are listed, not fetched).
MDBOOK_VERSION=0.5.4
tools=${A2A_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/a2a-tools}
if [ "$("$tools/bin/mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
  cargo install --quiet --locked mdbook --version "$MDBOOK_VERSION" \
    --no-default-features --features search --root "$tools"
fi
book_log=$("$tools/bin/mdbook" build docs 2>&1) || { echo "$book_log"; exit 1; }
if grep -E '(ERROR|WARN)' <<<"$book_log"; then
  echo "mdbook build docs: errors or warnings above"
  exit 1
fi
python3 scripts/check-book.py docs
# The benchmark report's parser and charts (scripts/bench.sh --report).
python3 scripts/bench_report.py --self-test
# Crate docs build without warnings (a broken intra-doc link fails).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
# Every publishable crate packaged as crates.io would take it (manifests and
# file lists). Not verified by building each .crate here: that builds each
# crate alone, with its own features and without the workspace's [profile],
# so little of the test build is reused; 7 of the 12 crates took 25 min on a
# loaded 2-core machine with a target already warm from building a2a-cli's
# tests. Run `scripts/package-check.sh` (it verifies) before publishing.
./scripts/package-check.sh --no-verify
# The publishable crates build on the workspace's rust-version, in a target
# directory kept with the tools (a second toolchain rebuilds everything).
MSRV_TARGET_DIR="$tools/msrv-target" ./scripts/msrv-check.sh

cargo test --workspace --all-targets --locked
# The SDK crates alone, without A2A 0.3 (the workspace build turns `v03` on).
cargo test --locked -p agent2agent-core -p agent2agent-client -p agent2agent-server -p agent2agent-grpc
cargo test --workspace --doc --locked
# OpenTelemetry (off by default in the libraries): one trace across client,
# agents and bindings (through the bridge, and recorded by the SDK itself),
# and sampling once per trace. `a2a` has it by default
# (its OTLP tests ran above); it still builds without it.
cargo test --locked -p e2e --features otel --test otel --test otel_sampling --test otel_recorded
cargo test --locked -p agent2agent-cli --no-default-features --lib
cargo test --locked -p examples --features otel --test smoke otel_agent
# The interop suites (ignored by a plain `cargo test`, which lacks the peers).
cargo test --locked -p e2e --test interop -- --ignored
cargo test --locked -p e2e --test interop_v03 -- --ignored

# Fuzz smoke: ~15 s of real fuzzing per target where a nightly toolchain
# works (cargo-fuzz needs one). The committed corpora are replayed on stable
# above either way, by e2e/tests/fuzz_corpus.rs.
if cargo +nightly --version >/dev/null 2>&1; then
  ./scripts/fuzz-smoke.sh
else
  echo "fuzz smoke skipped: no nightly toolchain"
fi
