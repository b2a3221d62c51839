"""agentrt/stream/validate.py: the ordering rules of one stream session."""

import dataclasses
from collections.abc import Callable
from itertools import count
from typing import Any, Literal

import pytest

from agentrt.exceptions import AgentrtError
from agentrt.stream import AnyStreamEvent, InvalidEvent
from agentrt.stream.events import (
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    ErrorEvent,
    PartialToolCallEvent,
    SessionCompactionEvent,
    SessionSummaryEvent,
    SessionTitleEvent,
    ShellOutputEvent,
    StreamEvent,
    StreamStartedEvent,
    StreamStoppedEvent,
    TeamAgent,
    TeamInfoEvent,
    TokenUsage,
    TokenUsageEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    UnknownEvent,
    UserMessageEvent,
    WireFunction,
    WireToolCall,
    attributed,
)
from agentrt.stream.validate import (
    RULES,
    Rule,
    StreamValidator,
    StreamViolationError,
    Violation,
    validate,
)

SID = "s1"
AGENT = "root"
_ticks = count()


def at() -> str:
    """A fresh, strictly later timestamp (the events below are made in stream order)."""
    tick = next(_ticks)
    return f"2026-11-22T04:{tick // 60_000_000 % 60:02d}:{tick // 1_000_000 % 60:02d}." + (
        f"{tick % 1_000_000:06d}Z"
    )


def call(call_id: str = "c1", name: str = "add") -> WireToolCall:
    return WireToolCall(id=call_id, function=WireFunction(name=name, arguments="{}"))


def user() -> UserMessageEvent:
    return UserMessageEvent(session_id=SID, timestamp=at(), message="hi")


def started(**fields: Any) -> StreamStartedEvent:
    return StreamStartedEvent(session_id=fields.pop("session_id", SID), timestamp=at(), **fields)


def stopped() -> StreamStoppedEvent:
    return StreamStoppedEvent(session_id=SID, timestamp=at())


def choice(text: str = "Hi", *, session_id: str = SID) -> AgentChoiceEvent:
    return AgentChoiceEvent(session_id=session_id, timestamp=at(), content=text, agent_name=AGENT)


def partial(call_id: str = "c1", name: str = "add") -> PartialToolCallEvent:
    return PartialToolCallEvent(
        session_id=SID, timestamp=at(), tool_call=call(call_id, name), agent_name=AGENT
    )


def confirmation(call_id: str = "c1") -> ToolCallConfirmationEvent:
    return ToolCallConfirmationEvent(
        session_id=SID, timestamp=at(), tool_call=call(call_id), agent_name=AGENT
    )


def tool_call(call_id: str = "c1", agent_name: str = AGENT) -> ToolCallEvent:
    return ToolCallEvent(
        session_id=SID, timestamp=at(), tool_call=call(call_id), agent_name=agent_name
    )


def response(call_id: str = "c1") -> ToolCallResponseEvent:
    return ToolCallResponseEvent(
        session_id=SID, timestamp=at(), tool_call=call(call_id), response="3", agent_name=AGENT
    )


def error() -> ErrorEvent:
    return ErrorEvent(session_id=SID, timestamp=at(), error="boom", agent_name=AGENT)


def usage() -> TokenUsageEvent:
    figures = TokenUsage(
        input_tokens=3, output_tokens=1, context_length=4, context_limit=100, cost=0.0
    )
    return TokenUsageEvent(session_id=SID, timestamp=at(), usage=figures, agent_name=AGENT)


def compaction(status: Literal["start", "started", "completed"]) -> SessionCompactionEvent:
    return SessionCompactionEvent(session_id=SID, timestamp=at(), status=status, agent_name=AGENT)


def summary() -> SessionSummaryEvent:
    return SessionSummaryEvent(session_id=SID, timestamp=at(), summary="short", agent_name=AGENT)


def team() -> TeamInfoEvent:
    return TeamInfoEvent(
        session_id=SID,
        timestamp=at(),
        available_agents=(TeamAgent(name=AGENT), TeamAgent(name="sub")),
        current_agent=AGENT,
        agent_name=AGENT,
    )


def by_sub(event: StreamEvent, parent: str = "c1", agent_name: str | None = "sub") -> StreamEvent:
    """``event`` as an event of the sub-agent run that the call ``parent`` started."""
    return attributed(event.model_copy(update={"agent_name": agent_name}), parent)


def full_session() -> list[StreamEvent]:
    """Every event type, in the patterns of the spec."""
    return [
        user(),
        started(),
        AgentChoiceReasoningEvent(
            session_id=SID, timestamp=at(), content="thinking", agent_name=AGENT
        ),
        choice("Let me "),
        choice("add."),
        partial(),
        partial(),
        confirmation(),
        tool_call(),
        ShellOutputEvent(session_id=SID, timestamp=at(), output="ok\n"),
        response(),
        tool_call("c2"),  # no partial, no confirmation: both are optional
        response("c2"),
        usage(),
        compaction("start"),
        compaction("started"),
        summary(),
        usage(),
        compaction("completed"),
        choice("3"),
        SessionTitleEvent(session_id=SID, timestamp=at(), title="Adding", agent_name=AGENT),
        error(),
        stopped(),
    ]


def test_a_full_valid_session_has_no_violations() -> None:
    events = full_session()
    assert {event.type for event in events} == {
        "user_message",
        "stream_started",
        "agent_choice_reasoning",
        "agent_choice",
        "partial_tool_call",
        "tool_call_confirmation",
        "tool_call",
        "shell",
        "tool_call_response",
        "token_usage",
        "session_compaction",
        "session_summary",
        "session_title",
        "error",
        "stream_stopped",
    }
    assert validate(events) == []


def test_minimal_sessions_are_valid() -> None:
    assert validate([started(), stopped()]) == []
    assert validate([user(), started(), stopped()]) == []


def test_equal_timestamps_are_in_order() -> None:
    moment = at()
    events: list[StreamEvent] = [
        StreamStartedEvent(session_id=SID, timestamp=moment),
        StreamStoppedEvent(session_id=SID, timestamp=moment),
    ]
    assert validate(events) == []


def test_timestamps_with_offsets_compare_as_instants() -> None:
    events: list[StreamEvent] = [
        StreamStartedEvent(session_id=SID, timestamp="2026-11-22T05:00:00+01:00"),
        StreamStoppedEvent(session_id=SID, timestamp="2026-11-22T04:00:00.000001Z"),
    ]
    assert validate(events) == []


def test_a_cancelled_compaction_may_end_with_the_stream() -> None:
    assert validate([started(), compaction("start"), compaction("started"), stopped()]) == []


def test_an_error_may_come_inside_a_compaction() -> None:
    events: list[StreamEvent] = [started(), compaction("start"), error()]
    events.append(compaction("started"))
    assert validate([*events, compaction("completed"), stopped()]) == []


# -- one minimal violation per rule ----------------------------------------------------------

# (rule, the events, the index of the offending event). Each builder makes fresh events,
# so that timestamps increase in list order.
CASES: list[tuple[Rule, Callable[[], list[AnyStreamEvent]], int]] = [
    ("user_message_position", lambda: [started(), user(), stopped()], 1),
    ("user_message_once", lambda: [user(), user(), started(), stopped()], 1),
    ("stream_started_first", lambda: [choice(), started(), stopped()], 0),
    ("stream_started_once", lambda: [started(), started(), stopped()], 1),
    ("stream_started_missing", lambda: [user()], 1),  # with stream_stopped_missing
    ("stream_stopped_once", lambda: [started(), stopped(), stopped()], 2),
    ("stream_stopped_missing", lambda: [started(), choice()], 2),
    ("event_after_stream_stopped", lambda: [started(), stopped(), choice()], 2),
    ("error_after_stream_stopped", lambda: [started(), stopped(), error()], 2),
    ("tool_call_response_unmatched", lambda: [started(), response(), stopped()], 1),
    ("tool_call_duplicate", lambda: [started(), tool_call(), tool_call(), stopped()], 2),
    (
        "tool_call_response_duplicate",
        lambda: [started(), tool_call(), response(), response(), stopped()],
        3,
    ),
    (
        "tool_call_confirmation_order",
        lambda: [started(), tool_call(), confirmation(), stopped()],
        2,
    ),
    ("partial_tool_call_order", lambda: [started(), tool_call(), partial(), stopped()], 2),
    ("partial_tool_call_incomplete", lambda: [started(), partial(name=""), stopped()], 1),
    (
        "tool_call_agent_mismatch",
        lambda: [
            started(),
            tool_call(),
            response().model_copy(update={"agent_name": "b"}),
            stopped(),
        ],
        2,
    ),
    (
        "tool_call_parent_mismatch",
        lambda: [
            started(),
            tool_call("t1"),
            tool_call("t2"),
            by_sub(tool_call("c1"), "t1"),
            by_sub(response("c1"), "t2"),
            stopped(),
        ],
        4,
    ),
    ("team_info_position", lambda: [started(), choice(), team(), stopped()], 2),
    ("parent_tool_call_unknown", lambda: [started(), by_sub(choice(), "t1"), stopped()], 1),
    (
        "parent_tool_call_closed",
        lambda: [
            started(),
            tool_call("t1"),
            response("t1"),
            by_sub(choice(), "t1"),
            stopped(),
        ],
        3,
    ),
    (
        "parent_tool_call_misplaced",
        lambda: [started(), tool_call("t1"), attributed(stopped(), "t1")],
        2,
    ),
    (
        "attribution_missing",
        lambda: [
            started(),
            tool_call("t1"),
            by_sub(ShellOutputEvent(session_id=SID, timestamp=at(), output="x"), "t1", None),
            stopped(),
        ],
        2,
    ),
    ("agent_name_empty", lambda: [started(agent_name=""), stopped()], 0),
    ("session_id_mismatch", lambda: [started(), choice(session_id="s2"), stopped()], 1),
    ("compaction_order", lambda: [started(), compaction("started"), stopped()], 1),
    (
        "compaction_interleaved",
        lambda: [started(), compaction("start"), compaction("start"), stopped()],
        2,
    ),
    (
        "timestamp_format",
        lambda: [
            started(),
            # The model validates its timestamp; model_construct is how a bad one gets in.
            StreamStoppedEvent.model_construct(session_id=SID, timestamp="yesterday"),
        ],
        1,
    ),
    (
        "timestamp_order",
        lambda: [started(), *reversed([choice(), choice()]), stopped()],
        2,
    ),
    # Only with known_only=True; by default such an event is skipped.
    ("unknown_event_type", lambda: [started(), UnknownEvent(type="agent_info"), stopped()], 1),
    ("invalid_event", lambda: [started(), InvalidEvent('{"type":"x"', "cut"), stopped()], 1),
]


def test_every_rule_has_a_case() -> None:
    assert sorted(rule for rule, _, _ in CASES) == sorted(RULES)
    assert len(set(RULES)) == len(RULES)


@pytest.mark.parametrize(("rule", "build", "index"), CASES, ids=[rule for rule, _, _ in CASES])
def test_rule(rule: Rule, build: Callable[[], list[AnyStreamEvent]], index: int) -> None:
    violations = validate(build(), known_only=rule == "unknown_event_type")
    expected = [(rule, index)]
    if rule == "stream_started_missing":
        # No event can be missing stream_started alone: a stream of user messages
        # misses stream_stopped too, and any other event comes before stream_started.
        expected.append(("stream_stopped_missing", index))
    assert [(violation.rule, violation.index) for violation in violations] == expected
    assert violations[0].message


def test_rule_messages_name_what_happened() -> None:
    (violation,) = validate([started(), tool_call("c9"), partial("c9"), stopped()])
    assert violation.message == "a partial_tool_call for 'c9' after its tool_call"
    (violation,) = validate([started(), choice(session_id="other"), stopped()])
    assert violation.message == "session_id 'other'; the stream's first event had 's1'"


# -- more cases of some rules --------------------------------------------------------------------


def test_partial_tool_call_without_id() -> None:
    (violation,) = validate([started(), partial(call_id=""), stopped()])
    assert violation.rule == "partial_tool_call_incomplete"
    assert violation.message == "a partial_tool_call without the call's id"


@pytest.mark.parametrize(
    ("statuses", "index"),
    [
        (["completed"], 1),
        (["start", "completed"], 2),
        (["start", "started", "started"], 3),
        (["start", "started", "completed", "completed"], 4),
    ],
)
def test_compaction_order(
    statuses: list[Literal["start", "started", "completed"]], index: int
) -> None:
    events: list[StreamEvent] = [started(), *(compaction(s) for s in statuses), stopped()]
    assert [(v.rule, v.index) for v in validate(events)] == [("compaction_order", index)]


@pytest.mark.parametrize("intruder", [choice, tool_call, partial])
def test_only_summary_usage_and_error_come_inside_a_compaction(
    intruder: Callable[[], StreamEvent],
) -> None:
    events: list[StreamEvent] = [started(), compaction("start"), intruder()]
    events.append(compaction("started"))
    violations = validate([*events, compaction("completed"), stopped()])
    assert [(v.rule, v.index) for v in violations] == [("compaction_interleaved", 2)]


def test_agent_name_empty_on_a_required_name_built_without_validation() -> None:
    events: list[StreamEvent] = [started()]
    events.append(
        AgentChoiceEvent.model_construct(
            session_id=SID, timestamp=at(), content="x", agent_name=""
        )
    )
    violations = validate([*events, stopped()])
    assert [(v.rule, v.index) for v in violations] == [("agent_name_empty", 1)]


def test_events_before_stream_started_are_each_reported() -> None:
    violations = validate([choice(), choice(), stopped()])
    assert [(v.rule, v.index) for v in violations] == [
        ("stream_started_first", 0),
        ("stream_started_first", 1),
        ("stream_started_first", 2),
        ("stream_started_missing", 3),
    ]


def test_an_empty_stream_misses_both_ends() -> None:
    assert [(v.rule, v.index) for v in validate([])] == [
        ("stream_started_missing", 0),
        ("stream_stopped_missing", 0),
    ]


def test_one_event_can_break_several_rules() -> None:
    violations = validate([started(), stopped(), choice(session_id="s2")])
    assert [v.rule for v in violations] == ["event_after_stream_stopped", "session_id_mismatch"]


# -- the incremental form ------------------------------------------------------------------------


def test_validate_is_the_validator_run_over_the_events() -> None:
    events: list[StreamEvent] = [choice(), started(), tool_call(), tool_call(), response("x")]
    validator = StreamValidator()
    incremental = [v for event in events for v in validator.check(event)] + validator.finish()
    assert incremental == validate(events)
    assert len(incremental) == 4


def test_strict_validator_raises_at_the_first_violation() -> None:
    validator = StreamValidator(strict=True)
    assert validator.check(started()) == []
    assert validator.check(tool_call()) == []
    with pytest.raises(StreamViolationError) as caught:
        validator.check(tool_call())
    assert caught.value.violation == Violation(
        2, "tool_call_duplicate", "a second tool_call for 'c1'"
    )
    assert str(caught.value) == (
        "the event stream broke the spec at event 2: a second tool_call for 'c1' "
        "[tool_call_duplicate]"
    )
    assert isinstance(caught.value, AgentrtError)


def test_strict_validator_raises_at_the_end_of_an_unfinished_stream() -> None:
    validator = StreamValidator(strict=True)
    validator.check(started())
    with pytest.raises(StreamViolationError) as caught:
        validator.finish()
    assert caught.value.violation.rule == "stream_stopped_missing"


def test_violations_are_frozen() -> None:
    violation = Violation(0, "agent_name_empty", "m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        violation.index = 1  # type: ignore[misc]


def test_events_of_unknown_types_are_left_out_of_every_rule() -> None:
    unknown = UnknownEvent(type="plan_updated", plan=["a"])  # type: ignore[call-arg]
    # First, between the halves of a tool call, inside a compaction, after the end.
    events: list[StreamEvent | UnknownEvent] = [unknown, started(), compaction("start")]
    events += [unknown, compaction("started"), compaction("completed"), stopped(), unknown]
    validator = StreamValidator()
    assert [v for event in events for v in validator.check(event)] == []
    assert validator.finish() == []
    assert validator.skipped == [0, 3, 7]
    assert validate(events) == []
    # For our own streams: known_only reports each one (and strict raises the first).
    assert [(v.rule, v.index) for v in validate(events, known_only=True)] == [
        ("unknown_event_type", 0),
        ("unknown_event_type", 3),
        ("unknown_event_type", 7),
    ]
    with pytest.raises(StreamViolationError, match="unknown type 'plan_updated'"):
        StreamValidator(strict=True, known_only=True).check(unknown)


def test_a_record_that_could_not_be_read_is_reported_and_left_out_of_every_other_rule() -> None:
    # A newer producer's tool_call_response in another shape: it does not answer the call
    # (the stream misses that answer: no rule of ours is about a missing answer), and
    # breaks no ordering rule, even inside a compaction or after the end.
    reshaped = InvalidEvent('{"type":"tool_call_response"}', "tool_call: Field required")
    events: list[AnyStreamEvent] = [reshaped, started(), tool_call("c1"), reshaped]
    events += [compaction("start"), reshaped, compaction("started"), compaction("completed")]
    events += [stopped(), reshaped]
    found = validate(events)
    assert [(v.rule, v.index) for v in found] == [("invalid_event", i) for i in (0, 3, 5, 9)]
    assert found[0].message == "a record that is not read: tool_call: Field required"
    with pytest.raises(StreamViolationError, match="tool_call: Field required"):
        StreamValidator(strict=True).check(reshaped)


def test_a_session_id_left_out_is_not_compared() -> None:
    events: list[StreamEvent] = [started(), error(), stopped()]
    events[1] = events[1].model_copy(update={"session_id": ""})
    assert validate(events) == []
