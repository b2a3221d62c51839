"""Check that a sequence of events is one stream session, in the order docs/stream.md gives.

:func:`validate` checks a whole recorded session; :class:`StreamValidator` checks
one event at a time, as the events are produced (``agent.stream(..., strict=True)``
raises :class:`StreamViolationError` at the first violation it reports).
:func:`validate` runs a :class:`StreamValidator`, so there is one set of rules::

    assert validate(events) == []

Each :class:`Violation` names its rule; :data:`RULES` lists them all:

================================ ===============================================================
rule                             broken when
================================ ===============================================================
``user_message_position``        a user_message comes after stream_started
``user_message_once``            a second user_message comes before stream_started
``stream_started_first``         an event other than user_message comes before stream_started
``stream_started_once``          stream_started comes a second time
``stream_started_missing``       the stream ends without stream_started
``stream_stopped_once``          stream_stopped comes a second time
``stream_stopped_missing``       the stream ends without stream_stopped
``event_after_stream_stopped``   an event (other than the two below) follows stream_stopped
``error_after_stream_stopped``   an error follows stream_stopped (it must come before)
``tool_call_response_unmatched`` a tool_call_response has no earlier tool_call of its id
``tool_call_duplicate``          a second tool_call for one id
``tool_call_response_duplicate`` a second tool_call_response for one id
``tool_call_confirmation_order`` a tool_call_confirmation follows the tool_call of its id
``partial_tool_call_order``      a partial_tool_call follows the tool_call of its id
``partial_tool_call_incomplete`` a partial_tool_call lacks the call's id or name
``tool_call_agent_mismatch``     the events of one tool call name different agents
``tool_call_parent_mismatch``    the events of one tool call name different parent_tool_call_id
``team_info_position``           a team_info after an event other than user_message and
                                 stream_started, or a second one (it may come before
                                 stream_started, where cagent sends it)
``parent_tool_call_unknown``     an event's parent_tool_call_id names no earlier tool_call
``parent_tool_call_closed``      an event's parent_tool_call_id names a call already answered
``parent_tool_call_misplaced``   a user_message, stream_started, stream_stopped or team_info
                                 with a parent_tool_call_id (they belong to the whole stream)
``attribution_missing``          an event with a parent_tool_call_id but no agent_name
``agent_name_empty``             an event's agent_name is the empty string
``session_id_mismatch``          an event's session_id differs from the first event's
``compaction_order``             session_compaction statuses out of start → started → completed
``compaction_interleaved``       a compaction starts inside another, or an event other than
                                 session_summary, token_usage or error comes inside one
``timestamp_format``             a timestamp is not an RFC 3339 date-time
``timestamp_order``              a timestamp is earlier than the latest one before it
``unknown_event_type``           an event of a type not modelled here (only with
                                 ``known_only``; by default such events are skipped)
``invalid_event``                a record that could not be read as an event (an
                                 :class:`~agentrt.stream.InvalidEvent`: a known type in
                                 another shape, broken JSON); left out of every other rule
================================ ===============================================================

A compaction that never completes is not a violation: a cancelled run ends its
stream (stream_stopped) wherever it was.

The ``parent_tool_call_id`` rules are the attribution of a team's stream (see
:mod:`agentrt.stream._team`): a sub-agent's events come between the ``tool_call`` that
started its run and that call's ``tool_call_response``, each naming its agent.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

from agentrt.exceptions import AgentrtError
from agentrt.stream._parse import AnyStreamEvent, InvalidEvent, UnknownEvent
from agentrt.stream.events import (
    EventType,
    PartialToolCallEvent,
    SessionCompactionEvent,
    StreamEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    parent_tool_call_id,
    rfc3339_to_ns,
)

__all__ = (
    "RULES",
    "Rule",
    "StreamValidator",
    "StreamViolationError",
    "Violation",
    "validate",
)

Rule: TypeAlias = Literal[
    "user_message_position",
    "user_message_once",
    "stream_started_first",
    "stream_started_once",
    "stream_started_missing",
    "stream_stopped_once",
    "stream_stopped_missing",
    "event_after_stream_stopped",
    "error_after_stream_stopped",
    "tool_call_response_unmatched",
    "tool_call_duplicate",
    "tool_call_response_duplicate",
    "tool_call_confirmation_order",
    "partial_tool_call_order",
    "partial_tool_call_incomplete",
    "tool_call_agent_mismatch",
    "tool_call_parent_mismatch",
    "team_info_position",
    "parent_tool_call_unknown",
    "parent_tool_call_closed",
    "parent_tool_call_misplaced",
    "attribution_missing",
    "agent_name_empty",
    "session_id_mismatch",
    "compaction_order",
    "compaction_interleaved",
    "timestamp_format",
    "timestamp_order",
    "unknown_event_type",
    "invalid_event",
]
"""The id of a rule a stream session must follow (the module docstring says each)."""

RULES: tuple[Rule, ...] = get_args(Rule)
"""Every rule id, in the order of the module docstring's table."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule.

    Attributes:
        index: The position of the offending event in the stream, from 0; for a rule
            checked at the end of the stream (``*_missing``), the number of events.
        rule: The rule's id.
        message: What happened, with the ids and names involved.
    """

    index: int
    rule: Rule
    message: str

    def __str__(self) -> str:
        return f"event {self.index}: {self.message} [{self.rule}]"


class StreamViolationError(AgentrtError):
    """A stream broke a rule of the stream (docs/stream.md) (raised in strict mode).

    Attributes:
        violation: The first violation found.
    """

    def __init__(self, violation: Violation) -> None:
        self.violation = violation
        super().__init__(f"the event stream broke the spec at {violation}")


# The event types with no rule of their own: they follow only the rules every event
# follows (its place after stream_started and before stream_stopped, outside a
# compaction; its session id, timestamp and agent name). Every other type has rules of
# its own (the table above); tests/test_stream_consumers.py checks both by the
# violations each type's events cause.
_IGNORED_EVENTS: frozenset[EventType] = frozenset(
    {"agent_choice", "agent_choice_reasoning", "shell", "session_title", "agent_switching"}
)

# Events that belong to the whole stream, never to one sub-agent's run.
_STREAM_WIDE: frozenset[EventType] = frozenset(
    {"user_message", "stream_started", "stream_stopped", "team_info"}
)

# Events that may come between a compaction's "start" and its "completed".
_INSIDE_COMPACTION: frozenset[EventType] = frozenset(
    {"session_summary", "token_usage", "error", "stream_stopped"}
)

_ToolCallEvent: TypeAlias = (
    PartialToolCallEvent | ToolCallConfirmationEvent | ToolCallEvent | ToolCallResponseEvent
)
_TOOL_CALL_EVENTS = (
    PartialToolCallEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
)


class StreamValidator:
    """Check the events of one stream session one at a time, in order.

    Call :meth:`check` with each event as it comes and :meth:`finish` when the
    stream ends. Each returns the violations that event (or the end) reveals, so
    that a strict consumer can stop at the first.

    Events of types this version does not model (:class:`UnknownEvent`, what a
    lenient :func:`parse_event` gives for another producer's or a newer version's
    events) are left out of every rule, ordering included: the spec has consumers
    ignore what they do not understand. Their positions are in :attr:`skipped`, and
    they still count in the positions of the others. A record that could not be read
    (:class:`InvalidEvent`) is reported (``invalid_event``) and likewise left out of
    every other rule.

    Args:
        strict: Raise :class:`StreamViolationError` for the first violation instead
            of returning it.
        known_only: Report an event of an unknown type as a violation
            (``unknown_event_type``) instead of skipping it: for agentrt's own streams.

    Attributes:
        skipped: The positions of the events of unknown types that were skipped.
    """

    def __init__(self, *, strict: bool = False, known_only: bool = False) -> None:
        self.strict = strict
        self.known_only = known_only
        self.skipped: list[int] = []
        self._count = 0
        self._session_id: str | None = None
        self._last_instant: int | None = None  # of the latest timestamp so far
        self._last_timestamp = ""
        self._user_message = False
        self._started = False
        self._stopped = False
        self._called: set[str] = set()
        self._answered: set[str] = set()
        self._agents: dict[str, str] = {}  # tool call id -> the agent of its first event
        # tool call id -> the parent_tool_call_id of its first event
        self._parents: dict[str, str | None] = {}
        self._processing = False  # an event other than user_message or stream_started came
        self._team_info = False
        self._compaction: Literal["start", "started"] | None = None

    def check(self, event: AnyStreamEvent) -> list[Violation]:
        """Check the next event of the stream.

        Returns:
            The violations it reveals (empty when it is in order): those about its
            position in the session first, then those about its own fields.

        Raises:
            StreamViolationError: In strict mode, for the first violation.
        """
        index = self._count
        self._count += 1
        found: list[Violation] = []
        if isinstance(event, InvalidEvent | UnknownEvent):
            if isinstance(event, InvalidEvent):
                found.append(
                    Violation(index, "invalid_event", f"a record that is not read: {event.reason}")
                )
            elif self.known_only:
                found.append(
                    Violation(
                        index, "unknown_event_type", f"an event of unknown type {event.type!r}"
                    )
                )
            else:
                self.skipped.append(index)
            if found and self.strict:
                raise StreamViolationError(found[0])
            return found
        kind = event.type
        if self._stopped:
            self._after_stop(kind, index, found)
        else:
            self._position(kind, index, found)
            if isinstance(event, SessionCompactionEvent):
                self._compaction_step(event, index, found)
            elif self._compaction is not None and kind not in _INSIDE_COMPACTION:
                found.append(
                    Violation(
                        index,
                        "compaction_interleaved",
                        f"{kind} inside a compaction (after {self._compaction!r}, "
                        f"before 'completed')",
                    )
                )
            if kind == "team_info":
                self._team_info_step(index, found)
            elif kind != "user_message" and kind != "stream_started":
                self._processing = True
            if isinstance(event, _TOOL_CALL_EVENTS):
                self._tool_call(event, index, found)
            parent = parent_tool_call_id(event)
            if parent is not None:
                self._attribution(event, parent, index, found)
        self._fields(event, index, found)
        if found and self.strict:
            raise StreamViolationError(found[0])
        return found

    def finish(self) -> list[Violation]:
        """Check the end of the stream (after the last event).

        Raises:
            StreamViolationError: In strict mode, for the first violation.
        """
        found: list[Violation] = []
        if not self._started:
            found.append(
                Violation(self._count, "stream_started_missing", "no stream_started event")
            )
        if not self._stopped:
            found.append(
                Violation(
                    self._count,
                    "stream_stopped_missing",
                    "the stream ended without a stream_stopped event",
                )
            )
        if found and self.strict:
            raise StreamViolationError(found[0])
        return found

    # -- the rules --------------------------------------------------------------------

    def _after_stop(self, kind: EventType, index: int, found: list[Violation]) -> None:
        if kind == "stream_stopped":
            found.append(Violation(index, "stream_stopped_once", "a second stream_stopped"))
        elif kind == "error":
            found.append(
                Violation(
                    index,
                    "error_after_stream_stopped",
                    "an error event after stream_stopped; errors come before it",
                )
            )
        else:
            found.append(
                Violation(
                    index,
                    "event_after_stream_stopped",
                    f"{kind} after stream_stopped, which must be the last event",
                )
            )

    def _position(self, kind: EventType, index: int, found: list[Violation]) -> None:
        if kind == "user_message":
            if self._started:
                found.append(
                    Violation(
                        index,
                        "user_message_position",
                        "a user_message after stream_started; it must come before",
                    )
                )
            elif self._user_message:
                found.append(
                    Violation(
                        index, "user_message_once", "a second user_message before stream_started"
                    )
                )
            self._user_message = True
        elif kind == "stream_started":
            if self._started:
                found.append(Violation(index, "stream_started_once", "a second stream_started"))
            self._started = True
        elif not self._started and kind != "team_info":  # cagent sends it before, too
            found.append(
                Violation(
                    index,
                    "stream_started_first",
                    f"{kind} before stream_started, which must come first "
                    f"(after an optional user_message)",
                )
            )
        if kind == "stream_stopped":
            self._stopped = True
            self._compaction = None

    def _team_info_step(self, index: int, found: list[Violation]) -> None:
        if self._team_info or self._processing:
            where = "a second team_info" if self._team_info else "a team_info after processing"
            found.append(
                Violation(
                    index,
                    "team_info_position",
                    f"{where}; a stream says who is in its team once, right after stream_started",
                )
            )
        self._team_info = True

    def _attribution(
        self, event: StreamEvent, parent: str, index: int, found: list[Violation]
    ) -> None:
        kind = event.type
        if kind in _STREAM_WIDE:
            found.append(
                Violation(
                    index,
                    "parent_tool_call_misplaced",
                    f"{kind} with parent_tool_call_id {parent!r}; it belongs to the whole stream",
                )
            )
            return
        if parent not in self._called:
            found.append(
                Violation(
                    index,
                    "parent_tool_call_unknown",
                    f"{kind} names parent_tool_call_id {parent!r}, which had no tool_call before",
                )
            )
        elif parent in self._answered:
            found.append(
                Violation(
                    index,
                    "parent_tool_call_closed",
                    f"{kind} names parent_tool_call_id {parent!r}, whose tool_call_response "
                    "came already",
                )
            )
        if not event.agent_name:
            found.append(
                Violation(
                    index,
                    "attribution_missing",
                    f"{kind} of the run of call {parent!r} names no agent",
                )
            )

    def _compaction_step(
        self, event: SessionCompactionEvent, index: int, found: list[Violation]
    ) -> None:
        status = event.status
        current = self._compaction
        if status == "start":
            if current is not None:
                found.append(
                    Violation(
                        index,
                        "compaction_interleaved",
                        f"a compaction starts while another is at {current!r}",
                    )
                )
            self._compaction = "start"
            return
        expected = "start" if status == "started" else "started"
        if current != expected:
            after = "no compaction" if current is None else repr(current)
            found.append(
                Violation(
                    index,
                    "compaction_order",
                    f"compaction status {status!r} after {after}; it follows {expected!r}",
                )
            )
        self._compaction = "started" if status == "started" else None

    def _tool_call(self, event: _ToolCallEvent, index: int, found: list[Violation]) -> None:
        call = event.tool_call
        call_id = call.id
        kind = event.type
        if kind == "partial_tool_call":
            if not call_id or not call.function.name:
                missing = "id" if not call_id else "function name"
                found.append(
                    Violation(
                        index,
                        "partial_tool_call_incomplete",
                        f"a partial_tool_call without the call's {missing}",
                    )
                )
            if call_id in self._called:
                found.append(
                    Violation(
                        index,
                        "partial_tool_call_order",
                        f"a partial_tool_call for {call_id!r} after its tool_call",
                    )
                )
        elif kind == "tool_call_confirmation":
            if call_id in self._called:
                found.append(
                    Violation(
                        index,
                        "tool_call_confirmation_order",
                        f"the tool_call_confirmation of {call_id!r} after its tool_call; "
                        f"it must come before",
                    )
                )
        elif kind == "tool_call":
            if call_id in self._called:
                found.append(
                    Violation(index, "tool_call_duplicate", f"a second tool_call for {call_id!r}")
                )
            self._called.add(call_id)
        elif call_id not in self._called:  # tool_call_response
            found.append(
                Violation(
                    index,
                    "tool_call_response_unmatched",
                    f"a tool_call_response for {call_id!r}, which had no tool_call before",
                )
            )
        elif call_id in self._answered:
            found.append(
                Violation(
                    index,
                    "tool_call_response_duplicate",
                    f"a second tool_call_response for {call_id!r}",
                )
            )
        else:
            self._answered.add(call_id)
        parent = parent_tool_call_id(event)
        first_parent = self._parents.setdefault(call_id, parent)
        if parent != first_parent:
            found.append(
                Violation(
                    index,
                    "tool_call_parent_mismatch",
                    f"the {kind} of {call_id!r} names parent_tool_call_id {parent!r}; "
                    f"earlier events of this call named {first_parent!r}",
                )
            )
        agent = event.agent_name
        first = self._agents.setdefault(call_id, agent)
        if agent != first and agent:
            found.append(
                Violation(
                    index,
                    "tool_call_agent_mismatch",
                    f"the {kind} of {call_id!r} names agent {agent!r}; "
                    f"earlier events of this call named {first!r}",
                )
            )

    def _fields(self, event: StreamEvent, index: int, found: list[Violation]) -> None:
        if event.agent_name == "":
            found.append(Violation(index, "agent_name_empty", f"{event.type} with agent_name ''"))
        session_id = event.session_id
        if not session_id:
            pass  # left out by its producer (read leniently): nothing to compare
        elif self._session_id is None:
            self._session_id = session_id
        elif session_id != self._session_id:
            found.append(
                Violation(
                    index,
                    "session_id_mismatch",
                    f"session_id {session_id!r}; the stream's first event had "
                    f"{self._session_id!r}",
                )
            )
        try:
            instant = rfc3339_to_ns(event.timestamp)
        except ValueError as error:
            found.append(Violation(index, "timestamp_format", str(error)))
            return
        if self._last_instant is not None and instant < self._last_instant:
            found.append(
                Violation(
                    index,
                    "timestamp_order",
                    f"timestamp {event.timestamp!r} is earlier than an earlier event's "
                    f"{self._last_timestamp!r}",
                )
            )
        else:
            self._last_instant = instant
            self._last_timestamp = event.timestamp


def validate(events: Iterable[AnyStreamEvent], *, known_only: bool = False) -> list[Violation]:
    """Every violation in one stream session, in stream order.

    Events of unknown types are skipped, records that could not be read reported (see
    :class:`StreamValidator`).

    Args:
        events: The session's events, in the order they were produced.
        known_only: Report events of unknown types as violations instead.

    Returns:
        The violations found (empty for a valid session).
    """
    validator = StreamValidator(known_only=known_only)
    found: list[Violation] = []
    for event in events:
        found += validator.check(event)
    found += validator.finish()
    return found
