"""A2A tasks in a durable store, through the official client (``a2a-sdk``), real processes.

``agentrt serve tests.durable.server_app:make`` on SQLite and on Postgres: a server killed
(``kill -9``) in the middle of a task and started again shows the task, and a
SubscribeToTask follows it to ``COMPLETED`` without running a completed tool call again;
two servers on one Postgres database: a task sent to one is read, followed, answered and
cancelled through the other.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client
from a2a.helpers import get_data_parts, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from agentrt.a2a.server import CANCELLED_BY_A2A
from agentrt.server import create_app

from .conftest import STARTUP_LIMIT, ServerProcess, Servers

pytestmark = pytest.mark.durable


@asynccontextmanager
async def a2a_client(server: ServerProcess, *, streaming: bool = True) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=60) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        client = await create_client(server.url, config)
        async with client:
            yield client


def send(text: str, *, task: Task | None = None, at_once: bool = False) -> SendMessageRequest:
    message = Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[new_text_part(text)])
    if task is not None:
        message.task_id = task.id
    request = SendMessageRequest(message=message)
    if at_once:
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    return request


async def responses(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    with anyio.fail_after(STARTUP_LIMIT):
        return [response async for response in client.send_message(request)]


def state(task: Task) -> str:
    return TaskState.Name(task.status.state).removeprefix("TASK_STATE_")


def wait_for_lines(servers: Servers, name: str, count: int) -> None:
    """Wait until a tool wrote ``count`` lines to ``name`` (a bounded poll of a file)."""
    deadline = time.monotonic() + STARTUP_LIMIT
    while len(servers.lines(name)) < count:
        assert time.monotonic() < deadline, f"{name}: {servers.lines(name)}"
        time.sleep(0.02)


async def follow_after_opening_the_gate(
    client: Client, servers: Servers, task_id: str
) -> list[StreamResponse]:
    """SubscribeToTask: the task as it stands, then (the slow tool let go) the rest."""
    followed: list[StreamResponse] = []
    with anyio.fail_after(STARTUP_LIMIT):
        async for response in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            followed.append(response)
            if len(followed) == 1:
                (servers.workdir / "slow.open").write_text("open")
    return followed


def text_of(followed: list[StreamResponse]) -> str:
    return "".join(
        part.text
        for response in followed
        if response.HasField("artifact_update")
        for part in response.artifact_update.artifact.parts
    )


async def _killed_mid_task_then_followed_to_the_end(servers: Servers) -> None:
    first = servers.start("exec-a", block=True)
    async with a2a_client(first, streaming=False) as client:
        [sent] = await responses(client, send("tools", at_once=True))
    task = sent.task
    servers.wait_for("slow.started")
    servers.kill(first)
    again = servers.start("exec-a", gate=True)
    # The recovered run is back in the slow tool (cut off, so it runs again), held there.
    wait_for_lines(servers, "slow.started", 2)
    async with a2a_client(again) as client:
        read = await client.get_task(GetTaskRequest(id=task.id))
        assert state(read) == "WORKING"
        assert [get_data_parts(m.parts)[0]["type"] for m in read.history[1:]] == [
            "tool_call",
            "tool_call_response",
            "tool_call",
        ]
        followed = await follow_after_opening_the_gate(client, servers, task.id)
        done = await client.get_task(GetTaskRequest(id=task.id))
    assert followed[0].task.id == task.id
    assert TaskState.Name(followed[-1].status_update.status.state) == "TASK_STATE_COMPLETED"
    assert text_of(followed) == "all done: first done (1); slow done (3)"
    assert state(done) == "COMPLETED"
    assert done.artifacts[-1].parts[0].text == "all done: first done (1); slow done (3)"
    # The first tool completed before the crash: it never ran again.
    assert servers.lines("first.count") == ["1"]


async def test_a_task_cut_by_kill_9_is_read_and_followed_to_completed_after_restart_sqlite(
    sqlite_servers: Servers,
) -> None:
    await _killed_mid_task_then_followed_to_the_end(sqlite_servers)


async def test_a_task_cut_by_kill_9_is_read_and_followed_to_completed_after_restart_postgres(
    postgres_servers: Servers,
) -> None:
    await _killed_mid_task_then_followed_to_the_end(postgres_servers)


async def test_a_task_sent_to_one_server_is_read_answered_followed_and_cancelled_on_another(
    postgres_servers: Servers,
) -> None:
    servers = postgres_servers
    a = servers.start("exec-a", gate=True)
    b = servers.start("exec-b")
    async with a2a_client(a) as on_a, a2a_client(b) as on_b:
        # A confirmation asked on A, answered through B; A runs the tool once.
        asked = await responses(on_a, send("confirm"))
        task = asked[0].task
        assert TaskState.Name(asked[-1].status_update.status.state) == (
            "TASK_STATE_INPUT_REQUIRED"
        )
        read = await on_b.get_task(GetTaskRequest(id=task.id))
        assert state(read) == "INPUT_REQUIRED"
        rest = await responses(on_b, send("approve", task=task))
        assert TaskState.Name(rest[-1].status_update.status.state) == "TASK_STATE_COMPLETED"
        assert text_of(rest) == "all done: deleted notes.txt"
        assert servers.lines("delete.count") == ["notes.txt"]
        listed = await on_b.list_tasks(ListTasksRequest(context_id=task.context_id))
        assert [(t.id, state(t)) for t in listed.tasks] == [(task.id, "COMPLETED")]
        # Its history, read on A: the client's messages (sent to A, then to B) as sent.
        read = await on_a.get_task(GetTaskRequest(id=task.id))
        assert [(m.message_id, Role.Name(m.role)) for m in read.history] == [
            ("m-confirm", "ROLE_USER"),
            (f"{task.id}.input-1", "ROLE_AGENT"),
            ("m-approve", "ROLE_USER"),
            (f"{task.id}.tool_call-2", "ROLE_AGENT"),
            (f"{task.id}.tool_call_response-3", "ROLE_AGENT"),
            (f"{task.id}.text-1", "ROLE_AGENT"),
        ]
        last = await on_a.get_task(GetTaskRequest(id=task.id, history_length=1))
        assert [m.parts[0].text for m in last.history] == ["all done: deleted notes.txt"]

        # A task at work on A, followed through B to its end.
        following = send("tools", at_once=True)
        following.message.context_id = task.context_id
        async with a2a_client(a, streaming=False) as sender:
            [sent] = await responses(sender, following)
        servers.wait_for("slow.started")
        followed = await follow_after_opening_the_gate(on_b, servers, sent.task.id)
        assert TaskState.Name(followed[-1].status_update.status.state) == ("TASK_STATE_COMPLETED")

        # A task at work on A (held in the slow tool), cancelled through B.
        (servers.workdir / "slow.open").unlink()
        third = send("tools", at_once=True)
        third.message.context_id = task.context_id
        async with a2a_client(a, streaming=False) as sender:
            [held] = await responses(sender, third)
        wait_for_lines(servers, "slow.started", 2)
        with anyio.fail_after(STARTUP_LIMIT):
            cancelled = await on_b.cancel_task(CancelTaskRequest(id=held.task.id))
        assert state(cancelled) == "CANCELED"
        assert cancelled.status.message.parts[0].text == CANCELLED_BY_A2A
        seen_by_a = await on_a.get_task(GetTaskRequest(id=held.task.id))
        assert state(seen_by_a) == "CANCELED"


async def test_list_tasks_without_a_context_lists_the_stores_tasks_from_any_server(
    postgres_servers: Servers,
) -> None:
    servers = postgres_servers
    a = servers.start("exec-a")
    b = servers.start("exec-b")
    async with a2a_client(a) as on_a, a2a_client(b) as on_b:
        # Three contexts, a task each: two sent to A (one waits for an answer), one to B.
        first = (await responses(on_a, send("long 3")))[0].task
        waiting = (await responses(on_a, send("confirm")))[0].task
        latest = (await responses(on_b, send("long 2")))[0].task
        for client in (on_a, on_b):
            listed = await client.list_tasks(ListTasksRequest())
            assert [(t.id, state(t)) for t in listed.tasks] == [
                (latest.id, "COMPLETED"),
                (waiting.id, "INPUT_REQUIRED"),
                (first.id, "COMPLETED"),
            ]
            assert (listed.total_size, listed.next_page_token) == (3, "")
            asking = await client.list_tasks(
                ListTasksRequest(status=TaskState.TASK_STATE_INPUT_REQUIRED)
            )
            assert [t.id for t in asking.tasks] == [waiting.id]
            assert asking.total_size == 1
            one = await client.list_tasks(ListTasksRequest(page_size=2))
            assert [t.id for t in one.tasks] == [latest.id, waiting.id]
            assert one.next_page_token
            two = await client.list_tasks(
                ListTasksRequest(page_size=2, page_token=one.next_page_token)
            )
            assert [t.id for t in two.tasks] == [first.id]
            assert (two.total_size, two.next_page_token) == (3, "")
        with_text = await on_b.list_tasks(ListTasksRequest(include_artifacts=True))
        assert [t.artifacts[-1].parts[0].text for t in with_text.tasks if t.artifacts] == [
            "d0 d1 ",
            "d0 d1 d2 ",
        ]


async def test_a_task_whose_events_left_the_durable_log_says_how_it_ended_after_a_restart(
    tmp_path: Path,
) -> None:
    from tests.durable.test_durable_server import make

    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    base = "http://127.0.0.1"

    @asynccontextmanager
    async def in_process() -> AsyncIterator[Client]:
        app = create_app(make, storage=store, executor_id="in-process", retain=3)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=base) as http,
        ):
            config = ClientConfig(streaming=False, httpx_client=http)
            async with await create_client(base, config) as client:
                yield client

    async with in_process() as client:
        [sent] = await responses(client, send("hello"))
        first = sent.task
        following = send("again")
        following.message.context_id = first.context_id
        await responses(client, following)
    # Another server on the store: the first task's events are gone, its end is kept.
    async with in_process() as client:
        read = await client.get_task(GetTaskRequest(id=first.id))
    assert state(read) == "COMPLETED"
    assert read.status.timestamp == first.status.timestamp
    assert MessageToDict(read.metadata)["agentrt"]["partial"] == (
        "its events are no longer kept (a session keeps its retain latest): this is its end"
    )
    assert [m.message_id for m in read.history] == ["m-hello"]
