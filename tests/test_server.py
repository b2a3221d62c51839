"""The HTTP/SSE server: every route and error code, resumption, confirmations, isolation.

Most tests call the app in process through ``httpx.ASGITransport``, which returns a
response once the app has finished it; the tests that read a run while it waits
(confirmations, heartbeats, disconnects) use a real uvicorn server on loopback.
Nothing sleeps to synchronize: the tests wait on the SSE stream itself, or on a
tool that holds its run at a gate the test opens.
"""

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from agentrt import Agent, AgentEvents, ScriptedModel, Tool, ToolCall, tool
from agentrt.messages import AssistantMessage, ToolMessage
from agentrt.models.scripted import ScriptItem
from agentrt.server import (
    AgentServer,
    SessionNotFoundError,
    SessionStore,
    StoreNotRunningError,
    create_app,
    make_server,
)
from agentrt.stream import (
    AgentChoiceEvent,
    ErrorEvent,
    ToolCallConfirmationEvent,
    ToolCallResponseEvent,
    UserMessageEvent,
    validate,
)
from agentrt.stream.codec import SequencedEvent, SSEEventDecoder
from agentrt.stream.events import StreamEvent
from agentrt.stream.parse import UnknownEvent

BASE = "http://localhost"
E = TypeVar("E")


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call).

    Args:
        path: The file.
    """
    return f"deleted {path}"


class Gate:
    """A tool that holds its run until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.opened = anyio.Event()

        async def wait_for_gate() -> str:
            """Wait for the gate."""
            self.entered.set()
            await self.opened.wait()
            return "through"

        self.tool: Tool[Any, Any] = Tool.of(wait_for_gate)

    def script(self, call_id: str = "gate-1") -> list[ScriptItem]:
        return [ToolCall(id=call_id, name="wait_for_gate"), "after the gate"]


ADD_SCRIPT: list[ScriptItem] = [
    ToolCall(id="call-add", name="add", arguments={"a": 1, "b": 2}),
    "1 + 2 = 3",
]


def confirm_script(call_id: str = "call-del") -> list[ScriptItem]:
    return [
        ToolCall(id=call_id, name="delete_file", arguments={"path": "notes.txt"}),
        "done with the file",
    ]


def factory_of(
    script: Sequence[ScriptItem] | Callable[[], Sequence[ScriptItem]],
    *,
    extra_tools: Sequence[Tool[Any, Any]] = (),
    chunk_size: int = 8,
) -> Callable[[], Agent]:
    """An agent factory: each session's agent answers from its own copy of ``script``."""

    def make() -> Agent:
        items = script() if callable(script) else script
        model = ScriptedModel(list(items), chunk_size=chunk_size)
        return Agent(model=model, tools=[add, delete_file, *extra_tools], strict=True)

    return make


@asynccontextmanager
async def in_process(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan running, and a client calling it in process."""
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        yield client


@asynccontextmanager
async def real_server(
    factory: Callable[[], Agent], **options: Any
) -> AsyncIterator[tuple[AgentServer, httpx.AsyncClient]]:
    """A uvicorn server on a free loopback port (the system picks it), and a client."""
    server = make_server(factory, port=0, log_level="warning", **options)
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve()
        finally:
            stopped.set()

    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        with anyio.fail_after(10):
            await server.ready.wait()
        assert server.started
        base = f"http://127.0.0.1:{server.port}"
        try:
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:
                yield server, client
        finally:
            # A graceful stop even when the test failed: uvicorn closes its sockets.
            server.should_exit = True
            with anyio.move_on_after(10, shield=True):
                await stopped.wait()


class SSEReader:
    """Reads an SSE response event by event, keeping the raw bytes."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.decoder = SSEEventDecoder()
        self.events: list[SequencedEvent] = []
        self.raw = bytearray()
        self._chunks = cast("AsyncGenerator[bytes, None]", response.aiter_bytes())

    async def _more(self) -> bool:
        try:
            chunk = await anext(self._chunks)
        except StopAsyncIteration:
            self.events += self.decoder.close()
            return False
        self.raw += chunk
        self.events += self.decoder.feed(chunk)
        return True

    async def until(self, event_type: str) -> SequencedEvent:
        """Read until an event of this type arrived; return it."""
        seen = 0
        while True:
            for item in self.events[seen:]:
                if item.event.type == event_type:
                    return item
            seen = len(self.events)
            if not await self._more():
                raise AssertionError(f"the stream ended without a {event_type!r} event")

    async def until_raw(self, marker: bytes, start: int = 0) -> None:
        """Read until ``marker`` occurs in the raw bytes after ``start``."""
        while marker not in self.raw[start:]:
            if not await self._more():
                raise AssertionError(f"the stream ended without {marker!r}")

    async def rest(self) -> list[SequencedEvent]:
        """Read to the end; return every event read."""
        while await self._more():
            pass
        return self.events

    async def aclose(self) -> None:
        await self._chunks.aclose()


def decode(body: bytes) -> list[SequencedEvent]:
    decoder = SSEEventDecoder()
    return decoder.feed(body) + decoder.close()


def types(events: Sequence[SequencedEvent]) -> list[str]:
    return [item.event.type for item in events]


def known(events: Sequence[SequencedEvent]) -> list[StreamEvent]:
    """The events of our own server's stream: none may be of an unknown type."""
    found = [item.event for item in events]
    assert not [event for event in found if isinstance(event, UnknownEvent)]
    return cast("list[StreamEvent]", found)


def only(events: Sequence[SequencedEvent], kind: type[E]) -> list[E]:
    return [item.event for item in events if isinstance(item.event, kind)]


def text_of(events: Sequence[SequencedEvent]) -> str:
    return "".join(event.content for event in only(events, AgentChoiceEvent))


def tool_responses(events: Sequence[SequencedEvent]) -> list[str]:
    return [event.response for event in only(events, ToolCallResponseEvent)]


def store_of(app: Starlette) -> SessionStore:
    store = app.state.sessions
    assert isinstance(store, SessionStore)
    return store


async def new_session(client: httpx.AsyncClient) -> str:
    response = await client.post("/sessions")
    assert response.status_code == 201, response.text
    session_id = response.json()["id"]
    assert isinstance(session_id, str)
    return session_id


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"}
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    assert "Traceback" not in response.text
    code = body["error"]["code"]
    assert isinstance(code, str)
    return code


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert error_code(response) == code


def assert_consistent(agent: Agent) -> None:
    """Every tool call of the conversation has its tool message."""
    answered = {m.tool_call_id for m in agent.messages if isinstance(m, ToolMessage)}
    for message in agent.messages:
        if isinstance(message, AssistantMessage):
            assert {call.id for call in message.tool_calls} <= answered


# -- sessions and runs --------------------------------------------------------------------


async def test_create_session_returns_an_unguessable_id() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        first = await client.post("/sessions")
        second = await client.post("/sessions", json={})
    assert first.status_code == second.status_code == 201
    ids = {first.json()["id"], second.json()["id"]}
    assert len(ids) == 2
    # secrets.token_urlsafe(24): 32 URL-safe characters, 192 random bits.
    assert all(len(i) == 32 for i in ids)
    assert first.headers["location"] == f"/sessions/{first.json()['id']}"


async def test_post_message_streams_the_run_as_sse() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    events = decode(response.content)
    assert [item.sequence for item in events] == list(range(1, len(events) + 1))
    assert types(events)[:2] == ["user_message", "stream_started"]
    assert types(events)[-1] == "stream_stopped"
    assert "tool_call_response" in types(events)
    assert {event.session_id for event in known(events)} == {session_id}
    assert validate([item.event for item in events]) == []
    # Each frame names its type and sequence number.
    assert response.content.startswith(b"event: user_message\nid: 1\ndata: {")


async def test_async_agent_factories_are_awaited() -> None:
    async def make() -> Agent:
        return factory_of(["hello"])()

    app = create_app(make)
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", json={"message": "hi"})
    assert text_of(decode(response.content)) == "hello"


async def test_get_messages_returns_the_conversation() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        empty = await client.get(f"/sessions/{session_id}/messages")
        await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
        response = await client.get(f"/sessions/{session_id}/messages")
    assert empty.json() == {"messages": []}
    messages = response.json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == "1+2?"
    assert messages[1]["tool_calls"][0] == {
        "id": "call-add",
        "name": "add",
        "arguments": '{"a": 1, "b": 2}',
    }
    assert messages[2]["content"] == "3"
    assert messages[3]["content"] == "1 + 2 = 3"


async def test_events_replay_from_after_or_last_event_id_across_runs() -> None:
    app = create_app(factory_of([*ADD_SCRIPT, "again"]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        url = f"/sessions/{session_id}/events"
        nothing_yet = await client.get(url)
        first = decode(
            (await client.post(f"/sessions/{session_id}/messages", json={"message": "a"})).content
        )
        second = decode(
            (await client.post(f"/sessions/{session_id}/messages", json={"message": "b"})).content
        )
        everything = decode((await client.get(url)).content)
        after_3 = decode((await client.get(url, params={"after": 3})).content)
        # The header wins over the query: EventSource reconnects to its first URL.
        header = decode(
            (await client.get(url, params={"after": 1}, headers={"Last-Event-ID": "5"})).content
        )
        caught_up = await client.get(url, params={"after": everything[-1].sequence})
    assert nothing_yet.status_code == 200
    assert nothing_yet.content == b""
    # One numbering for the whole session: the second run goes on from the first.
    assert second[0].sequence == first[-1].sequence + 1
    assert everything == first + second
    assert after_3 == everything[3:]
    assert header == everything[5:]
    assert caught_up.status_code == 200
    assert caught_up.content == b""


async def test_a_failing_run_is_an_error_event_and_the_session_goes_on() -> None:
    app = create_app(factory_of([RuntimeError("the model broke"), "recovered"]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        failed = await client.post(f"/sessions/{session_id}/messages", json={"message": "a"})
        then = await client.post(f"/sessions/{session_id}/messages", json={"message": "b"})
    events = decode(failed.content)
    assert failed.status_code == 200
    assert types(events)[-2:] == ["error", "stream_stopped"]
    assert "the model broke" in only(events, ErrorEvent)[0].error
    assert types(decode(then.content))[-1] == "stream_stopped"
    assert "agent_choice" in types(decode(then.content))


async def test_stream_options_reach_each_runs_adapter() -> None:
    app = create_app(factory_of(confirm_script()), stream_options={"auto_approve": True})
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", json={"message": "rm"})
    events = decode(response.content)
    assert "tool_call_confirmation" not in types(events)
    assert tool_responses(events) == ["deleted notes.txt"]


async def test_post_while_a_run_is_in_progress_is_409_and_cancel_stops_it() -> None:
    gate = Gate()
    app = create_app(factory_of(gate.script(), extra_tools=[gate.tool]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(
                await client.post(f"/sessions/{session_id}/messages", json={"message": "go"})
            )

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            busy = await client.post(f"/sessions/{session_id}/messages", json={"message": "2"})
            cancel = await client.delete(f"/sessions/{session_id}/run")
        again = await client.delete(f"/sessions/{session_id}/run")
        unknown = await client.delete("/sessions/nope/run")
        agent = store_of(app).get(session_id).agent
        assert_consistent(agent)
    assert_error(busy, 409, "run_in_progress")
    assert cancel.status_code == 202
    assert cancel.json() == {"status": "cancelling"}
    assert_error(again, 409, "no_run")
    assert_error(unknown, 404, "session_not_found")
    events = decode(runs[0].content)
    # Cancelled: no final answer, and still a complete, valid stream.
    assert types(events)[-1] == "stream_stopped"
    assert "after the gate" not in text_of(events)
    assert validate([e.event for e in events]) == []


async def test_delete_session_closes_it_and_cancels_its_run() -> None:
    gate = Gate()
    app = create_app(factory_of(gate.script(), extra_tools=[gate.tool]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        agent = store_of(app).get(session_id).agent
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(
                await client.post(f"/sessions/{session_id}/messages", json={"message": "go"})
            )

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            deleted = await client.delete(f"/sessions/{session_id}")
        gone = await client.get(f"/sessions/{session_id}/messages")
        twice = await client.delete(f"/sessions/{session_id}")
    assert deleted.status_code == 204
    assert agent.closed
    assert types(decode(runs[0].content))[-1] == "stream_stopped"
    assert_error(gone, 404, "session_not_found")
    assert twice.status_code == 404


# -- errors -------------------------------------------------------------------------------

SESSION_ROUTES = [
    ("POST", "/sessions/{id}/messages", {"json": {"message": "hi"}}),
    ("GET", "/sessions/{id}/messages", {}),
    ("GET", "/sessions/{id}/events", {}),
    ("POST", "/sessions/{id}/confirmations/call-1", {"json": {"decision": "approve"}}),
    ("DELETE", "/sessions/{id}/run", {}),
    ("DELETE", "/sessions/{id}", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), SESSION_ROUTES)
async def test_unknown_sessions_are_404(method: str, path: str, kwargs: dict[str, Any]) -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        await new_session(client)
        # A well-formed id that was never handed out.
        response = await client.request(method, path.format(id="A" * 32), **kwargs)
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"


BAD_BODIES: list[tuple[str, dict[str, Any], int, str]] = [
    ("not JSON", {"content": b"{not json"}, 400, "invalid_json"),
    ("not UTF-8", {"content": b'{"message": "\xff"}'}, 400, "invalid_json"),
    ("nested too deep", {"content": b"[" * 100_000}, 400, "invalid_json"),
    ("wrong type", {"json": {"message": 5}}, 422, "invalid_body"),
    ("unknown field", {"json": {"message": "hi", "stream": True}}, 422, "invalid_body"),
    ("missing field", {"json": {}}, 422, "invalid_body"),
    ("empty body", {}, 422, "invalid_body"),
    ("empty message", {"json": {"message": ""}}, 422, "invalid_body"),
    ("not an object", {"json": ["hi"]}, 422, "invalid_body"),
    ("a number", {"content": b"12"}, 422, "invalid_body"),
]


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [case[1:] for case in BAD_BODIES],
    ids=[case[0] for case in BAD_BODIES],
)
async def test_bad_message_bodies_are_4xx(kwargs: dict[str, Any], status: int, code: str) -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", **kwargs)
        # Nothing was started: the session still takes a message.
        after = await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
    assert response.status_code == status
    assert error_code(response) == code
    assert types(decode(after.content))[-1] == "stream_stopped"


async def test_validation_errors_list_every_problem_without_the_input() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(
            f"/sessions/{session_id}/messages", json={"message": 5, "secret": "s3cr3t"}
        )
    error = response.json()["error"]
    assert error["details"] == [
        {"field": "message", "problem": "Input should be a valid string"},
        {"field": "secret", "problem": "Extra inputs are not permitted"},
    ]
    assert "s3cr3t" not in response.text


async def test_bad_session_bodies_are_4xx() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        unknown = await client.post("/sessions", json={"model": "gpt"})
        broken = await client.post("/sessions", content=b"nope")
    assert_error(unknown, 422, "invalid_body")
    assert_error(broken, 400, "invalid_json")


async def test_oversized_bodies_are_413() -> None:
    limit = 64
    app = create_app(factory_of(["ok", "ok"]), max_body_size=limit)
    fits = b'{"message": "' + b"x" * (limit - len(b'{"message": ""}')) + b'"}'
    assert len(fits) == limit

    async def chunked() -> AsyncIterator[bytes]:
        # No Content-Length: the limit is enforced on the bytes as they stream.
        for _ in range(10):
            yield b'{"message": "' + b"x" * 20 + b'", '

    async with in_process(app) as client:
        session_id = await new_session(client)
        url = f"/sessions/{session_id}/messages"
        declared = await client.post(url, content=b"{}", headers={"Content-Length": "65"})
        streamed = await client.post(url, content=chunked())
        lying = await client.post(url, content=fits + b" " * 10, headers={"Content-Length": "10"})
        invalid = await client.post(url, content=b"{}", headers={"Content-Length": "2x"})
        at_limit = await client.post(url, content=fits)
        huge_session = await client.post("/sessions", content=b" " * (limit + 1))
    for response in (declared, streamed, lying, huge_session):
        assert response.status_code == 413
        assert error_code(response) == "body_too_large"
    assert_error(invalid, 400, "invalid_content_length")
    assert at_limit.status_code == 200


async def test_routing_errors_are_json() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        put = await client.put("/sessions")
        patch = await client.patch(f"/sessions/{session_id}/messages")
        nowhere = await client.get("/nowhere")
    assert_error(put, 405, "method_not_allowed")
    assert put.headers["allow"] == "POST"
    assert patch.status_code == 405
    assert set(patch.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    assert_error(nowhere, 404, "not_found")


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        ({"after": "abc"}, {}),
        ({"after": "-1"}, {}),
        ({}, {"Last-Event-ID": "x"}),
        ({"after": "99"}, {}),
    ],
    ids=["not a number", "negative", "bad header", "beyond the latest event"],
)
async def test_bad_resume_positions_are_422(
    params: dict[str, str], headers: dict[str, str]
) -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
        response = await client.get(
            f"/sessions/{session_id}/events", params=params, headers=headers
        )
    assert response.status_code == 422
    assert error_code(response) == "invalid_after"


async def test_events_older_than_the_retained_window_are_410() -> None:
    app = create_app(factory_of(ADD_SCRIPT), retain=3)
    async with in_process(app) as client:
        session_id = await new_session(client)
        run = await client.post(f"/sessions/{session_id}/messages", json={"message": "a"})
        last = store_of(app).get(session_id).log.last_sequence
        expired = await client.get(f"/sessions/{session_id}/events", params={"after": 0})
        kept = await client.get(f"/sessions/{session_id}/events", params={"after": last - 3})
    # The run wrote its events faster than its reader took them, and the log keeps
    # three: the stream says so and ends (too late for a status code)...
    assert run.status_code == 200
    assert run.content.endswith(
        b": events expired: this reader fell behind the events the server keeps\n\n"
    )
    # ...and resuming from there is a 410, while the kept window is readable.
    assert_error(expired, 410, "events_expired")
    assert [e.sequence for e in decode(kept.content)] == [last - 2, last - 1, last]
    assert types(decode(kept.content))[-1] == "stream_stopped"


@pytest.mark.parametrize(
    "factory",
    [
        pytest.param(lambda: (_ for _ in ()).throw(RuntimeError("no model")), id="raises"),
        pytest.param(lambda: "not an agent", id="returns a str"),
    ],
)
async def test_unexpected_errors_are_500_without_a_traceback(
    factory: Callable[[], Any], caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(factory)
    with caplog.at_level(logging.ERROR, logger="agentrt.server"):
        async with in_process(app) as client:
            response = await client.post("/sessions")
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "internal_error",
            "message": "the server failed to handle this request; the error was logged",
        }
    }
    [record] = [r for r in caplog.records if r.name == "agentrt.server"]
    assert record.exc_info is not None


async def test_session_limit_is_503() -> None:
    app = create_app(factory_of(ADD_SCRIPT), max_sessions=1)
    async with in_process(app) as client:
        await new_session(client)
        response = await client.post("/sessions")
    assert_error(response, 503, "session_limit")


async def test_without_the_lifespan_sessions_are_503() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client:
        response = await client.post("/sessions")
    assert_error(response, 503, "not_started")


def test_options_are_checked() -> None:
    factory = factory_of(ADD_SCRIPT)
    with pytest.raises(TypeError, match="agent_factory must be a callable"):
        create_app("agent")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"unknown stream options \['buffer_size'\]"):
        create_app(factory, stream_options={"buffer_size": 3})
    with pytest.raises(ValueError, match="max_body_size"):
        create_app(factory, max_body_size=0)
    with pytest.raises(ValueError, match="heartbeat_interval"):
        create_app(factory, heartbeat_interval=0)
    with pytest.raises(ValueError, match="retain"):
        create_app(factory, retain=0)
    with pytest.raises(ValueError, match="session_ttl"):
        create_app(factory, session_ttl=-1)
    with pytest.raises(ValueError, match="max_sessions"):
        create_app(factory, max_sessions=0)


async def test_hostile_input_leaves_a_running_session_unaffected() -> None:
    gate = Gate()
    app = create_app(factory_of(gate.script(), extra_tools=[gate.tool]), max_body_size=1024)
    async with in_process(app) as client:
        running = await new_session(client)
        other = await new_session(client)
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(await client.post(f"/sessions/{running}/messages", json={"message": "go"}))

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            statuses = [
                (await client.post(f"/sessions/{other}/messages", content=body)).status_code
                for body in (b"\x00\x01", b"[" * 1000, b"x" * 5000, b'{"message": null}')
            ]
            statuses.append(
                (
                    await client.post(f"/sessions/{running}/confirmations/gate-1", content=b"{")
                ).status_code
            )
            gate.opened.set()
    assert statuses == [400, 400, 413, 422, 400]
    events = decode(runs[0].content)
    assert validate([e.event for e in events]) == []
    assert text_of(events) == "after the gate"


# -- expiry -------------------------------------------------------------------------------


async def test_idle_sessions_expire_and_busy_ones_do_not() -> None:
    now = [1000.0]
    gate = Gate()
    app = create_app(
        factory_of(gate.script(), extra_tools=[gate.tool]), session_ttl=60, clock=lambda: now[0]
    )
    store = store_of(app)
    async with in_process(app) as client:
        idle = await new_session(client)
        busy = await new_session(client)
        busy_agent = store.get(busy).agent
        idle_agent = store.get(idle).agent

        async def post() -> None:
            await client.post(f"/sessions/{busy}/messages", json={"message": "go"})

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            now[0] += 59
            assert await store.expire_idle() == []
            now[0] += 1
            # Idle for the whole ttl; the other has a run (and a reader) going.
            assert await store.expire_idle() == [idle]
            gate.opened.set()
        assert idle_agent.closed
        assert not busy_agent.closed
        gone = await client.get(f"/sessions/{idle}/messages")
        now[0] += 60
        assert await store.expire_idle() == [busy]
    assert_error(gone, 404, "session_not_found")
    assert busy_agent.closed


# -- the page -----------------------------------------------------------------------------


async def test_the_web_page_is_one_self_contained_file() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    # No external resource: no URL to another origin, no src= or href= but data:.
    assert "http://" not in page
    assert "https://" not in page
    assert "src=" not in page
    assert 'href="data:,"' in page
    for needed in ("getReader()", "Last-Event-ID", "/confirmations/", '"details"', "token_usage"):
        assert needed in page
    policy = response.headers["content-security-policy"]
    assert "script-src 'sha256-" in policy
    assert "unsafe-inline" not in policy
    assert "connect-src 'self'" in policy


async def test_the_page_can_be_left_out() -> None:
    app = create_app(factory_of(ADD_SCRIPT), page=False)
    async with in_process(app) as client:
        response = await client.get("/")
    assert response.status_code == 404


# -- a slow reader ------------------------------------------------------------------------


async def test_a_reader_that_stops_reading_blocks_neither_its_run_nor_other_sessions() -> None:
    long_answer = "word " * 2000
    app = create_app(factory_of([long_answer], chunk_size=4))
    async with in_process(app) as client:
        stalled = await new_session(client)
        other = await new_session(client)
        first_chunk = anyio.Event()
        never = anyio.Event()
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if not sent:
                return {"type": "http.request", "body": b'{"message": "talk"}', "more_body": False}
            await never.wait()
            raise AssertionError("unreachable")

        async def send(message: Any) -> None:
            sent.append(message)
            if message["type"] == "http.response.body":
                first_chunk.set()
                await never.wait()  # this client reads nothing more

        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": f"/sessions/{stalled}/messages",
            "raw_path": f"/sessions/{stalled}/messages".encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"content-type", b"application/json"), (b"host", b"localhost")],
            "client": ("127.0.0.1", 1),
            "server": ("agentrt.test", 80),
        }
        async with anyio.create_task_group() as group:
            group.start_soon(app, scope, receive, send)
            await first_chunk.wait()
            # Another session runs to the end meanwhile...
            response = await client.post(f"/sessions/{other}/messages", json={"message": "hi"})
            assert types(decode(response.content))[-1] == "stream_stopped"
            # ...and the stalled session's run finishes too: a second reader gets it all.
            replay = await client.get(f"/sessions/{stalled}/events")
            group.cancel_scope.cancel()
    events = decode(replay.content)
    assert types(events)[-1] == "stream_stopped"
    assert text_of(events) == long_answer
    assert store_of(app).retain >= len(events)


# -- against a real server ----------------------------------------------------------------


async def test_confirmations_are_answered_through_the_endpoint_while_the_run_waits() -> None:
    async with real_server(factory_of(confirm_script())) as (_, client):
        session_id = await new_session(client)
        url = f"/sessions/{session_id}/confirmations/call-del"
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            asked = await reader.until("tool_call_confirmation")
            assert isinstance(asked.event, ToolCallConfirmationEvent)
            assert asked.event.tool_call.id == "call-del"
            busy = await client.post(f"/sessions/{session_id}/messages", json={"message": "2"})
            unknown = await client.post(
                f"/sessions/{session_id}/confirmations/nope", json={"decision": "approve"}
            )
            invalid = await client.post(url, json={"decision": "maybe"})
            approved = await client.post(url, json={"decision": "approve"})
            twice = await client.post(url, json={"decision": "reject"})
            events = await reader.rest()
        after_the_run = await client.post(url, json={"decision": "approve"})
    assert_error(busy, 409, "run_in_progress")
    assert_error(unknown, 404, "unknown_tool_call")
    assert_error(invalid, 422, "invalid_decision")
    assert approved.status_code == 200
    assert approved.json() == {"tool_call_id": "call-del", "decision": "approve"}
    assert_error(twice, 409, "already_answered")
    assert_error(after_the_run, 409, "already_answered")
    assert tool_responses(events) == ["deleted notes.txt"]
    assert validate([e.event for e in events]) == []


async def test_a_rejection_carries_its_reason_to_the_model() -> None:
    async with real_server(factory_of(confirm_script())) as (server, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            rejected = await client.post(
                f"/sessions/{session_id}/confirmations/call-del",
                json={"decision": "reject", "reason": "I still need it"},
            )
            events = await reader.rest()
        agent = server.sessions.get(session_id).agent
    assert rejected.status_code == 200
    assert tool_responses(events) == ["rejected by the user: I still need it"]
    assert isinstance(agent.messages[2], ToolMessage)
    assert agent.messages[2].is_error


async def test_heartbeats_flow_while_a_run_waits_for_a_confirmation() -> None:
    async with real_server(factory_of(confirm_script()), heartbeat_interval=0.01) as (_, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            await reader.until_raw(b"\n: heartbeat\n\n", start=len(reader.raw))
            await client.post(
                f"/sessions/{session_id}/confirmations/call-del", json={"decision": "approve"}
            )
            events = await reader.rest()
    # Comments are not events: the decoder skipped them, the stream is intact.
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert validate([e.event for e in events]) == []


@pytest.mark.parametrize("leave_after", ["tool_call_confirmation", "partial_tool_call"])
async def test_resume_after_a_disconnect_mid_run_loses_and_repeats_nothing(
    leave_after: str,
) -> None:
    async with real_server(factory_of(confirm_script(), chunk_size=2)) as (server, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until(leave_after)
            await reader.aclose()
        # Everything read before the connection dropped, complete frames only.
        before = list(reader.events)
        # The run outlived its client: it still waits for (and accepts) the answer.
        approved = await client.post(
            f"/sessions/{session_id}/confirmations/call-del", json={"decision": "approve"}
        )
        async with client.stream(
            "GET",
            f"/sessions/{session_id}/events",
            headers={"Last-Event-ID": str(before[-1].sequence)},
        ) as response:
            rest = await SSEReader(response).rest()
        full = server.sessions.get(session_id).log.since(0)
    assert approved.status_code == 200
    assert before + rest == full
    assert [e.sequence for e in before + rest] == list(range(1, len(full) + 1))
    assert types(rest)[-1] == "stream_stopped"
    assert validate([e.event for e in before + rest]) == []


async def test_two_sessions_run_at_once_in_isolation() -> None:
    async with real_server(factory_of(confirm_script())) as (_, client):
        first = await new_session(client)
        second = await new_session(client)
        async with (
            client.stream("POST", f"/sessions/{first}/messages", json={"message": "one"}) as a,
            client.stream("POST", f"/sessions/{second}/messages", json={"message": "two"}) as b,
        ):
            reader_a, reader_b = SSEReader(a), SSEReader(b)
            # Both runs wait for an answer at the same time.
            await reader_a.until("tool_call_confirmation")
            await reader_b.until("tool_call_confirmation")
            # The same call id exists in both sessions; each answer reaches its own.
            rejected = await client.post(
                f"/sessions/{second}/confirmations/call-del",
                json={"decision": "reject", "reason": "not this one"},
            )
            approved = await client.post(
                f"/sessions/{first}/confirmations/call-del", json={"decision": "approve"}
            )
            events_a, events_b = await reader_a.rest(), await reader_b.rest()
    assert rejected.status_code == approved.status_code == 200
    for events, session_id, message in ((events_a, first, "one"), (events_b, second, "two")):
        assert {event.session_id for event in known(events)} == {session_id}
        assert [e.message for e in only(events, UserMessageEvent)] == [message]
        assert validate([e.event for e in events]) == []
    assert tool_responses(events_a) == ["deleted notes.txt"]
    assert tool_responses(events_b) == ["rejected by the user: not this one"]


async def test_ids_of_another_session_are_unknown_and_of_an_ended_run_conflict() -> None:
    async with real_server(factory_of(lambda: confirm_script())) as (_, client):
        first = await new_session(client)
        second = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{first}/messages", json={"message": "one"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            # Session two never ran: first's call id means nothing there.
            foreign = await client.post(
                f"/sessions/{second}/confirmations/call-del", json={"decision": "approve"}
            )
            await client.delete(f"/sessions/{first}/run")
            events = await reader.rest()
        # Cancelled unanswered: the call is known, but nothing waits for it any more.
        late = await client.post(
            f"/sessions/{first}/confirmations/call-del", json={"decision": "approve"}
        )
    assert_error(foreign, 404, "unknown_tool_call")
    assert types(events)[-1] == "stream_stopped"
    assert_error(late, 409, "run_ended")


async def test_shutdown_ends_open_streams_and_cancels_waiting_runs() -> None:
    async with real_server(factory_of(confirm_script())) as (server, client):
        session_id = await new_session(client)
        session = server.sessions.get(session_id)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            server.should_exit = True
            with anyio.fail_after(5):
                events = await reader.rest()
    # The server is down; its stream ended before the run did, at the shutdown.
    assert types(events)[-1] == "tool_call_confirmation"
    assert session.closed
    assert session.agent.closed
    logged = [item.event for item in session.log.since(0)]
    assert logged[-1].type == "stream_stopped"
    assert validate(logged) == []


async def test_sessions_expire_on_their_own() -> None:
    # A real clock and a tiny ttl: the store's own sweep (every ttl / 4) removes it.
    app = create_app(factory_of(ADD_SCRIPT), session_ttl=0.04)
    store = store_of(app)
    async with in_process(app) as client:
        session_id = await new_session(client)
        assert session_id in store
        closed = anyio.Event()
        store.get(session_id).agent.events.on(
            AgentEvents.AGENT_CLOSE_AFTER, lambda _: closed.set()
        )
        with anyio.fail_after(5):
            await closed.wait()
        assert session_id not in store
        response = await client.get(f"/sessions/{session_id}/messages")
    assert_error(response, 404, "session_not_found")


async def test_the_store_runs_once_and_closes_everything_on_exit() -> None:
    store = SessionStore(factory_of(ADD_SCRIPT))
    assert not store.running
    with pytest.raises(StoreNotRunningError, match="lifespan"):
        await store.create()
    async with store:
        assert store.running
        with pytest.raises(RuntimeError, match="entered once"):
            await store.__aenter__()
        session = await store.create()
        assert len(store) == 1
        await store.remove(session.id)
        # A request that found the session before it was removed cannot run it.
        with pytest.raises(SessionNotFoundError):
            store.start(session, "hi")
        kept = await store.create()
    assert not store.running
    assert len(store) == 0
    assert kept.agent.closed
    with pytest.raises(StoreNotRunningError):
        store.start(kept, "hi")


def test_a_server_knows_its_port_only_once_listening() -> None:
    server = make_server(factory_of(ADD_SCRIPT), port=0)
    with pytest.raises(RuntimeError, match="not listening"):
        _ = server.port
