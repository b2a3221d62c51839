"""The seams of the session core: what differs between memory, SQLite and Postgres.

:mod:`agentrt.server.sessions` is written once: sessions, runs, readers, answers,
cancellation and expiry. What a store changes sits behind the two protocols here,
each implemented once per backend (:mod:`agentrt.server.memory`,
:mod:`agentrt.server.durable`):

- :class:`SessionLog`, a session's **event log**: where a run's events go (and
  when a reader may see them), how readers read them back, and how far they go.
- :class:`Backend`, the rest: **where sessions live** (made, found, deleted,
  counted, expired), **what launches and recovers a run** (a task of the store's
  task group, or a DBOS workflow that a process recovers after a crash), how a
  run is cancelled from any process, and **where answers wait** (a confirmation
  answered in memory, or a message in the store).

No method of the core is refused by a backend: a backend that has nothing to do
for a seam (memory keeps no rows) does nothing there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from agentrt.stream.codec import SequencedEvent
from agentrt.stream.confirm import Confirmations
from agentrt.stream.events import StreamEvent

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from agentrt.agent import Agent
    from agentrt.messages import Message
    from agentrt.server.sessions import Run, RunRequest, Session
    from agentrt.server.store import SessionStore

__all__ = ("Backend", "EncodedEvent", "RunSink", "SessionLog")


class RunSink(Protocol):
    """Where one run's events go, in order, for as long as the run lasts."""

    def add(self, event: StreamEvent) -> bool:
        """Take ``event`` without waiting (the stream adapter's ``sink_nowait``)."""
        ...

    async def finish(self) -> None:
        """The run ended and its last event was added: make it all visible (a durable
        backend writes the session's new state with it)."""
        ...


_TYPE_FIRST = b'{"type":"'
_TYPE_AT = len(_TYPE_FIRST)
_new_tuple = tuple.__new__


class EncodedEvent(NamedTuple):
    """An event of a session's log as its JSON, read for an event stream.

    What a log may give a reader that only sends events on (see
    :meth:`SessionLog.read_encoded`): the JSON that
    :func:`~agentrt.stream.encode_sse` would write, without a model made to write it.

    Attributes:
        sequence: The event's number in the log.
        type: The event's ``type``.
        data: The event's JSON, as ``encode_sse`` writes it.
    """

    sequence: int
    type: str
    data: bytes

    @classmethod
    def of_json(cls, sequence: int, data: bytes) -> EncodedEvent | None:
        """Event ``sequence`` from its JSON alone, or None when the JSON does not name its
        type first (an event's serializer always does: its ``type`` is its first field).
        """
        if data.startswith(_TYPE_FIRST):
            end = data.find(b'"', _TYPE_AT)
            if end > 0:
                # tuple.__new__: a NamedTuple's own __new__ is a Python call (a hot path).
                return _new_tuple(cls, (sequence, data[_TYPE_AT:end].decode(), data))
        return None

    def sse(self) -> bytes:
        """The event's SSE frame: the bytes of ``encode_sse(event, sequence=sequence)``."""
        return b"event: %b\nid: %d\ndata: %b\n\n" % (self.type.encode(), self.sequence, self.data)


class SessionLog(Protocol):
    """The event log of one session, numbered from 1 across all of its runs."""

    @property
    def last_sequence(self) -> int:
        """The number of the latest event produced in this process (0: none)."""
        ...

    async def read(self, after: int, limit: int) -> list[SequencedEvent]:
        """Up to ``limit`` events numbered above ``after``, in order.

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        ...

    async def read_encoded(self, after: int, limit: int) -> list[SequencedEvent | EncodedEvent]:
        """As :meth:`read`, for a reader that only sends the events on (an SSE stream):
        any of them may come as an :class:`EncodedEvent` where the log holds its JSON.

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        ...

    async def bounds(self) -> tuple[int, int]:
        """The numbers of the oldest and the latest kept events ((0, 0): none)."""
        ...

    def writing(self, run: Run) -> AbstractAsyncContextManager[RunSink]:
        """The sink of ``run`` while it runs (entered by the core around the run)."""
        ...


class Backend(Protocol):
    """What a store does that the session core does not (see the module docstring)."""

    @property
    def recovers_runs(self) -> bool:
        """Whether a run cut off by a shutdown is recovered by the next start: it then
        writes nothing more (its stream goes on after the restart)."""
        ...

    @property
    def poll(self) -> tuple[float, float] | None:
        """How often readers look for events written by other processes (first and
        longest interval, in seconds); None when every event is written here."""
        ...

    # -- lifetime -----------------------------------------------------------------------

    def lifetime(self, store: SessionStore, group: TaskGroup) -> AbstractAsyncContextManager[None]:
        """Entered for the store's lifetime, inside its task group (which it may use)."""
        ...

    # -- sessions -----------------------------------------------------------------------

    def log_of(self, session: Session) -> SessionLog:
        """A new session object's event log."""
        ...

    def prepare(self, agent: Agent) -> None:
        """Made a new agent for a session (a durable backend makes its calls steps)."""
        ...

    async def count(self, store: SessionStore) -> int:
        """How many sessions exist (with those being made here), for ``max_sessions``."""
        ...

    async def create(self, session: Session) -> bool:
        """Keep the new ``session``; False when one with its id exists already."""
        ...

    async def load(
        self, session_id: str, make_agent: Callable[[], Awaitable[Agent]]
    ) -> Agent | None:
        """The agent of the stored session ``session_id``, restored; None: no such session.

        ``make_agent`` makes a new agent with the server's factory (called only for a
        session that exists).
        """
        ...

    async def delete(self, session_id: str) -> bool:
        """Forget the session everywhere; False when there was none."""
        ...

    async def expired(self, store: SessionStore, idle_since: float) -> list[str]:
        """The ids of the sessions to close as idle, forgotten by the backend already.

        ``idle_since`` is the store's clock ``session_ttl`` seconds ago.
        """
        ...

    async def refresh(self, session: Session) -> None:
        """Bring ``session``'s agent up to date with what the store holds (another
        process may have run it since); nothing while a run of it is here."""
        ...

    async def save(self, session: Session) -> None:
        """Keep ``session``'s conversation as it is now (messages added between runs).

        Raises:
            SessionNotFoundError: The session was deleted meanwhile.
        """
        ...

    async def read_attachment(self, session: Session, name: str) -> dict[str, Any] | None:
        """What a projection kept with the session under ``name`` (an AG-UI thread's
        memory of its client), as last written by any process; None: nothing."""
        ...

    async def write_attachment(self, session: Session, name: str, data: dict[str, Any]) -> None:
        """Keep ``data`` (JSON) with the session under ``name``, for every process."""
        ...

    async def attachments(self, store: SessionStore, name: str) -> dict[str, dict[str, Any]]:
        """What every session keeps under ``name``, by session id (every process's
        sessions for a durable store: A2A lists the tasks of every context with it)."""
        ...

    async def fork(
        self, store: SessionStore, source: Session, at: int, message: str | None
    ) -> Session:
        """Branch ``source`` at its event ``at`` into a new session of ``store``, held
        there, its run (if any) started (see :meth:`SessionStore.fork`; ``at`` is one of
        the kept events of ``source``).

        Raises:
            CannotForkError: The backend cannot give the conversation at ``at``.
        """
        ...

    async def messages(self, session: Session) -> list[Message]:
        """The session's conversation (``GET /sessions/{id}/messages``).

        Raises:
            SessionNotFoundError: The session was deleted meanwhile.
        """
        ...

    # -- runs ---------------------------------------------------------------------------

    async def open_run(self, session: Session) -> tuple[str, int, Mapping[str, Any] | None] | None:
        """Open a run of ``session``: its id, the number of the event before its first,
        and what the backend hands over to it (a durable session's stored state).

        None when the session has an open run (in any process).

        Raises:
            SessionNotFoundError: The session was deleted meanwhile.
        """
        ...

    def launch(self, group: TaskGroup, session: Session, run: Run, request: RunRequest) -> None:
        """Start ``run`` of ``session`` in ``group``; it calls :meth:`Session.execute`."""
        ...

    @property
    def confirmations(self) -> type[Confirmations]:
        """Where the confirmations of a run wait for their answers: the class of its
        :class:`~agentrt.stream.confirm.Confirmations` (deferred ones do not wait: the
        run ends waiting on them)."""
        ...

    async def confirm(
        self, session: Session, tool_call_id: str, decision: str, reason: str | None
    ) -> None:
        """Answer a confirmation of ``session``'s run, wherever it runs.

        Raises:
            AlreadyAnsweredError, RunEndedError, UnknownToolCallError: See
                :meth:`Session.confirm`.
        """
        ...

    async def cancel(self, session: Session, reason: str) -> None:
        """Cancel ``session``'s open run, wherever it runs.

        Raises:
            NoRunError: The session has no open run.
        """
        ...

    async def has_open_run(self, session: Session) -> bool:
        """Whether ``session`` has an open run in any process."""
        ...
