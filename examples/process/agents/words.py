#!/usr/bin/env python3
"""A process agent in Python: streams the words of a message back, one
artifact chunk each, then completes saying how many there were.

It speaks the gateway's process agent protocol (a2a-gateway/PROCESS_PROTOCOL.md):
JSON objects, one per line, on stdin (from the gateway) and stdout (to it).
The gateway starts it once and sends it every task; see ../gateway.toml.
Try it by hand:

    printf '%s\n' \
      '{"type":"hello","protocol":1,"agent":"python"}' \
      '{"type":"execute","taskId":"t1","contextId":"c1","message":{"role":"ROLE_USER","parts":[{"text":"one two"}]}}' \
      | python3 examples/process/agents/words.py

Only the standard library; every task is handled in turn (a slow agent
would use a thread per task and write whole lines under a lock).
"""
import json
import sys


def send(**line):
    # One line per object, flushed at once: a line left in Python's buffer
    # never reaches the gateway.
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def text_of(message):
    # The message is A2A ProtoJSON: text parts carry "text".
    return "".join(part.get("text", "") for part in message.get("parts", []))


def execute(line):
    task = line["taskId"]
    words = text_of(line["message"]).split()
    if not words:
        send(type="status", taskId=task, state="rejected", text="send some words")
        return
    send(type="status", taskId=task, state="working", text=f"{len(words)} words to go")
    for i, word in enumerate(words):
        # Chunks of one artifact: the first creates it, the rest append.
        send(type="artifact", taskId=task, artifactId="words", name="words",
             text=word + " ", append=i > 0, lastChunk=i == len(words) - 1)
    # "completed" ends the task; its text becomes the status message.
    send(type="status", taskId=task, state="completed",
         text=f"{len(words)} words, from Python")


def main():
    # The loop ends when the gateway closes stdin: its way to say "stop".
    for raw in sys.stdin:
        if not raw.strip():
            continue
        line = json.loads(raw)
        kind = line.get("type")
        if kind == "hello":
            # Goes to the gateway's log (so does anything on stderr).
            send(type="log", text=f"python agent {line.get('agent')!r} ready")
        elif kind == "execute":
            execute(line)
        # "cancel" needs nothing here: tasks end before the next line is
        # read. Unknown types are ignored, so newer gateways work too.


if __name__ == "__main__":
    main()
