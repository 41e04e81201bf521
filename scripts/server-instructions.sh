#!/usr/bin/env bash
# Usage: scripts/server-instructions.sh [A2A_BENCH_BINARY]   (needs valgrind)
# Whole-server instructions per blocking SendMessage, all server threads
# counted by callgrind (stable on a shared machine where wall time is not):
# `a2a-bench sdk` under callgrind, driven over HTTP/1.1 JSON-RPC and over
# gRPC (h2c) for a short and a long run; the difference in instructions over
# the difference in requests cancels start-up and shutdown.
# CONNECTIONS sets the load's connections (8 by default).
# KEEP=DIR keeps the long runs' callgrind files for callgrind_annotate.
# SERVER_ARGS adds arguments to the server (e.g. "--conversation-log DIR"),
# LOAD_ARGS to the load generator (e.g. "--bearer-token T" with
# SERVER_ARGS="--bearer-token T": authenticated SendMessage).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=${1:-${CARGO_TARGET_DIR:-target}/release/a2a-bench}
PORT=${PORT:-7105}
SHORT=${SHORT:-3}; LONG=${LONG:-9}
run() { # load-mode seconds out-file [server-mode]
  valgrind --tool=callgrind --callgrind-out-file="$3" "$B" "${4:-sdk}" --port "$PORT" ${SERVER_ARGS:-} >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 150); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break; sleep 0.2; done
  local req
  req=$("$B" "$1" --addr 127.0.0.1:"$PORT" --connections "${CONNECTIONS:-8}" --seconds "$2" --warmup 0 ${LOAD_ARGS:-} | sed -n 's/^requests=\([0-9]*\).*/\1/p')
  kill -TERM $pid; wait $pid 2>/dev/null
  local ir
  ir=$(awk '/^summary:/ {print $2}' "$3")
  echo "$req $ir"
}
out=${KEEP:-$(mktemp -d)}; mkdir -p "$out"
for mode in load grpc-load; do  # server side: the generator is not under callgrind
  a=($(run $mode "$SHORT" "$out/$mode-short.cg")); b=($(run $mode "$LONG" "$out/$mode-long.cg"))
  label=jsonrpc; [ $mode = grpc-load ] && label=grpc
  echo "$label: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instructions per SendMessage (requests ${a[0]} / ${b[0]})"
done
# The bare reference handler (JSON-RPC only) for scale: what HTTP, the
# request's parsing and the answer's writing cost with no SDK behind them.
if [ "${BARE:-1}" = 1 ]; then
  a=($(SERVER_ARGS= run load "$SHORT" "$out/bare-short.cg" bare)); b=($(SERVER_ARGS= run load "$LONG" "$out/bare-long.cg" bare))
  echo "bare jsonrpc: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instructions per SendMessage (requests ${a[0]} / ${b[0]})"
  # The same work over gRPC on hyper's HTTP/2, framed by hand (no tonic):
  # the floor under the SDK's gRPC binding.
  a=($(SERVER_ARGS= run grpc-load "$SHORT" "$out/bare-grpc-short.cg" bare-grpc)); b=($(SERVER_ARGS= run grpc-load "$LONG" "$out/bare-grpc-long.cg" bare-grpc))
  echo "bare grpc: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instructions per SendMessage (requests ${a[0]} / ${b[0]})"
  # The same again on the h2 crate without hyper: the floor under any gRPC
  # server written on h2.
  a=($(SERVER_ARGS= run grpc-load "$SHORT" "$out/bare-h2-short.cg" bare-h2)); b=($(SERVER_ARGS= run grpc-load "$LONG" "$out/bare-h2-long.cg" bare-h2))
  echo "bare grpc on h2 alone: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instructions per SendMessage (requests ${a[0]} / ${b[0]})"
  # The bare handlers run without a subscriber, where tracing's `log`
  # fallback makes hyper's and h2's disabled spans cost a record each; the
  # SDK runs `a2a serve`'s log, where they cost a filter check. The same
  # two with that log, for a floor without the difference.
  a=($(SERVER_ARGS=--log run grpc-load "$SHORT" "$out/bare-grpc-log-short.cg" bare-grpc)); b=($(SERVER_ARGS=--log run grpc-load "$LONG" "$out/bare-grpc-log-long.cg" bare-grpc))
  echo "bare grpc, with a2a serve's log: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instructions per SendMessage (requests ${a[0]} / ${b[0]})"
  a=($(SERVER_ARGS=--log run grpc-load "$SHORT" "$out/bare-h2-log-short.cg" bare-h2)); b=($(SERVER_ARGS=--log run grpc-load "$LONG" "$out/bare-h2-log-long.cg" bare-h2))
  echo "bare grpc on h2 alone, with a2a serve's log: $(( (b[1]-a[1]) / (b[0]-a[0]) )) instructions per SendMessage (requests ${a[0]} / ${b[0]})"
fi
# STREAMS=1: instructions per streaming SendMessage, each on its own
# connection (`a2a-bench streams`: connect, fetch the card, then all streams
# at once): 100 and then 400 streams, the difference over 300; and the same
# with `--connect-only` (connect, fetch the card, close), so that what is
# left is the timed part alone: the streaming call, its events and the
# stream's own teardown. The bare handler (its task as one SSE event) beside
# it for scale.
if [ "${STREAMS:-0}" = 1 ]; then
  per_stream() { # label server-mode streams-args...
    for n in 100 400; do
      valgrind --tool=callgrind --callgrind-out-file="$out/streams-$1-$n.cg" "$B" "$2" --port "$PORT" >/dev/null 2>&1 &
      spid=$!
      for _ in $(seq 150); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break; sleep 0.2; done
      "$B" streams --addr 127.0.0.1:"$PORT" --count "$n" "${@:3}" >/dev/null
      kill -TERM $spid; wait $spid 2>/dev/null
    done
    echo $(( ($(awk '/^summary:/ {print $2}' "$out/streams-$1-400.cg") - $(awk '/^summary:/ {print $2}' "$out/streams-$1-100.cg")) / 300 ))
  }
  for mode in sdk bare; do
    all=$(per_stream "$mode" "$mode"); setup=$(per_stream "$mode-setup" "$mode" --connect-only)
    echo "streams $mode: $all instructions per stream with its connection and card, $((all - setup)) for the streaming call alone"
  done
fi
# GENERATOR=1: the load generators' own instructions per call (the server
# runs natively, each generator under callgrind), to tell whether a
# wall-clock figure is the server's or its generator's.
if [ "${GENERATOR:-0}" = 1 ]; then
  "$B" sdk --port "$PORT" 2>/dev/null & spid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break; sleep 0.1; done
  for gen in "load" "grpc-load" "grpc-load --raw"; do
    r=()
    for s in "$SHORT" "$LONG"; do
      req=$(valgrind --tool=callgrind --callgrind-out-file="$out/gen.cg" "$B" $gen --addr 127.0.0.1:"$PORT" \
        --connections 8 --seconds "$s" --warmup 0 2>/dev/null | sed -n 's/^requests=\([0-9]*\).*/\1/p')
      r+=("$req" "$(awk '/^summary:/ {print $2}' "$out/gen.cg")")
    done
    echo "generator $gen: $(( (r[3]-r[1]) / (r[2]-r[0]) )) instructions per call (requests ${r[0]} / ${r[2]})"
  done
  kill $spid; wait $spid 2>/dev/null
fi
[ -z "${KEEP:-}" ] && rm -rf "$out"
exit 0
