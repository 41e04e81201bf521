#!/usr/bin/env bash
# Instructions per blocking SendMessage on the in-process handler (no HTTP),
# counted by callgrind: stable on a shared machine where wall time is not.
# Two runs of different length; their difference divided by the extra calls
# cancels start-up. Usage: scripts/instructions.sh [a2a-bench binary]
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:-}
if [ -z "$bench" ]; then
  cargo build --release -q -p a2a-bench
  bench=target/release/a2a-bench
fi
total() { # count
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" handler --count "$1" "${@:2}" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"; rm -f "$out"
}
small=${SMALL:-5000}; large=${LARGE:-25000}
a=$(total "$small"); b=$(total "$large")
echo "instructions per blocking SendMessage (handler, in process): $(( (b - a) / (large - small) ))"
# JWT authentication (JwtAuth, from a cached JWKS) per call, to set beside
# the request it guards: a remembered token, and a full check every call.
jwt() { # count alg [--uncached]
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" jwt --count "$1" --alg "$2" "${@:3}" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"; rm -f "$out"
}
for alg in hs256 rs256 es256; do
  a=$(jwt 200 $alg); b=$(jwt 1200 $alg)
  c=$(jwt 50 $alg --uncached); d=$(jwt 250 $alg --uncached)
  echo "  JWT $alg per call: $(( (b - a) / 1000 )) remembered, $(( (d - c) / 200 )) verified in full"
done
# The same with the conversation log on (the writer thread's work included).
logs=$(mktemp -d); trap 'rm -rf "$logs"' EXIT
a=$(total "$small" --conversation-log "$logs/a"); b=$(total "$large" --conversation-log "$logs/b")
echo "  with the conversation log: $(( (b - a) / (large - small) ))"
