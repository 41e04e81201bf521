"""An A2A agent on the official Python SDK, for interop tests of the Rust client.

Usage: python_server.py HTTP_PORT GRPC_PORT
The first word of the message text says what to do (like e2e's ScriptedAgent):
`echo <text>`, `input`, `message <text>`, `stream <n>`, `wait`.
"""

import asyncio
import sys
import uuid

import grpc.aio
import httpx
import uvicorn
from starlette.applications import Starlette

import a2a.types.a2a_pb2_grpc as a2a_grpc
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.routes.rest_routes import create_rest_routes
from a2a.server.tasks.base_push_notification_sender import BasePushNotificationSender
from a2a.server.tasks.inmemory_push_notification_config_store import InMemoryPushNotificationConfigStore
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
)


class ScriptedAgent(AgentExecutor):
    async def execute(self, context, event_queue):
        command, _, rest = context.get_user_input().partition(" ")
        if command == "message":
            reply = Message(
                role=Role.ROLE_AGENT,
                message_id=str(uuid.uuid4()),
                context_id=context.context_id or "",
                parts=[Part(text=f"reply: {rest}")],
            )
            await event_queue.enqueue_event(reply)
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if command == "input":
            await updater.requires_input(updater.new_agent_message([Part(text="more please")]))
        elif command == "wait":
            await updater.start_work()
            await asyncio.sleep(60)
            await updater.complete()
        elif command == "stream":
            count = int(rest or "3")
            await updater.start_work()
            for i in range(count):
                await asyncio.sleep(0.02)
                await updater.add_artifact(
                    [Part(text=f"chunk-{i} ")], artifact_id="stream", name="stream",
                    append=i > 0, last_chunk=i == count - 1,
                )
            await updater.complete()
        else:
            await updater.add_artifact([Part(text=rest)], name="echo")
            await updater.complete(updater.new_agent_message([Part(text=rest)]))

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


async def main(http_port: int, grpc_port: int) -> None:
    base = f"http://127.0.0.1:{http_port}"
    card = AgentCard(
        name="python peer",
        description="An agent on the official Python SDK",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="scripted", name="scripted", description="runs commands", tags=["test"])],
    )
    configs = InMemoryPushNotificationConfigStore()

    async def any_url(_url):
        return True

    handler = DefaultRequestHandler(
        agent_executor=ScriptedAgent(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=configs,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(), configs),
        push_url_validator=any_url,
    )
    routes = (
        create_agent_card_routes(card)
        + create_jsonrpc_routes(handler, "/")
        + create_rest_routes(handler)
    )
    app = Starlette(routes=routes)
    grpc_server = grpc.aio.server()
    a2a_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
    grpc_server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    await grpc_server.start()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=http_port, log_level="warning"))
    print("ready", flush=True)
    await server.serve()
    await grpc_server.stop(0)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
