#!/usr/bin/env python3
"""The process agent the gateway's tests drive (a2a-gateway/tests/process.rs).

The first word of the message text picks a behaviour; see COMMANDS below.
Tasks run on threads, so many are in flight at once over this one process.
"""
import json
import os
import sys
import threading

out_lock = threading.Lock()
cancels = {}          # task id -> threading.Event, set on "cancel"
acks = {}             # task id -> threading.Event, set on "checkpointed"
waiting_input = set() # tasks that asked for input
hello = {}
executes = 0


def send(obj):
    line = json.dumps(obj) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def raw(text):
    with out_lock:
        sys.stdout.write(text)
        sys.stdout.flush()


def raw_bytes(data):
    with out_lock:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def status(task, state, text=None, **extra):
    line = {"type": "status", "taskId": task, "state": state, **extra}
    if text is not None:
        line["text"] = text
    send(line)


def handle(line):
    task = line["taskId"]
    text = "".join(p.get("text", "") for p in line["message"].get("parts", []))
    word, _, rest = text.partition(" ")
    if line.get("followUp") and task in waiting_input:
        waiting_input.discard(task)
        status(task, "completed", "got: " + text)
        return
    if word == "echo":
        status(task, "working")
        status(task, "completed", rest)
    elif word == "reply":
        send({"type": "reply", "taskId": task, "text": "reply: " + rest})
    elif word == "stream":
        status(task, "working")
        n = int(rest or "3")
        for i in range(n):
            send({"type": "artifact", "taskId": task, "artifactId": "out",
                  "name": "output", "text": "chunk-%d " % i,
                  "append": i > 0, "lastChunk": i == n - 1})
        status(task, "completed", "streamed")
    elif word == "slow":
        ms, _, reply = rest.partition(" ")
        threading.Timer(int(ms) / 1000, status, (task, "completed", reply)).start()
    elif word == "input":
        waiting_input.add(task)
        status(task, "input-required", "more please")
    elif word == "wait":
        cancels[task] = threading.Event()

        def wait():
            cancels[task].wait()
            status(task, "canceled", "stopped as asked")
            send({"type": "log", "level": "info", "taskId": task, "text": "canceled " + task})
        status(task, "working", "waiting for cancel")
        threading.Thread(target=wait, daemon=True).start()
    elif word == "ignore-cancel":
        status(task, "working", "never stopping")
    elif word == "crash":
        status(task, "working", "about to crash")
        os._exit(int(rest or "1"))
    elif word == "crash-once":
        if line.get("resumed"):
            status(task, "completed", "resumed after a crash")
        else:
            os._exit(7)
    elif word == "garbage":
        raw("this is not json\n")
        raw_bytes(b"\xff\xfe\n")
        send({"type": "telepathy", "taskId": task})
        send({"no": "type"})
        send({"type": "status", "taskId": "no-such-task", "state": "completed"})
        send({"type": "artifact"})
        raw('{"type":"status","taskId":"%s","text":"%s"}\n' % (task, "x" * 200000))
        send({"type": "log", "level": "warn", "text": "about to finish"})
        raw("\n")
        status(task, "completed", "survived")
    elif word == "invalid":
        send({"type": "status", "taskId": task, "state": "sleeping"})
    elif word == "flood":
        for i in range(int(rest or "10000")):
            raw("garbage line %d\n" % i)
        status(task, "completed", "flooded")
    elif word == "event":
        send({"type": "event", "taskId": task, "event": {"statusUpdate": {
            "status": {"state": "TASK_STATE_COMPLETED", "message": {
                "messageId": "m1", "role": "ROLE_AGENT",
                "parts": [{"text": "raw event"}]}}}}})
    elif word == "checkpoint":
        acks[task] = threading.Event()

        def turn():
            send({"type": "artifact", "taskId": task, "artifactId": "t1", "text": "turn 1",
                  "checkpoint": {"turn": 1, "state": {"done": ["t1"]}}})
            acked = acks[task].wait(10)
            status(task, "completed", "acked" if acked else "no ack")
        threading.Thread(target=turn, daemon=True).start()
    elif word == "turns":
        checkpoint = line.get("checkpoint")
        if line.get("resumed") and checkpoint:
            status(task, "completed", "resumed after turn %d with %s"
                   % (checkpoint["turn"], json.dumps(checkpoint["state"])))
            return
        acks[task] = threading.Event()

        def first_turn_then_stop():
            send({"type": "artifact", "taskId": task, "artifactId": "t1", "text": "turn 1",
                  "checkpoint": {"turn": 1, "state": {"done": ["t1"]}}})
            acks[task].wait(10)
            if rest == "hold":
                # Stay on the task until the gateway goes away.
                status(task, "working", "turn 1 stored")
            else:
                os._exit(9)
        threading.Thread(target=first_turn_then_stop, daemon=True).start()
    elif word == "hello":
        status(task, "completed", "%s %s" % (hello.get("agent"), hello.get("protocol")))
    elif word == "grandchild":
        import subprocess
        sleeper = subprocess.Popen(["sleep", "1000"])
        status(task, "completed", str(sleeper.pid))
    elif word == "pid":
        status(task, "completed", str(os.getpid()))
    elif word == "stderr":
        sys.stderr.write("a line on stderr\n")
        sys.stderr.flush()
        status(task, "completed", "wrote stderr")
    elif word == "env":
        status(task, "completed", json.dumps(dict(os.environ)))
    elif word == "hang":
        pass  # never a line about the task again
    elif word == "working-then-hang":
        status(task, "working", "started")
    elif word == "heartbeat":
        count, _, ms = rest.partition(" ")

        def beat():
            for i in range(int(count)):
                threading.Event().wait(int(ms) / 1000)
                send({"type": "log", "level": "debug", "taskId": task, "text": "beat %d" % i})
            status(task, "completed", "beat %s times" % count)
        threading.Thread(target=beat, daemon=True).start()
    elif word == "close-stdout":
        status(task, "working")
        os.close(1)
    else:
        status(task, "failed", "unknown command: " + text)


def main():
    if os.environ.get("CRASH_AT_START"):
        sys.exit(3)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            hello.update(msg)
        elif kind == "execute":
            handle(msg)
        elif kind == "cancel":
            event = cancels.get(msg["taskId"])
            if event:
                event.set()
        elif kind == "checkpointed":
            event = acks.get(msg["taskId"])
            if event:
                event.set()
    # stdin closed: the gateway asks us to stop.
    if os.environ.get("IGNORE_EOF"):
        threading.Event().wait()


if __name__ == "__main__":
    main()
