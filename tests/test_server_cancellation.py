"""Issue 8, cancellation contract through the server: ``DELETE /sessions/{id}/run``.

Cancelling a run through the endpoint keeps the promises of cancelling ``execute``:
the model call and running tools stop at once (each waits here for an event nobody
sets, and notes the cancellation it receives), the conversation stays consistent
(``GET /sessions/{id}/messages``: every tool call answered, the user message kept), the
usage already spent stays in the session's ``token_usage``, the run's stream ends with
an ``error`` that says it was cancelled and then ``stream_stopped`` (the spec asks for
an error before a stream ends on a run that did not finish; a reader who did not cancel
must not take it for an answer), the stream validates, and the session runs its next
message on the consistent conversation.

The last tests cancel a standard run after each event of its stream in turn, with
:func:`agentrt.testing.server_cancellation_violations`. Nothing sleeps: the tests wait
for the model, the tools or the stream to reach the point to cancel at.
"""

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from agentrt import Agent, ScriptedModel, ToolCall, tool
from agentrt._loop import CANCELLED_TOOL_RESPONSE
from agentrt.models.base import ModelRequest, ModelResponse, StreamChunk, TextDelta
from agentrt.models.scripted import ScriptItem
from agentrt.server import create_app
from agentrt.stream import ErrorEvent, TokenUsageEvent, validate
from agentrt.stream.codec import SequencedEvent
from agentrt.testing import server_cancellation_violations
from tests.server_support import (
    SSEReader,
    assert_error,
    decode,
    in_process,
    new_session,
    only,
    real_server,
    store_of,
    text_of,
    types,
)
from tests.test_cancellation_points import AGAIN, SCENARIOS, Agents, Scenario

CANCELLED = "cancelled: DELETE /sessions/{id}/run stopped the run before it finished"
BACK = "back again"


class Stuck:
    """Waits for an event nobody sets, and counts the cancellations that end the waits.

    Args:
        waiters: How many waits make :attr:`waiting` set.
    """

    def __init__(self, waiters: int = 1) -> None:
        self.waiters = waiters
        self.inside = 0
        self.waiting = anyio.Event()
        self.never = anyio.Event()
        self.cancelled = 0

    async def wait(self) -> None:
        self.inside += 1
        if self.inside == self.waiters:
            self.waiting.set()
        try:
            await self.never.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise


async def cancel_mid_run(
    client: httpx.AsyncClient, session_id: str, reached: anyio.Event
) -> tuple[httpx.Response, list[SequencedEvent]]:
    """POST "go", DELETE the run once ``reached`` is set; the DELETE's answer and the run."""
    runs: list[httpx.Response] = []

    async def post() -> None:
        runs.append(await client.post(f"/sessions/{session_id}/messages", json={"message": "go"}))

    # A bound, not a synchronisation: a run that does not stop fails instead of hanging.
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await reached.wait()
            cancel = await client.delete(f"/sessions/{session_id}/run")
    assert runs[0].status_code == 200
    return cancel, decode(runs[0].content)


async def send(client: httpx.AsyncClient, session_id: str, message: str) -> list[SequencedEvent]:
    """Post ``message`` and read its run to the end."""
    response = await client.post(f"/sessions/{session_id}/messages", json={"message": message})
    assert response.status_code == 200
    return decode(response.content)


async def messages_of(client: httpx.AsyncClient, session_id: str) -> list[dict[str, object]]:
    response = await client.get(f"/sessions/{session_id}/messages")
    messages: list[dict[str, object]] = response.json()["messages"]
    return messages


def usage_of(events: list[SequencedEvent]) -> tuple[int, int]:
    """The session's usage (input, output) in the run's latest token_usage."""
    latest = only(events, TokenUsageEvent)[-1].usage
    return latest.input_tokens, latest.output_tokens


def spent(message: dict[str, object]) -> tuple[int, int]:
    usage = message["usage"]
    assert isinstance(usage, dict)
    return usage["input_tokens"], usage["output_tokens"]


def assert_cancelled(cancel: httpx.Response, events: list[SequencedEvent]) -> None:
    """The endpoint took the cancellation, and the run's stream says so at its end."""
    assert cancel.status_code == 202
    assert cancel.json() == {"status": "cancelling"}
    assert types(events)[-2:] == ["error", "stream_stopped"]
    assert [event.error for event in only(events, ErrorEvent)] == [CANCELLED]
    assert validate([item.event for item in events]) == []


# -- cancel points ------------------------------------------------------------------------


async def test_cancel_during_the_model_call() -> None:
    stuck = Stuck()
    calls: list[ModelRequest] = []

    async def answer(request: ModelRequest) -> str:
        calls.append(request)
        if len(calls) == 1:
            await stuck.wait()
        return BACK

    app = create_app(lambda: Agent(model=ScriptedModel(answer)))
    async with in_process(app) as client:
        session_id = await new_session(client)
        cancel, events = await cancel_mid_run(client, session_id, stuck.waiting)
        kept = await messages_of(client, session_id)
        after = await send(client, session_id, AGAIN)
    assert_cancelled(cancel, events)
    assert stuck.cancelled == 1
    assert types(events) == ["user_message", "stream_started", "error", "stream_stopped"]
    assert kept == [{"role": "user", "content": "go"}]
    # The next run works, on the conversation the cancelled one left.
    assert [(m.role, m.content) for m in calls[1].messages] == [("user", "go"), ("user", AGAIN)]
    assert text_of(after) == BACK
    assert types(after)[-1] == "stream_stopped"
    assert "error" not in types(after)


class StopsMidAnswer:
    """A model whose first answer stops after its first words, waiting for ever.

    Later calls answer from a :class:`ScriptedModel`.
    """

    name = "stops-mid-answer"

    def __init__(self) -> None:
        self.stuck = Stuck()
        self.closed = False
        self.rest = ScriptedModel([BACK])

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.rest.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        if self.stuck.waiting.is_set():
            async for chunk in self.rest.stream(request):
                yield chunk
            return
        try:
            yield TextDelta("Hello, ")
            await self.stuck.wait()
            yield TextDelta("never said")
        finally:
            self.closed = True


async def test_cancel_during_a_streaming_model_response() -> None:
    model = StopsMidAnswer()
    app = create_app(lambda: Agent(model=model))
    async with in_process(app) as client:
        session_id = await new_session(client)
        cancel, events = await cancel_mid_run(client, session_id, model.stuck.waiting)
        kept = await messages_of(client, session_id)
        after = await send(client, session_id, AGAIN)
    assert_cancelled(cancel, events)
    assert model.stuck.cancelled == 1
    assert model.closed
    assert types(events) == [
        "user_message",
        "stream_started",
        "agent_choice",
        "error",
        "stream_stopped",
    ]
    # What was streamed was streamed; an answer cut short is not in the conversation.
    assert text_of(events) == "Hello, "
    assert kept == [{"role": "user", "content": "go"}]
    assert text_of(after) == BACK
    assert "error" not in types(after)


@pytest.mark.parametrize("calls", [1, 2], ids=["one tool", "two parallel tools"])
async def test_cancel_while_tools_run(calls: int) -> None:
    stuck = Stuck(waiters=calls)

    async def wait_here(n: int) -> str:
        """Wait for an event nobody sets.

        Args:
            n: Which call this is.
        """
        await stuck.wait()
        return "never"

    requests: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ToolCall | list[ToolCall] | str:
        requests.append(request)
        if len(requests) > 1:
            return BACK
        return [ToolCall(id=f"w{n}", name="wait_here", arguments={"n": n}) for n in range(calls)]

    def make() -> Agent:
        return Agent(model=ScriptedModel(answer), tools=[wait_here], strict=True)

    app = create_app(make)
    async with in_process(app) as client:
        session_id = await new_session(client)
        cancel, events = await cancel_mid_run(client, session_id, stuck.waiting)
        kept = await messages_of(client, session_id)
        after = await send(client, session_id, AGAIN)
        conversation = await messages_of(client, session_id)
    assert_cancelled(cancel, events)
    # Every running tool saw the cancellation.
    assert stuck.cancelled == calls
    assert [m["role"] for m in kept] == ["user", "assistant"] + ["tool"] * calls
    assert kept[0] == {"role": "user", "content": "go"}
    assert [(m["tool_call_id"], m["content"], m["is_error"]) for m in kept[2:]] == [
        (f"w{n}", CANCELLED_TOOL_RESPONSE, True) for n in range(calls)
    ]
    # The first model call was spent before the cancellation: the stream reports it...
    assert usage_of(events) == spent(kept[1])
    # ...and the session's usage keeps it: the next run's counts both calls.
    assert conversation[: len(kept)] == kept
    first, second = spent(kept[1]), spent(conversation[-1])
    assert usage_of(after) == (first[0] + second[0], first[1] + second[1])
    # The next model call saw every tool call answered.
    assert [m.role for m in requests[1].messages] == [m["role"] for m in kept] + ["user"]
    assert text_of(after) == BACK


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call).

    Args:
        path: The file.
    """
    raise AssertionError("a cancelled call waiting for its confirmation never runs")


async def test_cancel_while_a_confirmation_is_pending() -> None:
    script: list[ScriptItem] = [
        ToolCall(id="call-del", name="delete_file", arguments={"path": "notes.txt"}),
        BACK,
    ]

    def make() -> Agent:
        return Agent(model=ScriptedModel(script), tools=[delete_file], strict=True)

    async with real_server(make) as (_, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "go"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            cancel = await client.delete(f"/sessions/{session_id}/run")
            with anyio.fail_after(5):
                events = await reader.rest()
        late = await client.post(
            f"/sessions/{session_id}/confirmations/call-del", json={"decision": "approve"}
        )
        kept = await messages_of(client, session_id)
        after = await send(client, session_id, AGAIN)
    assert_cancelled(cancel, events)
    # The reader of the live stream saw the call answered as cancelled, then the end.
    assert types(events)[-5:] == [
        "tool_call_confirmation",
        "tool_call",
        "tool_call_response",
        "error",
        "stream_stopped",
    ]
    assert_error(late, 409, "run_ended")
    assert [m["role"] for m in kept] == ["user", "assistant", "tool"]
    assert kept[2]["content"] == CANCELLED_TOOL_RESPONSE
    assert text_of(after) == BACK


async def test_cancel_without_a_run_is_409() -> None:
    app = create_app(lambda: Agent(model=ScriptedModel(["hello"])))
    async with in_process(app) as client:
        session_id = await new_session(client)
        never_ran = await client.delete(f"/sessions/{session_id}/run")
        await client.post(f"/sessions/{session_id}/messages", json={"message": "hi"})
        ended = await client.delete(f"/sessions/{session_id}/run")
        unknown = await client.delete("/sessions/nope/run")
    assert_error(never_ran, 409, "no_run")
    assert_error(ended, 409, "no_run")
    assert_error(unknown, 404, "session_not_found")


async def test_a_run_cut_short_by_closing_its_session_says_why() -> None:
    stuck = Stuck()

    async def answer(request: ModelRequest) -> str:
        await stuck.wait()
        return "never"

    app = create_app(lambda: Agent(model=ScriptedModel(answer)))
    async with in_process(app) as client:
        session_id = await new_session(client)
        session = store_of(app).sessions[session_id]
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(
                await client.post(f"/sessions/{session_id}/messages", json={"message": "go"})
            )

        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(post)
                await stuck.waiting.wait()
                deleted = await client.delete(f"/sessions/{session_id}")
    assert deleted.status_code == 204
    assert stuck.cancelled == 1
    events = decode(runs[0].content)
    assert [event.error for event in only(events, ErrorEvent)] == [
        "cancelled: the session was closed before the run finished"
    ]
    assert types(events)[-1] == "stream_stopped"
    assert [item.event for item in (await session.log.read(0, 10**6))] == [
        item.event for item in events
    ]


async def test_a_run_cut_short_by_a_shutdown_says_why() -> None:
    stuck = Stuck()

    async def answer(request: ModelRequest) -> str:
        await stuck.wait()
        return "never"

    async with real_server(lambda: Agent(model=ScriptedModel(answer))) as (server, client):
        session_id = await new_session(client)
        session = server.sessions.sessions[session_id]
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "go"}
        ) as response:
            with anyio.fail_after(5):
                await stuck.waiting.wait()
                server.should_exit = True
                await SSEReader(response).rest()
    # The server is down: the run ended with the store, after the streams did.
    logged = [item.event for item in (await session.log.read(0, 10**6))]
    assert [event.type for event in logged] == [
        "user_message",
        "stream_started",
        "error",
        "stream_stopped",
    ]
    assert isinstance(logged[2], ErrorEvent)
    assert logged[2].error == "cancelled: the server shut down before the run finished"
    assert stuck.cancelled == 1


# -- cancel after every event -------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_cancel_after_every_event_of_a_standard_run(scenario: Scenario) -> None:
    agents = Agents(scenario)
    app = create_app(agents)
    async with in_process(app) as client:
        session_id = await new_session(client)
        plain = await send(client, session_id, "go")
    assert validate([item.event for item in plain]) == []
    assert await server_cancellation_violations(agents, "go", then=AGAIN) == []
    # One cancelled run after each event, each followed by a run that answered.
    assert agents.afterwards == len(plain)
