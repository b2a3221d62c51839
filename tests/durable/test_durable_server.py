"""The server on a durable SQLite store, in process: routes, errors, and a restart.

The app runs with its lifespan (which launches DBOS on the store) and is called
through ``httpx.ASGITransport``; a restart is the app shut down and a new one started
on the same store. Crashes (``kill -9``) are in test_server_crash.py, with real
processes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from agentrt.agent import Agent
from agentrt.cli import main
from agentrt.durable import StoreUnavailableError
from agentrt.messages import ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptedModel
from agentrt.server import create_app
from agentrt.server.agui import thread_session_id
from agentrt.server.backend import EncodedEvent
from agentrt.server.durable import DurableBackend, check_storage
from agentrt.server.store import SessionStore
from agentrt.stream.codec import SequencedEvent, SSEEventDecoder, encode_sse
from agentrt.stream.events import ErrorEvent
from agentrt.stream.validate import validate
from agentrt.testing import server_cancellation_violations
from agentrt.tools import tool
from tests.test_cancellation_points import AGAIN, SCENARIOS, Agents, Scenario

BASE = "http://localhost"
CALLS: list[str] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.append(f"add {a} {b}")
    return a + b


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call)."""
    CALLS.append(f"delete {path}")
    return f"deleted {path}"


def decide(request: ModelRequest) -> str | ToolCall:
    """From the run's own messages only: the same in every process."""
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    prompt = request.messages[last_user].content
    done = [m.content for m in request.messages[last_user:] if m.role == "tool"]
    turn = sum(1 for m in request.messages if m.role == "user")
    if prompt == "add" and not done:
        return ToolCall(id=f"add-{turn}", name="add", arguments={"a": 2, "b": 3})
    if prompt == "delete" and not done:
        return ToolCall(id=f"del-{turn}", name="delete_file", arguments={"path": "x"})
    return "done: " + "; ".join(done)


def make() -> Agent:
    # Chunks of 1000: one delta per answer, one fragment per tool call.
    return Agent(model=ScriptedModel(decide, chunk_size=1000), tools=[add, delete_file])


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@contextlib.asynccontextmanager
async def served(store: str, **options: Any) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
    app = create_app(make, storage=store, executor_id="in-process", **options)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        yield app, client


def _events(body: bytes) -> list[SequencedEvent]:
    return SSEEventDecoder().feed(body)


def _store(app: Starlette) -> SessionStore:
    store = app.state.sessions
    assert isinstance(store, SessionStore)
    return store


def _backend(app: Starlette) -> DurableBackend:
    backend = _store(app).backend
    assert isinstance(backend, DurableBackend)
    return backend


async def _until(
    app: Starlette, session_id: str, accept: Callable[[SequencedEvent], bool]
) -> list[SequencedEvent]:
    """Follow the session's log until an event ``accept`` takes."""
    session = await _store(app).open(session_id)
    seen: list[SequencedEvent] = []
    async with contextlib.aclosing(session.follow(0)) as batches:
        async for batch in batches:
            for item in batch:
                seen.append(item)
                if accept(item):
                    return seen
    raise AssertionError(f"the log ended first: {seen}")


async def test_a_run_is_one_valid_stream_read_again_from_the_store(store_url: str) -> None:
    async with served(store_url) as (_, client):
        session = (await client.post("/sessions")).json()["id"]
        posted = await client.post(f"/sessions/{session}/messages", json={"message": "add"})
        read = await client.get(f"/sessions/{session}/events?after=0")
        tail = await client.get(f"/sessions/{session}/events?after=3")
        messages = (await client.get(f"/sessions/{session}/messages")).json()["messages"]

    events = _events(posted.content)
    assert [event.type for _, event in events] == [
        "user_message",
        "stream_started",
        "partial_tool_call",
        "token_usage",
        "tool_call",
        "tool_call_response",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    assert [sequence for sequence, _ in events] == list(range(1, 10))
    assert validate([event for _, event in events]) == []
    assert _events(read.content) == events
    assert _events(tail.content) == events[3:]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert CALLS == ["add 2 3"]


async def test_an_event_stream_sends_each_events_stored_json_without_parsing_it(
    store_url: str,
) -> None:
    async with served(store_url) as (app, client):
        session_id = (await client.post("/sessions")).json()["id"]
        posted = await client.post(f"/sessions/{session_id}/messages", json={"message": "add"})
        read = await client.get(f"/sessions/{session_id}/events?after=0")
        log = (await _store(app).open(session_id)).log
        models = await log.read(0, 100)
        encoded = await log.read_encoded(0, 100)

    # The store holds each event as its serializer wrote it: an event stream sends that,
    # byte for byte what encode_sse writes for the model it reads back as.
    assert [type(item) for item in encoded] == [EncodedEvent] * len(models) == [EncodedEvent] * 9
    frames = b"".join(encode_sse(item.event, sequence=item.sequence) for item in models)
    assert b"".join(item.sse() for item in encoded if isinstance(item, EncodedEvent)) == frames
    assert read.content == posted.content == frames


async def test_a_pending_confirmation_survives_a_restart_and_the_tool_runs_once(
    store_url: str,
) -> None:
    async with served(store_url) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        store = _store(app)
        await (await store.open(session)).start("delete")
        asked = await _until(
            app, session, lambda item: item.event.type == "tool_call_confirmation"
        )
    # Shut down while it waits: the run stays in the store, to recover.
    async with served(store_url) as (app, client):
        answered = await client.post(
            f"/sessions/{session}/confirmations/del-1", json={"decision": "approve"}
        )
        rest = await _until(app, session, lambda item: item.event.type == "stream_stopped")
        messages = (await client.get(f"/sessions/{session}/messages")).json()["messages"]

    assert answered.status_code == 200
    assert rest[: len(asked)] == asked
    assert [event.type for _, event in rest[len(asked) :]] == [
        "tool_call",
        "tool_call_response",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    assert validate([event for _, event in rest]) == []
    assert CALLS == ["delete x"]
    assert messages[-1]["content"] == "done: deleted x"


async def test_the_errors_of_a_durable_session_are_those_of_a_memory_one(store_url: str) -> None:
    async with served(store_url, max_sessions=2, retain=5) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        unknown = await client.post(
            f"/sessions/{session}/confirmations/nope", json={"decision": "approve"}
        )
        no_run = await client.delete(f"/sessions/{session}/run")
        store = _store(app)
        await (await store.open(session)).start("delete")
        await _until(app, session, lambda item: item.event.type == "tool_call_confirmation")
        busy = await client.post(f"/sessions/{session}/messages", json={"message": "add"})
        invalid = await client.post(
            f"/sessions/{session}/confirmations/del-1", json={"decision": "maybe"}
        )
        first = await client.post(
            f"/sessions/{session}/confirmations/del-1", json={"decision": "reject"}
        )
        second = await client.post(
            f"/sessions/{session}/confirmations/del-1", json={"decision": "approve"}
        )
        await _until(app, session, lambda item: item.event.type == "stream_stopped")
        ended = await client.post(
            f"/sessions/{session}/confirmations/del-1", json={"decision": "approve"}
        )
        beyond = await client.get(f"/sessions/{session}/events?after=99")
        expired = await client.get(f"/sessions/{session}/events?after=0")
        await client.post("/sessions")
        full = await client.post("/sessions")
        deleted = await client.delete(f"/sessions/{session}")
        gone = await client.get(f"/sessions/{session}/messages")

    codes = [
        (response.status_code, response.json()["error"]["code"])
        for response in (
            unknown,
            no_run,
            busy,
            invalid,
            second,
            ended,
            beyond,
            expired,
            full,
            gone,
        )
    ]
    assert codes == [
        (404, "unknown_tool_call"),
        (409, "no_run"),
        (409, "run_in_progress"),
        (422, "invalid_decision"),
        (409, "already_answered"),
        (409, "run_ended"),
        (422, "invalid_after"),
        (410, "events_expired"),
        (503, "session_limit"),
        (404, "session_not_found"),
    ]
    assert first.status_code == 200
    assert deleted.status_code == 204
    assert CALLS == []  # rejected: the tool never ran
    # Sessions here survive a restart: the answer does not say they are lost in one.
    assert "restart" not in gone.json()["error"]["message"]


async def test_a_run_cancelled_while_it_waits_ends_with_an_error_and_is_not_recovered(
    store_url: str,
) -> None:
    async with served(store_url) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        store = _store(app)
        await (await store.open(session)).start("delete")
        await _until(app, session, lambda item: item.event.type == "tool_call_confirmation")
        cancelled = await client.delete(f"/sessions/{session}/run")
        events = await _until(app, session, lambda item: item.event.type == "stream_stopped")
    async with served(store_url) as (app, client):
        again = await client.get(f"/sessions/{session}/events?after=0")
        after = await client.post(f"/sessions/{session}/messages", json={"message": "add"})

    assert cancelled.status_code == 202
    assert [event.type for _, event in events][-4:] == [
        "tool_call",
        "tool_call_response",
        "error",
        "stream_stopped",
    ]
    assert _events(again.content) == events
    assert _events(after.content)[0][0] == len(events) + 1
    assert CALLS == ["add 2 3"]


async def test_a_deleted_session_cancels_its_run(store_url: str) -> None:
    async with served(store_url) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        store = _store(app)
        opened = await store.open(session)
        run = await opened.start("delete")
        await _until(app, session, lambda item: item.event.type == "tool_call_confirmation")
        deleted = await client.delete(f"/sessions/{session}")
        with anyio.fail_after(10):
            await run.done.wait()
        gone = await client.get(f"/sessions/{session}/events")

    assert deleted.status_code == 204
    assert run.cancelled_because == "cancelled: the session was closed before the run finished"
    assert gone.status_code == 404


def test_a_store_that_cannot_be_used_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match="/proc/no-such-dir"):
        check_storage("sqlite:////proc/no-such-dir/store.sqlite")
    with pytest.raises(StoreUnavailableError, match=r"ada:\*\*\*@127.0.0.1:1") as caught:
        check_storage("postgresql://ada:secret@127.0.0.1:1/runs")
    assert "secret" not in str(caught.value)
    with pytest.raises(ValueError, match="storage must be"):
        create_app(make, storage="mysql://nope")
    with pytest.raises(ValueError, match="executor_id names a process of a durable store"):
        create_app(make, executor_id="a")


def test_serve_names_the_file_of_a_relative_sqlite_store_and_why_it_cannot_be_opened(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = "sqlite:///var/lib/agentrt/runs.sqlite"
    code = main(["serve", "tests.durable.server_app:make", "--store", store])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"agentrt serve: the durable store {store} (the file "
        f"{tmp_path / 'var/lib/agentrt/runs.sqlite'}) cannot be used: unable to open "
        f"database file (the directory {tmp_path / 'var/lib/agentrt'} does not exist); "
        "sqlite:///PATH (three slashes) is relative, sqlite:////PATH absolute\n"
    )
    assert not (tmp_path / "var").exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--store", "sqlite:////proc/no-such-dir/s.sqlite"], "cannot be used"),
        (["--store", "mysql://x"], "--store must be memory, sqlite:///PATH or postgresql://"),
        (["--store", "memory", "--executor-id", "a"], "--executor-id names a process"),
        (["--executor-id", " "], "--executor-id must not be empty"),
    ],
    ids=["unwritable", "unknown", "memory-with-executor", "empty-executor"],
)
def test_serve_with_a_bad_store_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    code = main(["serve", "tests.durable.server_app:make", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert said in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_a_durable_run_cancelled_after_every_event_keeps_the_contract(
    scenario: Scenario, store_url: str
) -> None:
    agents = Agents(scenario)
    problems = await server_cancellation_violations(agents, "go", then=AGAIN, storage=store_url)
    assert problems == []
    # One answered run after each cancelled one: a cancelled run leaves nothing running.
    assert agents.afterwards >= 6


async def test_a_run_opened_but_never_started_is_closed_when_its_executor_starts_again(
    store_url: str,
) -> None:
    async with served(store_url) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        backend = _backend(app)
        # As if the process died between opening the run and starting its workflow.
        opened = await backend.call(
            backend.storage.open_run, session, "never-started", "in-process"
        )
        assert opened is not None
    async with served(store_url) as (app, client):
        ended = await _until(app, session, lambda item: item.event.type == "stream_stopped")
        after = await client.post(f"/sessions/{session}/messages", json={"message": "add"})

    assert [event.type for _, event in ended] == ["error", "stream_stopped"]
    error = ended[0].event
    assert isinstance(error, ErrorEvent)
    assert error.error == "the server stopped before this run could finish"
    assert _events(after.content)[0][0] == 3


async def test_a_run_of_a_dead_process_cancelled_here_is_closed_here(store_url: str) -> None:
    async with served(store_url) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        backend = _backend(app)
        # A run another process opened, and died with.
        await backend.call(backend.storage.open_run, session, "orphan", "dead-process")
        cancelled = await client.delete(f"/sessions/{session}/run")
        # Its process never answers: after a grace period this one closes the run.
        ended = await _until(app, session, lambda item: item.event.type == "stream_stopped")

    assert cancelled.status_code == 202
    assert [event.type for _, event in ended] == ["error", "stream_stopped"]
    error = ended[0].event
    assert isinstance(error, ErrorEvent)
    assert error.error.startswith("cancelled: DELETE /sessions/{id}/run")


async def test_ag_ui_threads_are_sessions_of_the_durable_store(store_url: str) -> None:
    # A frontend tool's call ends the run waiting: the thread is in the store between
    # the two requests, as every session of a durable server.
    from ag_ui.core import ToolMessage

    from tests.test_server_agui import COLOR, ag_ui, make_agent, story_of_ag_ui, user

    app = create_app(make_agent, storage=store_url, executor_id="in-process")
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        tools = [COLOR.model_dump(by_alias=True)]
        first = await ag_ui(client, "t", [user("u1", "Change the color.")], tools=tools)
        assert [first[0]["type"], first[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"]
        (call_id,) = first[-1]["outcome"]["pendingToolCallIds"]
        result = ToolMessage(id="r1", tool_call_id=call_id, content="teal now")
        second = await ag_ui(client, "t", [result.model_dump(by_alias=True)], tools=tools)
        assert story_of_ag_ui(second) == [("text", "Done: teal now")]
        assert second[-1]["outcome"] == {"type": "success"}
        # The thread is a session of the durable store, its conversation stored.
        session = thread_session_id("t")
        stored = (await client.get(f"/sessions/{session}/messages")).json()["messages"]
        assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]


async def test_the_cap_on_runs_at_once_counts_ag_ui_threads_and_durable_sessions_together(
    store_url: str,
) -> None:
    from agentrt.server.limits import ServerLimits
    from tests.test_server_agui import user

    async with served(store_url, limits=ServerLimits(max_runs=1)) as (app, client):
        session = (await client.post("/sessions")).json()["id"]
        store = _store(app)
        # A durable run waiting for a confirmation is a run in progress.
        await (await store.open(session)).start("delete")
        await _until(app, session, lambda item: item.event.type == "tool_call_confirmation")
        refused = await client.post(
            "/ag-ui", json={"threadId": "t", "runId": "r", "messages": [user("u1", "add")]}
        )
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_runs"


@pytest.mark.parametrize("storage", ["memory", "durable"])
async def test_the_messages_of_a_session_are_the_same_whatever_keeps_them(
    storage: str, store_url: str
) -> None:
    def instructed() -> Agent:
        agent = make()
        agent.instructions = "Add numbers."
        return agent

    app = create_app(
        instructed,
        storage=store_url if storage == "durable" else "memory",
        executor_id="in-process" if storage == "durable" else None,
    )
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        session = (await client.post("/sessions")).json()["id"]
        await client.post(f"/sessions/{session}/messages", json={"message": "add"})
        messages = (await client.get(f"/sessions/{session}/messages")).json()["messages"]

    # The agent's instructions included: as the live conversation has them.
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "Add numbers."),
        ("user", "add"),
        ("assistant", ""),
        ("tool", "5"),
        ("assistant", "done: 5"),
    ]
