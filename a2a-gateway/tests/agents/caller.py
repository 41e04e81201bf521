#!/usr/bin/env python3
"""A process agent that calls the gateway's other agents by name over HTTP.

"call NAME TEXT" sends TEXT to agent NAME through the gateway (JSON-RPC at
$A2A_GATEWAY_URL/NAME, as itself: Authorization: Bearer $A2A_AGENT_TOKEN)
and answers with what NAME said; anything else is echoed as "script: TEXT".
The call carries the `traceparent`/`tracestate` of the execute line, if any.
"""
import json
import os
import sys
import threading
import urllib.request

_out = threading.Lock()


def send(**line):
    with _out:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def text_of(message):
    return "".join(part.get("text", "") for part in message.get("parts", []))


def call(name, text, trace):
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": os.urandom(8).hex(), "role": "ROLE_USER",
                               "parts": [{"text": text}]}},
    }).encode()
    request = urllib.request.Request(
        os.environ["A2A_GATEWAY_URL"] + "/" + name, data=body, method="POST",
        headers={"Content-Type": "application/json", "A2A-Version": "1.0",
                 "Authorization": "Bearer " + os.environ["A2A_AGENT_TOKEN"], **trace})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.load(response)
    if "error" in answer:
        return "error: " + answer["error"]["message"]
    task = answer["result"].get("task")
    if task is None:
        return text_of(answer["result"]["message"])
    return text_of(task["status"].get("message", {}))


def execute(line):
    task, text = line["taskId"], text_of(line["message"])
    # The execution's trace context, sent on so the call joins its trace.
    trace = {key: line[key] for key in ("traceparent", "tracestate") if key in line}
    if text.startswith("call "):
        _, name, rest = text.split(" ", 2)
        try:
            said = call(name, rest, trace)
        except Exception as err:  # the test reads the failure from the task
            send(type="status", taskId=task, state="failed", text=f"call failed: {err}")
            return
        send(type="status", taskId=task, state="completed", text=f"{name} said: {said}")
    else:
        send(type="status", taskId=task, state="completed", text=f"script: {text}")


for raw in sys.stdin:
    line = json.loads(raw)
    if line.get("type") == "execute":
        threading.Thread(target=execute, args=(line,), daemon=True).start()
