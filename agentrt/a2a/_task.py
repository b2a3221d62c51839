"""An A2A task told from its run's events: the task as it stands, and its updates.

A task is one run of a session (see :mod:`agentrt.a2a.server`). :class:`TaskFold` reads
the run's events from the session's log, in order, and keeps the task they tell; each
event it reads also gives the A2A updates a streaming client gets for it:

- ``agent_choice`` (text deltas): a :class:`TaskArtifactUpdateEvent` that appends to
  the artifact of the current model turn (``text-1``, ``text-2``...; one per turn, so
  the text said before a tool call is not mixed with the answer). The turn's artifact
  is closed (``lastChunk``, an empty text part) when a tool call, a confirmation or
  the end of the run follows. The task's answer is its last artifact.
- ``tool_call``, ``tool_call_response``, ``agent_choice_reasoning``, ``error`` and
  every other event (a shell's output, a title, a summary, a compaction, a team's
  events, and a sub-agent's text in a team): a ``WORKING`` status update whose
  message (role agent) holds one data part, the agentrt event itself (its JSON,
  ``type`` first; ``session_id`` and ``timestamp`` left out). Tool calls and their
  responses are kept in the task's history too; the others are not (they are a
  stream's, not the task's). ``partial_tool_call`` is not told: its ``tool_call``
  follows.
- ``token_usage``: a ``WORKING`` status update whose metadata is
  ``{"agentrt": {"usage": {...}}}`` (agentrt's usage, its keys in camelCase as A2A
  names fields); the task's metadata holds the latest usage too, and the run's id
  (``runId``).
- ``tool_call_confirmation``: ``INPUT_REQUIRED``, the status message a text part
  asking for approval and a data part ``{"type": "tool_call_confirmation",
  "pending": [{"toolCallId", "name", "arguments", "agentName"}], "decisions": [...]}``
  listing every call waiting, with the agent that asks (and, for a sub-agent's call,
  ``parentToolCallId``: the call that gave it its task).
- ``stream_started``: ``WORKING``; ``user_message``: the task's history, as the
  client's own message when the fold has it (see below).
- ``stream_stopped``: ``COMPLETED``; ``FAILED`` (the status message the error's text)
  when an ``error`` came just before it; ``CANCELED`` when that error says the run was
  cancelled (the session core's cancellation errors begin with ``cancelled:``).

A task's history is its conversation in A2A messages, in order: the client's messages
as it sent them (its ``messageId`` and parts: the one that started the task, and those
that answered a confirmation, which the fold is given with the number of the event
after which each came), and the agent's: each model turn's text once the turn is over
(``<task id>.text-N``), the tool calls and their responses, the questions of
``INPUT_REQUIRED`` and the error that ended the task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias, assert_never

from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

from agentrt.stream._parse import AnyStreamEvent, InvalidEvent, UnknownEvent
from agentrt.stream.attribution import parent_tool_call_id
from agentrt.stream.confirm import DECISIONS
from agentrt.stream.events import (
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    AgentSwitchingEvent,
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
    UserMessageEvent,
)

__all__ = (
    "CANCELLED_PREFIX",
    "INTERRUPTED",
    "TERMINAL",
    "TaskFold",
    "Update",
    "agent_message",
    "camel_case",
)

Update: TypeAlias = TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""What a streaming client gets after the task itself."""

TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
    }
)
"""The states a task never leaves."""

INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED})
"""The states in which a task waits for its client."""

CANCELLED_PREFIX = "cancelled"
"""How the session core's errors for a cancelled run begin."""

# The event types feed() deliberately does not tell; it tells every other (it ends in
# assert_never, and tests/test_stream_consumers.py checks that each type not listed here
# changes what the task's client gets, and none of these does).
_IGNORED_EVENTS: frozenset[EventType] = frozenset({"partial_tool_call"})


def _struct(data: dict[str, Any]) -> struct_pb2.Struct:
    return ParseDict(data, struct_pb2.Struct())


def agent_message(message_id: str, task_id: str, context_id: str, *parts: Any) -> Message:
    """A message of the agent on the task."""
    return Message(
        message_id=message_id,
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_AGENT,
        parts=list(parts),
    )


def _event_data(event: StreamEvent) -> dict[str, Any]:
    data = event.model_dump(mode="json")
    data.pop("session_id", None)
    data.pop("timestamp", None)
    return data


def camel_case(data: Any) -> Any:
    """``data`` with its keys in camelCase, as A2A names its fields (``input_tokens``
    becomes ``inputTokens``), at every depth."""
    if isinstance(data, dict):
        return {_camel(str(key)): camel_case(value) for key, value in data.items()}
    if isinstance(data, list):
        return [camel_case(value) for value in data]
    return data


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _pending_entry(asked: ToolCallConfirmationEvent) -> dict[str, Any]:
    call = asked.tool_call
    entry = {
        "toolCallId": call.id,
        "name": call.function.name,
        "arguments": call.function.arguments,
        # Who asks: in a team, the sub-agent whose tool it is, and the call that gave it
        # its task (the stream's attribution: the call's own event comes after the answer).
        "agentName": asked.agent_name,
    }
    if (parent := parent_tool_call_id(asked)) is not None:
        entry["parentToolCallId"] = parent
    return entry


@dataclass(eq=False)
class TaskFold:
    """The task one run's events tell, event by event (see the module docstring).

    Args:
        task_id: The task's id.
        context_id: Its context's id.
        run_id: The run's id (in the task's metadata).
        sequence: The log's sequence number of the last event read (the run's
            ``after`` before its first).
    """

    task_id: str
    context_id: str
    run_id: str
    sequence: int
    state: TaskState = TaskState.TASK_STATE_SUBMITTED
    status_message: Message | None = None
    history: list[Message] = field(default_factory=list)
    texts: list[list[str]] = field(default_factory=list)
    """The text of each model turn so far, in the pieces it streamed in."""
    pending: dict[str, ToolCallConfirmationEvent] = field(default_factory=dict)
    """The confirmations waiting for a decision, by their call's id."""
    usage: dict[str, Any] | None = None
    client: list[tuple[int, Message]] = field(default_factory=list)
    """The client's messages not in the history yet, each with the number of the
    event after which it came; the first, when it came at ``sequence``, is the run's
    prompt (its ``user_message`` is told as it)."""
    updated: str | None = None
    """The timestamp of the last event read (RFC 3339)."""
    error: str | None = None
    """The last error, while nothing followed it (a run's end after it fails the run)."""
    partial: str | None = None
    """What of the task is no longer kept, if anything (in its metadata)."""
    _open: bool = False
    _messages: int = 0
    _prompt_given: bool = False

    def __post_init__(self) -> None:
        self._prompt_given = bool(self.client) and self.client[0][0] == self.sequence

    @property
    def terminal(self) -> bool:
        """Whether the task has ended."""
        return self.state in TERMINAL

    @property
    def waiting(self) -> bool:
        """Whether the task waits for its client (a decision on its tool calls)."""
        return self.state in INTERRUPTED

    def task(self) -> Task:
        """The task as it stands."""
        self._flush(self.sequence + 1)
        metadata: dict[str, Any] = {"runId": self.run_id}
        if self.usage is not None:
            metadata["usage"] = self.usage
        if self.partial is not None:
            metadata["partial"] = self.partial
        status = self._stamped(TaskStatus(state=self.state))
        if self.status_message is not None:
            status.message.CopyFrom(self.status_message)
        return Task(
            id=self.task_id,
            context_id=self.context_id,
            status=status,
            artifacts=self.artifacts(),
            history=self.history,
            metadata=_struct({"agentrt": metadata}),
        )

    def answered(self, call_ids: list[str], message: Message) -> None:
        """The client decided on these calls with ``message``: the task works again,
        unless others wait."""
        self.client.append((self.sequence, message))
        for call_id in call_ids:
            self.pending.pop(call_id, None)
        if self.pending:
            self._ask()
        else:
            self.state = TaskState.TASK_STATE_WORKING
            self.status_message = None

    def resume_at(self, sequence: int, why: str) -> None:
        """The events of the task up to ``sequence`` are gone: read on from there (the
        task is at work, as far as what is left tells)."""
        self.sequence = sequence
        self.state = TaskState.TASK_STATE_WORKING
        self.partial = why

    def ended_as(self, last: int, status: TaskStatus, why: str) -> None:
        """The task's events are gone: it ended (event ``last``) with ``status``."""
        self.sequence = last
        self.state = status.state
        self.status_message = None
        if status.HasField("message"):
            self.status_message = Message()
            self.status_message.CopyFrom(status.message)
        self.updated = status.timestamp.ToJsonString() if status.HasField("timestamp") else None
        self.partial = why

    # -- events ---------------------------------------------------------------------------

    def feed(self, sequence: int, event: AnyStreamEvent) -> list[Update]:
        """Read the run's next event; the updates a streaming client gets for it."""
        self._flush(sequence)
        self.sequence = sequence
        self.updated = getattr(event, "timestamp", self.updated)
        if isinstance(event, UnknownEvent | InvalidEvent):
            # Of a newer producer, or a record it could not read: a reader ignores what
            # it does not understand.
            return []
        if isinstance(event, ErrorEvent):
            self.error = event.error
            # What was said before it is over: text after it (a step run again after a
            # crash) is a new artifact, and the last one is still the answer.
            return [*self._close(), self._say(event, keep=False)]
        if isinstance(event, StreamStoppedEvent):
            return [*self._close(), self._end()]
        # Anything else after an error: the error did not end the run.
        self.error = None
        if isinstance(event, StreamStartedEvent):
            self.state = TaskState.TASK_STATE_WORKING
            return [self._status()]
        if isinstance(event, UserMessageEvent):
            if self._prompt_given:
                self._prompt_given = False  # the client's message, in the history already
                return []
            self.history.append(
                Message(
                    message_id=self._next_id("user"),
                    task_id=self.task_id,
                    context_id=self.context_id,
                    role=Role.ROLE_USER,
                    parts=[new_text_part(event.message)],
                )
            )
            return []
        if isinstance(event, ToolCallConfirmationEvent):
            # A sub-agent's call too: the task waits for it all the same.
            self.pending[event.tool_call.id] = event
            return [*self._close(), self._ask()]
        if isinstance(event, ToolCallResponseEvent):
            self.pending.pop(event.tool_call.id, None)
            if self.waiting and not self.pending:
                self.state = TaskState.TASK_STATE_WORKING
        own = parent_tool_call_id(event) is None
        if isinstance(event, AgentChoiceEvent):
            if own:
                return [self._text(event.content)]
            return [self._say(event, keep=False)]  # a sub-agent's text is not the answer
        if isinstance(event, TokenUsageEvent):
            self.usage = camel_case(event.usage.model_dump(mode="json"))
            update = self._status()
            update.metadata.CopyFrom(_struct({"agentrt": {"usage": self.usage}}))
            return [update]
        if isinstance(event, ToolCallEvent | ToolCallResponseEvent):
            return [*self._close(), self._say(event, keep=True)]
        if isinstance(
            event,
            AgentChoiceReasoningEvent
            | ShellOutputEvent
            | SessionTitleEvent
            | SessionSummaryEvent
            | SessionCompactionEvent
            | TeamInfoEvent
            | AgentSwitchingEvent,
        ):
            return [self._say(event, keep=False)]
        if isinstance(event, PartialToolCallEvent):
            return []  # _IGNORED_EVENTS: its tool_call follows, complete
        assert_never(event)

    def _flush(self, before: int) -> None:
        """Into the history: the client's messages that came before event ``before``."""
        while self.client and self.client[0][0] < before:
            self.history.append(self.client.pop(0)[1])

    def _next_id(self, kind: str) -> str:
        self._messages += 1
        return f"{self.task_id}.{kind}-{self._messages}"

    def _status(self, message: Message | None = None) -> TaskStatusUpdateEvent:
        self.status_message = message
        update = TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            status=self._stamped(TaskStatus(state=self.state)),
        )
        if message is not None:
            update.status.message.CopyFrom(message)
        return update

    def _stamped(self, status: TaskStatus) -> TaskStatus:
        if self.updated is not None:
            status.timestamp.FromJsonString(self.updated)
        return status

    def _say(self, event: StreamEvent, *, keep: bool) -> TaskStatusUpdateEvent:
        message = agent_message(
            self._next_id(event.type),
            self.task_id,
            self.context_id,
            new_data_part(_event_data(event)),
        )
        if keep:
            self.history.append(message)
        return self._status(message)

    def _ask(self) -> TaskStatusUpdateEvent:
        self.state = TaskState.TASK_STATE_INPUT_REQUIRED
        asked = list(self.pending.values())
        question = "; ".join(
            f"approve the call of {call.function.name} with {call.function.arguments}?"
            for call in (a.tool_call for a in asked)
        )
        message = agent_message(
            self._next_id("input"),
            self.task_id,
            self.context_id,
            new_text_part(question[0].upper() + question[1:]),
            new_data_part(
                {
                    "type": "tool_call_confirmation",
                    "pending": [_pending_entry(a) for a in asked],
                    "decisions": list(DECISIONS),
                }
            ),
        )
        self.history.append(message)
        return self._status(message)

    def artifacts(self) -> list[Artifact]:
        """An artifact per model turn: its text so far."""
        return [
            Artifact(
                artifact_id=f"text-{number}", name="text", parts=[new_text_part("".join(pieces))]
            )
            for number, pieces in enumerate(self.texts, 1)
        ]

    def _text(self, content: str) -> TaskArtifactUpdateEvent:
        # Pieces joined when the task is read, not a string grown by each delta: a long
        # answer would cost its length squared.
        append = self._open
        if not self._open:
            self._open = True
            self.texts.append([])
        self.texts[-1].append(content)
        return self._chunk(content, append=append, last=False)

    def _chunk(self, content: str, *, append: bool, last: bool) -> TaskArtifactUpdateEvent:
        artifact = Artifact(artifact_id=f"text-{len(self.texts)}", parts=[new_text_part(content)])
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=artifact,
            append=append,
            last_chunk=last,
        )

    def _close(self) -> list[Update]:
        """The current turn's artifact is complete."""
        if not self._open:
            return []
        self._open = False
        said = "".join(self.texts[-1])
        if said:
            self.history.append(
                agent_message(
                    f"{self.task_id}.text-{len(self.texts)}",
                    self.task_id,
                    self.context_id,
                    new_text_part(said),
                )
            )
        return [self._chunk("", append=True, last=True)]

    def _end(self) -> TaskStatusUpdateEvent:
        error = self.error
        self.pending.clear()
        if error is None:
            self.state = TaskState.TASK_STATE_COMPLETED
            return self._status()
        if error.startswith(CANCELLED_PREFIX):
            self.state = TaskState.TASK_STATE_CANCELED
        else:
            self.state = TaskState.TASK_STATE_FAILED
        message = agent_message(
            self._next_id("end"), self.task_id, self.context_id, new_text_part(error)
        )
        self.history.append(message)
        return self._status(message)
