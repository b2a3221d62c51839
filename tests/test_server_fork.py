"""Issue 27, fork: a session branched at any event into a new session (memory store).

The fork holds the conversation the original held at the event, and its log the
original's events up to there; a fork inside a run goes on from there without calling
the model or the tools again for what the run had done; an edited fork replaces the last
user message; the original is untouched. ``POST /sessions/{id}/fork`` is the HTTP form,
with typed errors for what cannot be forked. The durable store's forks are in
tests/durable/test_server_fork.py.
"""

import contextlib
from collections.abc import Sequence

import pytest

from agentrt import Agent, ScriptedModel, ToolCall, tool
from agentrt.messages import AssistantMessage, Message
from agentrt.models.base import ModelRequest
from agentrt.server import (
    CannotForkError,
    Session,
    SessionNotFoundError,
    SessionStore,
    UnknownEventError,
    create_app,
)
from agentrt.stream import EventsExpiredError
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.validate import validate
from tests.server_support import assert_error, in_process, new_session

CALLS: list[str] = []
"""The model and tool calls made, in order (shared with tests/durable/test_server_fork.py)."""


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    CALLS.append(f"add {a} {b}")
    return a + b


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call).

    Args:
        path: The file.
    """
    CALLS.append(f"delete {path}")
    return f"deleted {path}"


def decide(request: ModelRequest) -> str | ToolCall:
    """From the conversation alone (the same in every process and every replay): a user
    message asks for a sum (or, saying ``delete``, a deletion), a result is answered."""
    CALLS.append("model")
    last = request.messages[-1]
    turn = sum(1 for m in request.messages if m.role == "user")
    if last.role == "user" and last.content == "delete":
        return ToolCall(id=f"del-{turn}", name="delete_file", arguments={"path": "x"})
    if last.role == "user":
        return ToolCall(id=f"add-{turn}", name="add", arguments={"a": turn, "b": 2})
    return f"{last.content}, as you asked"


def make() -> Agent:
    return Agent(model=ScriptedModel(decide, chunk_size=4), tools=[add, delete_file])


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def seq_of(events: Sequence[SequencedEvent], kind: str) -> int:
    """The number of the first event of type ``kind``."""
    return next(item.sequence for item in events if item.event.type == kind)


def same(log: Sequence[SequencedEvent], *ignored: str) -> list[dict[str, object]]:
    """The events, but for the session they name (a fork's copies name the fork)."""
    return [item.event.model_dump(exclude={"session_id", *ignored}) for item in log]


def said(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [(m.role, str(m.content)) for m in messages]


async def run_of(session: Session, message: str) -> list[SequencedEvent]:
    """The events of a run of ``message``, once it has ended."""
    run = await session.start(message)
    await run.done.wait()
    return await session.log.read(run.after, 1000)


async def _finished(session: Session) -> list[SequencedEvent]:
    """The session's whole log once its run (if any) has ended."""
    if session.run is not None:
        await session.run.done.wait()
    return await session.log.read(0, 1000)


async def test_a_fork_inside_a_run_goes_on_without_calling_what_the_run_had_done() -> None:
    async with SessionStore(make) as store:
        original = await store.create()
        events = await run_of(original, "sum please")
        assert CALLS == ["model", "add 1 2", "model"]
        before = (await original.messages(), await original.log.read(0, 1000))
        CALLS.clear()

        # After the tool's result: only the model's last answer is made again.
        answered = seq_of(events, "tool_call_response")
        fork = await store.fork(original.id, answered)
        log = await _finished(fork)
        assert CALLS == ["model"]
        assert said(await fork.messages()) == said(before[0])
        # Its log: the original's events up to the fork, then the run going on: one run.
        assert same(log[:answered]) == same(before[1][:answered])
        assert [i.event.type for i in log[answered:]] == [
            *["agent_choice"] * 4,  # "3, as you asked" in chunks of 4
            "token_usage",
            "stream_stopped",
        ]
        validate([i.event for i in log])
        CALLS.clear()

        # At the tool call, before its result: the tool runs, then the model answers.
        called = seq_of(events, "tool_call")
        fork = await store.fork(original.id, called)
        validate([i.event for i in await _finished(fork)])
        assert CALLS == ["add 1 2", "model"]
        assert said(await fork.messages()) == said(before[0])

        # The original is untouched.
        assert (await original.messages(), await original.log.read(0, 1000)) == before


async def test_a_fork_at_a_user_message_answers_it_again_and_one_after_a_run_runs_nothing() -> (
    None
):
    async with SessionStore(make) as store:
        original = await store.create()
        first = await run_of(original, "sum please")
        await run_of(original, "and again")
        held = await original.messages()
        CALLS.clear()

        # The user message event: the conversation holds the message, the run answers it.
        fork = await store.fork(original.id, seq_of(first, "user_message"))
        validate([i.event for i in await _finished(fork)])
        assert CALLS == ["model", "add 1 2", "model"]
        assert said(await fork.messages()) == said(held[:4])
        CALLS.clear()

        # After the first run's answer (its usage, its end): its conversation and its
        # events, nothing runs; what projections keep with the session comes along.
        await store.backend.write_attachment(original, "kept", {"by": "a projection"})
        for end in (first[-2].sequence, first[-1].sequence):
            fork = await store.fork(original.id, end)
            assert await store.backend.read_attachment(fork, "kept") == {"by": "a projection"}
            assert fork.run is None
            assert CALLS == []
            assert said(await fork.messages()) == said(held[:4])
            assert same(await fork.log.read(0, 1000)) == same(first)


async def test_a_fork_keeps_the_title_the_session_had_and_does_not_make_it_again() -> None:
    titles: list[str] = []

    def title_of(messages: tuple[Message, ...]) -> str:
        titles.append(str(messages[0].content))
        return "Sums"

    async with SessionStore(make, stream_options={"title": title_of}) as store:
        original = await store.create()
        await run_of(original, "sum please")  # titled at its end
        events = await run_of(original, "and again")
        assert titles == ["sum please"]
        fork = await store.fork(original.id, seq_of(events, "tool_call_response"))
        log = await _finished(fork)
        assert titles == ["sum please"]
        assert [i.event.type for i in log].count("session_title") == 1


async def test_a_fork_at_a_confirmation_asks_again_and_the_original_still_waits() -> None:
    async with SessionStore(make) as store:
        original = await store.create()
        run = await original.start("delete")
        asked = await _until(original, "tool_call_confirmation")
        CALLS.clear()

        fork = await store.fork(original.id, asked)
        await _until(fork, "tool_call_confirmation", after=asked)  # asked again
        await fork.confirm("del-1", "approve")
        validate([i.event for i in await _finished(fork)])
        assert CALLS == ["delete x", "model"]
        assert said(await fork.messages())[-1] == ("assistant", "deleted x, as you asked")
        assert original.run is run
        await original.confirm("del-1", "reject")
        await run.done.wait()
        assert CALLS == ["delete x", "model", "model"]


async def _until(session: Session, kind: str, after: int = 0) -> int:
    """The number of the session's first event of type ``kind`` after ``after``."""
    async with contextlib.aclosing(session.follow(after)) as batches:
        async for batch in batches:
            for item in batch:
                if item.event.type == kind:
                    return item.sequence
    raise AssertionError(f"the log ended without {kind!r}")


async def test_an_edited_fork_answers_the_new_message_in_place_of_the_last_one() -> None:
    async with SessionStore(make) as store:
        original = await store.create()
        first = await run_of(original, "sum please")
        second = await run_of(original, "and again")
        held = await original.messages()
        CALLS.clear()

        # Edited at an event of the second run: its message is the one replaced.
        fork = await store.fork(original.id, second[3].sequence, message="one more")
        log = await _finished(fork)
        assert CALLS == ["model", "add 2 2", "model"]
        assert said(await fork.messages()) == [
            *said(held[:4]),
            ("user", "one more"),
            ("assistant", ""),
            ("tool", "4"),
            ("assistant", "4, as you asked"),
        ]
        # The first run's events, then the new one's (the replaced run's are not there).
        assert same(log[: len(first)]) == same(first)
        assert log[len(first)].event.type == "user_message"
        assert said(await original.messages()) == said(held)


async def test_a_fork_that_cannot_be_made_says_why() -> None:
    async with SessionStore(make) as store:
        original = await store.create()
        with pytest.raises(UnknownEventError, match="has no event 1: it has no events yet"):
            await store.fork(original.id, 1)
        events = await run_of(original, "sum please")
        last = events[-1].sequence
        with pytest.raises(UnknownEventError, match=f"numbered 1 to {last}"):
            await store.fork(original.id, last + 1)
        with pytest.raises(UnknownEventError):
            await store.fork(original.id, 0)
        with pytest.raises(SessionNotFoundError):
            await store.fork("no-such-session", 1)
        with pytest.raises(TypeError, match="at is an event id"):
            await store.fork(original.id, "3")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="message must not be empty"):
            await store.fork(original.id, 3, message=" ")

        # An edited fork needs a user message to replace.
        bare = await store.create()
        await bare.append([AssistantMessage(content="Hello, I can add.")])
        await (await bare.start(None)).done.wait()
        with pytest.raises(CannotForkError, match="no user message at or before event 1"):
            await store.fork(bare.id, 1, message="add 1 and 2")

        # A conversation rewritten since the event is no longer held as it was.
        await original.agent.conversation.reset()
        with pytest.raises(CannotForkError, match="rewritten since"):
            await store.fork(original.id, last)


async def test_a_fork_at_an_event_no_longer_kept_is_refused() -> None:
    async with SessionStore(make, retain=5) as store:
        original = await store.create()
        await (await original.start("sum please")).done.wait()
        first, last = await original.log.bounds()
        assert (first, last) == (11, 15)  # the run made 15 events
        with pytest.raises(EventsExpiredError, match=f"the oldest kept is {first}"):
            await store.fork(original.id, first - 1)
        # The kept ones fork as ever, numbered as in the original.
        fork = await store.fork(original.id, last)
        assert await fork.log.bounds() == (first, last)
        assert same(await fork.log.read(first - 1, 10)) == same(
            await original.log.read(first - 1, 10)
        )


async def test_post_fork_answers_201_with_the_new_session_and_typed_errors() -> None:
    app = create_app(make)
    async with in_process(app) as client:
        session_id = await new_session(client)
        ran = await client.post(f"/sessions/{session_id}/messages", json={"message": "sum"})
        assert ran.status_code == 200

        forked = await client.post(f"/sessions/{session_id}/fork", json={"at": 1})
        assert forked.status_code == 201, forked.text
        fork_id = forked.json()["id"]
        assert forked.headers["location"] == f"/sessions/{fork_id}"
        assert fork_id != session_id
        events = await client.get(f"/sessions/{fork_id}/events")
        assert b"event: user_message" in events.content
        assert b"event: stream_stopped" in events.content
        # Its events name the fork, never the session it branched from.
        assert session_id not in events.text
        edited = await client.post(
            f"/sessions/{session_id}/fork", json={"at": 1, "message": "sum again"}
        )
        assert edited.status_code == 201, edited.text

        url = f"/sessions/{session_id}/fork"
        assert_error(await client.post(url, json={"at": 999}), 422, "unknown_event")
        assert (await client.post(url, json={"at": 1.0})).status_code == 201  # JSON's 1
        missing = await client.post("/sessions/nope/fork", json={"at": 1})
        assert_error(missing, 404, "session_not_found")
        bodies: tuple[dict[str, object], ...] = (
            {},
            {"at": 0},
            {"at": "1"},
            {"at": 1.5},
            {"at": 1, "message": ""},
            {"at": 1, "x": 2},
        )
        for body in bodies:
            assert_error(await client.post(url, json=body), 422, "invalid_body")
        assert_error(await client.post(url, content=b"{"), 400, "invalid_json")
