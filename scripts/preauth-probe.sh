#!/usr/bin/env bash
# Usage: scripts/preauth-probe.sh [A2A_BINARY]   (needs python3 and curl)
# What 100 unauthenticated callers each sending a ~10 MB body cost a gateway
# with authentication on (issue 31, finding 1): `a2a serve` with a bearer
# token and a one-agent gateway file, its resident memory idle and at its
# peak under the callers, and how long `GET /agents` and the agent card take
# meanwhile. A measurement, not a pass/fail test: it prints the figures.
# CONNECTIONS, MB and PORT change the load and the port.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
A2A=${1:-${CARGO_TARGET_DIR:-target}/release/a2a}
PORT=${PORT:-7211}
CONNECTIONS=${CONNECTIONS:-100}
MB=${MB:-10}
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
cat > "$dir/gateway.toml" <<'EOF'
[gateway]
default = "echo"
[agents.echo]
kind = "rust"
executor = "echo"
description = "Echoes."
EOF
A2A_AUTH_BEARER_TOKEN=probe-secret "$A2A" serve --config "$dir/gateway.toml" --port "$PORT" \
  --store memory --data-dir "$dir/data" --no-conversation-log >"$dir/serve.log" 2>&1 &
server=$!
for _ in $(seq 150); do curl -sf "http://127.0.0.1:$PORT/agents" >/dev/null && break; sleep 0.2; done
rss() { awk '/^VmRSS/ {print int($2/1024)}' /proc/$server/status; }
probe() { # url: seconds GET takes, as ms
  curl -s -o /dev/null -w '%{time_total}\n' "$1" | awk '{printf "%.1f", $1*1000}'
}
idle=$(rss)
echo "idle: ${idle} MiB resident; GET /agents $(probe "http://127.0.0.1:$PORT/agents") ms"
# The callers: each announces MB megabytes of JSON on a binding (JSON-RPC at
# the root and at the agent, HTTP+JSON, the hub-less gateway's paths) and
# sends as fast as the server takes it, without a token. A refusal is 401
# (HTTP+JSON) or 200 with a JSON-RPC -31401 error; a server that answers
# without reading the body closes on the sender (ConnectionResetError).
python3 - "$PORT" "$CONNECTIONS" "$MB" >"$dir/load.log" 2>&1 <<'EOF' &
import asyncio, sys
port, n, mb = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
paths = ["/", "/agents/echo/", "/message:send", "/agents/echo/message:send"]
answers = {}
async def caller(i):
    path = paths[i % len(paths)]
    size = mb * 1_000_000
    reading = None
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write((f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"A2A-Version: 1.0\r\nContent-Length: {size}\r\n\r\n").encode())
        chunk = b'{"x":"' + b"a" * (65536 - 8) + b'",'
        sent = 0
        reading = asyncio.ensure_future(r.readline())
        while sent < size and not reading.done():
            w.write(chunk[: min(len(chunk), size - sent)])
            sent += min(len(chunk), size - sent)
            await w.drain()
        status = (await asyncio.wait_for(reading, 60)).decode().strip()
        answers[status] = answers.get(status, 0) + 1
        w.close()
    except Exception as e:
        # A server that answers without reading the body closes on the
        # sender: the answer it gave, if it came, is what counts.
        key = type(e).__name__
        if reading is not None and reading.done() and not reading.cancelled():
            if reading.exception() is None and reading.result():
                key = reading.result().decode().strip()
        answers[key] = answers.get(key, 0) + 1
async def main():
    # A reader whose connection the server closed is no news: quiet.
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)
    await asyncio.gather(*(caller(i) for i in range(n)))
    print("answers:", answers)
asyncio.run(main())
EOF
load=$!
peak=$idle; worst_list=0; worst_card=0; samples=0
while kill -0 $load 2>/dev/null; do
  now=$(rss); [ "$now" -gt "$peak" ] && peak=$now
  l=$(probe "http://127.0.0.1:$PORT/agents"); c=$(probe "http://127.0.0.1:$PORT/.well-known/agent-card.json")
  worst_list=$(awk -v a="$worst_list" -v b="$l" 'BEGIN {print (b > a) ? b : a}')
  worst_card=$(awk -v a="$worst_card" -v b="$c" 'BEGIN {print (b > a) ? b : a}')
  samples=$((samples + 1))
  sleep 0.1
done
wait $load
cat "$dir/load.log"
echo "under $CONNECTIONS callers x $MB MB without a token: peak ${peak} MiB resident (idle ${idle}, +$((peak - idle)) MiB);" \
  "slowest GET /agents ${worst_list} ms, slowest card GET ${worst_card} ms ($samples samples)"
echo "after: $(rss) MiB resident"
