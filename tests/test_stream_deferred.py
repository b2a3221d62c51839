"""docs/stream.md, "Runs that wait": how a stream shows deferred tool calls and their answers."""

from typing import Any

import pytest

from agentrt import Agent, Approval, ExternalTool, NotPendingError, ToolCall, tool
from agentrt.stream._adapter import StreamAdapter
from agentrt.stream._parse import parse_event
from agentrt.stream.codec import encode_ndjson
from agentrt.stream.events import (
    StreamEvent,
    StreamStoppedEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
)
from agentrt.stream.validate import validate
from tests.conftest import AgentFactory, add

LOCATE = ExternalTool("locate", "Where the browser is.", {"type": "object", "properties": {}})
WHERE = ToolCall(id="call_where", name="locate", arguments={"precise": True})
ADD = ToolCall(id="call_add", name="add", arguments={"a": 1, "b": 2})

deleted: list[str] = []


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


RM_A = ToolCall(id="call_a", name="delete_file", arguments={"path": "a.txt"})
RM_B = ToolCall(id="call_b", name="delete_file", arguments={"path": "b.txt"})


async def collect(agent: Agent, prompt: str | None, **options: Any) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    # strict: every event is checked against the stream's rules as it is read.
    async with agent.stream(prompt, strict=True, **options) as stream:
        async for event in stream:
            events.append(event)
    assert validate(events, known_only=True) == []
    return events


def shown(events: list[StreamEvent]) -> list[tuple[str, str | None]]:
    """Each event's type, with the tool call id of the tool call events."""
    return [
        (event.type, getattr(getattr(event, "tool_call", None), "id", None)) for event in events
    ]


async def test_an_external_tools_call_shows_as_a_tool_call_then_the_stream_stops_waiting(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([[WHERE, ADD], "You are in Lyon; 1 + 2 = 3."], tools=[add, LOCATE])
    agent.model.chunk_size = 100  # type: ignore[attr-defined]
    events = await collect(agent, "Where am I, and 1 + 2?")
    assert shown(events) == [
        ("user_message", None),
        ("stream_started", None),
        ("partial_tool_call", "call_where"),
        ("partial_tool_call", "call_add"),
        ("token_usage", None),
        ("tool_call", "call_where"),
        ("tool_call", "call_add"),
        ("tool_call_response", "call_add"),
        ("stream_stopped", None),
    ]
    stopped = events[-1]
    assert isinstance(stopped, StreamStoppedEvent)
    assert stopped.pending_tool_call_ids == ("call_where",)
    call = events[5]
    assert isinstance(call, ToolCallEvent)
    assert call.tool_call.function.arguments == '{"precise": true}'

    # The next stream answers it: the call's tool_call and response, then the model.
    events = await collect(agent, None, tool_results={WHERE.id: "Lyon"})
    assert shown(events) == [
        ("stream_started", None),
        ("tool_call", "call_where"),
        ("tool_call_response", "call_where"),
        ("agent_choice", None),
        ("token_usage", None),
        ("stream_stopped", None),
    ]
    call, response = events[1], events[2]
    assert isinstance(call, ToolCallEvent)
    assert call.tool_call.function.arguments == '{"precise": true}'
    assert isinstance(response, ToolCallResponseEvent)
    assert response.response == "Lyon"
    stopped = events[-1]
    assert isinstance(stopped, StreamStoppedEvent)
    assert stopped.pending_tool_call_ids is None


async def test_a_finished_streams_stream_stopped_has_no_pending_ids_in_its_json(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(["done"])
    events = await collect(agent, "hi")
    assert b"pending_tool_call_ids" not in encode_ndjson(events[-1])


async def test_the_pending_ids_are_part_of_agentrts_own_format(make_agent: AgentFactory) -> None:
    agent = make_agent([WHERE], tools=[LOCATE])
    events = await collect(agent, "Where am I?")
    line = encode_ndjson(events[-1])
    assert b'"pending_tool_call_ids":["call_where"]' in line
    # A strict reader (agentrt's own format only) reads it back.
    parsed = parse_event(line, strict=True)
    assert isinstance(parsed, StreamStoppedEvent)
    assert parsed.pending_tool_call_ids == ("call_where",)


async def test_deferred_confirmations_end_the_stream_waiting_on_the_questions(
    make_agent: AgentFactory,
) -> None:
    deleted.clear()
    agent = make_agent([[RM_A, RM_B], "Deleted a.txt, kept b.txt."], tools=[delete_file])
    agent.model.chunk_size = 100  # type: ignore[attr-defined]
    events = await collect(agent, "Delete a.txt and b.txt", defer_confirmations=True)
    assert shown(events) == [
        ("user_message", None),
        ("stream_started", None),
        ("partial_tool_call", "call_a"),
        ("partial_tool_call", "call_b"),
        ("token_usage", None),
        ("tool_call_confirmation", "call_a"),
        ("tool_call_confirmation", "call_b"),
        ("stream_stopped", None),
    ]
    stopped = events[-1]
    assert isinstance(stopped, StreamStoppedEvent)
    assert stopped.pending_tool_call_ids == ("call_a", "call_b")
    assert deleted == []
    # Nothing waits in the run: it is over, and the agent is free.
    assert agent.state == "idle"

    # The decisions come with the next stream: no question is asked again; the rejected
    # call is answered first, then the approved one runs.
    events = await collect(
        agent,
        None,
        defer_confirmations=True,
        tool_results={"call_a": Approval("approve"), "call_b": Approval("reject", "keep it")},
    )
    assert shown(events) == [
        ("stream_started", None),
        ("tool_call", "call_b"),
        ("tool_call_response", "call_b"),
        ("tool_call", "call_a"),
        ("tool_call_response", "call_a"),
        ("agent_choice", None),
        ("token_usage", None),
        ("stream_stopped", None),
    ]
    responses = [e.response for e in events if isinstance(e, ToolCallResponseEvent)]
    assert responses == ["rejected by the user: keep it", "deleted a.txt"]
    assert deleted == ["a.txt"]


async def test_an_answer_given_before_the_question_lets_a_deferring_stream_run_the_call(
    make_agent: AgentFactory,
) -> None:
    deleted.clear()
    agent = make_agent([RM_A, "Deleted."], tools=[delete_file])
    events: list[StreamEvent] = []
    async with agent.stream("Delete a.txt", defer_confirmations=True, buffer_size=0) as stream:
        async for event in stream:
            events.append(event)
            if event.type == "partial_tool_call":
                await stream.confirm("call_a", "approve")
    assert validate(events) == []
    assert [e.type for e in events][-6:] == [
        "tool_call_confirmation",
        "tool_call",
        "tool_call_response",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    assert deleted == ["a.txt"]
    assert stream.result is not None
    assert stream.result.pending_tool_calls == ()


async def test_approve_tool_given_in_a_continuation_holds_for_the_sessions_later_calls(
    make_agent: AgentFactory,
) -> None:
    deleted.clear()
    agent = make_agent([RM_A, "One.", RM_B, "Two."], tools=[delete_file])
    await collect(agent, "Delete a.txt", defer_confirmations=True)
    await collect(
        agent, None, defer_confirmations=True, tool_results={"call_a": Approval("approve-tool")}
    )
    events = await collect(agent, "Delete b.txt", defer_confirmations=True)
    assert "tool_call_confirmation" not in [e.type for e in events]
    assert deleted == ["a.txt", "b.txt"]


async def test_a_stream_adapter_run_continues_with_tool_results(make_agent: AgentFactory) -> None:
    agent = make_agent([WHERE, "Lyon it is."], tools=[LOCATE])
    agent.model.chunk_size = 100  # type: ignore[attr-defined]
    sent: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        sent.append(event)

    first = await StreamAdapter(agent, sink).run("Where am I?")
    assert first.pending_tool_calls == (WHERE,)
    sent.clear()
    done = await StreamAdapter(agent, sink).run(tool_results={WHERE.id: {"city": "Lyon"}})
    assert done.output == "Lyon it is."
    assert [e.type for e in sent] == [
        "stream_started",
        "tool_call",
        "tool_call_response",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]


async def test_a_stream_with_a_bad_answer_reports_the_error_and_changes_nothing(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([WHERE], tools=[LOCATE])
    await collect(agent, "Where am I?")
    events: list[StreamEvent] = []

    async def read() -> None:
        async with agent.stream(tool_results={"call_nope": "x"}) as stream:
            async for event in stream:
                events.append(event)

    with pytest.raises(NotPendingError, match="no open tool call"):
        await read()
    assert [e.type for e in events] == ["stream_started", "error", "stream_stopped"]
    assert agent.conversation.pending_calls() == [WHERE]
