"""Server sessions: one agent, one event log, at most one run at a time.

No HTTP here: :mod:`agentrt.server.app` maps these objects and errors onto routes.

A :class:`Session` owns an agent made by the server's factory and an
:class:`~agentrt.stream.EventLog` numbered across all of the session's runs, so a
``Last-Event-ID`` names one event of the session, whichever run it came from. Each
run is a :class:`~agentrt.stream.StreamAdapter` writing into that log; the log never
makes the run wait, so readers come and go without pacing or stopping it.

A run cancelled before it finished (``DELETE /sessions/{id}/run``, the session
closed, the server shutting down) ends its stream with an ``error`` event that says
so, then ``stream_stopped``: a reader, who may not be the client that cancelled it,
never takes it for a run that answered.

Runs do not live in the task of the request that started them: the
:class:`SessionStore` owns a task group (entered by the app's lifespan), and a run
started there survives its client's disconnection. The store also bounds what the
server keeps: ``retain`` events per session, and sessions idle for ``session_ttl``
seconds are closed and forgotten. Idle means no reader and no run at work: a run that
can go on only with a client's answer (every tool call it left open waits for a
confirmation, or for a result an AG-UI frontend runs) is idle too, so that a client
that walked away does not hold the run, and a place under the cap on runs, forever;
it is cancelled with its session.

Its errors are in :mod:`agentrt.server.session_errors` (and importable from here).
"""

import inspect
import itertools
import logging
import math
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Self, TypeAlias

import anyio
from anyio.abc import TaskGroup

from agentrt.agent import Agent
from agentrt.messages import AssistantMessage, Message
from agentrt.server.session_errors import (
    AlreadyAnsweredError,
    NoRunError,
    RunEndedError,
    RunInProgressError,
    SessionError,
    SessionLimitError,
    SessionNotFoundError,
    StoreFailedError,
    StoreNotRunningError,
)
from agentrt.stream.adapter import StreamAdapter
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.confirm import DECISIONS, InvalidDecisionError, UnknownToolCallError
from agentrt.stream.events import ErrorEvent, StreamEvent, StreamStoppedEvent
from agentrt.stream.log import EventLog

__all__ = (
    "AgentFactory",
    "AlreadyAnsweredError",
    "NoRunError",
    "Run",
    "RunEndedError",
    "RunInProgressError",
    "Session",
    "SessionError",
    "SessionLimitError",
    "SessionNotFoundError",
    "SessionStore",
    "StoreFailedError",
    "StoreNotRunningError",
)

logger = logging.getLogger("agentrt.server")

AgentFactory: TypeAlias = Callable[[], Agent | Awaitable[Agent]]
"""Makes the agent of a new session (sync or async)."""

# What a server may pass on to each run's StreamAdapter: its keyword-only options but
# the session id, which the server sets. Read off the signature so that a new adapter
# option is servable without a change here.
_STREAM_OPTIONS = frozenset(
    name
    for name, parameter in inspect.signature(StreamAdapter).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "session_id"
)

# Events per chunk sent to a reader: a late reader catching up on a long log gets
# it in pieces of bounded size rather than one write of the whole retained window.
_BATCH = 256


@dataclass(eq=False, slots=True)
class Run:
    """One message being answered: a stream session in the session's log.

    Attributes:
        adapter: The stream adapter of the run (its confirmations live there).
        after: The log's last sequence number before the run's first event.
        scope: Cancels the run.
        finished: Whether the run has ended (its ``stream_stopped`` is in the log).
        done: Set when the run has ended.
        cancelled_because: Why the session cancelled the run, once it did.
    """

    adapter: StreamAdapter
    after: int
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    finished: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    cancelled_because: str | None = None


class Session:
    """One conversation of the server: an agent, its event log, its current run.

    Made by :meth:`SessionStore.create`; not meant to be built directly.

    Args:
        session_id: The session's unguessable id.
        agent: The session's own agent.
        label: A short name for logs (the id is a secret: logs do not show it).
        retain: How many events the log keeps for late readers.
        clock: A monotonic clock in seconds, for idle expiry.
        stream_options: Keyword arguments for each run's
            :class:`~agentrt.stream.StreamAdapter`.
    """

    def __init__(
        self,
        session_id: str,
        agent: Agent,
        *,
        label: str,
        retain: int,
        clock: Callable[[], float],
        stream_options: Mapping[str, Any],
    ) -> None:
        self.id = session_id
        self.agent = agent
        self.label = label
        self.log = EventLog(retain=retain)
        self.run: Run | None = None
        """The run in progress, if any."""
        self.readers = 0
        """How many clients are reading the session's events now."""
        self.closed = False
        """Whether :meth:`close` ran."""
        self.client_calls: Collection[str] = ()
        """Ids of tool calls of the run that a client runs and answers (an AG-UI
        frontend's tools): a run waiting for them waits for the client."""
        self._streams_ended = False
        self._answered: set[str] = set()
        self._clock = clock
        self._stream_options = dict(stream_options)
        self.last_active = clock()
        """When a request, a reader or a run last touched the session."""
        self._changed = anyio.Event()

    # -- state ------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Whether nothing uses the session: no reader, and no run or one waiting for a client.

        See :meth:`waits_for_client`: a run that waits for answers nobody reads for is
        idle, and its session expires with it.
        """
        return self.readers == 0 and (self.run is None or self.waits_for_client())

    def waits_for_client(self) -> bool:
        """Whether the run in progress can go on only with a client's answer.

        True when every tool call the conversation leaves open waits for a confirmation
        or is one of :attr:`client_calls`; False with no run, or while a tool or the
        model is at work.
        """
        run = self.run
        if run is None or run.finished:
            return False
        pending = set(self.client_calls).union(run.adapter.confirmations.pending)
        if not pending:
            return False
        open_calls = {call.id for call in self.agent.conversation.unanswered_calls()}
        return bool(open_calls) and open_calls <= pending

    def touch(self) -> None:
        """Note that the session is in use (postpones its idle expiry)."""
        self.last_active = self._clock()

    def _notify(self) -> None:
        # One event per change, replaced before it is set: readers that wait on the
        # old one wake up, and later waits need a later change.
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def notify(self) -> None:
        """Wake the readers: something their ``until`` reads changed (see :meth:`follow`)."""
        self._notify()

    # -- the log as the runs' sink ----------------------------------------------------

    async def _append(self, event: StreamEvent) -> None:
        self._append_nowait(event)

    def _append_nowait(self, event: StreamEvent) -> bool:
        if event.type == "stream_stopped":
            # The run's last events are written by _execute, which knows how the run
            # ended: the adapter does not tell a cancelled run from one that answered.
            return True
        self._write(event)
        return True

    def _write(self, event: StreamEvent) -> None:
        self.log.append(event)
        # An event is activity: a run that has just begun to wait for a confirmation
        # is idle from then on, not from when it started.
        self.touch()
        self._notify()

    # -- runs -------------------------------------------------------------------------

    def start(self, message: str | None, task_group: TaskGroup) -> Run:
        """Start answering ``message`` in ``task_group``; return the run.

        ``None`` continues the conversation as it is (it ends with tool results the
        model has not read yet, say).

        Raises:
            SessionNotFoundError: The session was closed meanwhile.
            RunInProgressError: The previous run has not ended.
        """
        if self.closed:
            # Deleted or expired while this request read its body: as if never found.
            raise SessionNotFoundError(self.id)
        if self.run is not None:
            raise RunInProgressError(self.id)
        adapter = StreamAdapter(
            self.agent,
            self._append,
            sink_nowait=self._append_nowait,
            session_id=self.id,
            **self._stream_options,
        )
        # Taken now, not when the task starts: the response follows from here, and
        # the run's first event is the next one whenever the task gets to write it.
        run = self.run = Run(adapter, after=self.log.last_sequence)
        self.touch()
        task_group.start_soon(self._execute, run, message, name=f"agentrt run {self.label}")
        return run

    async def _execute(self, run: Run, message: str | None) -> None:
        # Why the run ended without an answer, when its stream does not say it yet.
        unsaid: str | None = None
        try:
            # Our own scope: the cancel endpoint's cancellation ends here, while a
            # cancellation from outside (server shutdown) goes on to the task group.
            with run.scope:
                await run.adapter.run(message)
            if run.adapter.result is None:
                unsaid = run.cancelled_because or "cancelled: the run was cancelled"
        except Exception as error:
            # The failure is in the stream already (an error event before
            # stream_stopped); the server itself goes on.
            logger.info(
                "session %s: the run failed: %s: %s", self.label, type(error).__name__, error
            )
        except BaseException as error:
            if isinstance(error, anyio.get_cancelled_exc_class()):
                unsaid = run.cancelled_because or (
                    "cancelled: the server shut down before the run finished"
                )
            else:
                unsaid = f"{type(error).__name__}: {error}"
            raise
        finally:
            # No await from here on: nothing (a new run, a reader) comes in between.
            if unsaid is not None:
                self._write(
                    ErrorEvent(
                        session_id=run.adapter.session_id, agent_name=self.agent.name, error=unsaid
                    )
                )
            self._write(StreamStoppedEvent(session_id=run.adapter.session_id))
            run.finished = True
            if self.run is run:
                self.run = None
            self.touch()
            self._notify()
            run.done.set()

    def cancel(self) -> Run:
        """Cancel the run in progress.

        The run stops at once wherever it waits (the model, tools, a confirmation);
        its tool calls cut short are answered as cancelled in the conversation, and
        its stream ends with an ``error`` saying it was cancelled, then
        ``stream_stopped``.

        Raises:
            NoRunError: No run is in progress.
        """
        run = self.run
        if run is None:
            raise NoRunError(self.id)
        run.cancelled_because = run.cancelled_because or (
            "cancelled: DELETE /sessions/{id}/run stopped the run before it finished"
        )
        run.scope.cancel()
        return run

    def answer(self, tool_call_id: str, decision: str, reason: str | None = None) -> None:
        """Answer the confirmation of a tool call of the current run.

        Raises:
            InvalidDecisionError: ``decision`` is not one of
                :data:`~agentrt.stream.DECISIONS`.
            AlreadyAnsweredError: The call was answered before.
            RunEndedError: The call belongs to a run that has ended.
            UnknownToolCallError: No run of this session produced the call.
        """
        if decision not in DECISIONS:
            raise InvalidDecisionError(decision)
        # Remembered across runs: a second answer is a conflict whether or not its
        # run has ended meanwhile (it often has: the first answer let it go on).
        if tool_call_id in self._answered:
            raise AlreadyAnsweredError(tool_call_id)
        run = self.run
        if run is not None:
            try:
                accepted = run.adapter.confirmations.answer(tool_call_id, decision, reason)
            except UnknownToolCallError:
                pass
            else:
                if not accepted:
                    raise AlreadyAnsweredError(tool_call_id)
                self._answered.add(tool_call_id)
                return
        # The conversation tells a call of an earlier run from an id never produced:
        # the first gets a conflict, the second is unknown (and, across sessions,
        # unknowable: an id of another session's agent is never in this one's).
        if any(
            call.id == tool_call_id
            for message in self.agent.messages
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        ):
            raise RunEndedError(tool_call_id)
        raise UnknownToolCallError(tool_call_id)

    # -- what the app awaits (a durable session reads and writes its store there) --------

    async def read_messages(self) -> list[Message]:
        """The conversation so far (``GET /sessions/{id}/messages``)."""
        return list(self.agent.messages)

    async def confirm(self, tool_call_id: str, decision: str, reason: str | None = None) -> None:
        """:meth:`answer`, as the app calls it."""
        self.answer(tool_call_id, decision, reason)

    async def stop(self) -> Run:
        """:meth:`cancel`, as the app calls it."""
        return self.cancel()

    async def check_resume(self, after: int) -> None:
        """:meth:`check_after`, as the app calls it."""
        self.check_after(after)

    # -- readers ----------------------------------------------------------------------

    def check_after(self, after: int) -> None:
        """Check that a reader may start after ``after`` (before any response is sent).

        Raises:
            ValueError: ``after`` is negative or beyond the latest event.
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        if after > self.log.last_sequence:
            raise ValueError(
                f"after={after} is beyond this session's latest event ({self.log.last_sequence})"
            )
        self.log.since(after)

    async def follow(
        self,
        after: int,
        *,
        run: Run | None = None,
        heartbeat: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> AsyncGenerator[list[SequencedEvent], None]:
        """Yield the events after ``after`` in batches, then live ones as they come.

        Follows the log rather than ``EventLog.follow``: that one ends only when
        the log is closed, and a session's log stays open across runs. An empty
        batch means ``heartbeat`` seconds passed without an event.

        Ends, with ``run``, after that run's ``stream_stopped``; without, once the
        session has no run in progress and everything was yielded. Ends once caught
        up when the session's streams are ended (it was closed, or the server shuts
        down), even with a run in progress, and once caught up when ``until()`` says
        so (checked after every change and :meth:`notify`).

        Raises:
            EventsExpiredError: The reader fell behind the retained window.
        """
        self.readers += 1
        try:
            while True:
                changed = self._changed
                batch = self.log.since(after)[:_BATCH]
                if batch:
                    if run is not None:
                        end = next(
                            (
                                n
                                for n, item in enumerate(batch)
                                if item.event.type == "stream_stopped"
                            ),
                            None,
                        )
                        if end is not None:
                            yield batch[: end + 1]
                            return
                    yield batch
                    after = batch[-1].sequence
                    continue
                # Checked once caught up, so that a reader ended mid-way still gets
                # what the log holds (a closed session's final stream_stopped).
                if self._streams_ended or ((self.run is None) if run is None else run.finished):
                    return
                if until is not None and until():
                    return
                with anyio.move_on_after(math.inf if heartbeat is None else heartbeat):
                    await changed.wait()
                if not changed.is_set():
                    yield []
        finally:
            self.readers -= 1
            self.touch()

    def end_streams(self) -> None:
        """End the readers' streams once they have read the log; the run goes on."""
        self._streams_ended = True
        self._notify()

    async def close(self) -> None:
        """Cancel the run, end the readers and close the agent (idempotent)."""
        if self.closed:
            return
        self.closed = True
        run = self.run
        if run is not None:
            run.cancelled_because = run.cancelled_because or (
                "cancelled: the session was closed before the run finished"
            )
            run.scope.cancel()
            # The agent is closed after its run has ended, never under it; and the
            # readers end after its stream_stopped.
            await run.done.wait()
        self.end_streams()
        try:
            await self.agent.close("the server session ended")
        except Exception:
            # A failing close handler must not keep the other sessions from closing.
            logger.exception("session %s: closing its agent failed", self.label)


class SessionStore:
    """The sessions of one server, and the task group their runs live in.

    Enter it (``async with store:``) for the server's lifetime: the app's lifespan
    does. Leaving it cancels the runs and closes every session's agent.

    Args:
        agent_factory: Makes each session's agent (sync or async callable).
        retain: Events each session keeps for readers that come back.
        session_ttl: Seconds a session may stay idle (no run, no reader) before it
            is closed and forgotten.
        max_sessions: How many sessions may exist at once (``None``: unbounded).
        stream_options: Keyword arguments for each run's
            :class:`~agentrt.stream.StreamAdapter` (``auto_approve``,
            ``confirmation_policy``, ``prices``, ``context_limit``, ``title``,
            ``compaction``).
        clock: Monotonic seconds, for idle expiry (tests pass a fake one).

    Raises:
        TypeError: ``agent_factory`` is not callable, or a stream option is unknown.
        ValueError: A limit is not positive.
    """

    #: Sessions live in this process only: a restart loses them (errors say so).
    in_memory: ClassVar[bool] = True

    def __init__(
        self,
        agent_factory: AgentFactory,
        *,
        retain: int = 10_000,
        session_ttl: float = 3600.0,
        max_sessions: int | None = 1000,
        stream_options: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not callable(agent_factory):
            raise TypeError(
                f"agent_factory must be a callable returning an Agent, "
                f"got {type(agent_factory).__name__}"
            )
        if isinstance(retain, bool) or not isinstance(retain, int) or retain < 1:
            raise ValueError(f"retain must be a positive int, got {retain!r}")
        if not session_ttl > 0:
            raise ValueError(
                f"session_ttl must be a positive number of seconds, got {session_ttl!r}"
            )
        if max_sessions is not None and (isinstance(max_sessions, bool) or max_sessions < 1):
            raise ValueError(f"max_sessions must be a positive int or None, got {max_sessions!r}")
        unknown = sorted(set(stream_options or {}) - _STREAM_OPTIONS)
        if unknown:
            raise TypeError(f"unknown stream options {unknown}; use {sorted(_STREAM_OPTIONS)}")
        self._factory = agent_factory
        self.retain = retain
        self.session_ttl = float(session_ttl)
        self.max_sessions = max_sessions
        self._stream_options = dict(stream_options or {})
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._creating = 0
        self._labels = itertools.count(1)
        self._task_group: TaskGroup | None = None

    # -- lifetime ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise RuntimeError("a SessionStore is entered once at a time")
        group = anyio.create_task_group()
        await group.__aenter__()
        self._task_group = group
        group.start_soon(self._sweep, name="agentrt session expiry")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self._task_group
        assert group is not None, "__aexit__ without __aenter__"
        try:
            group.cancel_scope.cancel()
            # The runs end with their stream_stopped (shielded in the adapter) here.
            return await group.__aexit__(exc_type, exc, tb)
        finally:
            self._task_group = None
            with anyio.CancelScope(shield=True):
                sessions = list(self._sessions.values())
                self._sessions.clear()
                for session in sessions:
                    await session.close()

    @property
    def running(self) -> bool:
        """Whether the store is entered (runs can start)."""
        return self._task_group is not None

    def end_streams(self) -> None:
        """End every reader's stream now (a server that shuts down calls this).

        An ASGI server waits for open responses before it runs the lifespan's
        shutdown, and an event stream would otherwise stay open as long as its
        run does. Runs go on until the store is left.
        """
        for session in self._sessions.values():
            session.end_streams()

    async def _sweep(self) -> None:
        # A quarter of the ttl: a session outlives its ttl by at most that much.
        interval = min(self.session_ttl / 4, 60.0)
        while True:
            await anyio.sleep(interval)
            await self.expire_idle()

    # -- sessions ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[Session]:
        """The sessions that exist now (a snapshot: closing one while iterating is fine)."""
        return iter(list(self._sessions.values()))

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    async def create(self) -> Session:
        """Make a session with a new agent from the factory.

        Raises:
            StoreNotRunningError: The store is not entered.
            SessionLimitError: ``max_sessions`` sessions exist.
            TypeError: The factory returned something else than an Agent.
            Exception: Whatever the factory raised.
        """
        if self._task_group is None:
            raise StoreNotRunningError
        limit = self.max_sessions
        # Sessions being made count too: the factory may await, and concurrent
        # creations must not overshoot the limit meanwhile.
        if limit is not None and len(self._sessions) + self._creating >= limit:
            raise SessionLimitError(limit)
        self._creating += 1
        try:
            made = self._factory()
            agent = await made if inspect.isawaitable(made) else made
        finally:
            self._creating -= 1
        if not isinstance(agent, Agent):
            raise TypeError(f"the agent factory must return an Agent, got {type(agent).__name__}")
        session_id = secrets.token_urlsafe(24)
        session = Session(
            session_id,
            agent,
            label=f"#{next(self._labels)}",
            retain=self.retain,
            clock=self._clock,
            stream_options=self._stream_options,
        )
        self._sessions[session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        """The session with this id, marked as in use.

        Raises:
            SessionNotFoundError: No such session.
        """
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id, in_memory=self.in_memory)
        session.touch()
        return session

    async def open(self, session_id: str) -> Session:
        """:meth:`get`, as the app calls it (a durable store reads its database there)."""
        return self.get(session_id)

    async def begin(self, session: Session, message: str) -> Run:
        """:meth:`start`, as the app calls it."""
        return self.start(session, message)

    def start(self, session: Session, message: str | None) -> Run:
        """Start a run of ``session`` on ``message`` in the store's task group.

        ``None`` continues the session's conversation as it is.

        Raises:
            StoreNotRunningError: The store is not entered.
            RunInProgressError: The session's previous run has not ended.
        """
        if self._task_group is None:
            raise StoreNotRunningError
        return session.start(message, self._task_group)

    async def remove(self, session_id: str) -> None:
        """Close and forget a session (its run is cancelled).

        Raises:
            SessionNotFoundError: No such session.
        """
        session = self._sessions.pop(session_id, None)
        if session is None:
            raise SessionNotFoundError(session_id, in_memory=self.in_memory)
        await session.close()

    async def expire_idle(self) -> list[str]:
        """Close the sessions idle for ``session_ttl`` seconds or more; return their ids.

        A run that waited that long for a client's answer (see
        :meth:`Session.waits_for_client`) is cancelled: its stream ends with an
        ``error`` that says so, and its open tool calls are answered as cancelled.
        """
        deadline = self._clock() - self.session_ttl
        expired = [
            session
            for session in self._sessions.values()
            if session.idle and session.last_active <= deadline
        ]
        for session in expired:
            del self._sessions[session.id]
            logger.info("session %s expired after being idle", session.label)
            if session.run is not None:
                session.run.cancelled_because = (
                    f"cancelled: nobody answered what the run waited for in "
                    f"{self.session_ttl:g} s (session_ttl); the session expired"
                )
            await session.close()
        return [session.id for session in expired]
