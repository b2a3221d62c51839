"""What an A2A context keeps with its session (agentrt.a2a._index): its tasks' records,
how each ended, and which were forgotten, as JSON any process reads back."""

from __future__ import annotations

import time

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client
from a2a.helpers import new_text_part
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import TaskNotFoundError
from starlette.applications import Starlette

from agentrt import Agent, ScriptedModel
from agentrt.a2a._index import ContextIndex, TaskEnd, TaskRecord
from agentrt.a2a.server import A2AEndpoint
from agentrt.server.limits import ServerLimits
from agentrt.server.store import SessionStore

BASE = "http://agent.test"


def ended(at: float) -> TaskEnd:
    return TaskEnd(last=9, at=at, status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))


def test_a_task_that_ended_longer_than_session_ttl_ago_is_forgotten_and_said_so() -> None:
    index = ContextIndex(
        "context",
        {
            0: TaskRecord("run-0", end=ended(100.0)),
            10: TaskRecord("run-1", end=ended(600.0)),
            20: TaskRecord("run-2"),  # at work: never forgotten
        },
    )
    assert index.prune(now=1000.0, keep_for=500.0) == [0]
    assert sorted(index.tasks) == [10, 20]
    assert index.missing("s.0", 0) == (
        "no task 's.0': it ended more than session_ttl seconds before a later task of its "
        "context started, and is no longer kept"
    )
    assert index.missing("s.30", 30) == "no task 's.30'"
    # Read back by another process, it says the same.
    again = ContextIndex.from_json(index.to_json())
    assert again.missing("s.0", 0) == index.missing("s.0", 0)
    assert again.prune(now=1101.0, keep_for=500.0) == [10]


def test_the_index_keeps_the_clients_messages_and_ends_as_json_and_reads_the_first_form() -> None:
    message = Message(message_id="m-1", role=Role.ROLE_USER, parts=[new_text_part("hi")])
    index = ContextIndex("context", {0: TaskRecord("run-0", [(0, message)], ended(5.0))})
    again = ContextIndex.from_json(index.to_json())
    assert again == index
    assert index.until(0) is None
    # As the first release kept it: the run of each task, by number.
    first = ContextIndex.from_json({"context_id": "c", "tasks": {"0": "run-0", "12": "run-1"}})
    assert first.tasks == {0: TaskRecord("run-0"), 12: TaskRecord("run-1")}
    assert (first.until(0), first.unended()) == (12, [0, 12])


def make() -> Agent:
    return Agent(model=ScriptedModel(["one", "two", "three"]), name="counter")


async def send(client: Client, text: str, context_id: str = "") -> Task:
    message = Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[new_text_part(text)])
    message.context_id = context_id
    [response] = [r async for r in client.send_message(SendMessageRequest(message=message))]
    return response.task


async def test_a_new_task_forgets_the_contexts_tasks_that_ended_session_ttl_before() -> None:
    now = [time.time()]
    store = SessionStore(make, session_ttl=600)
    endpoint = A2AEndpoint(
        store,
        make,
        limits=ServerLimits(),
        max_body_size=100_000,
        token=False,
        clock=lambda: now[0],
    )
    transport = httpx.ASGITransport(app=Starlette(routes=endpoint.routes()))
    async with store, httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        client = await create_client(BASE, ClientConfig(streaming=False, httpx_client=http))
        async with client:
            first = await send(client, "a")
            second = await send(client, "b", first.context_id)
            # Ended a moment ago: kept.
            kept = await client.get_task(GetTaskRequest(id=first.id))
            now[0] += 601
            third = await send(client, "c", first.context_id)
            listed = await client.list_tasks(
                ListTasksRequest(context_id=first.context_id, include_artifacts=True)
            )
            with pytest.raises(TaskNotFoundError) as forgotten:
                await client.get_task(GetTaskRequest(id=second.id))
    assert kept.artifacts[0].parts[0].text == "one"
    assert [(t.id, t.artifacts[0].parts[0].text) for t in listed.tasks] == [(third.id, "three")]
    assert str(forgotten.value) == (
        f"no task {second.id!r}: it ended more than session_ttl seconds before a later task "
        "of its context started, and is no longer kept"
    )
