"""The wire events of the stream (docs/stream.md): pydantic models, one per event type.

Every event is a frozen model whose JSON field names are exactly the spec's, plus
two fields every agentrt event carries: ``session_id`` and ``timestamp`` (RFC 3339
in UTC with microseconds, ``2026-11-22T04:58:00.123456Z``, as cagent sends it)::

    event = AgentChoiceEvent(session_id="s1", content="Hel", agent_name="root")
    line = event.model_dump_json()
    # {"type":"agent_choice","session_id":"s1","timestamp":"2026-…Z","content":"Hel",
    #  "agent_name":"root"}
    assert parse_event(line) == event

:data:`StreamEvent` is the union of the seventeen models, discriminated by ``type``;
:func:`~agentrt.stream.parse_event` (in :mod:`agentrt.stream`, and still importable
from here) turns JSON text, bytes or a dict into the right model or raises
:class:`StreamEventError` saying what is wrong.

``agent_name`` is required and non-empty on the events whose spec structure has it;
on the four others (``stream_started``, ``stream_stopped``, ``user_message``,
``shell``) it is optional, as in the spec's base interface, and left out of the JSON
when absent rather than sent as ``null`` (a consumer typed ``agent_name?: string``
would not expect a null). ``usage.last_message`` is left out the same way.

In a team's stream (see :mod:`agentrt.team`) every event of a sub-agent's run carries
``parent_tool_call_id``, an extension field of agentrt's: the id of the
``transfer_task`` call (or agent-as-tool call) that started the run. It is not a
declared field: it rides in the event's extra fields, absent from every other event
(and so costing them nothing); :func:`parent_tool_call_id` reads it, :func:`attributed`
adds it (both from :mod:`agentrt.stream.attribution`).

The streaming adapter makes one :class:`AgentChoiceEvent` per text delta, so the hot
events are also built without pydantic's validation: :func:`delta_builder` (one per
stream) and the ``fast`` constructors. Timestamps come from
:func:`~agentrt.stream.rfc3339_now`.
"""

import time
from collections.abc import Callable, Mapping
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Literal,
    Self,
    TypeAlias,
    TypeVar,
    get_args,
)

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from agentrt.exceptions import AgentrtError
from agentrt.stream._clock import MICROS, millisecond, rfc3339_now, rfc3339_to_ns
from agentrt.stream._parts import (
    MODEL_CONFIG,
    LastMessageUsage,
    TokenUsage,
    WireFunction,
    WireToolCall,
)
from agentrt.stream.attribution import PARENT_TOOL_CALL_ID, attributed, parent_tool_call_id

__all__ = (
    "EVENT_TYPES",
    "AgentChoiceEvent",
    "AgentChoiceReasoningEvent",
    "AgentSwitchingEvent",
    "ErrorEvent",
    "EventType",
    "PARENT_TOOL_CALL_ID",
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
    "TeamAgent",
    "TeamInfoEvent",
    "TokenUsage",
    "TokenUsageEvent",
    "ToolCallConfirmationEvent",
    "ToolCallEvent",
    "ToolCallResponseEvent",
    "UserMessageEvent",
    "WireFunction",
    "WireToolCall",
    "attributed",
    "delta_builder",
    "parent_tool_call_id",
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


def _check_timestamp(value: str) -> str:
    rfc3339_to_ns(value)
    return value


_Timestamp = Annotated[str, AfterValidator(_check_timestamp)]


def _check_non_empty(value: str, info: ValidationInfo) -> str:
    # Empty is accepted only where a lenient read filled in a field the producer left
    # out (parse_event names them in the validation context).
    if not value and info.field_name not in ((info.context or {}).get("omitted") or ()):
        raise PydanticCustomError(
            "string_too_short", "String should have at least 1 character", {"min_length": 1}
        )
    return value


_NonEmptyStr = Annotated[str, AfterValidator(_check_non_empty)]
# -- events -------------------------------------------------------------------------------


class _Event(BaseModel):
    """Fields every event has. ``type`` is redeclared as a literal by each event."""

    model_config = MODEL_CONFIG

    # Declared here first so that it comes first in the JSON of every event.
    type: str
    session_id: str
    timestamp: _Timestamp = Field(default_factory=rfc3339_now)


class _Sparse(_Event):
    """An event with optional keys that are left out of the JSON when None."""

    # The optional keys left out of the JSON when None.
    _omitted_when_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")  # no return annotation: see TokenUsage
    def _omit_absent_keys(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict):
            for key in self._omitted_when_none:
                if key in data and data[key] is None:
                    del data[key]
        return data


class _Unattributed(_Sparse):
    """An event whose ``agent_name`` is optional: it is left out of the JSON when None."""

    _omitted_when_none: ClassVar[tuple[str, ...]] = ("agent_name",)


class _ToolEvent(_Sparse):
    """An event about one tool call, with the tool's definition when it has annotations.

    ``tool_definition`` is a JSON object: agentrt sends ``name``, ``description``,
    ``parameters`` and ``annotations`` (the tool's, in MCP's terms: ``title``,
    ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``);
    other producers send their own keys (cagent adds ``category`` and
    ``outputSchema``), read and encoded again as they came.
    """

    _omitted_when_none: ClassVar[tuple[str, ...]] = ("tool_definition",)


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


def _empty_agent_name(cls: type[Any]) -> StreamEventError:
    return StreamEventError(f"{cls.__name__}.agent_name must not be empty")


class StreamStartedEvent(_Unattributed):
    """``stream_started``: the first event of a session (after an optional user_message)."""

    type: Literal["stream_started"] = "stream_started"
    agent_name: str | None = None


class StreamStoppedEvent(_Unattributed):
    """``stream_stopped``: the last event of a session, emitted exactly once.

    Attributes:
        pending_tool_call_ids: An extension of agentrt's: when the run ended
            *waiting* (see :mod:`agentrt.deferred`), the ids of the tool calls it
            left open, in the model's order; ``None``, and absent from the JSON, when
            the run finished or failed.
    """

    type: Literal["stream_stopped"] = "stream_stopped"
    agent_name: str | None = None
    pending_tool_call_ids: tuple[str, ...] | None = None

    _omitted_when_none: ClassVar[tuple[str, ...]] = ("agent_name", "pending_tool_call_ids")


class UserMessageEvent(_Unattributed):
    """``user_message``: the user's input, before ``stream_started``.

    Attributes:
        message: The complete user message, unmodified.
    """

    type: Literal["user_message"] = "user_message"
    message: str
    agent_name: str | None = None


# The fields a text-delta event built by a delta builder has set, as validation would.
_DELTA_FIELDS = frozenset({"session_id", "content", "agent_name"})


class _DeltaEvent(_Event):
    """A text-delta event: one per streamed delta, so also built without validation.

    :func:`delta_builder` sets the ``__dict__`` of what it builds and its
    ``__pydantic_extra__`` (each slot set is a tenth of an event's cost; the extra
    slot because the serializer of a model that keeps extra fields reads it, and
    through ``__getattr__`` that read doubled the cost of encoding the event); the
    two other slots of a pydantic model then read as they would on a validated
    event, through ``__getattr__``, which Python consults only for attributes that
    are not set.
    """

    content: str
    agent_name: _NonEmptyStr

    @classmethod
    def fast(cls, *, session_id: str, content: str, agent_name: str) -> Self:
        """Build the event without pydantic validation.

        Only ``agent_name`` is checked (non-empty); the argument types are trusted,
        as a type checker sees them. The result equals ``cls(...)`` with the same
        arguments. For many events, :func:`delta_builder` is cheaper.

        Raises:
            StreamEventError: ``agent_name`` is empty.
        """
        return delta_builder(cls, session_id, agent_name)(content)

    if not TYPE_CHECKING:

        def __getattr__(self, item: str) -> Any:
            if item == "__pydantic_fields_set__":
                return set(_DELTA_FIELDS)
            if item == "__pydantic_extra__" or item == "__pydantic_private__":
                return None
            return super().__getattr__(item)


class AgentChoiceEvent(_DeltaEvent):
    """``agent_choice``: one chunk of the agent's generated content.

    Attributes:
        content: The incremental content chunk.
        agent_name: The generating agent.
    """

    type: Literal["agent_choice"] = "agent_choice"


class AgentChoiceReasoningEvent(_DeltaEvent):
    """``agent_choice_reasoning``: one chunk of the agent's reasoning.

    Attributes:
        content: The incremental reasoning chunk.
        agent_name: The reasoning agent.
    """

    type: Literal["agent_choice_reasoning"] = "agent_choice_reasoning"


_D = TypeVar("_D", bound=_DeltaEvent)


def delta_builder(
    cls: type[_D], session_id: str, agent_name: str, time_ns: Callable[[], int] = time.time_ns
) -> Callable[[str], _D]:
    """``content -> event``: the text-delta events of one stream, built without validation.

    What ``cls(session_id=session_id, content=content, agent_name=agent_name)``
    builds (the same ``__dict__``, in field order, and the same fields set) at about
    a third of its cost; ``tests/test_stream_events.py`` compares the two, so a
    pydantic release that stores a model differently fails there. Only
    ``agent_name`` is checked, here, once.

    Args:
        cls: :class:`AgentChoiceEvent`, :class:`AgentChoiceReasoningEvent` or a subclass.
        session_id: The events' ``session_id``.
        agent_name: The events' ``agent_name``.
        time_ns: The clock of the timestamps (tests pass a fake one).

    Raises:
        TypeError: ``cls`` is not a text-delta event class.
        StreamEventError: ``agent_name`` is empty.
    """
    if not (isinstance(cls, type) and issubclass(cls, _DeltaEvent)):
        raise TypeError(
            "delta_builder builds AgentChoiceEvent, AgentChoiceReasoningEvent or a subclass,"
            f" not {cls!r}"
        )
    if not agent_name:
        raise _empty_agent_name(cls)
    # Copying a dict that has every key in field order costs less than a literal.
    template = {
        "type": cls.model_fields["type"].default,
        "session_id": session_id,
        "timestamp": "",
        "content": "",
        "agent_name": agent_name,
    }
    copy, new, set_dict, set_extra, micros = template.copy, _new, _set_dict, _set_extra, MICROS
    # The millisecond of the last timestamp (see agentrt.stream._clock): three cells
    # rather than rfc3339_now's one tuple, as one stream's events are made in one task.
    start, end, text = 0, 0, ""

    def build(content: str) -> _D:
        nonlocal start, end, text
        now = time_ns()  # rfc3339_now() inlined: a call is a fifth of its cost
        if not start <= now < end:
            start, end, text = millisecond(now)
        values = copy()
        values["timestamp"] = text + micros[(now - start) // 1000]
        values["content"] = content
        instance: _D = new(cls)
        set_dict(instance, values)
        set_extra(instance, None)
        return instance

    return build


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


class ToolCallEvent(_ToolEvent):
    """``tool_call``: a complete tool call, about to run.

    Attributes:
        tool_call: The complete call.
        tool_definition: The tool, when it has annotations (left out otherwise).
        agent_name: The calling agent.
    """

    type: Literal["tool_call"] = "tool_call"
    tool_call: WireToolCall
    tool_definition: dict[str, Any] | None = None
    agent_name: _NonEmptyStr


class ToolCallConfirmationEvent(_ToolEvent):
    """``tool_call_confirmation``: a tool call waits for the user's approval.

    Attributes:
        tool_call: The call to approve or reject.
        tool_definition: The tool, when it has annotations (left out otherwise):
            what a person deciding may want to see (``destructiveHint``...).
        agent_name: The calling agent.
    """

    type: Literal["tool_call_confirmation"] = "tool_call_confirmation"
    tool_call: WireToolCall
    tool_definition: dict[str, Any] | None = None
    agent_name: _NonEmptyStr


class ToolCallResponseEvent(_ToolEvent):
    """``tool_call_response``: what a tool call returned (or its error message).

    Attributes:
        tool_call: The call that ran.
        tool_definition: The tool, when it has annotations (left out otherwise).
        response: Its result, or the error message.
        agent_name: The calling agent.
    """

    type: Literal["tool_call_response"] = "tool_call_response"
    tool_call: WireToolCall
    tool_definition: dict[str, Any] | None = None
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
    """``shell``: output a running tool reported (the shell tool's lines, any tool's).

    Attributes:
        output: The command's output or error text.
        tool_call_id: The call that produced it (absent in streams of older
            producers): parallel calls' output stays apart by it.
    """

    _omitted_when_none: ClassVar[tuple[str, ...]] = ("agent_name", "tool_call_id")

    type: Literal["shell"] = "shell"
    output: str
    agent_name: str | None = None
    tool_call_id: str | None = None


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


class TeamAgent(BaseModel):
    """One agent of a team, as ``team_info`` lists it (cagent's ``AgentDetails``).

    Attributes:
        name: The agent's name (the ``agent_name`` of its events).
        description: What it does ("" when it has no description).
        provider: Who serves its model ("" when unknown).
        model: Its model's name.
    """

    model_config = MODEL_CONFIG

    name: str
    description: str = ""
    provider: str = ""
    model: str = ""


class TeamInfoEvent(_Event):
    """``team_info``: the agents of a team, once, right after ``stream_started``.

    An extension of agentrt's (cagent's shape): only a team's stream has it, the
    stream of an agent with sub-agents or hand-offs.

    Attributes:
        available_agents: Every agent of the team, the stream's own first.
        current_agent: The agent that answers the user now.
        agent_name: The same: the team's current agent.
    """

    type: Literal["team_info"] = "team_info"
    available_agents: tuple[TeamAgent, ...]
    current_agent: _NonEmptyStr
    agent_name: _NonEmptyStr


class AgentSwitchingEvent(_Event):
    """``agent_switching``: another agent answers the conversation from here on (a hand-off).

    An extension of agentrt's (cagent's shape): the ``handoff`` call's
    ``tool_call_response`` comes first, then this, then the new agent's events.

    Attributes:
        switching: Always true: the switch happens (cagent also sends false at the end
            of a delegation, which agentrt shows by ``parent_tool_call_id`` instead).
        from_agent: The agent that handed the conversation over.
        to_agent: The agent that answers from now on.
        agent_name: The same as ``to_agent``.
    """

    type: Literal["agent_switching"] = "agent_switching"
    switching: bool = True
    from_agent: _NonEmptyStr
    to_agent: _NonEmptyStr
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
    | SessionCompactionEvent
    | TeamInfoEvent
    | AgentSwitchingEvent,
    Field(discriminator="type"),
]
"""Any stream event; pydantic picks the model by the ``type`` field."""

EventType: TypeAlias = Literal[
    "stream_started",
    "stream_stopped",
    "user_message",
    "agent_choice",
    "agent_choice_reasoning",
    "partial_tool_call",
    "tool_call",
    "tool_call_confirmation",
    "tool_call_response",
    "error",
    "token_usage",
    "shell",
    "session_title",
    "session_summary",
    "session_compaction",
    "team_info",
    "agent_switching",
]
"""The name of every event type, in the spec's order (the ``type`` of each model), then
agentrt's own.

A new event type is a model, its place in :data:`StreamEvent` and its name here
(importing this module fails while the two disagree). Then every consumer of the
stream decides what to do with it: the adapter, the validator, the CLI's renderers and
the AG-UI projection each list the types they deliberately ignore and handle every
other one, in a dispatch that ends in ``assert_never`` (a type it misses is a type
error); the web page has a case for each. ``tests/test_stream_consumers.py`` fails
until each has decided, and checks that each does what it says.
"""


def _event_types() -> dict[str, type[BaseModel]]:
    union = get_args(get_args(StreamEvent)[0])
    table: dict[str, type[BaseModel]] = {cls.model_fields["type"].default: cls for cls in union}
    names = get_args(EventType)
    if tuple(table) != names:
        raise TypeError(
            f"the models of StreamEvent have the types {tuple(table)}, EventType names {names}:"
            " declare each type in both, in the same order"
        )
    return table


EVENT_TYPES: Mapping[str, type[BaseModel]] = _event_types()
"""Each event ``type`` (in the spec's order) and its model: :data:`StreamEvent`'s."""


if TYPE_CHECKING:
    from agentrt.stream._parse import AnyStreamEvent as AnyStreamEvent
    from agentrt.stream._parse import UnknownEvent as UnknownEvent
    from agentrt.stream._parse import parse_event as parse_event

# Reading events moved to agentrt.stream._parse (which imports this module); these names
# stay importable from here, where they used to live.
_MOVED = frozenset({"AnyStreamEvent", "UnknownEvent", "parse_event"})


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from agentrt.stream import _parse as parse

        return getattr(parse, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
