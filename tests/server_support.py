"""What the server tests share: agents and scripts, in-process and real servers, SSE reading.

Nothing sleeps to synchronize: tests wait on the SSE stream itself, or on a tool that
holds its run at a :class:`Gate` the test opens.
"""

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import anyio
import httpx
from starlette.applications import Starlette

from agentrt import Agent, ScriptedModel, Tool, ToolCall, tool
from agentrt.messages import AssistantMessage, ToolMessage
from agentrt.models.scripted import ScriptItem
from agentrt.server import (
    AgentServer,
    SessionStore,
    make_server,
)
from agentrt.server._errors import error_body
from agentrt.stream import (
    AgentChoiceEvent,
    ToolCallResponseEvent,
)
from agentrt.stream._parse import UnknownEvent
from agentrt.stream.codec import SequencedEvent, SSEEventDecoder
from agentrt.stream.events import StreamEvent

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
    """The code of an error answer, checked to be in the server's one error format."""
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) <= {"code", "message", "details"}
    assert isinstance(error["message"], str)
    assert error["message"]
    assert "Traceback" not in response.text
    code = error["code"]
    assert isinstance(code, str)
    # One encoding for every refusal, whichever layer (route, middleware) wrote it.
    assert response.headers["content-type"] == "application/json"
    assert response.content == error_body(code, error["message"], error.get("details"))
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
