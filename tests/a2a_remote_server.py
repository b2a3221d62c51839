"""An A2A agent made of the official SDK's server pieces only, for agentrt's A2A client tests.

Run it as ``python -m tests.a2a_remote_server PORT``: uvicorn serves, on loopback, the
agent card of "ledger" at ``/.well-known/agent-card.json``, its JSON-RPC binding at
``/rpc``, and ``GET /log``: what the agent received, in order (each message's task, text
and data parts; each cancel). Its executor answers by the first word of a new task:

- ``hello``: streams ``Hello`` ``, `` ``world`` as appends to one artifact, completes;
- ``transfer``: streams ``Checking the transfer.``, then asks for input
  (``INPUT_REQUIRED``: a text part and a data part listing the call it waits on); the
  next message on the task gets ``approved: transferred`` or ``rejected: <reason>`` in
  a second artifact, and the task completes;
- ``wire``: as ``transfer``, but the answer's stream starts with the task as it stood,
  still asking (the SDK's stream ends there: the client must follow the task again);
- ``fail``: fails with ``the ledger is down``;
- ``slow``: streams ``working``, then works until cancelled;
- ``resume``: streams ``part one``, waits until a client subscribes to the task
  (``SubscribeToTask``), then streams `` and two`` on the same artifact and completes.
"""

import sys
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import uvicorn
from a2a.helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import Event, EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    SubscribeToTaskRequest,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

LOG: list[dict[str, Any]] = []
# The tasks of the "resume" scenario, by id: set when a client subscribes to one.
SUBSCRIBED: dict[str, anyio.Event] = {}
PENDING = {"tool_call_id": "remote-1", "name": "transfer", "arguments": '{"amount": 5}'}


class Ledger(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        LOG.append(
            {
                "task": task.id,
                "context": task.context_id,
                "text": get_text_parts(context.message.parts),
                "data": get_data_parts(context.message.parts),
            }
        )
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        waited = task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        if waited and get_text_parts(task.history[0].parts)[0].startswith("wire"):
            # As agentrt serve does: the task as it stood (still asking) comes first.
            await event_queue.enqueue_event(task)
        await updater.start_work()
        text = " ".join(get_text_parts(context.message.parts))
        if waited:
            answer = get_data_parts(context.message.parts)
            decision = answer[0]["decisions"][PENDING["tool_call_id"]] if answer else {}
            said = "approved: transferred"
            if text != "approve":
                said = f"rejected: {decision.get('reason', 'no reason')}"
            await updater.add_artifact([new_text_part(said)], artifact_id="outcome")
            await updater.complete()
        elif text.startswith("hello"):
            for index, piece in enumerate(["Hello", ", ", "world"]):
                await updater.add_artifact(
                    [new_text_part(piece)], artifact_id="answer", append=index > 0
                )
            await updater.complete()
        elif text.startswith(("transfer", "wire")):
            await updater.add_artifact([new_text_part("Checking the transfer.")])
            question = new_text_message(
                "Approve the transfer of 5 EUR?", context_id=task.context_id, task_id=task.id
            )
            question.parts.append(new_data_part({"pending": [PENDING]}))
            await updater.requires_input(question)
        elif text.startswith("fail"):
            await updater.failed(
                new_text_message("the ledger is down", task_id=task.id, context_id=task.context_id)
            )
        elif text.startswith("resume"):
            subscribed = SUBSCRIBED[task.id] = anyio.Event()
            await updater.add_artifact([new_text_part("part one")], artifact_id="parts")
            await subscribed.wait()
            await updater.add_artifact(
                [new_text_part(" and two")], artifact_id="parts", append=True
            )
            await updater.complete()
        elif text.startswith("slow"):
            await updater.add_artifact([new_text_part("working")])
            await anyio.sleep_forever()  # until CancelTask cancels this execution
        else:
            await updater.add_artifact([new_text_part(f"unknown: {text}")])
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        assert context.context_id is not None
        LOG.append({"cancelled": context.task_id})
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class Handler(DefaultRequestHandler):
    """The SDK's request handler; a subscription to a task lets its "resume" go on."""

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        LOG.append({"subscribed": params.id})
        events = super().on_subscribe_to_task(params, context)
        first = await anext(events)  # the task as it stands: the subscriber has it
        yield first
        if params.id in SUBSCRIBED:
            SUBSCRIBED[params.id].set()
        async for event in events:
            yield event


def app(port: int) -> Starlette:
    card = AgentCard(
        name="ledger",
        description="Keeps the books.",
        version="1.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/rpc",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="books", name="books", description="Keeps books.", tags=["books"])],
    )
    handler = Handler(Ledger(), InMemoryTaskStore(), card)

    async def log(request: Request) -> JSONResponse:
        return JSONResponse(LOG)

    return Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/rpc"),
            Route("/log", log, methods=["GET"]),
        ]
    )


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(app(port), host="127.0.0.1", port=port, log_level="info")
