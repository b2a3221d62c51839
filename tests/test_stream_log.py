"""EventLog: transport errors (a consumer that disconnects) do not end the session."""

import anyio
import pytest

from agentrt import ToolCall
from agentrt.stream import StreamAdapter, validate
from agentrt.stream._log import EventLog, EventsExpiredError
from agentrt.stream.events import StreamStartedEvent
from tests.conftest import AgentFactory


async def test_a_disconnecting_reader_does_not_end_the_session(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([ToolCall(id="c", name="add", arguments={"a": 1, "b": 2}), "3"])
    log = EventLog()
    adapter = StreamAdapter(agent, log)
    seen: list[int] = []

    async def reader_that_leaves() -> None:
        async for sequence, _ in log.follow():
            seen.append(sequence)
            if sequence == 3:
                return  # the client disconnects mid-run

    async with anyio.create_task_group() as group:
        group.start_soon(reader_that_leaves)
        await anyio.wait_all_tasks_blocked()
        result = await adapter.run("1+2?")
        log.close()
    assert result.output == "3"
    assert seen == [1, 2, 3]
    # Reconnecting after the last event read replays the rest, then ends.
    rest = [item async for item in log.follow(after=3)]
    assert [s for s, _ in rest] == list(range(4, log.last_sequence + 1))
    events = [event for _, event in log.since(0)]
    assert validate(events) == []
    assert events[-1].type == "stream_stopped"


async def test_followers_get_live_events_in_order(make_agent: AgentFactory) -> None:
    agent = make_agent(["hello there"])
    log = EventLog()
    first: list[str] = []
    second: list[str] = []

    async def follow(into: list[str]) -> None:
        async for _, event in log.follow():
            into.append(event.type)

    async with anyio.create_task_group() as group:
        group.start_soon(follow, first)
        group.start_soon(follow, second)
        await anyio.wait_all_tasks_blocked()
        await StreamAdapter(agent, log).run("hi")
        log.close()
    assert first == second
    assert first[0] == "user_message"
    assert first[-1] == "stream_stopped"


async def test_retention_window_and_expired_reads(make_agent: AgentFactory) -> None:
    agent = make_agent(["a fairly long answer"])
    agent.model.chunk_size = 1  # type: ignore[attr-defined]
    log = EventLog(retain=5)
    await StreamAdapter(agent, log).run("go")
    last = log.last_sequence
    assert [s for s, _ in log.since(last - 5)] == list(range(last - 4, last + 1))
    with pytest.raises(EventsExpiredError, match="no longer kept") as info:
        log.since(0)
    assert info.value.first == last - 4
    assert log.since(last) == []


def test_bad_arguments_and_closed_log() -> None:
    with pytest.raises(ValueError, match="retain must be a positive int"):
        EventLog(retain=0)
    log = EventLog()
    with pytest.raises(ValueError, match="after must be a non-negative int"):
        log.since(-1)
    log.close()
    assert log.closed
    from agentrt.stream.events import StreamStartedEvent

    with pytest.raises(anyio.ClosedResourceError):
        log.append(StreamStartedEvent(session_id="s"))


def test_a_reader_catching_up_takes_the_oldest_events_it_has_not_read_first() -> None:
    log = EventLog(retain=8)
    for n in range(10):
        log.append(StreamStartedEvent(session_id=f"s{n}"))
    assert (log.first_sequence, log.last_sequence) == (3, 10)
    assert [item.sequence for item in log.since(4, limit=3)] == [5, 6, 7]
    assert [item.sequence for item in log.since(8, limit=3)] == [9, 10]
    (fifth,) = log.since(4, limit=1)
    assert isinstance(fifth.event, StreamStartedEvent)
    assert fifth.event.session_id == "s4"
