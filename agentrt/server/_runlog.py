"""A durable session's event log: a run's events into the store, and readers' back out.

:class:`StoreLog` is the :class:`~agentrt.server.backend.SessionLog` of a session
of a durable store: readers read the events from the store (a process reads what
any process wrote), and each run writes through a :class:`RunLog`.

:class:`RunLog` is the sink of one run of a durable server session. It numbers each
event in the session's numbering and writes the events in batches (one transaction
per batch, taken as soon as the previous one is committed: a group commit), and
only then wakes the readers: **a reader only ever sees, and so a client only ever
receives with an id, an event that is in the store**. A streamed answer's deltas
reach live readers one commit late (milliseconds), never before they are durable.

It is also the run's :class:`~agentrt.durable.StepJournal`. A run recovered after
a crash runs again from its start, and produces its events again: the model and
tool calls recorded as steps are replayed, not made. Each step records how far the
run's events had got when it ended (all of them written first), so the recovered
run knows which of the events it produces again are in the store already (those
are dropped) and goes on numbering from there: no gap, no duplicate. A step that
was cut off by the crash runs again; what it had produced (the deltas of a model
call, a tool's output) stays in the log, followed by an ``error`` event saying
that it was abandoned and the step runs again — never silently mixed in.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import sqlalchemy as sa

from agentrt.durable import step_journal
from agentrt.server._storage import EventRow, Storage
from agentrt.server.backend import EncodedEvent
from agentrt.stream._log import EventsExpiredError
from agentrt.stream._parse import parse_event
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.events import ErrorEvent, StreamEvent

if TYPE_CHECKING:
    from agentrt.server.durable import DurableBackend
    from agentrt.server.sessions import Run, Session

__all__ = ("ABANDONED", "RunLog", "StoreLog")

logger = logging.getLogger("agentrt.server")

ABANDONED = (
    "the server stopped during this run and recovered it from its last recorded step: "
    "the output above since that step is abandoned, and the step runs again"
)
"""The ``error`` a recovered run puts after the output of the step the crash cut off."""

# Seconds between two tries to write to a store that fails, doubling up to the second.
_RETRY = (0.05, 5.0)


def _tool_call_id(event: StreamEvent) -> str | None:
    call = getattr(event, "tool_call", None)
    if call is not None:
        return str(call.id)
    value = getattr(event, "tool_call_id", None)
    return value if isinstance(value, str) else None


class RunLog:
    """The events of one durable run, into the session's log in the store.

    Args:
        storage: The store's tables.
        session_id: The session.
        run_id: The run (its workflow id).
        after: The number of the session's last event before the run's first.
        written: The number of the session's latest event in the store now: for
            a recovered run, its events up to there were written before the crash.
        agent_name: For the ``error`` event of an abandoned step.
        on_written: Called after each commit (wakes this process's readers).
        on_failure: Called once when the store fails (the run is then stopped).
    """

    def __init__(
        self,
        storage: Storage,
        session_id: str,
        run_id: str,
        *,
        after: int,
        written: int,
        agent_name: str,
        on_written: Callable[[], None],
        on_failure: Callable[[str], None],
    ) -> None:
        self.storage = storage
        self.session_id = session_id
        self.run_id = run_id
        self.cursor = after
        """The number of the latest event the run produced (written or not)."""
        self.written = written
        self.committed = max(after, written)
        """The number of the latest event in the store."""
        self.failure: str | None = None
        """Why the store failed, once it did."""
        self.taken_over = False
        """Whether another process closed the run (its events are no longer written)."""
        self._agent_name = agent_name
        self._on_written = on_written
        self._on_failure = on_failure
        self._pending: list[EventRow] = []
        self._wake = anyio.Event()
        self._progress = anyio.Event()
        self._lock = anyio.Lock()
        self._muted = 0

    # -- the sink ---------------------------------------------------------------------------

    def add(self, event: StreamEvent) -> bool:
        """Number ``event`` and queue it for the next batch; never waits (a sink_nowait)."""
        if self._muted:
            return True
        self.cursor += 1
        if self.cursor <= self.written:
            return True  # written before the crash: produced again by the replay
        data = event.__pydantic_serializer__.to_json(event).decode()
        self._pending.append(EventRow(self.cursor, event.type, _tool_call_id(event), data))
        self._wake.set()
        return True

    async def flusher(self) -> None:
        """Write the queued events, batch after batch, for as long as the run lasts."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            async with self._lock:
                batch, self._pending = self._pending, []
                if batch and not self.taken_over:
                    await self._write(
                        functools.partial(self.storage.append, self.session_id, self.run_id, batch)
                    )
                    self._committed(batch[-1].seq)

    async def _write(self, write: Callable[[], object]) -> object:
        """Run ``write`` in a thread, trying again while the store fails."""
        delay = _RETRY[0]
        while True:
            try:
                return await anyio.to_thread.run_sync(write)
            except sa.exc.IntegrityError:
                # Its numbers are taken: another process closed the run as abandoned.
                self.taken_over = True
                logger.warning(
                    "run %s: another server process closed it; its events stop here",
                    self.run_id,
                )
                self._failed("another server process closed this run")
                return None
            except sa.exc.SQLAlchemyError as error:
                reason = str(getattr(error, "orig", None) or error).strip().splitlines()
                text = reason[0] if reason else type(error).__name__
                logger.error(
                    "run %s: the durable store failed (%s); %d events wait to be written, "
                    "trying again in %.2fs",
                    self.run_id,
                    text,
                    len(self._pending) + 1,
                    delay,
                )
                self._failed(f"the durable store failed: {text}")
                await anyio.sleep(delay)
                delay = min(delay * 2, _RETRY[1])

    def _failed(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            self._on_failure(reason)

    def _committed(self, seq: int) -> None:
        self.committed = max(self.committed, seq)
        progress, self._progress = self._progress, anyio.Event()
        progress.set()
        self._on_written()

    async def flush(self) -> None:
        """Wait until every event produced so far is in the store."""
        target = self.cursor
        while self.committed < target and not self.taken_over:
            progress = self._progress
            self._wake.set()
            await progress.wait()

    async def close(self, state: dict[str, Any] | None, retain: int) -> bool:
        """Write the rest with the session's new ``state`` and close the run, at once.

        Returns False when the run was closed already (a recovered run that had
        closed before the crash, or one another process closed as abandoned).
        """
        async with self._lock:
            batch, self._pending = self._pending, []
            if self.taken_over:
                return False
            closed = await self._write(
                lambda: self.storage.close_run(self.session_id, self.run_id, batch, state, retain)
            )
            if batch:
                self._committed(batch[-1].seq)
            else:
                self._on_written()
            return closed is True

    # -- the step journal ------------------------------------------------------------------

    def started(self) -> None:
        """A step runs for real: announce what the crash cut off, if anything."""
        if self.cursor < self.written:
            self.cursor = self.written
            self.add(
                ErrorEvent(
                    session_id=self.session_id, agent_name=self._agent_name, error=ABANDONED
                )
            )

    async def finished(self) -> int:
        """The step ended: its events are written first, then its position is recorded."""
        await self.flush()
        return self.cursor

    def replayed(self, data: Any) -> None:
        """A recorded step: the run's events had got to ``data`` when it ended."""
        if isinstance(data, int) and not isinstance(data, bool):
            # max: parallel tool calls replay in another order than they ended.
            self.cursor = max(self.cursor, data)

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Events produced inside are a replay's echo: neither numbered nor written."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1


def _encoded(sequence: int, data: str) -> SequencedEvent | EncodedEvent:
    # A row written otherwise than by an event's serializer is parsed.
    encoded = EncodedEvent.of_json(sequence, data.encode())
    return SequencedEvent(sequence, parse_event(data)) if encoded is None else encoded


class StoreLog:
    """The event log of a session of a durable store (a
    :class:`~agentrt.server.backend.SessionLog`).

    Args:
        backend: The store's backend (its tables, and their worker threads).
        session: The session.
    """

    def __init__(self, backend: DurableBackend, session: Session) -> None:
        self._backend = backend
        self._session = session
        self._run_log: RunLog | None = None

    @property
    def last_sequence(self) -> int:
        """The number of the latest event the run in this process produced (0: none)."""
        log = self._run_log
        return 0 if log is None else log.cursor

    async def read(self, after: int, limit: int) -> list[SequencedEvent]:
        """Up to ``limit`` events numbered above ``after``, from the store.

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
            StoreFailedError: The store failed.
        """
        return [
            SequencedEvent(seq, parse_event(data)) for seq, data in await self._rows(after, limit)
        ]

    async def read_encoded(self, after: int, limit: int) -> list[SequencedEvent | EncodedEvent]:
        """As :meth:`read`, each event an :class:`EncodedEvent` of the JSON stored (its
        serializer's, as ``encode_sse`` writes it), none parsed.

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
            StoreFailedError: The store failed.
        """
        return [_encoded(seq, data) for seq, data in await self._rows(after, limit)]

    async def _rows(self, after: int, limit: int) -> list[tuple[int, str]]:
        backend = self._backend
        rows = await backend.call(backend.storage.read, self._session.id, after, limit)
        if rows and rows[0][0] != after + 1:
            raise EventsExpiredError(after, rows[0][0])
        return [(seq, data) for seq, _run, data in rows]

    async def bounds(self) -> tuple[int, int]:
        """The numbers of the oldest and latest kept events, in the store."""
        backend = self._backend
        first, last = await backend.call(backend.storage.bounds, self._session.id)
        return int(first), int(last)

    @asynccontextmanager
    async def writing(self, run: Run) -> AsyncIterator[_StoreSink]:
        """A :class:`RunLog` for ``run``, its writer running, as the run's step journal."""
        from agentrt.server.durable import state_of

        backend, session = self._backend, self._session
        written = await backend.call(backend.storage.last_seq, session.id)
        log = self._run_log = RunLog(
            backend.storage,
            session.id,
            run.run_id,
            after=run.after,
            written=written,
            agent_name=session.agent.name,
            on_written=session.notify,
            on_failure=lambda reason: run.stop(f"cancelled: {reason}"),
        )
        token = step_journal.set(log)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(log.flusher, name=f"agentrt events {session.label}")
                yield _StoreSink(log, lambda: state_of(session.agent), session.store.retain)
                group.cancel_scope.cancel()
        finally:
            step_journal.reset(token)
            if self._run_log is log:
                self._run_log = None


class _StoreSink:
    """A run's sink into its :class:`RunLog`; at the end, the run closed with the state."""

    __slots__ = ("_log", "_retain", "_state")

    def __init__(self, log: RunLog, state: Callable[[], dict[str, Any]], retain: int) -> None:
        self._log = log
        self._state = state
        self._retain = retain

    def add(self, event: StreamEvent) -> bool:
        return self._log.add(event)

    async def finish(self) -> None:
        # Not shielded: a server shutting down meanwhile leaves the run open in the
        # store (DBOS recovers it), rather than wait for a store that is gone.
        await self._log.close(self._state(), self._retain)
