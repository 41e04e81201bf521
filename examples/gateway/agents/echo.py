#!/usr/bin/env python3
"""An echo agent for the A2A gateway, speaking the process agent protocol.

The gateway starts this script once and keeps it running. It writes one JSON
object per line to our stdin and reads one per line from our stdout; the
protocol is described in a2a-gateway/PROCESS_PROTOCOL.md. Run it by hand to
see it work:

    printf '%s\n' \
      '{"type":"hello","protocol":1,"agent":"echo"}' \
      '{"type":"execute","taskId":"t1","contextId":"c1","message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}' \
      | python3 examples/gateway/agents/echo.py

What it does with a message's text:
    "ask"        asks who you are (input-required), then greets the answer
    "slow N"     counts to N, one artifact chunk a second (cancel stops it)
    "ping"       answers with a plain message instead of a task
    anything     echoes it back and completes the task
"""
import json
import sys
import threading

# Several tasks can be in flight at once (slow ones run on threads), so
# whole lines are written under a lock: two threads must never interleave
# halves of their lines.
_out = threading.Lock()


def send(**line):
    """Writes one protocol line. The flush matters: a line left in Python's
    buffer never reaches the gateway."""
    text = json.dumps(line)
    with _out:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def log(text, level="info", task=None):
    # Goes to the gateway's log. Plain prints to stderr work too.
    send(type="log", level=level, text=text, taskId=task)


# Tasks waiting for an answer to "ask", and the cancel flags of slow ones.
asked = set()
canceled = {}


def text_of(message):
    """The message's text parts, joined (A2A messages come as ProtoJSON)."""
    return "".join(part.get("text", "") for part in message.get("parts", []))


def count_slowly(task, n):
    """A long task: one artifact chunk per second, all in one artifact."""
    send(type="status", taskId=task, state="working", text=f"counting to {n}")
    for i in range(1, n + 1):
        if canceled[task].wait(1.0):
            # The task is already canceled for the caller; saying so lets
            # the gateway forget it now instead of after its grace period.
            send(type="status", taskId=task, state="canceled")
            return
        send(type="artifact", taskId=task, artifactId="count", name="count",
             text=f"{i} ", append=i > 1, lastChunk=i == n)
    send(type="status", taskId=task, state="completed", text="done counting")
    del canceled[task]


def execute(line):
    task = line["taskId"]
    text = text_of(line["message"])
    if line.get("followUp") and task in asked:
        # The answer to our question: same taskId as the task that asked.
        asked.discard(task)
        send(type="status", taskId=task, state="completed", text=f"Hello, {text}!")
    elif text == "ask":
        asked.add(task)
        send(type="status", taskId=task, state="input-required", text="Who are you?")
    elif text.startswith("slow"):
        n = int(text.split()[1]) if len(text.split()) > 1 else 5
        canceled[task] = threading.Event()
        # Not a daemon thread: when stdin closes, Python waits for it, so
        # the count finishes before the script exits (the gateway allows
        # half its stop grace for that).
        threading.Thread(target=count_slowly, args=(task, n)).start()
    elif text == "ping":
        # A reply is a message with no task; only as a task's first line.
        send(type="reply", taskId=task, text="pong")
    else:
        # "completed" ends the task; its text becomes the status message.
        send(type="status", taskId=task, state="completed", text=text)


def main():
    # Each line from the gateway is one JSON object. The loop ends when the
    # gateway closes our stdin, which is how it asks us to stop.
    for raw in sys.stdin:
        line = json.loads(raw)
        kind = line.get("type")
        if kind == "hello":
            log(f"started as agent {line.get('agent')!r}, protocol {line.get('protocol')}")
        elif kind == "execute":
            execute(line)
        elif kind == "cancel":
            flag = canceled.get(line["taskId"])
            if flag:
                flag.set()
            asked.discard(line["taskId"])
        # Other types (newer gateways may send more) are ignored on purpose.


if __name__ == "__main__":
    main()
