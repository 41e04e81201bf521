#!/usr/bin/env python3
"""A process agent whose turns can be counted (a2a-cli/tests/cluster_gateway.rs).

`turns N ms M` does N turns of M ms each (mentions, `@name`, are not words:
the hub delivers `@proc turns N ms M`). Every turn notes `effect` in the
file $EFFECTS before its work, sends an artifact with the turn's checkpoint,
and notes `committed` once the gateway says the checkpoint is stored. A
resumed execution starts after the turn of its checkpoint. So a checkpointed
turn that ran again shows as an `effect` line after its `committed` line.
Each line: KIND TASK TURN RESUMED(0/1) NODE (the gateway URL of the node whose
child this is) TIME (seconds since the epoch). Every execution also notes `start TASK MESSAGE_ID RESUMED NODE`.
"""
import json
import os
import sys
import threading
import time

EFFECTS = os.environ["EFFECTS"]
NODE = os.environ.get("A2A_GATEWAY_URL", "?")
out_lock = threading.Lock()
acks = {}  # (task, turn) -> threading.Event, set on "checkpointed"
acks_lock = threading.Lock()
stopped = set()  # tasks the gateway said to stop ("cancel")


def send(obj):
    line = json.dumps(obj) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def note(*words):
    # One write with O_APPEND: lines from every node's child never interleave.
    fd = os.open(EFFECTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        line = " ".join(str(w) for w in words) + " %.3f\n" % time.time()
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def ack_for(task, turn):
    with acks_lock:
        return acks.setdefault((task, turn), threading.Event())


def run(line):
    task = line["taskId"]
    resumed = 1 if line.get("resumed") else 0
    text = "".join(p.get("text", "") for p in line["message"].get("parts", []))
    words = [w for w in text.split() if not w.startswith("@")]
    turns = int(words[1]) if len(words) > 1 else 3
    ms = int(words[3]) if len(words) > 3 else 100
    note("start", task, line["message"].get("messageId", "?"), resumed, NODE)
    done = 0
    if resumed and line.get("checkpoint"):
        done = int(line["checkpoint"].get("turn", 0))
    if done == 0:
        send({"type": "status", "taskId": task, "state": "working"})
    for turn in range(done + 1, turns + 1):
        if task in stopped:
            return
        note("effect", task, turn, resumed, NODE)
        time.sleep(ms / 1000)
        if task in stopped:
            return
        acked = ack_for(task, turn)
        send({"type": "artifact", "taskId": task, "artifactId": "turn-%d" % turn,
              "name": "turn", "text": "turn %d" % turn,
              "checkpoint": {"turn": turn, "state": {"done": turn}}})
        if not acked.wait(120):
            return
        note("committed", task, turn, resumed, NODE)
    send({"type": "status", "taskId": task, "state": "completed",
          "text": "%d turns done" % turns})


def main():
    while True:
        raw = sys.stdin.readline()
        if not raw:
            # The gateway is gone (killed): so is this node's work.
            os._exit(0)
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        kind = line.get("type")
        if kind == "execute":
            stopped.discard(line["taskId"])
            threading.Thread(target=run, args=(line,), daemon=True).start()
        elif kind == "cancel":
            # This node no longer runs the task (a cancel, or the node lost
            # its lease): stop before the next turn's effect.
            stopped.add(line["taskId"])
        elif kind == "checkpointed":
            ack_for(line["taskId"], int(line["turn"])).set()


main()
