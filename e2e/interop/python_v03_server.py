"""An A2A 0.3 agent on the Python SDK's last 0.3 release, for interop tests
of the Rust client's 0.3 transport.

Usage: python_v03_server.py HTTP_PORT [BINDING]
BINDING is JSONRPC (the default), HTTP+JSON or GRPC: the one interface the
card offers (its `url` and `preferredTransport`). With GRPC the gRPC server
listens on a port of its own, and HTTP_PORT serves the card.
The first word of the message text says what to do (like e2e's ScriptedAgent):
`echo <text>`, `message <text>`, `stream <n>`, `wait`.
"""

import asyncio
import sys
import uuid

import grpc
import uvicorn

from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.grpc import a2a_pb2_grpc
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    Message,
    Part,
    Role,
    TextPart,
)
from a2a.utils import new_task


def text(value):
    return Part(root=TextPart(text=value))


class ScriptedAgent(AgentExecutor):
    async def execute(self, context, event_queue):
        command, _, rest = context.get_user_input().partition(" ")
        if command == "message":
            await event_queue.enqueue_event(
                Message(
                    role=Role.agent,
                    message_id=str(uuid.uuid4()),
                    context_id=context.context_id,
                    parts=[text(f"reply: {rest}")],
                )
            )
            return
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if command == "wait":
            await updater.start_work()
            await asyncio.sleep(60)
            await updater.complete()
        elif command == "stream":
            count = int(rest or "3")
            await updater.start_work()
            for i in range(count):
                await asyncio.sleep(0.02)
                await updater.add_artifact(
                    [text(f"chunk-{i} ")], artifact_id="stream", name="stream",
                    append=i > 0, last_chunk=i == count - 1,
                )
            await updater.complete()
        else:
            await updater.add_artifact([text(rest)], name="echo")
            await updater.complete(updater.new_agent_message([text(rest)]))

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


async def main(port: int, binding: str) -> None:
    grpc_server = None
    url = f"http://127.0.0.1:{port}/"
    if binding == "GRPC":
        grpc_server = grpc.aio.server()
        url = f"127.0.0.1:{grpc_server.add_insecure_port('127.0.0.1:0')}"
    card = AgentCard(
        preferred_transport=binding,
        name="python 0.3 peer",
        description="the Python SDK's last 0.3 release",
        url=url,
        version="1.0.0",
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="scripted", description="runs commands", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=ScriptedAgent(), task_store=InMemoryTaskStore())
    if binding == "HTTP+JSON":
        app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build()
    else:
        app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    if grpc_server is not None:
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(card, handler), grpc_server)
        await grpc_server.start()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "JSONRPC"))
