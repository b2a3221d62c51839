"""Our stream events, told as AG-UI events: the projection behind ``POST /ag-ui``.

AG-UI (the Agent-User Interaction protocol) is read by frontends such as CopilotKit
and by the official clients ``@ag-ui/client`` and ``ag-ui-protocol``. An AG-UI run
is told from the same events as our own stream (:mod:`agentrt.stream.events`), one
:class:`AGUIProjection` per AG-UI run, with the official models::

    our stream event                    AG-UI events
    (the run begins)                    RUN_STARTED
    agent_choice                        TEXT_MESSAGE_START (first piece), TEXT_MESSAGE_CONTENT
    agent_choice_reasoning              REASONING_START, REASONING_MESSAGE_START (first
                                        piece), REASONING_MESSAGE_CONTENT
    partial_tool_call                   TOOL_CALL_START (first fragment), TOOL_CALL_ARGS
    tool_call_confirmation, tool_call   TOOL_CALL_START and TOOL_CALL_ARGS unless streamed,
                                        TOOL_CALL_END
    tool_call_response                  TOOL_CALL_RESULT (none for a result the client
                                        itself sent: it holds that message already)
    token_usage                         CUSTOM "agentrt.token_usage", and the run's
                                        RUN_FINISHED / RUN_ERROR ``usage``
    shell                               CUSTOM "agentrt.shell"
    session_compaction                  STEP_STARTED / STEP_FINISHED "session_compaction",
                                        and CUSTOM "agentrt.session_compaction"
    session_summary, session_title,     CUSTOM "agentrt.session_summary", ...
    team_info, agent_switching
    error (a run that failed)           RUN_ERROR
    error (a title, a compaction)       CUSTOM "agentrt.error"
    (the run ends)                      RUN_FINISHED, its outcome: success (naming the
                                        frontend tool calls left to the client), interrupt
                                        (tool calls waiting for approval), cancelled

``user_message``, ``stream_started`` and ``stream_stopped`` add nothing: the client
sent the message, RUN_STARTED opens every AG-UI run and the run's end closes it. Events
of types this module does not know are left out (a consumer ignores what it does not
understand). A text, reasoning or tool call still open when something else comes is
closed first, and everything open is closed before the run's last event, so the
official clients' event verification accepts every run.

An AG-UI message groups what one model turn said: its text and the tool calls it
made share one assistant message id (the calls' ``parentMessageId``); the turn after
a tool's result is a new message. Custom events carry our event's fields but its
``session_id``, ``type`` and ``timestamp``.

In a team's stream (see :mod:`agentrt.stream._team`) a sub-agent's text is a message of
its own, named after the sub-agent (TEXT_MESSAGE_START ``name``), and every AG-UI event
of its messages and tool calls has ``subagentRunId``: the id of the call that started
its run (our ``parent_tool_call_id``); custom events carry that field as it is.
"""

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

from agentrt.stream._clock import rfc3339_to_ns
from agentrt.stream._parse import InvalidEvent
from agentrt.stream.attribution import parent_tool_call_id
from agentrt.stream.events import (
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    AgentSwitchingEvent,
    AnyStreamEvent,
    ErrorEvent,
    EventType,
    PartialToolCallEvent,
    SessionCompactionEvent,
    SessionSummaryEvent,
    SessionTitleEvent,
    ShellOutputEvent,
    StreamEvent,
    StreamStartedEvent,
    StreamStoppedEvent,
    TeamInfoEvent,
    TokenUsageEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    UnknownEvent,
    UserMessageEvent,
    WireToolCall,
)

__all__ = ("CUSTOM_PREFIX", "AGUIProjection", "ThreadMemory", "encode", "new_message_id")

CUSTOM_PREFIX = "agentrt."
"""Start of the name of every CUSTOM event this module sends (``agentrt.shell``...)."""

# The event types feed() deliberately does not tell (see the module); it tells every
# other (it ends in assert_never, and tests/test_stream_consumers.py checks that each
# type not listed here changes what the run sends, and none of these does).
_IGNORED_EVENTS: frozenset[EventType] = frozenset(
    {"user_message", "stream_started", "stream_stopped"}
)

_STEP = "session_compaction"
# What a custom event leaves out of our event: the envelope, not what happened.
_ENVELOPE = frozenset({"type", "session_id", "timestamp"})


def new_message_id() -> str:
    """A fresh AG-UI message id (``msg_`` and 24 hex digits)."""
    return f"msg_{uuid.uuid4().hex[:24]}"


@dataclass(slots=True)
class ThreadMemory:
    """What the client of one AG-UI thread holds already, across its runs.

    Attributes:
        message_ids: Ids of the messages the conversation reflects: the ones the
            projections made and the ones the client sent (a message sent again, as
            clients that send the whole history do, is not added twice).
        ended_calls: Tool calls whose TOOL_CALL_END the client received.
        client_results: Tool calls the client answered itself (frontend tools): no
            TOOL_CALL_RESULT repeats what it sent.
        asked: Tool calls that asked for approval, by id, as they were asked.
    """

    message_ids: set[str] = field(default_factory=set)
    ended_calls: set[str] = field(default_factory=set)
    client_results: set[str] = field(default_factory=set)
    asked: dict[str, WireToolCall] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The memory as JSON (kept in the store between a thread's runs)."""
        return {
            "message_ids": sorted(self.message_ids),
            "ended_calls": sorted(self.ended_calls),
            "client_results": sorted(self.client_results),
            "asked": {key: call.model_dump(mode="json") for key, call in self.asked.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ThreadMemory":
        """The memory :meth:`to_json` gave."""
        return cls(
            message_ids=set(data["message_ids"]),
            ended_calls=set(data["ended_calls"]),
            client_results=set(data["client_results"]),
            asked={key: WireToolCall.model_validate(call) for key, call in data["asked"].items()},
        )


def _millis(timestamp: str) -> int:
    return rfc3339_to_ns(timestamp) // 1_000_000


class AGUIProjection:
    """Tells one AG-UI run from our stream events (see the module for the mapping).

    Call :meth:`started` first, :meth:`feed` with each of our events in order, then
    exactly one of :meth:`finished`, :meth:`failed` or :meth:`cancelled`; each
    returns the AG-UI events to send, in order.

    Args:
        thread_id: The AG-UI thread.
        run_id: The AG-UI run.
        memory: What the thread's client holds from earlier runs (updated here).
        model: The model's name, for the run's ``usage`` entry.
        new_id: Makes message ids (tests pass a deterministic one).
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        memory: ThreadMemory | None = None,
        model: str | None = None,
        new_id: Callable[[], str] = new_message_id,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.memory = memory if memory is not None else ThreadMemory()
        self.model = model
        self._new_id = new_id
        self._turn: str | None = None  # the assistant message of the current model turn
        self._turn_over = True  # the next delta or call starts a new assistant message
        self._text: str | None = None
        # Whose text is open: (agent, the call that started its run); a team's stream
        # interleaves its agents' text, each a message of its own.
        self._text_owner: tuple[str, str | None] = ("", None)
        # The AG-UI messages and tool calls of sub-agents' runs, by id: the call that
        # started the run (their events carry it as subagent_run_id).
        self._subagent_runs: dict[str, str] = {}
        self._reasoning: str | None = None
        self._open_calls: list[str] = []  # started, not ended (streamed fragments)
        self._started_calls: set[str] = set()
        self._step = False
        self._errors: list[tuple[str, int]] = []  # error events not yet known to be fatal
        self._usage = [0, 0, 0]  # input, output, model calls counted
        self.pending_calls: list[str] = []
        """Tool calls this run ended and no result answered yet, in order."""
        self.closed = False

    # -- the run ------------------------------------------------------------------------

    def started(self) -> list[BaseEvent]:
        """The run's first event."""
        return [
            RunStartedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                protocol_version=PROTOCOL_VERSION,
                timestamp=time.time_ns() // 1_000_000,
            )
        ]

    def feed(self, event: AnyStreamEvent) -> list[BaseEvent]:
        """The AG-UI events telling ``event`` (none for what AG-UI needs not hear).

        An event of a type this version does not know (another producer's), or a record
        that could not be read, tells nothing: AG-UI has no place for it.
        """
        out: list[BaseEvent] = []
        if isinstance(event, UnknownEvent | InvalidEvent):
            return out
        if isinstance(event, ErrorEvent):
            # Fatal or not is known only at the end: the run's last error is its RUN_ERROR.
            self._errors.append((event.error, _millis(event.timestamp)))
            return out
        if self._errors and not isinstance(event, StreamStoppedEvent):
            self._flush_errors(out)
        at = _millis(event.timestamp)
        parent = parent_tool_call_id(event)
        if parent is not None:
            self._attribute(event, parent)
        if isinstance(event, AgentChoiceEvent):
            self._close_reasoning(out)
            owner = (event.agent_name, parent)
            if self._text is not None and owner != self._text_owner:
                self._close_text(out)  # another agent of the team speaks
            if self._text is None:
                self._close_calls(out)
                self._text_owner = owner
                if parent is None:
                    self._text = self._message_id()
                    start = TextMessageStartEvent(
                        message_id=self._text, role="assistant", timestamp=at
                    )
                else:
                    # A sub-agent's text: a message of its own, named after it.
                    self._text = self._new_id()
                    self.memory.message_ids.add(self._text)
                    self._subagent_runs[self._text] = parent
                    start = TextMessageStartEvent(
                        message_id=self._text,
                        role="assistant",
                        name=event.agent_name,
                        timestamp=at,
                    )
                out.append(start)
            out.append(
                TextMessageContentEvent(message_id=self._text, delta=event.content, timestamp=at)
            )
        elif isinstance(event, AgentChoiceReasoningEvent):
            self._close_text(out)
            if self._reasoning is None:
                self._close_calls(out)
                self._message_id()  # reasoning starts a turn too
                self._reasoning = reasoning = self._new_id()
                self.memory.message_ids.add(reasoning)
                out.append(ReasoningStartEvent(message_id=reasoning, timestamp=at))
                out.append(
                    ReasoningMessageStartEvent(
                        message_id=reasoning, role="reasoning", timestamp=at
                    )
                )
            out.append(
                ReasoningMessageContentEvent(
                    message_id=self._reasoning, delta=event.content, timestamp=at
                )
            )
        elif isinstance(event, PartialToolCallEvent):
            call = event.tool_call
            self._close_text(out)
            self._close_reasoning(out)
            if call.id not in self._started_calls and call.id not in self.memory.ended_calls:
                self._start_call(out, call, at, parent=self._message_id(), arguments=False)
                self._open_calls.append(call.id)
            if call.id in self._open_calls and call.function.arguments:
                out.append(
                    ToolCallArgsEvent(
                        tool_call_id=call.id, delta=call.function.arguments, timestamp=at
                    )
                )
        elif isinstance(event, ToolCallConfirmationEvent | ToolCallEvent):
            self._close_text(out)
            self._close_reasoning(out)
            if isinstance(event, ToolCallConfirmationEvent):
                self.memory.asked[event.tool_call.id] = event.tool_call
            self._end_call(out, event.tool_call, at)
        elif isinstance(event, ToolCallResponseEvent):
            call = event.tool_call
            self._close_text(out)
            self._close_reasoning(out)
            self._end_call(out, call, at)
            if call.id in self.pending_calls:
                self.pending_calls.remove(call.id)
            if call.id not in self.memory.client_results:
                result = self._new_id()
                self.memory.message_ids.add(result)
                out.append(
                    ToolCallResultEvent(
                        message_id=result,
                        tool_call_id=call.id,
                        content=event.response,
                        role="tool",
                        timestamp=at,
                    )
                )
            # What the model says after a tool's result is a new message.
            self._turn_over = True
        elif isinstance(event, TokenUsageEvent):
            last = event.usage.last_message
            if last is not None:
                self._usage[0] += last.input_tokens
                self._usage[1] += last.output_tokens
                self._usage[2] += 1
            out.append(self._custom(event, at))
        elif isinstance(event, SessionCompactionEvent):
            if event.status == "start" and not self._step:
                self._step = True
                out.append(StepStartedEvent(step_name=_STEP, timestamp=at))
            out.append(self._custom(event, at))
            if event.status == "completed" and self._step:
                self._step = False
                out.append(StepFinishedEvent(step_name=_STEP, timestamp=at))
        elif isinstance(
            event,
            ShellOutputEvent
            | SessionTitleEvent
            | SessionSummaryEvent
            | TeamInfoEvent
            | AgentSwitchingEvent,
        ):
            out.append(self._custom(event, at))
        elif isinstance(event, UserMessageEvent | StreamStartedEvent | StreamStoppedEvent):
            pass  # _IGNORED_EVENTS
        else:
            assert_never(event)
        if self._subagent_runs:
            out = [self._marked(item) for item in out]
        return out

    def _attribute(self, event: StreamEvent, parent: str) -> None:
        """Note the tool call of a sub-agent's event as its run's (see :meth:`_marked`)."""
        call = getattr(event, "tool_call", None)
        if isinstance(call, WireToolCall):
            self._subagent_runs.setdefault(call.id, parent)

    def _marked(self, item: BaseEvent) -> BaseEvent:
        """``item`` with the ``subagent_run_id`` of the sub-agent run its message or call is of.

        AG-UI's place for attribution: the id is that of the call that started the run.
        """
        runs = self._subagent_runs
        run = runs.get(getattr(item, "message_id", None) or "") or runs.get(
            getattr(item, "tool_call_id", None) or ""
        )
        if run is None:
            return item
        return item.model_copy(update={"subagent_run_id": run})

    def finished(
        self,
        *,
        interrupts: Sequence[Interrupt] = (),
        pending: Sequence[str] | None = None,
        result: Any = None,
    ) -> list[BaseEvent]:
        """Close the run as completed, or as interrupted when ``interrupts`` wait.

        A completed run names the tool calls left to the client (frontend tools,
        answered in its next input) in its outcome: ``pending``, by default the
        calls this run ended that no result answered.
        """
        out = self._close_all()
        self._flush_errors(out)
        outcome: RunFinishedInterruptOutcome | RunFinishedSuccessOutcome
        if interrupts:
            outcome = RunFinishedInterruptOutcome(interrupts=list(interrupts))
        else:
            left = list(self.pending_calls if pending is None else pending)
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=left or None)
        out.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                result=result,
                outcome=outcome,
                usage=self._usage_entries(),
                timestamp=time.time_ns() // 1_000_000,
            )
        )
        return out

    def failed(self, message: str | None = None, *, code: str = "run_failed") -> list[BaseEvent]:
        """Close the run as failed: RUN_ERROR with ``message`` (default: its last error)."""
        out = self._close_all()
        if message is None:
            message = self._errors.pop()[0] if self._errors else "the run failed"
        self._flush_errors(out)
        out.append(
            RunErrorEvent(
                message=message,
                code=code,
                usage=self._usage_entries(),
                timestamp=time.time_ns() // 1_000_000,
            )
        )
        return out

    def cancelled(self) -> list[BaseEvent]:
        """Close the run as cancelled (stopped before it completed, not failed)."""
        out = self._close_all()
        self._errors.clear()  # "cancelled: ..." is what the outcome says
        out.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedCancelledOutcome(),
                usage=self._usage_entries(),
                timestamp=time.time_ns() // 1_000_000,
            )
        )
        return out

    # -- pieces -------------------------------------------------------------------------

    def _message_id(self) -> str:
        """The assistant message of the current model turn: a new one when the model
        speaks again after a tool's result."""
        if self._turn_over or self._turn is None:
            self._turn = self._new_id()
            self._turn_over = False
            self.memory.message_ids.add(self._turn)
        return self._turn

    def _start_call(
        self, out: list[BaseEvent], call: WireToolCall, at: int, *, parent: str, arguments: bool
    ) -> None:
        self._started_calls.add(call.id)
        out.append(
            ToolCallStartEvent(
                tool_call_id=call.id,
                tool_call_name=call.function.name,
                parent_message_id=parent,
                timestamp=at,
            )
        )
        if arguments and call.function.arguments:
            out.append(
                ToolCallArgsEvent(
                    tool_call_id=call.id, delta=call.function.arguments, timestamp=at
                )
            )

    def _end_call(self, out: list[BaseEvent], call: WireToolCall, at: int) -> None:
        """Make sure the client holds ``call`` whole: started, arguments, ended."""
        if call.id in self.memory.ended_calls:
            return
        if call.id not in self._started_calls:
            # Not streamed: a call of the turn under way (its others may have been
            # answered already), or the first thing a new turn says.
            parent = self._turn if self._turn is not None else self._message_id()
            self._start_call(out, call, at, parent=parent, arguments=True)
        else:
            self._open_calls.remove(call.id)
        out.append(ToolCallEndEvent(tool_call_id=call.id, timestamp=at))
        self.memory.ended_calls.add(call.id)
        self.pending_calls.append(call.id)

    def _close_text(self, out: list[BaseEvent]) -> None:
        if self._text is not None:
            out.append(TextMessageEndEvent(message_id=self._text))
            self._text = None

    def _close_reasoning(self, out: list[BaseEvent]) -> None:
        if self._reasoning is not None:
            out.append(ReasoningMessageEndEvent(message_id=self._reasoning))
            out.append(ReasoningEndEvent(message_id=self._reasoning))
            self._reasoning = None

    def _close_calls(self, out: list[BaseEvent]) -> None:
        # A call whose fragments stopped without its announcement (the run failed
        # mid-stream): ended here, arguments as far as they came.
        for call_id in list(self._open_calls):
            self._open_calls.remove(call_id)
            out.append(ToolCallEndEvent(tool_call_id=call_id))
            self.memory.ended_calls.add(call_id)

    def _close_all(self) -> list[BaseEvent]:
        if self.closed:
            raise RuntimeError("an AG-UI run is closed once")
        self.closed = True
        out: list[BaseEvent] = []
        self._close_text(out)
        self._close_reasoning(out)
        self._close_calls(out)
        if self._step:
            self._step = False
            out.append(StepFinishedEvent(step_name=_STEP))
        return out

    def _flush_errors(self, out: list[BaseEvent]) -> None:
        for message, at in self._errors:
            out.append(
                CustomEvent(name=f"{CUSTOM_PREFIX}error", value={"error": message}, timestamp=at)
            )
        self._errors.clear()

    def _custom(self, event: StreamEvent, at: int) -> CustomEvent:
        value = event.model_dump(mode="json", exclude=set(_ENVELOPE))
        return CustomEvent(name=f"{CUSTOM_PREFIX}{event.type}", value=value, timestamp=at)

    def _usage_entries(self) -> list[TokenUsage] | None:
        given, made, calls = self._usage
        if not calls:
            return None
        return [
            TokenUsage(
                model=self.model,
                input_tokens=given,
                output_tokens=made,
                total_tokens=given + made,
            )
        ]


_ENCODER = EventEncoder()


def encode(events: Iterable[BaseEvent]) -> bytes:
    """``events`` as Server-Sent Events (``data:`` frames), with the official encoder."""
    return "".join(_ENCODER.encode(event) for event in events).encode()
