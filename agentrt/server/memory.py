"""The session core's seams in this process's memory (``agentrt serve --store memory``).

Sessions live as long as the process: their agents hold their conversations, their
logs are :class:`~agentrt.stream.EventLog` windows, their runs are tasks of the
store's task group, and a confirmation waits in the run for its answer. Nothing is
written anywhere, nothing is polled: every reader wakes on the event that grew the
log.

A session's events are models until an event stream first reads them; from then on the
log holds each as its JSON (bytes: the cyclic garbage collector does not track them),
which later event streams send as they are and other readers read back into a model.
An idle session is most of what a server holds, and its events were most of the
objects the collector walked (``benches/bench_server.py``).

A fork works on what the process holds: each log notes how long the conversation
was at its events (a mark where it changed), so that the conversation at an event is
a prefix of the one held now, unless it was rewritten since (compacted).
"""

from __future__ import annotations

import bisect
import secrets
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from agentrt.agent import Agent
from agentrt.conversation import Conversation
from agentrt.messages import AssistantMessage, Message, ToolMessage, UserMessage
from agentrt.server._fork import (
    CONTENT,
    before_last_user_message,
    go_on,
    hold_messages,
    renamed,
)
from agentrt.server.backend import EncodedEvent
from agentrt.server.session_errors import (
    AlreadyAnsweredError,
    CannotForkError,
    NoRunError,
    RunEndedError,
)
from agentrt.server.sessions import RunRequest
from agentrt.stream._log import EventLog
from agentrt.stream._parse import parse_event
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.confirm import Confirmations, Decision, UnknownToolCallError
from agentrt.stream.events import (
    SessionTitleEvent,
    StreamEvent,
    StreamStartedEvent,
    StreamStoppedEvent,
    TokenUsageEvent,
    ToolCallResponseEvent,
)

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from agentrt.server.sessions import Run, Session
    from agentrt.server.store import SessionStore

__all__ = ("MemoryBackend", "MemoryLog")


class _Mark(NamedTuple):
    # From event ``seq`` on, the conversation held ``length`` messages, the last one
    # ``last`` (to tell a prefix from a conversation rewritten since).
    seq: int
    length: int
    last: Message | None


_PACK_WITHIN = 1024
"""How near the newest event one must be to be packed when read (a deque's item is
reached from its nearer end: a catch-up read of a long log packs nothing)."""


class _RunMark(NamedTuple):
    # A run: the event before its first, the conversation's length then, its request.
    after: int
    length: int
    request: RunRequest


class MemoryLog(EventLog):
    """A session's events in memory: the latest ``retain`` of them, numbered from 1.

    It also notes, for forks, how long the conversation was at each event (see
    :meth:`held_at`).
    """

    def __init__(self, session: Session, *, retain: int) -> None:
        super().__init__(retain=retain)
        self._session = session
        self._marks: list[_Mark] = []
        self._mark_seqs: list[int] = []
        self._version = -1
        self.runs: list[_RunMark] = []
        """The runs of the session, oldest first (for forks)."""
        self.resumes = False
        """Whether the next run goes on with a run whose start the log holds (a fork's)."""
        self._packed = False  # whether any event is held as its JSON

    def since(self, after: int = 0, *, limit: int | None = None) -> list[SequencedEvent]:
        """The kept events numbered above ``after``, as models (see :class:`EventLog`)."""
        items = super().since(after, limit=limit)
        if not self._packed:
            return items
        return list(map(_as_model, items))

    async def read(self, after: int, limit: int) -> list[SequencedEvent]:
        """Up to ``limit`` kept events numbered above ``after``, as models.

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        return self.since(after, limit=limit)

    async def read_encoded(self, after: int, limit: int) -> list[SequencedEvent | EncodedEvent]:
        """Up to ``limit`` kept events numbered above ``after``, each an :class:`EncodedEvent`.

        Each one among the latest ``_PACK_WITHIN`` is held as its JSON from then on (the
        encoding was needed anyway).

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        # Models and packed JSON alike (the deque is typed for the models).
        tail: list[Any] = self._tail(after, limit)
        events: deque[Any] = self._events
        end, size = self._next, len(events)
        packs_from = end - _PACK_WITHIN
        read: list[SequencedEvent | EncodedEvent] = []
        append, of_json = read.append, EncodedEvent.of_json
        sequence = after
        for held in tail:
            sequence += 1
            if type(held) is bytes:
                # Packed only when of_json reads it (below): never None here.
                append(cast("EncodedEvent", of_json(sequence, held)))
                continue
            data = held.__pydantic_serializer__.to_json(held)
            encoded = of_json(sequence, data)
            if encoded is None:  # JSON that does not name its type first stays a model
                append(EncodedEvent(sequence, held.type, data))
                continue
            if sequence >= packs_from:
                events[size - end + sequence] = data
                self._packed = True
            append(encoded)
        return read

    def note(self, seq: int, conversation: Conversation) -> None:
        """Event ``seq`` was added: a mark if the conversation changed since the last one."""
        version = conversation.version
        if version == self._version:
            return
        self._version = version
        length = len(conversation)
        self._marks.append(_Mark(seq, length, conversation[-1] if length else None))
        self._mark_seqs.append(seq)
        # The marks of events no longer kept go, but the one the oldest kept event needs.
        if len(self._marks) > 2 * self.retain:
            keep = max(bisect.bisect_right(self._mark_seqs, self.first_sequence) - 1, 0)
            del self._marks[:keep], self._mark_seqs[:keep]

    def held_at(self, at: int, conversation: Conversation) -> list[Message]:
        """The conversation as it was at event ``at``, from the one held now.

        A run's user message counts from its ``user_message`` event on (the run adds
        it to the conversation a moment later).

        Raises:
            CannotForkError: The conversation was rewritten since (compacted).
        """
        index = bisect.bisect_right(self._mark_seqs, at) - 1
        since, length, last = (0, 0, None) if index < 0 else self._marks[index]
        held = list(conversation[:length])
        if len(held) != length or (length and held[-1] != last):
            raise CannotForkError(
                f"this process no longer holds the conversation as it was at event {at}: "
                "it was rewritten since (compacted); fork from a later event"
            )
        # A model's answer counts from its token_usage event on, a tool's result from its
        # tool_call_response (the run adds them to the conversation a moment later: the
        # turn's tool messages once all of its calls have answered), as in a durable
        # store, whose steps have ended by then.
        start = max(since, self.first_sequence) - 1
        shown = [item.event for item in self.since(start, limit=max(at - start, 0))]
        answered = {e.tool_call.id for e in shown if isinstance(e, ToolCallResponseEvent)}
        used = any(isinstance(event, TokenUsageEvent) for event in shown)
        for later in conversation[length:]:
            if isinstance(later, AssistantMessage) and used:
                used = False
            elif not isinstance(later, ToolMessage) or later.tool_call_id not in answered:
                break
            held.append(later)
        run = self.run_of(at)
        asked = None if run is None else run.request.message
        if run is not None and asked is not None and length <= run.length:
            held = [*held[: run.length], UserMessage(content=asked)]
        return held

    def copy(self, source: MemoryLog, upto: int, conversation: Conversation) -> list[StreamEvent]:
        """Start with the events of ``source`` up to ``upto``, and what it noted of them
        (a fork's log; ``conversation`` is the fork's, held as it was at ``upto``); the
        events copied."""
        session_id = self._session.id
        copied: list[StreamEvent] = []
        first = source.first_sequence
        if first and upto >= first:
            self._next = first  # numbered as in the source
            for item in source.since(first - 1, limit=upto - first + 1):
                copied.append(renamed(cast("StreamEvent", item.event), session_id))
                self.append(copied[-1])
        kept = bisect.bisect_right(source._mark_seqs, upto)
        self._marks = source._marks[:kept]
        self._mark_seqs = source._mark_seqs[:kept]
        self.runs = [run for run in source.runs if run.after < upto]
        self._version = conversation.version
        return copied

    def ran(self, after: int, length: int, request: RunRequest) -> None:
        """A run begins after event ``after``, the conversation ``length`` messages long."""
        runs = self.runs
        runs.append(_RunMark(after, length, request))
        # The runs none of whose events is kept any more go (the first one kept needs the
        # run before it only if that run's events are kept).
        first = self.first_sequence
        drop = 0
        while drop + 1 < len(runs) and runs[drop + 1].after < first:
            drop += 1
        del runs[:drop]

    def end_of_run(self, at: int) -> int:
        """The number of the ``stream_stopped`` of the run of event ``at`` (``at`` while
        that run has not ended)."""
        for item in self.since(at - 1, limit=self.last_sequence - at + 1):
            if isinstance(item.event, StreamStoppedEvent):
                return item.sequence
        return at

    def run_of(self, at: int) -> _RunMark | None:
        """The run event ``at`` belongs to, if a run of this process produced it."""
        runs = self.runs
        index = bisect.bisect_left([run.after for run in runs], at) - 1
        return None if index < 0 else runs[index]

    async def bounds(self) -> tuple[int, int]:
        """The numbers of the oldest and latest kept events ((0, 0) when none)."""
        return self.first_sequence, self.last_sequence if self.first_sequence else 0

    @asynccontextmanager
    async def writing(self, run: Run) -> AsyncIterator[_MemorySink]:
        """The run's sink: each event into the log, the readers woken at once."""
        if self.resumes:
            self.resumes = False
            yield _ResumedSink(self, self._session)
        else:
            yield _MemorySink(self, self._session)


def _as_model(item: SequencedEvent) -> SequencedEvent:
    event: object = item.event
    if type(event) is bytes:
        # Its JSON is what the event wrote: read back strictly, it is the same event.
        return SequencedEvent(item.sequence, parse_event(event, strict=True))
    return item


class _MemorySink:
    __slots__ = ("_clock", "_log", "_session")

    def __init__(self, log: MemoryLog, session: Session) -> None:
        self._log = log
        self._session = session
        self._clock = session.store.clock

    def add(self, event: StreamEvent) -> bool:
        session = self._session
        self._log.note(self._log.append(event), session.agent.conversation)
        # An event is activity: a run that has just begun to wait for a confirmation
        # is idle from then on, not from when it started. session.touch(), inline: a
        # call fewer per event.
        session.last_active = self._clock()
        session.notify()
        return True

    async def finish(self) -> None:
        pass


class _ResumedSink(_MemorySink):
    """The sink of a fork's run that goes on with a run its log holds the start of: the
    log shows one run, as a durable fork's does (its ``stream_started`` is there)."""

    __slots__ = ("_started",)

    def __init__(self, log: MemoryLog, session: Session) -> None:
        super().__init__(log, session)
        self._started = False

    def add(self, event: StreamEvent) -> bool:
        if not self._started and isinstance(event, StreamStartedEvent):
            self._started = True
            return True
        return super().add(event)


class MemoryBackend:
    """The seams of :mod:`agentrt.server.backend` in memory (see the module docstring)."""

    recovers_runs = False
    poll = None
    confirmations: type[Confirmations] = Confirmations
    """The stream's own: answers wait in the run (unless deferred)."""

    @asynccontextmanager
    async def lifetime(self, store: SessionStore, group: TaskGroup) -> AsyncIterator[None]:
        """Nothing to start or stop: the sessions die with the process."""
        yield

    def log_of(self, session: Session) -> MemoryLog:
        """A window of the store's ``retain`` latest events."""
        return MemoryLog(session, retain=session.store.retain)

    def prepare(self, agent: Agent) -> None:
        """Nothing: the agent is used as the factory made it."""

    async def count(self, store: SessionStore) -> int:
        """The sessions held here and those being made."""
        return len(store.sessions) + store.creating

    async def create(self, session: Session) -> bool:
        """Nothing to write: the store holds the session object."""
        return True

    async def load(
        self, session_id: str, make_agent: Callable[[], Awaitable[Agent]]
    ) -> Agent | None:
        """None: a session not held here does not exist."""
        return None

    async def delete(self, session_id: str) -> bool:
        """Nothing to delete: the store forgets the session object."""
        return True

    async def expired(self, store: SessionStore, idle_since: float) -> list[str]:
        """The sessions held here that are idle and were last active before ``idle_since``."""
        return [
            session.id
            for session in store.sessions.values()
            if session.idle and session.last_active <= idle_since
        ]

    async def refresh(self, session: Session) -> None:
        """Nothing: the agent is the only copy of the session."""

    async def save(self, session: Session) -> None:
        """Nothing: the agent is the only copy of the session."""

    async def read_attachment(self, session: Session, name: str) -> dict[str, Any] | None:
        """The copy kept on the session object."""
        kept = session.attachments.get(f"kept:{name}")
        return None if kept is None else dict(kept)

    async def write_attachment(self, session: Session, name: str, data: dict[str, Any]) -> None:
        """A copy on the session object."""
        session.attachments[f"kept:{name}"] = dict(data)

    async def attachments(self, store: SessionStore, name: str) -> dict[str, dict[str, Any]]:
        """The copies kept on the sessions held here (there are no others)."""
        key = f"kept:{name}"
        return {
            session.id: dict(session.attachments[key])
            for session in store.sessions.values()
            if key in session.attachments
        }

    async def fork(
        self, store: SessionStore, source: Session, at: int, message: str | None
    ) -> Session:
        """A new session with the conversation held at ``at``, and the events up to there.

        Raises:
            CannotForkError: The conversation was rewritten since ``at`` (compacted), or
                an edited fork finds no user message to replace.
        """
        log = cast("MemoryLog", source.log)
        end = log.end_of_run(at)
        if end != at and CONTENT.isdisjoint(
            item.event.type for item in log.since(at, limit=end - at)
        ):
            # After the run's last answer: what the run left, as in a durable store.
            at = end
        held = log.held_at(at, source.agent.conversation)
        upto = at
        if message is not None:
            held = before_last_user_message(held, at)
            # The events of the run of the replaced message are not the fork's.
            runs = [r for r in log.runs if r.after < at and r.request.message is not None]
            upto = runs[-1].after if runs else 0
        agent = await store.make_agent()
        if message is None:
            request = await go_on(agent, held)
        else:
            await hold_messages(agent, held)
            request = RunRequest(message)
        session = store.hold(secrets.token_urlsafe(24), agent)
        fork_log = cast("MemoryLog", session.log)
        copied = fork_log.copy(log, upto, agent.conversation)
        kinds = [event.type for event in copied]
        started = max((n for n, kind in enumerate(kinds) if kind == "stream_started"), default=-1)
        fork_log.resumes = "stream_stopped" not in kinds[started:] and started >= 0
        kept = {
            name: dict(data) for name, data in source.attachments.items() if name[:5] == "kept:"
        }
        session.attachments.update(kept)
        # The session's title, if it had one by then: not made (by the model) again.
        for event in copied:
            if isinstance(event, SessionTitleEvent):
                agent.stream_state.session.title = event.title
        if request is not None:
            await session.start(request.message, tool_results=request.tool_results)
        return session

    async def messages(self, session: Session) -> list[Message]:
        """The agent's conversation."""
        return list(session.agent.messages)

    async def open_run(self, session: Session) -> tuple[str, int, Mapping[str, Any] | None] | None:
        """A new run id, after the log's latest event; None while a run is in progress.

        Atomic: nothing awaits between the check and the run's adoption by the core.
        """
        if session.run is not None:
            return None
        return str(uuid.uuid4()), session.log.last_sequence, None

    def launch(self, group: TaskGroup, session: Session, run: Run, request: RunRequest) -> None:
        """A task of the store's group."""
        cast("MemoryLog", session.log).ran(run.after, len(session.agent.conversation), request)
        group.start_soon(session.execute, run, request, name=f"agentrt run {session.label}")

    async def confirm(
        self, session: Session, tool_call_id: str, decision: str, reason: str | None
    ) -> None:
        """Hand the answer to the run's confirmations."""
        answered = _answered(session)
        # Remembered across runs: a second answer is a conflict whether or not its
        # run has ended meanwhile (it often has: the first answer let it go on).
        if tool_call_id in answered:
            raise AlreadyAnsweredError(tool_call_id)
        run = session.run
        if run is not None:
            try:
                accepted = run.adapter.confirmations.answer(
                    tool_call_id, cast("Decision", decision), reason
                )
            except UnknownToolCallError:
                pass
            else:
                if not accepted:
                    raise AlreadyAnsweredError(tool_call_id)
                answered.add(tool_call_id)
                return
        # The conversation tells a call of an earlier run from an id never produced:
        # the first gets a conflict, the second is unknown (and, across sessions,
        # unknowable: an id of another session's agent is never in this one's).
        if any(
            call.id == tool_call_id
            for message in session.agent.messages
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        ):
            raise RunEndedError(tool_call_id)
        raise UnknownToolCallError(tool_call_id)

    async def cancel(self, session: Session, reason: str) -> None:
        """Stop the run here."""
        run = session.run
        if run is None:
            raise NoRunError(session.id)
        run.stop(reason)

    async def has_open_run(self, session: Session) -> bool:
        """Whether a run is in progress here."""
        return session.run is not None


def _answered(session: Session) -> set[str]:
    answered: set[str] = session.attachments.setdefault("answered", set())
    return answered
