"""Drives a Rust A2A server with the official Python SDK's client.

Usage: python_client.py BASE_URL BINDING
Prints one JSON object with what came back, for the Rust test to check.
"""

import asyncio
import json
import sys
import uuid

import grpc.aio

from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)


def user(text: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])


def text_of(message) -> str:
    return "".join(p.text for p in message.parts)


async def main(url: str, binding: str) -> None:
    out = {}
    def config(streaming: bool) -> ClientConfig:
        return ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
            grpc_channel_factory=grpc.aio.insecure_channel,
        )

    blocking = await create_client(url, config(False))
    streaming = await create_client(url, config(True))

    events = [e async for e in blocking.send_message(SendMessageRequest(message=user("echo hello from python")))]
    task = events[-1].task
    out["send"] = {"state": TaskState.Name(task.status.state), "text": text_of(task.status.message), "id": task.id}

    kinds, last_state = [], None
    async for event in streaming.send_message(SendMessageRequest(message=user("stream 3"))):
        kind = event.WhichOneof("payload")
        kinds.append(kind)
        if kind == "task":
            last_state = event.task.status.state
        elif kind == "status_update":
            last_state = event.status_update.status.state
    out["stream"] = {"kinds": kinds, "final": TaskState.Name(last_state)}

    got = await blocking.get_task(GetTaskRequest(id=out["send"]["id"]))
    out["get"] = {"state": TaskState.Name(got.status.state), "history": [text_of(m) for m in got.history]}

    request = SendMessageRequest(message=user("wait"), configuration=SendMessageConfiguration(return_immediately=True))
    events = [e async for e in blocking.send_message(request)]
    waiting = events[-1].task
    canceled = await blocking.cancel_task(CancelTaskRequest(id=waiting.id))
    out["cancel"] = {"before": TaskState.Name(waiting.status.state), "after": TaskState.Name(canceled.status.state)}

    try:
        await blocking.get_task(GetTaskRequest(id="no-such-task"))
        out["missing"] = "no error"
    except Exception as error:  # noqa: BLE001 - the error type is what is reported
        out["missing"] = type(error).__name__ + ": " + str(error)

    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
