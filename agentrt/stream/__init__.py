"""The stream events (docs/stream.md): models, wire codecs, a session validator.

The package exports what a program uses: the event models, :func:`parse_event` (an event
from JSON or a dict; :class:`InvalidEvent`, what it could not read),
``agent.stream(prompt)``'s :class:`EventStream`, the :class:`StreamAdapter` (agent events →
stream events), approving tool calls (:class:`ConfirmationPolicy`, :func:`confirm_with`),
costs (:class:`ModelPrices`), session titles and compaction (:class:`Compactor`), the
RFC 3339 timestamps of the events (:func:`rfc3339_now`). Its public modules:

- :mod:`agentrt.stream.events`: one frozen pydantic model per event type, and
  :data:`StreamEvent` (their union).
- :mod:`agentrt.stream.codec`: NDJSON and SSE encoders and incremental decoders.
- :mod:`agentrt.stream.validate`: the ordering rules of a stream session.
- :mod:`agentrt.stream.confirm`: approving tool calls, the decisions and their memory.
- :mod:`agentrt.stream.session`: session titles and compaction.
- :mod:`agentrt.stream.state`: what an agent's streams share (``agent.stream_state``).
- :mod:`agentrt.stream.attribution`: which delegated run of a team's stream an event
  belongs to (``parent_tool_call_id``).

The modules whose names start with ``_`` are its implementation.

Importing the package loads only :func:`validate` (and the event models it checks); each
other name is read from its module on first use, so that a program that only reads a
stream (``agentrt.stream.codec``, ``parse_event``, ``validate``) does not load the agent
and its run loop.
"""

import typing as _typing

from agentrt import _lazy

# Bound now, not on first use: this function has its module's name, and importing the
# module agentrt.stream.validate (which other modules do) makes the package attribute
# `validate` that module, which a later read would then find instead of the function.
from agentrt.stream.validate import validate as validate

if _typing.TYPE_CHECKING:
    from agentrt.stream._adapter import REJECTED_PREFIX as REJECTED_PREFIX
    from agentrt.stream._adapter import Sink as Sink
    from agentrt.stream._adapter import StreamAdapter as StreamAdapter
    from agentrt.stream._clock import rfc3339_now as rfc3339_now
    from agentrt.stream._clock import rfc3339_to_ns as rfc3339_to_ns
    from agentrt.stream._live import EventStream as EventStream
    from agentrt.stream._live import open_stream as open_stream
    from agentrt.stream._log import EventLog as EventLog
    from agentrt.stream._log import EventsExpiredError as EventsExpiredError
    from agentrt.stream._parse import AnyStreamEvent as AnyStreamEvent
    from agentrt.stream._parse import InvalidEvent as InvalidEvent
    from agentrt.stream._parse import UnknownEvent as UnknownEvent
    from agentrt.stream._parse import parse_event as parse_event
    from agentrt.stream._pricing import ModelPrices as ModelPrices
    from agentrt.stream._pricing import PriceTable as PriceTable
    from agentrt.stream.codec import NDJSONDecoder as NDJSONDecoder
    from agentrt.stream.codec import SequencedEvent as SequencedEvent
    from agentrt.stream.codec import SSEEventDecoder as SSEEventDecoder
    from agentrt.stream.codec import StreamDecodeError as StreamDecodeError
    from agentrt.stream.codec import encode_ndjson as encode_ndjson
    from agentrt.stream.codec import encode_sse as encode_sse
    from agentrt.stream.codec import sse_heartbeat as sse_heartbeat
    from agentrt.stream.confirm import DECISIONS as DECISIONS
    from agentrt.stream.confirm import ConfirmationPolicy as ConfirmationPolicy
    from agentrt.stream.confirm import Decision as Decision
    from agentrt.stream.confirm import InvalidDecisionError as InvalidDecisionError
    from agentrt.stream.confirm import UnknownToolCallError as UnknownToolCallError
    from agentrt.stream.confirm import confirm_with as confirm_with
    from agentrt.stream.events import EVENT_TYPES as EVENT_TYPES
    from agentrt.stream.events import AgentChoiceEvent as AgentChoiceEvent
    from agentrt.stream.events import AgentChoiceReasoningEvent as AgentChoiceReasoningEvent
    from agentrt.stream.events import ErrorEvent as ErrorEvent
    from agentrt.stream.events import EventType as EventType
    from agentrt.stream.events import LastMessageUsage as LastMessageUsage
    from agentrt.stream.events import PartialToolCallEvent as PartialToolCallEvent
    from agentrt.stream.events import SessionCompactionEvent as SessionCompactionEvent
    from agentrt.stream.events import SessionSummaryEvent as SessionSummaryEvent
    from agentrt.stream.events import SessionTitleEvent as SessionTitleEvent
    from agentrt.stream.events import ShellOutputEvent as ShellOutputEvent
    from agentrt.stream.events import StreamEvent as StreamEvent
    from agentrt.stream.events import StreamEventError as StreamEventError
    from agentrt.stream.events import StreamStartedEvent as StreamStartedEvent
    from agentrt.stream.events import StreamStoppedEvent as StreamStoppedEvent
    from agentrt.stream.events import TokenUsage as TokenUsage
    from agentrt.stream.events import TokenUsageEvent as TokenUsageEvent
    from agentrt.stream.events import ToolCallConfirmationEvent as ToolCallConfirmationEvent
    from agentrt.stream.events import ToolCallEvent as ToolCallEvent
    from agentrt.stream.events import ToolCallResponseEvent as ToolCallResponseEvent
    from agentrt.stream.events import UserMessageEvent as UserMessageEvent
    from agentrt.stream.events import WireFunction as WireFunction
    from agentrt.stream.events import WireToolCall as WireToolCall
    from agentrt.stream.session import Compaction as Compaction
    from agentrt.stream.session import CompactionError as CompactionError
    from agentrt.stream.session import Compactor as Compactor
    from agentrt.stream.session import SessionState as SessionState
    from agentrt.stream.session import TitleError as TitleError
    from agentrt.stream.session import TitleOption as TitleOption
    from agentrt.stream.session import ensure_title as ensure_title
    from agentrt.stream.session import session_state as session_state
    from agentrt.stream.validate import RULES as RULES
    from agentrt.stream.validate import Rule as Rule
    from agentrt.stream.validate import StreamValidator as StreamValidator
    from agentrt.stream.validate import StreamViolationError as StreamViolationError
    from agentrt.stream.validate import Violation as Violation

# Where each name lives, read on first use (module-level __getattr__, PEP 562).
_LAZY = {
    "REJECTED_PREFIX": "agentrt.stream._adapter",
    "Sink": "agentrt.stream._adapter",
    "StreamAdapter": "agentrt.stream._adapter",
    "rfc3339_now": "agentrt.stream._clock",
    "rfc3339_to_ns": "agentrt.stream._clock",
    "NDJSONDecoder": "agentrt.stream.codec",
    "SequencedEvent": "agentrt.stream.codec",
    "SSEEventDecoder": "agentrt.stream.codec",
    "StreamDecodeError": "agentrt.stream.codec",
    "encode_ndjson": "agentrt.stream.codec",
    "encode_sse": "agentrt.stream.codec",
    "sse_heartbeat": "agentrt.stream.codec",
    "DECISIONS": "agentrt.stream.confirm",
    "ConfirmationPolicy": "agentrt.stream.confirm",
    "Decision": "agentrt.stream.confirm",
    "InvalidDecisionError": "agentrt.stream.confirm",
    "UnknownToolCallError": "agentrt.stream.confirm",
    "confirm_with": "agentrt.stream.confirm",
    "EVENT_TYPES": "agentrt.stream.events",
    "AgentChoiceEvent": "agentrt.stream.events",
    "AgentChoiceReasoningEvent": "agentrt.stream.events",
    "ErrorEvent": "agentrt.stream.events",
    "EventType": "agentrt.stream.events",
    "LastMessageUsage": "agentrt.stream.events",
    "PartialToolCallEvent": "agentrt.stream.events",
    "SessionCompactionEvent": "agentrt.stream.events",
    "SessionSummaryEvent": "agentrt.stream.events",
    "SessionTitleEvent": "agentrt.stream.events",
    "ShellOutputEvent": "agentrt.stream.events",
    "StreamEvent": "agentrt.stream.events",
    "StreamEventError": "agentrt.stream.events",
    "StreamStartedEvent": "agentrt.stream.events",
    "StreamStoppedEvent": "agentrt.stream.events",
    "TokenUsage": "agentrt.stream.events",
    "TokenUsageEvent": "agentrt.stream.events",
    "ToolCallConfirmationEvent": "agentrt.stream.events",
    "ToolCallEvent": "agentrt.stream.events",
    "ToolCallResponseEvent": "agentrt.stream.events",
    "UserMessageEvent": "agentrt.stream.events",
    "WireFunction": "agentrt.stream.events",
    "WireToolCall": "agentrt.stream.events",
    "EventStream": "agentrt.stream._live",
    "open_stream": "agentrt.stream._live",
    "EventLog": "agentrt.stream._log",
    "EventsExpiredError": "agentrt.stream._log",
    "AnyStreamEvent": "agentrt.stream._parse",
    "InvalidEvent": "agentrt.stream._parse",
    "UnknownEvent": "agentrt.stream._parse",
    "parse_event": "agentrt.stream._parse",
    "ModelPrices": "agentrt.stream._pricing",
    "PriceTable": "agentrt.stream._pricing",
    "Compaction": "agentrt.stream.session",
    "CompactionError": "agentrt.stream.session",
    "Compactor": "agentrt.stream.session",
    "SessionState": "agentrt.stream.session",
    "TitleError": "agentrt.stream.session",
    "TitleOption": "agentrt.stream.session",
    "ensure_title": "agentrt.stream.session",
    "session_state": "agentrt.stream.session",
    "RULES": "agentrt.stream.validate",
    "Rule": "agentrt.stream.validate",
    "StreamValidator": "agentrt.stream.validate",
    "StreamViolationError": "agentrt.stream.validate",
    "Violation": "agentrt.stream.validate",
}


__getattr__, __dir__ = _lazy.attach(__name__, _LAZY, globals())

__all__ = (
    "DECISIONS",
    "EVENT_TYPES",
    "REJECTED_PREFIX",
    "ConfirmationPolicy",
    "Decision",
    "EventLog",
    "EventStream",
    "EventsExpiredError",
    "InvalidDecisionError",
    "ModelPrices",
    "PriceTable",
    "Sink",
    "StreamAdapter",
    "UnknownToolCallError",
    "open_stream",
    "confirm_with",
    "Compaction",
    "CompactionError",
    "Compactor",
    "SessionState",
    "TitleError",
    "TitleOption",
    "ensure_title",
    "session_state",
    "RULES",
    "AgentChoiceEvent",
    "AgentChoiceReasoningEvent",
    "ErrorEvent",
    "EventType",
    "LastMessageUsage",
    "NDJSONDecoder",
    "PartialToolCallEvent",
    "Rule",
    "SSEEventDecoder",
    "SequencedEvent",
    "SessionCompactionEvent",
    "SessionSummaryEvent",
    "SessionTitleEvent",
    "ShellOutputEvent",
    "StreamDecodeError",
    "StreamEvent",
    "UnknownEvent",
    "InvalidEvent",
    "AnyStreamEvent",
    "StreamEventError",
    "StreamStartedEvent",
    "StreamStoppedEvent",
    "StreamValidator",
    "StreamViolationError",
    "TokenUsage",
    "TokenUsageEvent",
    "ToolCallConfirmationEvent",
    "ToolCallEvent",
    "ToolCallResponseEvent",
    "UserMessageEvent",
    "Violation",
    "WireFunction",
    "WireToolCall",
    "encode_ndjson",
    "encode_sse",
    "parse_event",
    "rfc3339_now",
    "rfc3339_to_ns",
    "sse_heartbeat",
    "validate",
)
