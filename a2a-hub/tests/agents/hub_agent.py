#!/usr/bin/env python3
"""A process agent taking part in the collaboration hub (JSON lines on
stdin/stdout, a2a-gateway/PROCESS_PROTOCOL.md).

- "get NAME to review the TOPIC": asks the hub to collaborate with NAME on
  "TOPIC review" (JSON-RPC to $A2A_GATEWAY_URL/hub as itself) in the channel
  the message came from, and answers with the hub's confirmation.
- a person's message, or one naming it: answers with what the hub said about
  it ("heard FROM as ROLE in CHANNEL: TEXT").
- anything else (another agent talking in a thread): ends silent.
"""
import json
import os
import sys
import threading
import urllib.request

_out = threading.Lock()
NAME = os.environ.get("A2A_AGENT_NAME", "gamma")


def send(**line):
    with _out:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def text_of(message):
    return "".join(part.get("text", "") for part in message.get("parts", []))


def collaborate(target, text, channel):
    request = {"target": target, "text": text}
    if channel:
        request["channel"] = channel
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": os.urandom(8).hex(), "role": "ROLE_USER",
                               "parts": [{"data": {"collaborate": request}}]}},
    }).encode()
    call = urllib.request.Request(
        os.environ["A2A_GATEWAY_URL"] + "/hub", data=body, method="POST",
        headers={"Content-Type": "application/json", "A2A-Version": "1.0",
                 "Authorization": "Bearer " + os.environ["A2A_AGENT_TOKEN"]})
    with urllib.request.urlopen(call, timeout=10) as response:
        answer = json.load(response)
    message = answer["result"]["message"]
    for part in message["parts"]:
        if "data" in part:
            return part["data"]["collaboration"]["confirmation"]
    return text_of(message)


def execute(line):
    task, message = line["taskId"], line["message"]
    text = text_of(message)
    hub = (message.get("metadata") or {}).get("a2a-hub", {})
    if " to review the " in text and "get " in text:
        target, topic = text.split("get ", 1)[1].split(" to review the ", 1)
        said = collaborate(target, topic + " review", hub.get("channel"))
        send(type="status", taskId=task, state="completed", text=f"passing it on: {said}")
    elif hub.get("fromKind") == "person" or NAME in hub.get("mentions", []):
        send(type="status", taskId=task, state="completed",
             text=f"heard {hub.get('from')} as {hub.get('role')} in {hub.get('channel')}: {text}")
    else:
        send(type="status", taskId=task, state="completed")


def main():
    for raw in sys.stdin:
        line = json.loads(raw)
        if line.get("type") == "execute":
            threading.Thread(target=execute, args=(line,), daemon=True).start()


if __name__ == "__main__":
    main()
