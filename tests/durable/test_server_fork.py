"""Issue 27, fork on a durable store: the run's recorded steps stand in up to the event.

A fork inside a run is the run forked as a DBOS workflow: the model and tool calls it
had finished by the event are replayed from the store, never made again (counted here),
and it goes on live from there in the new session, whose log begins with the original's
events. An edited fork answers its new message from the conversation before the one it
replaces; after a run's last answer a fork holds what the run left and runs nothing.
The original is untouched. SQLite in process here; Postgres with two ``agentrt serve``
processes, the fork asked of one, at the bottom (``nox -s durable``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from agentrt.durable import fork
from agentrt.server import Session, SessionStore, UnknownEventError
from agentrt.server.durable import DurableBackend
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.validate import validate
from tests.test_server_fork import CALLS, _fresh_calls, make, run_of, said, same, seq_of

from .conftest import Servers, read_events

TIMEOUT = httpx.Timeout(60.0)
# Seconds a fork's run may take to end (a DBOS queue picks it up within a second or
# so): a fork that never runs fails the test rather than hang it.
LIMIT = 60.0

__all__ = ("_fresh_calls",)


@contextlib.asynccontextmanager
async def durable_store(tmp_path: Path) -> AsyncIterator[SessionStore]:
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    async with SessionStore(make, backend=DurableBackend(store, executor_id="forks")) as sessions:
        yield sessions


async def _log(session: Session) -> list[SequencedEvent]:
    """The session's whole log, once it has no open run (in any process)."""
    with anyio.fail_after(LIMIT):
        async with contextlib.aclosing(session.follow(0)) as batches:
            async for _ in batches:
                pass
    return await session.log.read(0, 1000)


def _types(log: list[SequencedEvent]) -> list[str]:
    return [item.event.type for item in log]


async def test_a_durable_fork_inside_a_run_replays_its_recorded_steps_and_goes_on_live(
    tmp_path: Path,
) -> None:
    async with durable_store(tmp_path) as store:
        original = await store.create()
        events = await run_of(original, "sum please")
        assert CALLS == ["model", "add 1 2", "model"]
        before = (await original.messages(), await original.log.read(0, 1000))
        CALLS.clear()

        # At the tool call: the model's answer is replayed, the tool runs, the model answers.
        called = seq_of(events, "tool_call")
        fork = await store.fork(original.id, called)
        assert fork.id != original.id
        log = await _log(fork)
        assert CALLS == ["add 1 2", "model"]
        assert said(await fork.messages()) == said(before[0])
        # One run in the fork's log, as the original's: its events up to the end of the
        # model's recorded answer (copied), then those made again (a new timestamp each).
        assert _types(log) == _types(before[1])
        answered = seq_of(events, "token_usage") - 1
        assert same(log[:answered]) == same(before[1][:answered])
        assert same(log, "timestamp") == same(before[1], "timestamp")
        validate([item.event for item in log])
        assert {item.event.model_dump()["session_id"] for item in log} == {fork.id}
        CALLS.clear()

        # At the tool's result: the model alone answers again.
        fork = await store.fork(original.id, seq_of(events, "tool_call_response"))
        await _log(fork)
        assert CALLS == ["model"]
        assert said(await fork.messages()) == said(before[0])
        CALLS.clear()

        # A fork of a fork: its run's recorded steps stand in as well.
        again = await store.fork(fork.id, called)
        assert same(await _log(again), "timestamp") == same(log, "timestamp")
        assert CALLS == ["add 1 2", "model"]

        # The original is untouched.
        assert (await original.messages(), await original.log.read(0, 1000)) == before


async def test_a_durable_fork_after_a_run_runs_nothing_and_an_edited_one_answers_anew(
    tmp_path: Path,
) -> None:
    async with durable_store(tmp_path) as store:
        original = await store.create()
        first = await run_of(original, "sum please")
        second = await run_of(original, "and again")
        held = await original.messages()
        CALLS.clear()

        # After the first run's answer: its conversation and its events, nothing runs;
        # what projections keep with the session comes along.
        await store.backend.write_attachment(original, "kept", {"by": "a projection"})
        fork = await store.fork(original.id, first[-1].sequence)
        assert await store.backend.read_attachment(fork, "kept") == {"by": "a projection"}
        assert same(await _log(fork)) == same(first)
        assert said(await fork.messages()) == said(held[:4])
        assert CALLS == []

        # At the second run's user message: the message is answered again, live.
        fork = await store.fork(original.id, seq_of(second, "user_message"))
        await _log(fork)
        assert CALLS == ["model", "add 2 2", "model"]
        assert said(await fork.messages()) == said(held)
        CALLS.clear()

        # Edited inside the second run: its message is replaced, and answered live.
        fork = await store.fork(original.id, second[3].sequence, message="one more")
        log = await _log(fork)
        assert CALLS == ["model", "add 2 2", "model"]
        assert said(await fork.messages()) == [
            *said(held[:4]),
            ("user", "one more"),
            ("assistant", ""),
            ("tool", "4"),
            ("assistant", "4, as you asked"),
        ]
        assert same(log[: len(first)]) == same(first)
        assert log[len(first)].event.type == "user_message"
        assert said(await original.messages()) == said(held)

        with pytest.raises(UnknownEventError):
            await store.fork(original.id, second[-1].sequence + 1)


async def test_a_durable_fork_at_a_confirmation_asks_again_and_the_original_still_waits(
    tmp_path: Path,
) -> None:
    async with durable_store(tmp_path) as store:
        original = await store.create()
        run = await original.start("delete")
        asked = await _until(original, "tool_call_confirmation")
        CALLS.clear()

        fork = await store.fork(original.id, asked)
        again = await _until(fork, "tool_call_confirmation")
        assert again == asked  # numbered alike: the confirmation is asked again
        await fork.confirm("del-1", "approve")
        await _log(fork)
        assert CALLS == ["delete x", "model"]
        assert said(await fork.messages())[-1] == ("assistant", "deleted x, as you asked")

        # The original still waits for its own answer.
        assert original.run is run
        assert CALLS.count("delete x") == 1
        await original.confirm("del-1", "reject", "not now")
        await run.done.wait()
        rejected = said(await original.messages())
        assert rejected[-1][1].endswith(", as you asked")
        CALLS.clear()

        # After the answer: the recorded rejection stands in, nothing is asked again.
        events = await original.log.read(0, 1000)
        fork = await store.fork(original.id, seq_of(events, "tool_call_response"))
        log = await _log(fork)
        assert CALLS == ["model"]
        assert said(await fork.messages()) == rejected
        assert [i.event.type for i in log].count("tool_call_confirmation") == 1


async def test_agentrt_durable_fork_branches_a_stored_session_from_a_process_of_its_own(
    tmp_path: Path,
) -> None:
    async with durable_store(tmp_path) as store:
        original = await store.create()
        events = await run_of(original, "sum please")
        held = await original.messages()
    CALLS.clear()

    # No server runs: the library forks, the fork's run ends here, the id comes back.
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    forked = await fork(url, original.id, seq_of(events, "tool_call"), make)
    assert CALLS == ["add 1 2", "model"]
    edited = await fork(url, original.id, 1, make, message="once more")
    assert CALLS == ["add 1 2", "model", "model", "add 1 2", "model"]

    async with durable_store(tmp_path) as store:
        assert said(await (await store.open(forked)).messages()) == said(held)
        assert said(await (await store.open(edited)).messages())[0] == ("user", "once more")
        assert said(await (await store.open(original.id)).messages()) == said(held)
    with pytest.raises(UnknownEventError):
        await fork(url, original.id, 999, make)


async def _until(session: Session, kind: str) -> int:
    """The number of the session's first event of type ``kind``, once it is in the log."""
    with anyio.fail_after(LIMIT):
        async with contextlib.aclosing(session.follow(0)) as batches:
            async for batch in batches:
                for item in batch:
                    if item.event.type == kind:
                        return item.sequence
    raise AssertionError(f"the log ended without {kind!r}")


async def _fork_at_every_event(
    store: SessionStore,
) -> list[tuple[str, list[str], list[tuple[str, str]]]]:
    """Fork a session of two runs at each of its events: what each fork called, and held."""
    original = await store.create()
    await run_of(original, "sum please")
    await run_of(original, "and again")
    found = []
    for item in await original.log.read(0, 1000):
        CALLS.clear()
        fork = await store.fork(original.id, item.sequence)
        await _log(fork)
        found.append((item.event.type, list(CALLS), said(await fork.messages())))
    return found


@pytest.mark.durable
async def test_a_fork_at_any_event_calls_and_holds_the_same_in_memory_and_in_the_store(
    tmp_path: Path,
) -> None:
    async with SessionStore(make) as store:
        in_memory = await _fork_at_every_event(store)
    async with durable_store(tmp_path) as store:
        stored = await _fork_at_every_event(store)
    assert stored == in_memory
    # What was done by each event is not done again; what was not is.
    assert [(kind, calls) for kind, calls, _ in stored[:15]] == [
        ("user_message", ["model", "add 1 2", "model"]),
        ("stream_started", ["model", "add 1 2", "model"]),
        *[("partial_tool_call", ["model", "add 1 2", "model"])] * 4,
        ("token_usage", ["add 1 2", "model"]),
        ("tool_call", ["add 1 2", "model"]),
        ("tool_call_response", ["model"]),
        *[("agent_choice", ["model"])] * 3,
        ("agent_choice", []),
        ("token_usage", []),
        ("stream_stopped", []),
    ]


@pytest.mark.durable
def test_a_fork_asked_of_one_postgres_server_replays_a_run_of_another(
    postgres_servers: Servers,
) -> None:
    servers = postgres_servers
    a = servers.start("exec-a")
    b = servers.start("exec-b")
    with httpx.Client(base_url=a.url, timeout=TIMEOUT) as on_a:
        session = on_a.post("/sessions").json()["id"]
        events = read_events(
            on_a, "POST", f"/sessions/{session}/messages", json={"message": "tools"}
        )
    assert servers.lines("first.count") == ["1"]
    slow = next(
        item.sequence
        for item in events
        if item.event.type == "tool_call" and "slow" in item.event.model_dump_json()
    )
    with httpx.Client(base_url=b.url, timeout=TIMEOUT) as on_b:
        forked = on_b.post(f"/sessions/{session}/fork", json={"at": slow})
        assert forked.status_code == 201, forked.text
        fork = forked.json()["id"]
        log = read_events(
            on_b,
            "GET",
            f"/sessions/{fork}/events",
            until=lambda item: item.event.type == "stream_stopped",
        )
        # The first tool's recorded result stood in: it ran once, in A's run; the slow one
        # ran again for the fork, wherever the store's queue ran it.
        assert servers.lines("first.count") == ["1"]
        assert len(servers.lines("slow.started")) == 2
        assert _types(log) == _types(events)
        assert same(log, "timestamp") == same(events, "timestamp")
        original = on_b.get(f"/sessions/{session}/messages").json()["messages"]
        assert on_b.get(f"/sessions/{fork}/messages").json()["messages"] == original
