#!/usr/bin/env python3
"""Hub post-to-answer latency, one node against across nodes.

Usage: scripts/hub-latency.py A2A_BINARY [POSTGRES_SERVER_URL] [POSTS]

Starts two `a2a serve --node-id` nodes of a gateway (the built-in echo agent
and the hub) on a fresh database of POSTGRES_SERVER_URL (default
postgres://postgres@127.0.0.1:5432; the database is dropped after), then
posts POSTS messages (default 50) one after another, each "@echo ..." in a
thread of its own, and times each from the post until its answer arrives on
the hub's live feed (`/hub/api/events`):
  - same node: posted on node 1, watched on node 1;
  - across nodes: posted on node 1, watched on node 2 (the answer reaches
    node 2 through the database's notice).
Prints the median, p90 and max of each. Traffic stays on 127.0.0.1.
"""
import http.client, json, os, shutil, socket, statistics, subprocess, sys, tempfile, threading, time, queue, uuid

binary = sys.argv[1]
server = sys.argv[2] if len(sys.argv) > 2 else "postgres://postgres@127.0.0.1:5432"
posts = int(sys.argv[3]) if len(sys.argv) > 3 else 50
db = "hub_latency_" + uuid.uuid4().hex[:8]
host_url = server.rstrip("/")


def psql(sql):
    subprocess.run(["psql", host_url + "/postgres", "-q", "-c", sql], check=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port):
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"node on port {port} did not start")


def feed(port, out):
    """Puts (arrival time, message) of each message event of node `port`'s feed on `out`."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", "/hub/api/events")
    response = conn.getresponse()
    event = None
    while True:
        line = response.fp.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:") and event == "message":
            out.put((time.monotonic(), json.loads(line[5:])))


def post(port, text, person):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    body = json.dumps({"channel": "general", "text": text, "from": person})
    conn.request("POST", "/hub/api/messages", body, {"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status != 201:
        raise SystemExit(f"post refused: {response.status} {data[:300]!r}")
    return json.loads(data)["message"]


def run(post_port, watch_port, label):
    events = queue.Queue()
    threading.Thread(target=feed, args=(watch_port, events), daemon=True).start()
    time.sleep(0.5)  # the feed's subscription is in place before the first post
    took = []
    for i in range(posts):
        started = time.monotonic()
        message = post(post_port, f"@echo ping {i}", f"person{i % 7}")
        while True:
            arrived, seen = events.get(timeout=30)
            if os.environ.get("DEBUG"): print(seen, file=sys.stderr)
            if seen.get("replyTo") == message["id"] and seen["from"] == {"kind": "agent", "name": "echo"}:
                took.append((arrived - started) * 1000)
                break
    took.sort()
    print(f"{label}: median {statistics.median(took):.1f} ms, p90 {took[int(len(took) * 0.9) - 1]:.1f} ms, max {took[-1]:.1f} ms ({posts} posts)")


work = tempfile.mkdtemp()
config = os.path.join(work, "gateway.toml")
with open(config, "w") as f:
    f.write('[agents.echo]\nkind = "rust"\nexecutor = "echo"\n\n'
            '[hub]\ndefault_channel = "general"\n\n'
            '[hub.channels.general]\ndescription = "Where people ask."\n\n'
            '[hub.guards]\npair_limit = 100000\nanonymous_threads = 100000\n')
psql(f"CREATE DATABASE {db}")
nodes = []
try:
    ports = []
    for n in (1, 2):
        port = free_port()
        data = os.path.join(work, f"node{n}")
        os.mkdir(data)
        nodes.append(subprocess.Popen(
            [binary, "serve", "--port", str(port), "--config", config, "--store", f"{host_url}/{db}",
             "--node-id", f"node-{n}", "--data-dir", data],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"node{n}.log"), "w")))
        wait_port(port)
        ports.append(port)
    run(ports[0], ports[0], "same node")
    run(ports[0], ports[1], "across nodes")
finally:
    for node in nodes:
        node.terminate()
    for node in nodes:
        node.wait()
    psql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    shutil.rmtree(work, ignore_errors=True)
