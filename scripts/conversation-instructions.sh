#!/usr/bin/env bash
# Usage: scripts/conversation-instructions.sh   (needs valgrind)
# Instructions per agent-to-agent call through Peers: the contextId passed
# by hand against continued by the conversation index (a2a-gateway's
# conversations bench, in A2A_BENCH_CALLS mode). Each figure is the
# difference of two runs (N1 and N2 calls) over N2-N1: start-up cancels out.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p agent2agent-gateway --bench conversations --no-run >/dev/null 2>&1
bin=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/conversations-* | grep -v '\.d$' | head -1)
count() { # mode calls
  A2A_BENCH_CALLS="$1:$2" valgrind --tool=callgrind --callgrind-out-file=/tmp/conv-cg.out "$bin" 2>&1 >/dev/null \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
n1=${N1:-500}; n2=${N2:-2500}
for mode in hand continued; do
  a=$(count "$mode" "$n1"); b=$(count "$mode" "$n2")
  echo "$mode: $(( (b - a) / (n2 - n1) )) instr/call"
done
a=$(A2A_BENCH_LOOKUPS=100000 valgrind --tool=callgrind --callgrind-out-file=/tmp/conv-cg.out "$bin" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
b=$(A2A_BENCH_LOOKUPS=600000 valgrind --tool=callgrind --callgrind-out-file=/tmp/conv-cg.out "$bin" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
echo "lookup by names, 100k pairs: $(( (b - a) / 500000 )) instr/lookup"
