"""The Python SDK's last 0.3 release as a client of the Rust server, for
interop tests of the server's 0.3 JSON-RPC.

Usage: python_v03_client.py BASE_URL [BINDING]
Reads the 0.3 card at /.well-known/agent.json, picks its interface of
BINDING (JSONRPC, the default, HTTP+JSON or GRPC), then sends (blocking and
streaming), gets and cancels; prints one JSON report on stdout.
"""

import asyncio
import json
import sys
import uuid

import grpc
import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    Message,
    MessageSendConfiguration,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TextPart,
    TransportProtocol,
)


def message(value):
    return Message(role=Role.user, message_id=str(uuid.uuid4()), parts=[Part(root=TextPart(text=value))])


def texts(parts):
    return [p.root.text for p in parts or [] if hasattr(p.root, "text")]


async def events(client, value, configuration=None):
    out = []
    async for event in client.send_message(message(value), configuration=configuration):
        out.append(event)
    return out


async def main(url: str, binding: str) -> None:
    report = {}
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url, agent_card_path="/.well-known/agent.json").get_agent_card()
        report["card_url"] = card.url
        report["card_protocol_version"] = card.protocol_version
        report["card_transports"] = [i.transport for i in card.additional_interfaces or []]
        def client(streaming):
            config = ClientConfig(
                streaming=streaming,
                httpx_client=http,
                grpc_channel_factory=grpc.aio.insecure_channel,
                supported_transports=[TransportProtocol(binding)],
            )
            return ClientFactory(config).create(card)

        blocking = client(False)
        streaming = client(True)

        (task, _), = await events(blocking, "echo hello from python 0.3")
        report["send_state"] = task.status.state.value
        report["send_text"] = texts(task.status.message.parts)

        got = await blocking.get_task(TaskQueryParams(id=task.id))
        report["get_id_matches"] = got.id == task.id
        report["get_state"] = got.status.state.value

        (reply,) = await events(blocking, "message hi")
        report["reply_kind"] = reply.kind
        report["reply_text"] = texts(reply.parts)

        streamed = await events(streaming, "stream 3")
        updates = [update for _, update in streamed if update is not None]
        report["stream_update_kinds"] = [u.kind for u in updates]
        report["stream_last_final"] = bool(getattr(updates[-1], "final", False))
        report["stream_last_state"] = streamed[-1][0].status.state.value

        (waiting, _), = await events(
            blocking, "wait", MessageSendConfiguration(blocking=False, accepted_output_modes=[])
        )
        canceled = await blocking.cancel_task(TaskIdParams(id=waiting.id))
        report["cancel_state"] = canceled.status.state.value
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "JSONRPC"))
