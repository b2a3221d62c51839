"""The wire events of ``specs/stream-events.md``: pydantic models, one per event type.

Every event is a frozen model whose JSON field names are exactly the spec's, plus
two fields every agentrt event carries: ``session_id`` and ``timestamp`` (RFC 3339
in UTC with microseconds, ``2026-11-22T04:58:00.123456Z``, as cagent sends it)::

    event = AgentChoiceEvent(session_id="s1", content="Hel", agent_name="root")
    line = event.model_dump_json()
    # {"type":"agent_choice","session_id":"s1","timestamp":"2026-…Z","content":"Hel",
    #  "agent_name":"root"}
    assert parse_event(line) == event

:data:`StreamEvent` is the union of the fifteen models, discriminated by ``type``;
:func:`parse_event` turns JSON text, bytes or a dict into the right model or raises
:class:`StreamEventError` saying what is wrong.

``agent_name`` is required and non-empty on the events whose spec structure has it;
on the four others (``stream_started``, ``stream_stopped``, ``user_message``,
``shell``) it is optional, as in the spec's base interface, and left out of the JSON
when absent rather than sent as ``null`` (a consumer typed ``agent_name?: string``
would not expect a null). ``usage.last_message`` is left out the same way.

The streaming adapter makes one :class:`AgentChoiceEvent` per text delta, so the hot
events have a :meth:`~AgentChoiceEvent.fast` constructor that skips pydantic's
validation, and :func:`rfc3339_now` formats a timestamp from a per-second cache.
"""

import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from agentrt.exceptions import AgentrtError
from agentrt.messages import ToolCall

__all__ = (
    "EVENT_TYPES",
    "AgentChoiceEvent",
    "AgentChoiceReasoningEvent",
    "ErrorEvent",
    "LastMessageUsage",
    "PartialToolCallEvent",
    "SessionCompactionEvent",
    "SessionSummaryEvent",
    "SessionTitleEvent",
    "ShellOutputEvent",
    "StreamEvent",
    "StreamEventError",
    "StreamStartedEvent",
    "StreamStoppedEvent",
    "TokenUsage",
    "TokenUsageEvent",
    "ToolCallConfirmationEvent",
    "ToolCallEvent",
    "ToolCallResponseEvent",
    "UserMessageEvent",
    "WireFunction",
    "WireToolCall",
    "parse_event",
    "rfc3339_now",
    "rfc3339_to_ns",
)


class StreamEventError(AgentrtError, ValueError):
    """Data is not a valid stream event (bad JSON, unknown type, missing or invalid fields).

    Attributes:
        reason: What is wrong, naming the event type and field when known.
        data: The offending input as given (text, bytes or a dict), or None.
    """

    def __init__(self, reason: str, *, data: object = None) -> None:
        self.reason = reason
        self.data = data
        message = f"invalid stream event: {reason}"
        if data is not None:
            shown = repr(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
            message += f"; the input was {shown if len(shown) <= 200 else shown[:200] + '…'}"
        super().__init__(message)


# -- time ---------------------------------------------------------------------------------


def _make_clock(time_ns: Callable[[], int] = time.time_ns) -> Callable[[], str]:
    """Build :func:`rfc3339_now` over a nanosecond clock (tests pass a fake one)."""
    gmtime = time.gmtime
    strftime = time.strftime
    # (the decimal seconds since the epoch, "YYYY-MM-DDTHH:MM:SS.") of the last call:
    # formatting the date and time is most of the cost, and it changes once a second.
    # One tuple, so that a thread reading it never sees a key with another's prefix.
    cache = ("", "")

    def rfc3339_now() -> str:
        """The current UTC time as RFC 3339 with microseconds: ``2026-11-22T04:58:00.123456Z``.

        Equal to ``datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")`` and
        about four times cheaper: the date and time part is formatted once per second.
        """
        nonlocal cache
        # The decimal digits of the nanosecond count: the seconds are all but the last
        # nine, the microseconds the six before the last three (already zero-padded).
        digits = str(time_ns())
        key, prefix = cache
        if digits[:-9] != key:
            key = digits[:-9]
            prefix = strftime("%Y-%m-%dT%H:%M:%S.", gmtime(int(key)))
            cache = (key, prefix)
        return f"{prefix}{digits[-9:-3]}Z"

    return rfc3339_now


rfc3339_now = _make_clock()

# The shape of RFC 3339 (section 5.6), with the field ranges a regex can check; the
# calendar (February 30) is left to datetime.
_RFC3339 = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt]"
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(?:\.([0-9]+))?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_MICROSECOND = timedelta(microseconds=1)


def rfc3339_to_ns(value: str) -> int:
    """The instant an RFC 3339 date-time names, in nanoseconds since the Unix epoch.

    Any offset is accepted (``Z`` or ``±HH:MM``), and any number of fraction digits
    (beyond nine they are cut). A leap second (``:60``) counts as the start of the
    next second. Integers compare exactly, where ``datetime`` would drop nanoseconds.

    Args:
        value: The date-time text, for example ``2026-11-22T04:58:00.123456Z``.

    Raises:
        ValueError: ``value`` is not an RFC 3339 date-time, or names no real date.
    """
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise ValueError(
            f"{value!r} is not an RFC 3339 date-time (like 2026-11-22T04:58:00.123456Z)"
        )
    try:
        # The regex guarantees a form fromisoformat reads the same way, and it is ten
        # times cheaper than building the datetime from the groups.
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = _unusual_rfc3339(value, leap=match.group(1) == "60")
    nanoseconds = (moment - _EPOCH) // _MICROSECOND * 1000
    fraction = match.group(2)
    if fraction is not None and len(fraction) > 6:
        nanoseconds += int(fraction[6:9].ljust(3, "0"))
    return nanoseconds


def _unusual_rfc3339(value: str, *, leap: bool) -> datetime:
    """Read what fromisoformat refuses: lowercase ``t``/``z``, a leap second, or no real date."""
    text = value.upper()
    if leap:
        text = f"{text[:17]}59{text[19:]}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:  # February 30, year 0
        raise ValueError(f"{value!r} is not a real date-time: {error}") from None
    return moment + _SECOND if leap else moment


def _check_timestamp(value: str) -> str:
    rfc3339_to_ns(value)
    return value


_Timestamp = Annotated[str, AfterValidator(_check_timestamp)]
_NonEmptyStr = Annotated[str, Field(min_length=1)]
_Count = Annotated[int, Field(ge=0)]
# JSON has no NaN or infinity: pydantic would send them as null, which does not parse back.
_Cost = Annotated[float, Field(ge=0, allow_inf_nan=False)]

_MODEL_CONFIG = ConfigDict(frozen=True, extra="forbid")


# -- parts --------------------------------------------------------------------------------


class WireFunction(BaseModel):
    """The function part of a wire tool call.

    Attributes:
        name: The tool's name.
        arguments: The arguments as JSON text, exactly as the model produced them (a
            partial tool call carries the fragment streamed so far).
    """

    model_config = _MODEL_CONFIG

    name: str
    arguments: str


class WireToolCall(BaseModel):
    """A tool call as the stream shows it (the OpenAI shape).

    Attributes:
        id: The tool call id, shared by every event about this call.
        type: Always ``"function"``.
        function: The tool's name and arguments.
    """

    model_config = _MODEL_CONFIG

    id: str
    type: Literal["function"] = "function"
    function: WireFunction

    @classmethod
    def from_tool_call(cls, call: ToolCall) -> Self:
        """The wire form of one of the conversation's :class:`~agentrt.ToolCall` values."""
        return cls(id=call.id, function=WireFunction(name=call.name, arguments=call.arguments))


class LastMessageUsage(BaseModel):
    """The figures of the last model call alone (``TokenUsage`` holds the session's).

    Attributes:
        input_tokens: Input tokens of that call.
        output_tokens: Output tokens of that call.
        cost: Its cost (0.0 when unknown).
    """

    model_config = _MODEL_CONFIG

    input_tokens: _Count
    output_tokens: _Count
    cost: _Cost


class TokenUsage(BaseModel):
    """Token consumption and cost, cumulative for the session.

    All five numbers are always sent (0 or 0.0 when unknown); ``last_message`` is
    left out of the JSON when absent.

    Attributes:
        input_tokens: Input tokens consumed.
        output_tokens: Output tokens generated.
        context_length: The current context length.
        context_limit: The model's context window (0 when unknown).
        cost: The monetary cost (0.0 when unknown).
        last_message: The last model call's own figures, when known.
    """

    model_config = _MODEL_CONFIG

    input_tokens: _Count
    output_tokens: _Count
    context_length: _Count
    context_limit: _Count
    cost: _Cost
    last_message: LastMessageUsage | None = None

    # No return annotation: pydantic would take it as the serialization JSON schema
    # (``Any`` gives an empty one); without it the schema is the model's own.
    @model_serializer(mode="wrap")
    def _omit_absent_last_message(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict) and "last_message" in data and data["last_message"] is None:
            del data["last_message"]
        return data


# -- events -------------------------------------------------------------------------------


class _Event(BaseModel):
    """Fields every event has. ``type`` is redeclared as a literal by each event."""

    model_config = _MODEL_CONFIG

    # Declared here first so that it comes first in the JSON of every event.
    type: str
    session_id: str
    timestamp: _Timestamp = Field(default_factory=rfc3339_now)


class _Unattributed(_Event):
    """An event whose ``agent_name`` is optional: it is left out of the JSON when None."""

    @model_serializer(mode="wrap")  # no return annotation: see TokenUsage
    def _omit_absent_agent_name(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict) and "agent_name" in data and data["agent_name"] is None:
            del data["agent_name"]
        return data


def _slot_setter(name: str) -> Callable[[object, object], None]:
    # BaseModel keeps its state in four slots; calling a slot's descriptor directly
    # skips the attribute lookup that object.__setattr__ does (a tenth of the cost).
    descriptor = BaseModel.__dict__.get(name)
    setter: Callable[[object, object], None] | None = getattr(descriptor, "__set__", None)
    if setter is not None:
        return setter
    return lambda instance, value: object.__setattr__(instance, name, value)


_new = object.__new__
_set_dict = _slot_setter("__dict__")
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")


def _unchecked(cls: type[Any], values: dict[str, Any], fields_set: set[str]) -> Any:
    """An instance of ``cls`` holding ``values``, built without validation.

    What ``cls(**values)`` builds (the same ``__dict__``, in field order, and the
    same fields set) at about two thirds of its cost; ``model_construct`` costs six
    times more than validating. ``tests/test_stream_events.py`` compares the two,
    so a pydantic release that stores a model differently fails there.
    """
    instance = _new(cls)
    _set_dict(instance, values)
    _set_fields_set(instance, fields_set)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


_DeltaBuilder = Callable[[str, str, str], Any]


def _delta_builder(cls: type[Any], type_name: str) -> _DeltaBuilder:
    """A positional ``(session_id, agent_name, content) -> event`` for a text-delta event.

    :func:`_unchecked` inlined, with every name it needs bound in the closure: one
    such event is built per streamed delta, and the call layers were a third of its
    cost. Nothing is checked; the callers check ``agent_name`` (once per adapter).
    """
    # One fields set shared by every event built here: a set is a GC-tracked object,
    # and the events a slow consumer has not read yet survive into the older GC
    # generations, so each one fewer per event halves the full collections they
    # cause. Nothing mutates it: the models are frozen, and pydantic copies it for
    # model_copy.
    fields = {"session_id", "content", "agent_name"}
    new, set_dict, set_fields, set_extra, set_private, now = (
        _new,
        _set_dict,
        _set_fields_set,
        _set_extra,
        _set_private,
        rfc3339_now,
    )

    def build(session_id: str, agent_name: str, content: str) -> Any:
        instance = new(cls)
        set_dict(
            instance,
            {
                "type": type_name,
                "session_id": session_id,
                "timestamp": now(),
                "content": content,
                "agent_name": agent_name,
            },
        )
        set_fields(instance, fields)
        set_extra(instance, None)
        set_private(instance, None)
        return instance

    return build


def _empty_agent_name(cls: type[Any]) -> StreamEventError:
    return StreamEventError(f"{cls.__name__}.agent_name must not be empty")


class StreamStartedEvent(_Unattributed):
    """``stream_started``: the first event of a session (after an optional user_message)."""

    type: Literal["stream_started"] = "stream_started"
    agent_name: str | None = None


class StreamStoppedEvent(_Unattributed):
    """``stream_stopped``: the last event of a session, emitted exactly once."""

    type: Literal["stream_stopped"] = "stream_stopped"
    agent_name: str | None = None


class UserMessageEvent(_Unattributed):
    """``user_message``: the user's input, before ``stream_started``.

    Attributes:
        message: The complete user message, unmodified.
    """

    type: Literal["user_message"] = "user_message"
    message: str
    agent_name: str | None = None


class AgentChoiceEvent(_Event):
    """``agent_choice``: one chunk of the agent's generated content.

    Attributes:
        content: The incremental content chunk.
        agent_name: The generating agent.
    """

    type: Literal["agent_choice"] = "agent_choice"
    content: str
    agent_name: _NonEmptyStr

    @classmethod
    def fast(cls, *, session_id: str, content: str, agent_name: str) -> Self:
        """Build the event without pydantic validation, for the per-delta hot path.

        Only ``agent_name`` is checked (non-empty); the argument types are trusted,
        as a type checker sees them. The result equals ``cls(...)`` with the same
        arguments.

        Raises:
            StreamEventError: ``agent_name`` is empty.
        """
        if not agent_name:
            raise _empty_agent_name(cls)
        return _delta_builder_of(cls)(session_id, agent_name, content)  # type: ignore[no-any-return]


class AgentChoiceReasoningEvent(_Event):
    """``agent_choice_reasoning``: one chunk of the agent's reasoning.

    Attributes:
        content: The incremental reasoning chunk.
        agent_name: The reasoning agent.
    """

    type: Literal["agent_choice_reasoning"] = "agent_choice_reasoning"
    content: str
    agent_name: _NonEmptyStr

    @classmethod
    def fast(cls, *, session_id: str, content: str, agent_name: str) -> Self:
        """Build the event without pydantic validation (see :meth:`AgentChoiceEvent.fast`).

        Raises:
            StreamEventError: ``agent_name`` is empty.
        """
        if not agent_name:
            raise _empty_agent_name(cls)
        return _delta_builder_of(cls)(session_id, agent_name, content)  # type: ignore[no-any-return]


# Per class, not per type name: a subclass's fast() builds the subclass.
_DELTA_BUILDERS: dict[type[Any], _DeltaBuilder] = {}


def _delta_builder_of(cls: type[Any]) -> _DeltaBuilder:
    """The unchecked positional builder of ``cls`` (a text-delta event class or subclass)."""
    builder = _DELTA_BUILDERS.get(cls)
    if builder is None:
        builder = _DELTA_BUILDERS[cls] = _delta_builder(cls, cls.model_fields["type"].default)
    return builder


class PartialToolCallEvent(_Event):
    """``partial_tool_call``: a tool call being streamed (id and name known, arguments so far).

    Attributes:
        tool_call: The call as far as it has arrived.
        agent_name: The calling agent.
    """

    type: Literal["partial_tool_call"] = "partial_tool_call"
    tool_call: WireToolCall
    agent_name: _NonEmptyStr

    @classmethod
    def fast(
        cls, *, session_id: str, tool_call_id: str, name: str, arguments: str, agent_name: str
    ) -> Self:
        """Build the event and its tool call without pydantic validation.

        One is made per streamed argument fragment, so this skips validation as
        :meth:`AgentChoiceEvent.fast` does. The result equals ``cls(session_id=...,
        agent_name=..., tool_call=WireToolCall(id=tool_call_id,
        function=WireFunction(name=name, arguments=arguments)))``.

        Raises:
            StreamEventError: ``agent_name`` is empty.
        """
        if not agent_name:
            raise _empty_agent_name(cls)
        function = _unchecked(
            WireFunction, {"name": name, "arguments": arguments}, {"name", "arguments"}
        )
        call = _unchecked(
            WireToolCall,
            {"id": tool_call_id, "type": "function", "function": function},
            {"id", "function"},
        )
        return _unchecked(  # type: ignore[no-any-return]
            cls,
            {
                "type": "partial_tool_call",
                "session_id": session_id,
                "timestamp": rfc3339_now(),
                "tool_call": call,
                "agent_name": agent_name,
            },
            {"session_id", "tool_call", "agent_name"},
        )


class ToolCallEvent(_Event):
    """``tool_call``: a complete tool call, about to run.

    Attributes:
        tool_call: The complete call.
        agent_name: The calling agent.
    """

    type: Literal["tool_call"] = "tool_call"
    tool_call: WireToolCall
    agent_name: _NonEmptyStr


class ToolCallConfirmationEvent(_Event):
    """``tool_call_confirmation``: a tool call waits for the user's approval.

    Attributes:
        tool_call: The call to approve or reject.
        agent_name: The calling agent.
    """

    type: Literal["tool_call_confirmation"] = "tool_call_confirmation"
    tool_call: WireToolCall
    agent_name: _NonEmptyStr


class ToolCallResponseEvent(_Event):
    """``tool_call_response``: what a tool call returned (or its error message).

    Attributes:
        tool_call: The call that ran.
        response: Its result, or the error message.
        agent_name: The calling agent.
    """

    type: Literal["tool_call_response"] = "tool_call_response"
    tool_call: WireToolCall
    response: str
    agent_name: _NonEmptyStr


class ErrorEvent(_Event):
    """``error``: a runtime error, sent before ``stream_stopped``.

    Attributes:
        error: What went wrong.
        agent_name: The agent the error concerns.
    """

    type: Literal["error"] = "error"
    error: str
    agent_name: _NonEmptyStr


class TokenUsageEvent(_Event):
    """``token_usage``: token consumption and cost after an agent interaction.

    Attributes:
        usage: The figures, cumulative for the session.
        agent_name: The agent that spent them.
    """

    type: Literal["token_usage"] = "token_usage"
    usage: TokenUsage
    agent_name: _NonEmptyStr


class ShellOutputEvent(_Unattributed):
    """``shell``: output of a shell command.

    Attributes:
        output: The command's output or error text.
    """

    type: Literal["shell"] = "shell"
    output: str
    agent_name: str | None = None


class SessionTitleEvent(_Event):
    """``session_title``: a generated title for the session.

    Attributes:
        title: The title.
        agent_name: The agent that generated it.
    """

    type: Literal["session_title"] = "session_title"
    title: str
    agent_name: _NonEmptyStr


class SessionSummaryEvent(_Event):
    """``session_summary``: a generated summary of the session (during compaction).

    Attributes:
        summary: The summary.
        agent_name: The agent that generated it.
    """

    type: Literal["session_summary"] = "session_summary"
    summary: str
    agent_name: _NonEmptyStr


class SessionCompactionEvent(_Event):
    """``session_compaction``: one step of a context compaction.

    Attributes:
        status: ``"start"`` (it begins), ``"started"`` (processing runs), ``"completed"``.
        agent_name: The agent compacting.
    """

    type: Literal["session_compaction"] = "session_compaction"
    status: Literal["start", "started", "completed"]
    agent_name: _NonEmptyStr


StreamEvent: TypeAlias = Annotated[
    StreamStartedEvent
    | StreamStoppedEvent
    | UserMessageEvent
    | AgentChoiceEvent
    | AgentChoiceReasoningEvent
    | PartialToolCallEvent
    | ToolCallEvent
    | ToolCallConfirmationEvent
    | ToolCallResponseEvent
    | ErrorEvent
    | TokenUsageEvent
    | ShellOutputEvent
    | SessionTitleEvent
    | SessionSummaryEvent
    | SessionCompactionEvent,
    Field(discriminator="type"),
]
"""Any stream event; pydantic picks the model by the ``type`` field."""

EVENT_TYPES: Mapping[str, type[BaseModel]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        StreamStartedEvent,
        StreamStoppedEvent,
        UserMessageEvent,
        AgentChoiceEvent,
        AgentChoiceReasoningEvent,
        PartialToolCallEvent,
        ToolCallEvent,
        ToolCallConfirmationEvent,
        ToolCallResponseEvent,
        ErrorEvent,
        TokenUsageEvent,
        ShellOutputEvent,
        SessionTitleEvent,
        SessionSummaryEvent,
        SessionCompactionEvent,
    )
}
"""Each event ``type`` (in the spec's order) and its model."""

_ADAPTER: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def parse_event(data: str | bytes | dict[str, Any]) -> StreamEvent:
    """The event that JSON text, JSON bytes or a dict describes.

    ``parse_event(event.model_dump_json()) == event`` for every event.

    Args:
        data: One event: JSON text or bytes, or the dict ``model_dump()`` gives.

    Raises:
        StreamEventError: ``data`` is not JSON, not an object, has no or an unknown
            ``type``, or lacks a field or has an invalid one (the message names it).
    """
    try:
        if isinstance(data, str | bytes):
            return _ADAPTER.validate_json(data)
        return _ADAPTER.validate_python(data)
    except ValidationError as error:
        raise StreamEventError(_describe(error), data=data) from None


def _describe(error: ValidationError) -> str:
    """One line saying what is wrong, in terms of the wire format."""
    problems = error.errors(include_url=False)
    first = problems[0]
    kind = first["type"]
    if kind == "json_invalid":
        return f"not valid JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
    if kind == "union_tag_not_found":
        return "no 'type' field"
    if kind == "union_tag_invalid":
        known = ", ".join(EVENT_TYPES)
        return f"unknown type {first['ctx']['tag']!r} (the known types are {known})"
    if kind in {"model_attributes_type", "dict_type", "model_type"} and not first["loc"]:
        return f"an event is a JSON object, not {type(first['input']).__name__}"
    event_type = first["loc"][0] if first["loc"] else "?"
    details = "; ".join(
        f"{'.'.join(str(part) for part in problem['loc'][1:]) or '(event)'}: {problem['msg']}"
        for problem in problems[:5]
    )
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"{event_type!r} event: {details}{more}"
