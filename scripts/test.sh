#!/usr/bin/env bash
# Runs the whole test suite. Installs whatever the interop tests need into
# git-ignored folders of the repository; needs only cargo, python3 and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
