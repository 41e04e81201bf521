#!/usr/bin/env bash
# A short real run of every cargo-fuzz target (fuzz/), FUZZ_SECONDS each
# (default 15), as a smoke test: the targets still build, and a few hundred
# thousand fresh inputs find nothing. Needs a nightly toolchain; installs
# cargo-fuzz if missing. New inputs go to a temporary folder, so the
# committed corpora are only read.
#
# The build is kept in FUZZ_TARGET_DIR (default ~/.cache/a2a-fuzz-target)
# rather than in the clone: instrumented builds of every dependency take
# minutes, and CI runs in a fresh clone each time.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-15}"
target_dir="${FUZZ_TARGET_DIR:-$HOME/.cache/a2a-fuzz-target}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

# Without sanitizers: the code under test forbids unsafe, and an address
# sanitizer would halve the executions of a run this short. A debug build:
# it compiles in a fraction of the time of an optimised instrumented one,
# which is most of this script's cost, and adds overflow checks.
fuzz() { cargo +nightly fuzz "$1" --dev -s none --target-dir "$target_dir" "${@:2}"; }
fuzz build

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo +nightly fuzz list); do
  mkdir -p "$scratch/$target"
  # The first folder receives new inputs; the committed corpus is read only.
  # Findings go to the scratch folder too, and fail this script.
  fuzz run "$target" \
    "$scratch/$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -artifact_prefix="$scratch/" 2>"$scratch/$target.log" || {
    tail -n 60 "$scratch/$target.log"
    echo "fuzz target $target failed" >&2
    exit 1
  }
  grep -E '^Done [0-9]+ runs' "$scratch/$target.log" | sed "s/^/$target: /"
done
