"""The session core's seams in this process's memory (``agentrt serve --store memory``).

Sessions live as long as the process: their agents hold their conversations, their
logs are :class:`~agentrt.stream.EventLog` windows, their runs are tasks of the
store's task group, and a confirmation waits in the run for its answer. Nothing is
written anywhere, nothing is polled: every reader wakes on the event that grew the
log.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

from agentrt.agent import Agent
from agentrt.messages import AssistantMessage, Message
from agentrt.server.session_errors import AlreadyAnsweredError, NoRunError, RunEndedError
from agentrt.stream._log import EventLog
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.confirm import Confirmations, Decision, UnknownToolCallError
from agentrt.stream.events import StreamEvent

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from agentrt.server.sessions import Run, RunRequest, Session
    from agentrt.server.store import SessionStore

__all__ = ("MemoryBackend", "MemoryLog")


class MemoryLog(EventLog):
    """A session's events in memory: the latest ``retain`` of them, numbered from 1."""

    def __init__(self, session: Session, *, retain: int) -> None:
        super().__init__(retain=retain)
        self._session = session

    async def read(self, after: int, limit: int) -> list[SequencedEvent]:
        """Up to ``limit`` kept events numbered above ``after``.

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        return self.since(after, limit=limit)

    async def bounds(self) -> tuple[int, int]:
        """The numbers of the oldest and latest kept events ((0, 0) when none)."""
        return self.first_sequence, self.last_sequence if self.first_sequence else 0

    @asynccontextmanager
    async def writing(self, run: Run) -> AsyncIterator[_MemorySink]:
        """The run's sink: each event into the log, the readers woken at once."""
        yield _MemorySink(self, self._session)


class _MemorySink:
    __slots__ = ("_clock", "_log", "_session")

    def __init__(self, log: MemoryLog, session: Session) -> None:
        self._log = log
        self._session = session
        self._clock = session.store.clock

    def add(self, event: StreamEvent) -> bool:
        self._log.append(event)
        session = self._session
        # An event is activity: a run that has just begun to wait for a confirmation
        # is idle from then on, not from when it started. session.touch(), inline: a
        # call fewer per event.
        session.last_active = self._clock()
        session.notify()
        return True

    async def finish(self) -> None:
        pass


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
