"""The store of the session core: the sessions of one server, and where their runs live.

:class:`SessionStore` is the one store interface of the server, whatever keeps the
sessions: it makes, finds, deletes and expires :class:`~agentrt.server.sessions.Session`
objects, owns the task group their runs live in, and hands what differs between
memory, SQLite and Postgres to its :class:`~agentrt.server.backend.Backend`.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Self, TypeAlias

import anyio
from anyio.abc import TaskGroup

from agentrt.agent import Agent
from agentrt.server.backend import Backend
from agentrt.server.session_errors import (
    NoRunError,
    SessionExistsError,
    SessionLimitError,
    SessionNotFoundError,
    StoreFailedError,
    StoreNotRunningError,
    UnknownEventError,
)
from agentrt.server.sessions import CANCELLED_BY_CLOSE, Session
from agentrt.stream._adapter import StreamAdapter
from agentrt.stream._log import EventsExpiredError

__all__ = ("AgentFactory", "SessionStore")

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


class SessionStore:
    """The sessions of one server, and the task group their runs live in.

    Enter it (``async with store:``) for the server's lifetime: the app's lifespan
    does. Leaving it cancels the runs here (a durable store recovers them at its next
    start) and closes every session's agent.

    Args:
        agent_factory: Makes each session's agent (sync or async callable).
        backend: Where sessions, logs and runs live (default: this process's memory,
            :class:`~agentrt.server.memory.MemoryBackend`).
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

    def __init__(
        self,
        agent_factory: AgentFactory,
        *,
        backend: Backend | None = None,
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
        if backend is None:
            from agentrt.server.memory import MemoryBackend

            self.backend: Backend = MemoryBackend()
        else:
            self.backend = backend
        self._factory = agent_factory
        self.retain = retain
        self.session_ttl = float(session_ttl)
        self.max_sessions = max_sessions
        self.stream_options: Mapping[str, Any] = dict(stream_options or {})
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        """The sessions this process holds now, by id."""
        self.creating = 0
        """How many sessions are being made here (their factories may await)."""
        self.runs = 0
        """How many runs are in progress in this process (for the cap on runs at once)."""
        self._labels = itertools.count(1)
        self.task_group: TaskGroup | None = None
        """The group runs live in, while the store is entered."""
        self._exit: Callable[..., Awaitable[bool | None]] | None = None

    # -- lifetime ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self.task_group is not None:
            raise RuntimeError("a SessionStore is entered once at a time")
        group = anyio.create_task_group()
        await group.__aenter__()
        self.task_group = group
        lifetime = self.backend.lifetime(self, group)
        try:
            await lifetime.__aenter__()
        except BaseException as error:
            self.task_group = None
            group.cancel_scope.cancel()
            await group.__aexit__(type(error), error, error.__traceback__)
            raise
        self._exit = lifetime.__aexit__
        group.start_soon(self._sweep, name="agentrt session expiry")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self.task_group
        assert group is not None, "__aexit__ without __aenter__"
        try:
            group.cancel_scope.cancel()
            # The runs end with their stream_stopped (shielded in the adapter) here.
            return await group.__aexit__(exc_type, exc, tb)
        finally:
            self.task_group = None
            with anyio.CancelScope(shield=True):
                sessions = list(self.sessions.values())
                self.sessions.clear()
                for session in sessions:
                    await session.close()
                if self._exit is not None:
                    exit_, self._exit = self._exit, None
                    await exit_(None, None, None)

    @property
    def in_memory(self) -> bool:
        """Whether the sessions live in this process only (a restart loses them)."""
        return not self.backend.recovers_runs

    @property
    def running(self) -> bool:
        """Whether the store is entered (runs can start)."""
        return self.task_group is not None

    def end_streams(self) -> None:
        """End every reader's stream now (a server that shuts down calls this).

        An ASGI server waits for open responses before it runs the lifespan's
        shutdown, and an event stream would otherwise stay open as long as its
        run does. Runs go on until the store is left.
        """
        for session in self.sessions.values():
            session.end_streams()

    async def _sweep(self) -> None:
        # A quarter of the ttl: a session outlives its ttl by at most that much.
        interval = min(self.session_ttl / 4, 60.0)
        while True:
            await anyio.sleep(interval)
            try:
                await self.expire_idle()
            except StoreFailedError as error:
                logger.warning("idle sessions not expired: %s", error)

    # -- sessions ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.sessions)

    def __iter__(self) -> Iterator[Session]:
        """The sessions this process holds now (a snapshot: closing one meanwhile is fine)."""
        return iter(list(self.sessions.values()))

    def __contains__(self, session_id: object) -> bool:
        return session_id in self.sessions

    async def make_agent(self) -> Agent:
        """A new agent from the factory, prepared by the backend."""
        self.creating += 1
        try:
            made = self._factory()
            agent = await made if inspect.isawaitable(made) else made
        finally:
            self.creating -= 1
        if not isinstance(agent, Agent):
            raise TypeError(f"the agent factory must return an Agent, got {type(agent).__name__}")
        self.backend.prepare(agent)
        return agent

    def hold(self, session_id: str, agent: Agent) -> Session:
        """Hold the session ``session_id`` of ``agent`` here (it exists in the backend)."""
        session = Session(self, session_id, agent, label=f"#{next(self._labels)}")
        self.sessions[session_id] = session
        return session

    async def create(self, session_id: str | None = None) -> Session:
        """Make a session with a new agent from the factory.

        Args:
            session_id: The id to give it (default: a new unguessable one); a
                projection that names its sessions itself (AG-UI threads) passes one.

        Raises:
            StoreNotRunningError: The store is not entered.
            SessionLimitError: ``max_sessions`` sessions exist.
            RunInProgressError: ``session_id`` is taken (use :meth:`open`).
            TypeError: The factory returned something else than an Agent.
            Exception: Whatever the factory raised.
        """
        if self.task_group is None:
            raise StoreNotRunningError
        limit = self.max_sessions
        # Sessions being made count too: the factory may await, and concurrent
        # creations must not overshoot the limit meanwhile.
        if limit is not None and await self.backend.count(self) >= limit:
            raise SessionLimitError(limit)
        agent = await self.make_agent()
        session = Session(
            self,
            secrets.token_urlsafe(24) if session_id is None else session_id,
            agent,
            label=f"#{next(self._labels)}",
        )
        if session.id in self.sessions or not await self.backend.create(session):
            await agent.close("the session existed already")
            raise SessionExistsError(session.id)
        self.sessions[session.id] = session
        return session

    async def open(self, session_id: str) -> Session:
        """The session with this id, marked as in use: held here, else from the backend.

        Raises:
            SessionNotFoundError: No such session.
        """
        session = self.sessions.get(session_id)
        if session is not None:
            session.touch()
            return session
        agent = await self.backend.load(session_id, self.make_agent)
        if agent is None:
            raise SessionNotFoundError(session_id, in_memory=self.in_memory)
        # Another request may have made it meanwhile: the first one stays.
        return self.sessions.get(session_id) or self.hold(session_id, agent)

    async def open_or_create(self, session_id: str) -> Session:
        """The session ``session_id``, made (with that id) if it does not exist yet.

        Raises:
            StoreNotRunningError, SessionLimitError: As :meth:`create`.
        """
        try:
            return await self.open(session_id)
        except SessionNotFoundError:
            pass
        try:
            return await self.create(session_id)
        except SessionExistsError:
            # Made meanwhile, here or by another process.
            return await self.open(session_id)

    async def fork(self, session_id: str, at: int, *, message: str | None = None) -> Session:
        """Branch the session ``session_id`` at its event ``at`` into a new session.

        The new session's conversation is what the original held at that event, its
        log the original's events up to there; the original is not touched. A fork
        inside a run goes on from there without calling the model or the tools for
        what the run had done (see :mod:`agentrt.server._fork`). With ``message``,
        the last user message at the event is replaced by it, and a new run answers.

        Args:
            session_id: The session to branch.
            at: The id of one of its events (``id:`` of its event stream).
            message: The user message that replaces the last one (an edited fork).

        Returns:
            The new session (its run, if it has one, started).

        Raises:
            TypeError: ``at`` is not an int, or ``message`` not a string.
            ValueError: ``message`` is empty.
            StoreNotRunningError, SessionLimitError: As :meth:`create`.
            SessionNotFoundError: No session ``session_id``.
            UnknownEventError: The session has no event ``at``.
            EventsExpiredError: The event is no longer kept.
            CannotForkError: The session cannot give what the fork asks (the
                message says what).
        """
        if isinstance(at, bool) or not isinstance(at, int):
            raise TypeError(f"at is an event id (int), got {type(at).__name__}")
        if message is not None:
            if not isinstance(message, str):
                raise TypeError(f"message must be a string, got {type(message).__name__}")
            if not message.strip():
                raise ValueError("message must not be empty (leave it out to fork as it was)")
        if self.task_group is None:
            raise StoreNotRunningError
        source = await self.open(session_id)
        first, last = await source.log.bounds()
        if not 1 <= at <= last:
            raise UnknownEventError(session_id, at, last)
        if at < first:
            raise EventsExpiredError(at - 1, first)
        limit = self.max_sessions
        if limit is not None and await self.backend.count(self) >= limit:
            raise SessionLimitError(limit)
        return await self.backend.fork(self, source, at, message)

    async def remove(self, session_id: str) -> None:
        """Close and forget a session everywhere (its run is cancelled first).

        Raises:
            SessionNotFoundError: No such session.
        """
        session = await self.open(session_id)
        with contextlib.suppress(NoRunError):
            await session.cancel(CANCELLED_BY_CLOSE)
        run = session.run
        if run is not None:
            await run.done.wait()
        self.sessions.pop(session_id, None)
        deleted = await self.backend.delete(session_id)
        await session.close()
        if not deleted:
            raise SessionNotFoundError(session_id, in_memory=self.in_memory)

    async def expire_idle(self) -> list[str]:
        """Close the sessions idle for ``session_ttl`` seconds or more; return their ids.

        A run that waited that long for a client's answer (see
        :meth:`Session.waits_for_client`) is cancelled: its stream ends with an
        ``error`` that says so, and its open tool calls are answered as cancelled.
        """
        expired = await self.backend.expired(self, self.clock() - self.session_ttl)
        for session_id in expired:
            session = self.sessions.pop(session_id, None)
            if session is None:
                continue
            logger.info("session %s expired after being idle", session.label)
            if session.run is not None:
                session.run.stop(
                    f"cancelled: nobody answered what the run waited for in "
                    f"{self.session_ttl:g} s (session_ttl); the session expired"
                )
            await session.close()
        return expired
