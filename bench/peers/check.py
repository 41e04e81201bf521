#!/usr/bin/env python3
"""Checks that a server answers a2a-bench's load request with a correct A2A 1.0 answer.

scripts/peers-bench.sh runs it on every server before measuring it: a server
that answered fast with errors would make a ratio worth nothing, and the load
generator only checks the HTTP status (JSON-RPC) or `grpc-status` (gRPC) and
that the body is not tiny, so a JSON-RPC error in a 200 would pass it.

The request is the one `a2a-bench load` and `a2a-bench grpc-load` send: a
blocking SendMessage of a user message "hello benchmark" with message id
"bench-message", the `A2A-Version: 1.0` header, JSON-RPC at POST / or gRPC at
/lf.a2a.v1.A2AService/SendMessage. The answer must be a task in state
COMPLETED whose status message is the agent's, echoing the text.

JSON-RPC with the standard library; gRPC through curl (HTTP/2 without TLS),
the protobuf encoded and decoded here for the few fields read.

Usage: bench/peers/check.py jsonrpc|grpc HOST:PORT
       bench/peers/check.py --self-test
Exits 0 and prints one line when the answer is right, 1 and why when not.
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.request

TEXT = "hello benchmark"
MESSAGE_ID = "bench-message"

# a2a-bench's request body, byte for byte (a2a-bench/src/agent.rs `request_body`).
JSONRPC_BODY = (
    '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
    '{"messageId":"bench-message","role":"ROLE_USER","parts":[{"text":"hello benchmark"}]}}}'
).encode()

TASK_STATE_COMPLETED = 3
ROLE_AGENT = 2


class Wrong(Exception):
    """The server's answer is not the one an A2A 1.0 echo agent gives."""


def check_jsonrpc_answer(answer):
    """The JSON-RPC answer, parsed: a completed task echoing TEXT, or Wrong."""
    if answer.get("jsonrpc") != "2.0" or answer.get("id") != 1:
        raise Wrong(f"not the JSON-RPC answer to id 1: {answer}")
    if "error" in answer:
        raise Wrong(f"JSON-RPC error: {answer['error']}")
    task = answer.get("result", {}).get("task")
    if not isinstance(task, dict) or not task.get("id"):
        raise Wrong(f"result is not a task: {answer.get('result')}")
    status = task.get("status", {})
    if status.get("state") != "TASK_STATE_COMPLETED":
        raise Wrong(f"task state {status.get('state')!r}, not TASK_STATE_COMPLETED")
    message = status.get("message") or {}
    texts = [part.get("text") for part in message.get("parts", [])]
    if message.get("role") != "ROLE_AGENT" or texts != [TEXT]:
        raise Wrong(f"status message is not the agent's echo: {message}")
    return task["id"]


def check_jsonrpc(addr):
    request = urllib.request.Request(
        f"http://{addr}/",
        data=JSONRPC_BODY,
        headers={"content-type": "application/json", "a2a-version": "1.0"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 200:
            raise Wrong(f"HTTP {response.status}")
        return check_jsonrpc_answer(json.loads(response.read()))


# ------------------------------------------------------------------ protobuf


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, wire_type, payload):
    if wire_type == 0:
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def send_message_request():
    """SendMessageRequest{message: Message{message_id, role: USER, parts: [text]}}."""
    part = _field(1, 2, TEXT.encode())
    message = _field(1, 2, MESSAGE_ID.encode()) + _field(4, 0, 1) + _field(5, 2, part)
    return _field(2, 2, message)


def parse(data):
    """A protobuf message as {field number: [values]}: ints, or bytes for
    length-delimited fields (parsed further by the caller)."""
    fields, at = {}, 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            if at >= len(data):
                raise Wrong("truncated protobuf")
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value = varint()
        elif wire_type == 2:
            length = varint()
            value, at = data[at : at + length], at + length
        elif wire_type == 1:
            value, at = data[at : at + 8], at + 8
        elif wire_type == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise Wrong(f"protobuf wire type {wire_type}")
        fields.setdefault(number, []).append(value)
    return fields


def check_grpc_answer(body):
    """The framed SendMessageResponse: a completed task echoing TEXT, or Wrong."""
    if len(body) < 5 or body[0] != 0:
        raise Wrong(f"not one uncompressed gRPC message: {body[:16]!r}")
    length = int.from_bytes(body[1:5], "big")
    if len(body) != 5 + length:
        raise Wrong(f"gRPC frame of {length} bytes in a body of {len(body)}")
    response = parse(body[5:])
    if 1 not in response:
        raise Wrong(f"SendMessageResponse without a task: fields {sorted(response)}")
    task = parse(response[1][0])
    task_id = task.get(1, [b""])[0].decode()
    if not task_id:
        raise Wrong("task without an id")
    status = parse(task.get(3, [b""])[0])
    state = status.get(1, [0])[0]
    if state != TASK_STATE_COMPLETED:
        raise Wrong(f"task state {state}, not TASK_STATE_COMPLETED ({TASK_STATE_COMPLETED})")
    message = parse(status.get(2, [b""])[0])
    texts = [parse(part).get(1, [b""])[0].decode() for part in message.get(5, [])]
    if message.get(4, [0])[0] != ROLE_AGENT or texts != [TEXT]:
        raise Wrong(f"status message is not the agent's echo: role {message.get(4)}, {texts}")
    return task_id


def check_grpc(addr):
    request = send_message_request()
    framed = b"\0" + len(request).to_bytes(4, "big") + request
    with tempfile.TemporaryDirectory() as scratch:
        body_in = os.path.join(scratch, "request")
        body_out = os.path.join(scratch, "response")
        headers = os.path.join(scratch, "headers")
        with open(body_in, "wb") as file:
            file.write(framed)
        # --http2-prior-knowledge: HTTP/2 without TLS, as gRPC clients speak
        # it; curl writes the trailers (grpc-status) to the header dump.
        subprocess.run(
            ["curl", "-sS", "--max-time", "10", "--http2-prior-knowledge", "-X", "POST",
             "-H", "content-type: application/grpc", "-H", "te: trailers",
             "-H", "a2a-version: 1.0", "--data-binary", f"@{body_in}",
             "-D", headers, "-o", body_out,
             f"http://{addr}/lf.a2a.v1.A2AService/SendMessage"],
            check=True,
        )
        with open(headers, encoding="latin-1") as file:
            lines = [line.strip().lower() for line in file]
        with open(body_out, "rb") as file:
            body = file.read()
    if not lines or not lines[0].startswith("http/2 200"):
        raise Wrong(f"HTTP status line {lines[:1]}")
    statuses = [line.split(":", 1)[1].strip() for line in lines if line.startswith("grpc-status:")]
    if statuses != ["0"]:
        messages = [line for line in lines if line.startswith("grpc-message:")]
        raise Wrong(f"grpc-status {statuses} {messages}")
    return check_grpc_answer(body)


# ------------------------------------------------------------------ self-test


def _expect_wrong(check, value):
    try:
        check(value)
    except Wrong:
        return
    raise AssertionError(f"accepted {value!r}")


def self_test():
    status = {"state": "TASK_STATE_COMPLETED",
              "message": {"role": "ROLE_AGENT", "parts": [{"text": TEXT}]}}
    good = {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t", "status": status}}}
    assert check_jsonrpc_answer(good) == "t"
    _expect_wrong(check_jsonrpc_answer, {"jsonrpc": "2.0", "id": 1,
                                         "error": {"code": -32009, "message": "version"}})
    _expect_wrong(check_jsonrpc_answer, {**good, "id": 2})
    failed = json.loads(json.dumps(good))
    failed["result"]["task"]["status"]["state"] = "TASK_STATE_FAILED"
    _expect_wrong(check_jsonrpc_answer, failed)
    other = json.loads(json.dumps(good))
    other["result"]["task"]["status"]["message"]["parts"] = [{"text": "Echo: " + TEXT}]
    _expect_wrong(check_jsonrpc_answer, other)
    # The body is valid JSON with the fields a2a-bench sends.
    sent = json.loads(JSONRPC_BODY)
    assert sent["params"]["message"]["parts"] == [{"text": TEXT}]

    def answer(state, role, text):
        part = _field(1, 2, text.encode())
        message = _field(1, 2, b"m") + _field(4, 0, role) + _field(5, 2, part)
        status = _field(1, 0, state) + _field(2, 2, message)
        task = _field(1, 2, b"task-1") + _field(3, 2, status)
        response = _field(1, 2, task)
        return b"\0" + len(response).to_bytes(4, "big") + response

    assert check_grpc_answer(answer(3, 2, TEXT)) == "task-1"
    _expect_wrong(check_grpc_answer, answer(4, 2, TEXT))
    _expect_wrong(check_grpc_answer, answer(3, 1, TEXT))
    _expect_wrong(check_grpc_answer, answer(3, 2, "other"))
    _expect_wrong(check_grpc_answer, answer(3, 2, TEXT)[:-1])
    # The request decodes back to what was meant.
    request = parse(send_message_request())
    message = parse(request[2][0])
    assert message[1] == [MESSAGE_ID.encode()] and message[4] == [1]
    assert parse(message[5][0])[1] == [TEXT.encode()]
    print("check.py self-test: ok")


def main(argv):
    if argv == ["--self-test"]:
        self_test()
        return 0
    if len(argv) != 2 or argv[0] not in ("jsonrpc", "grpc"):
        print(__doc__.split("Usage: ")[1], file=sys.stderr)
        return 2
    binding, addr = argv
    try:
        task_id = (check_jsonrpc if binding == "jsonrpc" else check_grpc)(addr)
    except (Wrong, OSError, ValueError, subprocess.CalledProcessError) as error:
        print(f"check {binding} {addr}: WRONG: {error}", file=sys.stderr)
        return 1
    print(f"check {binding} {addr}: ok (task {task_id} completed, text echoed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
