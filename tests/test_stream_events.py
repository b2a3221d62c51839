"""agentrt/stream/events.py: the wire models of docs/stream.md, parse_event, builders."""

import copy
import json
import pickle
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.exceptions import AgentrtError
from agentrt.messages import ToolCall
from agentrt.stream import InvalidEvent
from agentrt.stream.events import (
    EVENT_TYPES,
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    AgentSwitchingEvent,
    ErrorEvent,
    LastMessageUsage,
    PartialToolCallEvent,
    SessionCompactionEvent,
    SessionSummaryEvent,
    SessionTitleEvent,
    ShellOutputEvent,
    StreamEvent,
    StreamEventError,
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
    _slot_setter,
    delta_builder,
    parse_event,
)
from tests.test_stream_clock import INSTANTS
from tests.test_stream_clock import expected as expected_timestamp

T0 = "2026-11-22T04:58:00.123456Z"
SID = "session-1"
CALL = WireToolCall(id="call_1", function=WireFunction(name="add", arguments='{"a": 1}'))
USAGE = TokenUsage(
    input_tokens=10,
    output_tokens=5,
    context_length=15,
    context_limit=128_000,
    cost=0.25,
    last_message=LastMessageUsage(input_tokens=4, output_tokens=2, cost=0.125),
)

# One event of every type, as the adapter would make them.
SAMPLES: dict[str, StreamEvent] = {
    "user_message": UserMessageEvent(session_id=SID, timestamp=T0, message="1+1?"),
    "stream_started": StreamStartedEvent(session_id=SID, timestamp=T0),
    "agent_choice": AgentChoiceEvent(
        session_id=SID, timestamp=T0, content="Hé 🌍", agent_name="root"
    ),
    "agent_choice_reasoning": AgentChoiceReasoningEvent(
        session_id=SID, timestamp=T0, content="think", agent_name="root"
    ),
    "partial_tool_call": PartialToolCallEvent(
        session_id=SID,
        timestamp=T0,
        tool_call=WireToolCall(id="call_1", function=WireFunction(name="add", arguments='{"a')),
        agent_name="root",
    ),
    "tool_call_confirmation": ToolCallConfirmationEvent(
        session_id=SID, timestamp=T0, tool_call=CALL, agent_name="root"
    ),
    "tool_call": ToolCallEvent(session_id=SID, timestamp=T0, tool_call=CALL, agent_name="root"),
    "tool_call_response": ToolCallResponseEvent(
        session_id=SID, timestamp=T0, tool_call=CALL, response="2", agent_name="root"
    ),
    "shell": ShellOutputEvent(session_id=SID, timestamp=T0, output="$ ls\nREADME.md\n"),
    "token_usage": TokenUsageEvent(session_id=SID, timestamp=T0, usage=USAGE, agent_name="root"),
    "session_compaction": SessionCompactionEvent(
        session_id=SID, timestamp=T0, status="start", agent_name="root"
    ),
    "session_summary": SessionSummaryEvent(
        session_id=SID, timestamp=T0, summary="They added.", agent_name="root"
    ),
    "session_title": SessionTitleEvent(
        session_id=SID, timestamp=T0, title="Adding", agent_name="root"
    ),
    "error": ErrorEvent(session_id=SID, timestamp=T0, error="boom", agent_name="root"),
    "stream_stopped": StreamStoppedEvent(session_id=SID, timestamp=T0),
    "team_info": TeamInfoEvent(
        session_id=SID,
        timestamp=T0,
        available_agents=(TeamAgent(name="root", model="m"), TeamAgent(name="helper")),
        current_agent="root",
        agent_name="root",
    ),
    "agent_switching": AgentSwitchingEvent(
        session_id=SID, timestamp=T0, from_agent="root", to_agent="helper", agent_name="helper"
    ),
}

# The "Structure" of each event in the spec, transcribed: its top-level keys.
SPEC_KEYS: dict[str, set[str]] = {
    "stream_started": {"type"},
    "stream_stopped": {"type"},
    "user_message": {"type", "message"},
    "agent_choice": {"type", "content", "agent_name"},
    "agent_choice_reasoning": {"type", "content", "agent_name"},
    "partial_tool_call": {"type", "tool_call", "agent_name"},
    "tool_call": {"type", "tool_call", "agent_name"},
    "tool_call_confirmation": {"type", "tool_call", "agent_name"},
    "tool_call_response": {"type", "tool_call", "response", "agent_name"},
    "error": {"type", "error", "agent_name"},
    "token_usage": {"type", "usage", "agent_name"},
    "shell": {"type", "output"},
    "session_title": {"type", "session_id", "title", "agent_name"},
    "session_summary": {"type", "session_id", "summary", "agent_name"},
    "session_compaction": {"type", "session_id", "status", "agent_name"},
}
# agentrt's own event types (cagent's shapes), not in the spec: their top-level keys.
EXTENSION_KEYS: dict[str, set[str]] = {
    "team_info": {"type", "available_agents", "current_agent", "agent_name"},
    "agent_switching": {"type", "switching", "from_agent", "to_agent", "agent_name"},
}
# What every agentrt event adds to the spec's structure.
ADDED_KEYS = {"session_id", "timestamp"}
SPEC_TOOL_CALL_KEYS = {"id", "type", "function"}
SPEC_FUNCTION_KEYS = {"name", "arguments"}
SPEC_USAGE_KEYS = {"input_tokens", "output_tokens", "context_length", "context_limit", "cost"}

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
CANONICAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


# -- field names ---------------------------------------------------------------------------------


def test_every_spec_event_type_has_a_model() -> None:
    assert set(EVENT_TYPES) == set(SPEC_KEYS) | set(EXTENSION_KEYS) == set(SAMPLES)
    for kind, cls in EVENT_TYPES.items():
        assert isinstance(SAMPLES[kind], cls)
        assert SAMPLES[kind].type == kind


@pytest.mark.parametrize("kind", [*SPEC_KEYS, *EXTENSION_KEYS])
def test_json_keys_are_the_spec_structure_plus_session_id_and_timestamp(kind: str) -> None:
    data = SAMPLES[kind].model_dump(mode="json")
    assert set(data) == (SPEC_KEYS | EXTENSION_KEYS)[kind] | ADDED_KEYS
    assert next(iter(data)) == "type"
    assert data["type"] == kind
    assert data["timestamp"] == T0
    if "tool_call" in data:
        assert set(data["tool_call"]) == SPEC_TOOL_CALL_KEYS
        assert data["tool_call"]["type"] == "function"
        assert set(data["tool_call"]["function"]) == SPEC_FUNCTION_KEYS
        assert isinstance(data["tool_call"]["function"]["arguments"], str)


def test_usage_has_the_spec_keys_and_last_message() -> None:
    data = SAMPLES["token_usage"].model_dump(mode="json")
    assert set(data["usage"]) == SPEC_USAGE_KEYS | {"last_message"}
    assert data["usage"]["last_message"] == {"input_tokens": 4, "output_tokens": 2, "cost": 0.125}


def test_absent_last_message_is_left_out_not_null() -> None:
    usage = TokenUsage(input_tokens=0, output_tokens=0, context_length=0, context_limit=0, cost=0)
    assert usage.model_dump(mode="json") == dict.fromkeys(SPEC_USAGE_KEYS, 0)
    assert "last_message" not in usage.model_dump_json()
    assert pydantic.TypeAdapter(TokenUsage).validate_json(usage.model_dump_json()) == usage


@pytest.mark.parametrize("kind", ["stream_started", "stream_stopped", "user_message", "shell"])
def test_optional_agent_name_is_left_out_when_absent_and_sent_when_given(kind: str) -> None:
    event = SAMPLES[kind]
    assert event.agent_name is None
    assert "agent_name" not in event.model_dump()
    assert '"agent_name"' not in event.model_dump_json()
    named = event.model_copy(update={"agent_name": "root"})
    assert named.model_dump(mode="json")["agent_name"] == "root"
    assert parse_event(named.model_dump_json()) == named


def test_json_text_of_an_event() -> None:
    assert SAMPLES["agent_choice"].model_dump_json() == (
        '{"type":"agent_choice","session_id":"session-1","timestamp":"2026-11-22T04:58:00.123456Z",'
        '"content":"Hé 🌍","agent_name":"root"}'
    )


# -- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SPEC_KEYS)
def test_parse_picks_the_model_by_type(kind: str) -> None:
    event = SAMPLES[kind]
    text = event.model_dump_json()
    for data in (text, text.encode(), event.model_dump(), event.model_dump(mode="json")):
        parsed = parse_event(data)
        assert type(parsed) is EVENT_TYPES[kind]
        assert parsed == event


def test_parse_accepts_an_explicit_null_for_optional_fields() -> None:
    parsed = parse_event(
        '{"type":"stream_started","session_id":"s","timestamp":"2026-11-22T04:58:00Z",'
        '"agent_name":null}'
    )
    assert parsed == StreamStartedEvent(
        session_id="s", timestamp="2026-11-22T04:58:00Z", agent_name=None
    )


def test_parse_keeps_the_timestamp_text_verbatim() -> None:
    text = "2026-11-22T05:58:00.5+01:00"
    parsed = parse_event(
        {"type": "stream_stopped", "session_id": "s", "timestamp": text}, strict=True
    )
    assert parsed.timestamp == text


def _json(**fields: Any) -> str:
    base: dict[str, Any] = {"session_id": "s", "timestamp": T0}
    return pydantic.TypeAdapter(dict[str, Any]).dump_json(base | fields).decode()


INVALID: list[tuple[str | bytes | dict[str, Any], str]] = [
    ("{", "not valid JSON (EOF while parsing an object"),
    (b"\xff\xfe", "not valid JSON"),
    ("", "not valid JSON"),
    ("[1, 2]", "an event is a JSON object, not list"),
    ('"agent_choice"', "an event is a JSON object, not str"),
    ("{}", "no 'type' field"),
    (_json(content="x"), "no 'type' field"),
    (
        _json(type="vendor_event"),
        "unknown type 'vendor_event' (the known types are stream_started",
    ),
    (_json(type=3), "unknown type"),
    (_json(type="agent_choice", content="x"), "'agent_choice' event: agent_name: Field required"),
    (
        _json(type="agent_choice", content="x", agent_name=""),
        "'agent_choice' event: agent_name: String should have at least 1 character",
    ),
    (
        _json(type="agent_choice", content=7, agent_name="a"),
        "'agent_choice' event: content: Input should be a valid string",
    ),
    (
        _json(type="user_message", message="x", extra=1),
        "'user_message' event: unknown field(s) extra",
    ),
    (
        {"type": "stream_started", "timestamp": T0},
        "'stream_started' event: session_id: Field required",
    ),
    (
        _json(type="stream_started", timestamp="2026-11-22 04:58:00"),
        "'stream_started' event: timestamp: Value error, '2026-11-22 04:58:00' is not an RFC 3339",
    ),
    (
        _json(type="stream_started", timestamp="2026-02-30T00:00:00Z"),
        "is not a real date-time: day is out of range for month",
    ),
    (
        _json(type="session_compaction", status="finished", agent_name="a"),
        "'session_compaction' event: status: Input should be 'start', 'started' or 'completed'",
    ),
    (
        _json(type="tool_call", agent_name="a", tool_call={"id": "c", "function": {"name": "f"}}),
        "'tool_call' event: tool_call.function.arguments: Field required",
    ),
    (
        _json(
            type="tool_call",
            agent_name="a",
            tool_call={"id": "c", "type": "code", "function": {"name": "f", "arguments": ""}},
        ),
        "tool_call.type: Input should be 'function'",
    ),
    (
        _json(
            type="token_usage",
            agent_name="a",
            usage={"input_tokens": -1, "output_tokens": 0, "context_length": 0, "cost": 0},
        ),
        "usage.input_tokens: Input should be greater than or equal to 0; "
        "usage.context_limit: Field required",
    ),
]


@pytest.mark.parametrize(("data", "expected"), INVALID)
def test_invalid_input_raises_a_clear_error(
    data: str | bytes | dict[str, Any], expected: str
) -> None:
    with pytest.raises(StreamEventError) as caught:
        parse_event(data, strict=True)
    error = caught.value
    assert isinstance(error, AgentrtError)
    assert isinstance(error, ValueError)
    assert expected in error.reason
    assert str(error).startswith(f"invalid stream event: {error.reason}")
    assert error.data is data
    assert error.__cause__ is None  # the pydantic error is summarized, not chained


def test_the_error_shows_the_start_of_a_long_input() -> None:
    with pytest.raises(StreamEventError) as caught:
        parse_event('{"type": "x", "content": "' + "y" * 1000 + '"}', strict=True)
    message = str(caught.value)
    shown = message[message.index("; the input was ") + len("; the input was ") :]
    assert shown == repr('{"type": "x", "content": "' + "y" * 1000 + '"}')[:200] + "…"


def test_infinite_cost_is_rejected_because_json_cannot_carry_it() -> None:
    with pytest.raises(pydantic.ValidationError, match="finite number"):
        LastMessageUsage(input_tokens=0, output_tokens=0, cost=float("inf"))


# -- models --------------------------------------------------------------------------------------


def test_events_are_frozen_and_hashable() -> None:
    event = SAMPLES["agent_choice"]
    assert isinstance(event, AgentChoiceEvent)
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        event.content = "other"
    assert hash(event) == hash(parse_event(event.model_dump_json()))


def test_unknown_fields_are_kept_encoded_again_and_refused_only_when_strict() -> None:
    line = (
        '{"type":"tool_call","session_id":"s","timestamp":"2026-11-22T04:58:00.000001Z",'
        '"tool_call":{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}",'
        '"strict":true}},"x_origin":{"name":"ls","annotations":{}},"agent_name":"root"}'
    )
    event = parse_event(line)
    assert isinstance(event, ToolCallEvent)
    assert event.model_extra == {"x_origin": {"name": "ls", "annotations": {}}}
    assert json.loads(event.model_dump_json()) == json.loads(line)
    assert parse_event(event.model_dump_json()) == event
    with pytest.raises(StreamEventError, match=r"unknown field\(s\) tool_call.function.strict"):
        parse_event(line.replace(',"x_origin":{"name":"ls","annotations":{}}', ""), strict=True)


def test_an_event_of_an_unknown_type_is_kept_whole() -> None:
    line = '{"type":"agent_info","agent_name":"root","model":"m","nested":{"a":[1,2]}}'
    event = parse_event(line)
    assert isinstance(event, UnknownEvent)
    assert event.type == "agent_info"
    assert event.model_extra == {"agent_name": "root", "model": "m", "nested": {"a": [1, 2]}}
    assert json.loads(event.model_dump_json()) == json.loads(line)
    with pytest.raises(StreamEventError, match="unknown type 'agent_info'"):
        parse_event(line, strict=True)


def test_a_field_a_producer_leaves_out_reads_as_its_zero_value_unless_strict() -> None:
    line = '{"type":"error","error":"down","timestamp":"2026-11-22T04:58:00Z"}'
    event = parse_event(line)
    assert isinstance(event, ErrorEvent)
    assert (event.session_id, event.agent_name, event.error) == ("", "", "down")
    with pytest.raises(StreamEventError, match="session_id: Field required"):
        parse_event(line, strict=True)
    # A missing object is not an omitted value: the event is broken, and not read.
    broken = parse_event('{"type":"tool_call","session_id":"s","agent_name":"a"}')
    assert isinstance(broken, InvalidEvent)
    assert broken.reason == "'tool_call' event: tool_call: Field required"
    # Nor is a known field of the wrong type, or an empty agent_name that was sent.
    wrong = parse_event('{"type":"error","error":5,"session_id":"s","agent_name":"a"}')
    assert isinstance(wrong, InvalidEvent)
    assert "error: Input should be a valid string" in wrong.reason
    empty = parse_event('{"type":"error","error":"x","session_id":"s","agent_name":""}')
    assert isinstance(empty, InvalidEvent)
    assert "agent_name: String should have at least 1" in empty.reason


# The records of INVALID a lenient read takes as events: an unknown type kept whole, an
# unknown field kept, a scalar field left out read as its zero value.
READ_LENIENTLY = {
    "unknown type 'vendor_event'",
    "agent_name: Field required",
    "unknown field(s) extra",
    "session_id: Field required",
    "arguments: Field required",
}


@pytest.mark.parametrize(("data", "expected"), INVALID)
def test_what_a_lenient_read_cannot_read_comes_back_as_an_invalid_event(
    data: str | bytes | dict[str, Any], expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(StreamEventError) as caught:
        parse_event(data, strict=True)
    read = parse_event(data)
    if any(case in caught.value.reason for case in READ_LENIENTLY):
        assert not isinstance(read, InvalidEvent)
        return
    assert isinstance(read, InvalidEvent)
    assert read.reason == caught.value.reason
    if isinstance(data, dict):
        assert json.loads(read.data) == data
    else:
        assert read.data == (data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
    named = data.get("type") if isinstance(data, dict) else None
    if isinstance(data, str) and data.startswith("{") and data.endswith("}"):
        named = json.loads(data).get("type")
    assert read.declared_type == (named if isinstance(named, str) else None)
    (logged,) = caplog.records
    assert (logged.name, logged.levelname) == ("agentrt.stream", "WARNING")
    assert read.reason in logged.getMessage()


def test_a_newer_producers_event_of_a_known_type_and_another_shape_is_an_invalid_event() -> None:
    # docker-agent's later wire format answers a tool call by its id, not with the call.
    line = (
        '{"agent_name":"root","timestamp":"2026-11-22T04:58:00Z","type":"tool_call_response",'
        '"tool_call_id":"call_1","response":"4"}'
    )
    assert parse_event(line) == InvalidEvent(
        line,
        "'tool_call_response' event: session_id: Field required; tool_call: Field required",
        "tool_call_response",
    )
    with pytest.raises(StreamEventError, match="tool_call: Field required"):
        parse_event(line, strict=True)


def test_what_is_not_text_or_a_dict_is_refused_either_way() -> None:
    with pytest.raises(StreamEventError, match="an event is a JSON object, not int"):
        parse_event(5)  # type: ignore[call-overload]


def test_required_agent_name_must_not_be_empty() -> None:
    with pytest.raises(pydantic.ValidationError, match="at least 1 character"):
        ErrorEvent(session_id="s", error="e", agent_name="")


def test_timestamp_defaults_to_now() -> None:
    before = datetime.now(UTC)
    event = StreamStartedEvent(session_id="s")
    after = datetime.now(UTC)
    assert CANONICAL.fullmatch(event.timestamp)
    assert before - timedelta(microseconds=1) <= datetime.fromisoformat(event.timestamp) <= after


def test_wire_tool_call_from_a_conversation_tool_call() -> None:
    call = ToolCall(id="call_9", name="add", arguments={"a": 1})
    assert WireToolCall.from_tool_call(call) == WireToolCall(
        id="call_9", type="function", function=WireFunction(name="add", arguments='{"a": 1}')
    )


# -- round trips (property tests) ----------------------------------------------------------------

texts = st.text(max_size=40)
names = st.text(min_size=1, max_size=20)
timestamps = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
).map(lambda moment: moment.isoformat(timespec="microseconds").replace("+00:00", "Z"))
counts = st.integers(min_value=0, max_value=2**63 - 1)
costs = st.floats(min_value=0, allow_nan=False, allow_infinity=False)


@given(session_id=texts, timestamp=timestamps, content=texts, agent_name=names)
def test_agent_choice_round_trip(
    session_id: str, timestamp: str, content: str, agent_name: str
) -> None:
    event = AgentChoiceEvent(
        session_id=session_id, timestamp=timestamp, content=content, agent_name=agent_name
    )
    assert parse_event(event.model_dump_json()) == event
    assert parse_event(event.model_dump()) == event


@given(
    call_id=texts, name=texts, arguments=texts, response=texts, agent_name=names, session_id=texts
)
def test_tool_call_response_round_trip(
    call_id: str, name: str, arguments: str, response: str, agent_name: str, session_id: str
) -> None:
    event = ToolCallResponseEvent(
        session_id=session_id,
        tool_call=WireToolCall(id=call_id, function=WireFunction(name=name, arguments=arguments)),
        response=response,
        agent_name=agent_name,
    )
    assert parse_event(event.model_dump_json().encode()) == event


@given(
    numbers=st.tuples(counts, counts, counts, counts, counts, counts),
    cost=costs,
    last_cost=costs,
    with_last=st.booleans(),
)
def test_token_usage_round_trip(
    numbers: tuple[int, int, int, int, int, int], cost: float, last_cost: float, with_last: bool
) -> None:
    last = LastMessageUsage(input_tokens=numbers[4], output_tokens=numbers[5], cost=last_cost)
    event = TokenUsageEvent(
        session_id="s",
        agent_name="a",
        usage=TokenUsage(
            input_tokens=numbers[0],
            output_tokens=numbers[1],
            context_length=numbers[2],
            context_limit=numbers[3],
            cost=cost,
            last_message=last if with_last else None,
        ),
    )
    assert parse_event(event.model_dump_json()) == event


@given(output=texts, agent_name=st.none() | names, timestamp=timestamps)
def test_shell_round_trip(output: str, agent_name: str | None, timestamp: str) -> None:
    event = ShellOutputEvent(
        session_id="s", timestamp=timestamp, output=output, agent_name=agent_name
    )
    assert parse_event(event.model_dump_json()) == event


# -- fast constructors ---------------------------------------------------------------------------


def _same_model(fast: pydantic.BaseModel, checked: pydantic.BaseModel, field: str) -> None:
    """The fast instance is indistinguishable from the validated one."""
    assert type(fast) is type(checked)
    assert fast == checked
    assert list(fast.__dict__) == list(checked.__dict__)  # field order, hence JSON order
    assert fast.model_fields_set == checked.model_fields_set
    assert fast.model_dump_json() == checked.model_dump_json()
    assert repr(fast) == repr(checked)
    assert hash(fast) == hash(checked)
    assert pickle.loads(pickle.dumps(fast)) == checked
    assert fast.model_copy(update={field: "other"}).model_dump()[field] == "other"
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        setattr(fast, field, "x")


def _without_timestamp_set(event: pydantic.BaseModel) -> set[str]:
    return event.model_fields_set - {"timestamp"}


@pytest.mark.parametrize("cls", [AgentChoiceEvent, AgentChoiceReasoningEvent])
def test_fast_content_events_equal_validated_ones(
    cls: type[AgentChoiceEvent] | type[AgentChoiceReasoningEvent],
) -> None:
    fast = cls.fast(session_id="s", content="Hé", agent_name="root")
    checked = cls(session_id="s", content="Hé", agent_name="root", timestamp=fast.timestamp)
    object.__setattr__(checked, "__pydantic_fields_set__", _without_timestamp_set(checked))
    _same_model(fast, checked, "session_id")
    assert cls(session_id="s", content="Hé", agent_name="root").model_fields_set == (
        fast.model_fields_set
    )
    assert CANONICAL.fullmatch(fast.timestamp)


@pytest.mark.parametrize("cls", [AgentChoiceEvent, AgentChoiceReasoningEvent])
@given(content=texts, session_id=texts, agent_name=names, nanoseconds=INSTANTS)
def test_delta_builder_builds_what_validation_builds(
    cls: type[AgentChoiceEvent] | type[AgentChoiceReasoningEvent],
    content: str,
    session_id: str,
    agent_name: str,
    nanoseconds: int,
) -> None:
    built = delta_builder(cls, session_id, agent_name, time_ns=lambda: nanoseconds)(content)
    assert built.timestamp == expected_timestamp(nanoseconds)
    checked = cls(
        session_id=session_id, content=content, agent_name=agent_name, timestamp=built.timestamp
    )
    object.__setattr__(checked, "__pydantic_fields_set__", _without_timestamp_set(checked))
    _same_model(built, checked, "content")


def test_delta_builder_timestamps_follow_the_clock_across_milliseconds_and_back() -> None:
    second = 1_795_323_480 * 10**9
    readings = [second + 999_998_500, second + 999_999_000, second + 10**9, second + 7_000]
    clock = iter(readings)
    build = delta_builder(AgentChoiceEvent, "s", "root", time_ns=lambda: next(clock))
    assert [build("x").timestamp for _ in readings] == [
        expected_timestamp(reading) for reading in readings
    ]


def test_delta_events_read_their_unset_slots_as_validated_events_do() -> None:
    build = delta_builder(AgentChoiceEvent, "s", "root")
    event, other = build("Hel"), build("lo")
    # Only __dict__ and __pydantic_extra__ are set; the rest reads as on a validated event.
    assert event.__pydantic_extra__ is None
    assert event.__pydantic_private__ is None
    assert event.model_fields_set == {"session_id", "content", "agent_name"}
    event.model_fields_set.add("timestamp")  # a copy: nothing shared between events
    assert other.model_fields_set == {"session_id", "content", "agent_name"}
    assert event.model_dump(exclude_unset=True) == {
        "session_id": "s",
        "content": "Hel",
        "agent_name": "root",
    }
    assert copy.copy(event) == event
    assert copy.deepcopy(event) == event
    assert event.model_copy(update={"content": "Hey"}).content == "Hey"
    with pytest.raises(AttributeError, match="object has no attribute 'colour'"):
        event.colour  # type: ignore[attr-defined]  # noqa: B018


def test_delta_builder_builds_subclasses_and_checks_the_agent_name() -> None:
    class Tagged(AgentChoiceEvent):
        pass

    assert type(delta_builder(Tagged, "s", "root")("x")) is Tagged
    assert type(Tagged.fast(session_id="s", content="x", agent_name="root")) is Tagged
    with pytest.raises(StreamEventError, match=r"Tagged\.agent_name must not be empty"):
        delta_builder(Tagged, "s", "")
    for wrong in (ToolCallEvent, str, "agent_choice"):
        with pytest.raises(TypeError, match="delta_builder builds AgentChoiceEvent"):
            delta_builder(wrong, "s", "root")  # type: ignore[arg-type, type-var]


def test_fast_partial_tool_call_equals_a_validated_one() -> None:
    fast = PartialToolCallEvent.fast(
        session_id="s", tool_call_id="c1", name="add", arguments='{"a', agent_name="root"
    )
    checked = PartialToolCallEvent(
        session_id="s",
        agent_name="root",
        tool_call=WireToolCall(id="c1", function=WireFunction(name="add", arguments='{"a')),
        timestamp=fast.timestamp,
    )
    object.__setattr__(checked, "__pydantic_fields_set__", _without_timestamp_set(checked))
    _same_model(fast, checked, "session_id")
    _same_model(fast.tool_call, checked.tool_call, "id")
    _same_model(fast.tool_call.function, checked.tool_call.function, "name")


def test_slot_setter_falls_back_to_setattr_for_a_name_that_is_no_slot() -> None:
    class Plain:
        colour = "blue"

    plain = Plain()
    _slot_setter("colour")(plain, "red")
    assert plain.colour == "red"


def test_fast_constructors_check_the_agent_name() -> None:
    with pytest.raises(StreamEventError, match=r"AgentChoiceEvent\.agent_name must not be empty"):
        AgentChoiceEvent.fast(session_id="s", content="x", agent_name="")
    with pytest.raises(StreamEventError, match=r"AgentChoiceReasoningEvent\.agent_name"):
        AgentChoiceReasoningEvent.fast(session_id="s", content="x", agent_name="")
    with pytest.raises(StreamEventError, match=r"PartialToolCallEvent\.agent_name"):
        PartialToolCallEvent.fast(
            session_id="s", tool_call_id="c", name="f", arguments="", agent_name=""
        )


def test_json_schema_describes_the_fields_in_both_modes() -> None:
    # The serializers that leave out absent fields must not blank the schema.
    for cls in (TokenUsage, StreamStartedEvent, AgentChoiceEvent):
        for mode in ("validation", "serialization"):
            schema = cls.model_json_schema(mode=mode)
            assert set(schema["properties"]) == set(cls.model_fields), (cls, mode)
