"""Durable server sessions: sessions, event logs and runs kept in a store (``agentrt[durable]``).

:class:`DurableSessionStore` is the :class:`~agentrt.server.sessions.SessionStore`
of ``agentrt serve --store sqlite:///PATH`` (the default) or ``--store
postgresql://...``. What a session is lives in the store's tables
(:mod:`agentrt.server.storage`), not in a process:

- **Sessions** and their conversations: any server process on the store serves any
  session (it makes the session's agent with its factory, then restores the
  conversation).
- **Runs** are DBOS workflows (each model call and each tool call a recorded step,
  as with :class:`~agentrt.durable.DurableAgent`). A process that dies mid-run is
  started again with the same executor id (``--executor-id``); DBOS recovers its
  runs, and each goes on from its last recorded step: a completed tool call is never
  executed again.
- **Event logs**: each run writes its events to the store before any reader sees
  them (:mod:`agentrt.server.runlog`), numbered across the session's runs. A client
  that reads ``GET /sessions/{id}/events?after=N`` after a crash and a restart, from
  any process, gets exactly the events after N.
- **Confirmations**: a run that waits for one waits in the store (a DBOS message);
  ``POST /sessions/{id}/confirmations/{tool_call_id}`` on any process answers it,
  also after a restart, and the tool runs once.
- **Cancellation**: ``DELETE /sessions/{id}/run`` on any process cancels the run in
  the store (it is never recovered) and the process that runs it stops it. Should
  that process be dead, the run is closed as cancelled by the one that was asked.

A server that shuts down leaves its runs in flight in the store, to be recovered
when a process with its executor id starts again: their streams end without
``stream_stopped`` (a reader resumes with ``Last-Event-ID``).

The agents a factory makes must decide from the conversation alone (a recovered run
replays its recorded answers, then asks the model again from the same messages),
and one executor id names one process at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import secrets
import shlex
import time
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread
from dbos import DBOS, SetWorkflowID
from dbos._error import DBOSException

from agentrt.agent import Agent
from agentrt.durable import launch, shutdown
from agentrt.durable._agent import CancelledStepFilter, make_steps
from agentrt.durable._steps import FreshRun, fresh_run
from agentrt.server.durable_session import (
    DurableRun,
    DurableSession,
    Interrupted,
    restore_state,
    state_of,
)
from agentrt.server.sessions import (
    AgentFactory,
    NoRunError,
    Run,
    RunInProgressError,
    Session,
    SessionLimitError,
    SessionNotFoundError,
    SessionStore,
    StoreFailedError,
    StoreNotRunningError,
)
from agentrt.server.storage import EventRow, Storage
from agentrt.stream.events import ErrorEvent, StreamStoppedEvent

__all__ = (
    "DEFAULT_EXECUTOR_ID",
    "DurableRun",
    "DurableSession",
    "DurableSessionStore",
    "check_storage",
)

logger = logging.getLogger("agentrt.server")

DEFAULT_EXECUTOR_ID = "local"
"""The executor id of a server started without one (DBOS's own default)."""

WORKFLOW = "agentrt.server.run"
"""The name of the DBOS workflow of a server run."""

# DBOS's warnings for the steps a deliberate stop or cancellation ends: not news.
_QUIET = CancelledStepFilter()

# Seconds between two looks at the cancellations other processes asked for.
_WATCH = 0.25
# Seconds a process that asked to cancel another's run waits for it to end before
# it closes the run itself (its process is presumably dead).
_ORPHAN_GRACE = 5.0


def check_storage(store: str) -> None:
    """Open ``store`` once, create the server's tables, and close it again.

    ``agentrt serve`` calls it before it listens: a store that cannot be used is
    then a one-line error and exit code 2, not a traceback from a started server.

    Raises:
        StoreUnavailableError: The store is unreachable, refused, or not writable.
    """
    Storage(store).close()


# -- the workflow ---------------------------------------------------------------------------

_HOST: DurableSessionStore | None = None
_REGISTERED: list[Callable[..., Any]] = []


async def _server_run(
    session_id: str, run_id: str, message: str, state: dict[str, Any]
) -> dict[str, Any]:
    """A server run, as a DBOS workflow (registered once per process)."""
    host = _HOST
    if host is None or host.loop is None:
        raise RuntimeError("no durable session store is running in this process")
    if asyncio.get_running_loop() is host.loop:
        return await host.run_workflow(session_id, run_id, message, state)
    # DBOS recovers a run on its own event loop: the run belongs to the server's.
    future = asyncio.run_coroutine_threadsafe(
        host.recovered(session_id, run_id, message, state), host.loop
    )
    return await asyncio.wrap_future(future)


def _workflow() -> Callable[..., Any]:
    if not _REGISTERED:
        _REGISTERED.append(DBOS.workflow(name=WORKFLOW)(_server_run))
    return _REGISTERED[0]


class DurableSessionStore(SessionStore):
    """The sessions of a server, kept in a durable store (see the module docstring).

    Enter it (the app's lifespan does) to launch DBOS on the store and recover the
    runs this executor left unfinished. One per process.

    Args:
        agent_factory: Makes each session's agent (in every process that serves it).
        store: ``sqlite:///PATH`` or ``postgresql://...``.
        executor_id: This process's name (:data:`DEFAULT_EXECUTOR_ID` by default):
            a process that starts with the id of one that died recovers its runs.
        **options: As :class:`~agentrt.server.sessions.SessionStore`; ``retain``
            bounds each session's log in the store, and sessions idle (no open run)
            for ``session_ttl`` seconds are deleted from it.

    Raises:
        StoreUnavailableError: The store cannot be used.
        ValueError: The executor id is empty.
    """

    in_memory = False

    def __init__(
        self,
        agent_factory: AgentFactory,
        store: str,
        *,
        executor_id: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(agent_factory, **options)
        executor_id = DEFAULT_EXECUTOR_ID if executor_id is None else executor_id
        if not isinstance(executor_id, str) or not executor_id.strip():
            raise ValueError(f"executor_id must be a non-empty string, got {executor_id!r}")
        self.store_url = store
        self.executor_id = executor_id
        self.storage = Storage(store)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._workflow = _workflow()
        self._runs: dict[str, DurableRun] = {}

    @property
    def clock(self) -> Callable[[], float]:
        """The store's monotonic clock (for idle expiry in this process)."""
        return self._clock

    @property
    def stream_options(self) -> Mapping[str, Any]:
        """Keyword arguments for each run's stream adapter."""
        return self._stream_options

    async def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` (a call of :class:`Storage`) in a worker thread.

        Raises:
            StoreFailedError: The database failed (a 503 ``store_failed`` answer).
        """
        try:
            return await anyio.to_thread.run_sync(function, *args)
        except Exception as error:
            import sqlalchemy as sa

            if isinstance(error, sa.exc.SQLAlchemyError):
                raise StoreFailedError(str(self.storage.unavailable(error))) from error
            raise

    # -- lifetime -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        global _HOST
        if _HOST is not None:
            raise RuntimeError("one durable session store runs per process at a time")
        await super().__aenter__()
        _HOST = self
        self.loop = asyncio.get_running_loop()
        try:
            # DBOS recovers this executor's runs as it starts: they come to this loop.
            await anyio.to_thread.run_sync(
                lambda: launch(self.store_url, executor_id=self.executor_id, log_level="WARNING")
            )
        except BaseException:
            _HOST = None
            await super().__aexit__(None, None, None)
            raise
        assert self._task_group is not None
        self._task_group.start_soon(self._watch, name="agentrt cancellations")
        self._task_group.start_soon(self._close_dead_runs, name="agentrt dead runs")
        logging.getLogger("dbos").addFilter(_QUIET)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        global _HOST
        in_flight = len(self._runs)
        try:
            # The runs are cancelled, not ended: they stay in the store, to recover.
            return await super().__aexit__(exc_type, exc, tb)
        finally:
            _HOST = None
            self.loop = None
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(shutdown)
                self.storage.close()
            logging.getLogger("dbos").removeFilter(_QUIET)
            if in_flight:
                many = in_flight != 1
                logger.warning(
                    "stopped: %d run%s in flight stay%s in the store; the next start with "
                    "executor id %r (--executor-id %s) recovers %s",
                    in_flight,
                    "s" if many else "",
                    "" if many else "s",
                    self.executor_id,
                    shlex.quote(self.executor_id),
                    "them" if many else "it",
                )

    async def _watch(self) -> None:
        """Stop the runs of this process that another process asked to cancel."""
        while True:
            await anyio.sleep(_WATCH)
            if not self._runs:
                continue
            try:
                asked = await self.call(self.storage.cancel_requests, list(self._runs))
            except StoreFailedError as error:
                logger.warning("%s", error)
                continue
            for run_id, reason in asked.items():
                run = self._runs.get(run_id)
                if run is not None and not run.scope.cancel_called:
                    run.cancelled_because = run.cancelled_because or reason
                    run.scope.cancel()

    async def _close_dead_runs(self) -> None:
        """Close this executor's open runs that DBOS will not recover (never started,
        cancelled, failed): their readers would otherwise wait for them forever."""
        for run in await self.call(self.storage.open_runs_of, self.executor_id):
            if run.run_id in self._runs:
                continue
            status = await DBOS.get_workflow_status_async(run.run_id)
            reason = run.cancel or "the server stopped before this run could finish"
            if status is not None and status.status in ("PENDING", "ENQUEUED"):
                if status.app_version in (None, DBOS.application_version):
                    continue  # DBOS recovers it
                # DBOS recovers a run only with the code that started it.
                reason = (
                    "the server stopped before this run could finish, and its code has "
                    "changed since: the run is not recovered"
                )
            await self._close_abandoned(run.session_id, run.run_id, reason)

    async def _close_abandoned(self, session_id: str, run_id: str, reason: str) -> None:
        agent_name = "agent"
        session = self._sessions.get(session_id)
        if session is not None:
            agent_name = session.agent.name
        events = [
            ErrorEvent(session_id=session_id, agent_name=agent_name, error=reason),
            StreamStoppedEvent(session_id=session_id),
        ]
        rows = [
            EventRow(0, event.type, None, event.__pydantic_serializer__.to_json(event).decode())
            for event in events
        ]
        if await self.call(self.storage.close_abandoned, session_id, run_id, rows):
            logger.info("run %s: closed as abandoned (%s)", run_id, reason)
            if session is not None:
                session._notify()

    # -- sessions ---------------------------------------------------------------------------

    async def _make_agent(self) -> Agent:
        self._creating += 1
        try:
            made = self._factory()
            agent = await made if inspect.isawaitable(made) else made
        finally:
            self._creating -= 1
        if not isinstance(agent, Agent):
            raise TypeError(f"the agent factory must return an Agent, got {type(agent).__name__}")
        return agent

    def _cache(self, session_id: str, agent: Agent) -> DurableSession:
        make_steps(agent, "agentrt.server")
        session = DurableSession(self, session_id, agent, label=f"#{next(self._labels)}")
        self._sessions[session_id] = session
        return session

    async def create(self) -> Session:
        """Make a session with a new agent from the factory, and store it.

        Raises:
            StoreNotRunningError: The store is not entered.
            SessionLimitError: ``max_sessions`` sessions exist in the store.
            TypeError: The factory returned something else than an Agent.
        """
        if self._task_group is None:
            raise StoreNotRunningError
        limit = self.max_sessions
        if limit is not None and await self.call(self.storage.count_sessions) >= limit:
            raise SessionLimitError(limit)
        agent = await self._make_agent()
        session_id = secrets.token_urlsafe(24)
        await self.call(self.storage.create_session, session_id, state_of(agent))
        return self._cache(session_id, agent)

    async def open(self, session_id: str) -> Session:
        """The session ``session_id``: from this process, else made from the store.

        Raises:
            SessionNotFoundError: The store has no such session.
        """
        session = self._sessions.get(session_id)
        if session is not None:
            session.touch()
            return session
        row = await self.call(self.storage.load_session, session_id)
        if row is None:
            raise SessionNotFoundError(session_id)
        agent = await self._make_agent()
        await restore_state(agent, row.state)
        # Another request may have made it meanwhile: the first one stays.
        return self._sessions.get(session_id) or self._cache(session_id, agent)

    def get(self, session_id: str) -> Session:
        """The session, if this process holds it (``await open()`` reads the store).

        Raises:
            SessionNotFoundError: This process does not hold it.
        """
        return super().get(session_id)

    async def remove(self, session_id: str) -> None:
        """Delete a session from the store (its run is cancelled first).

        Raises:
            SessionNotFoundError: No such session.
        """
        session = await self.open(session_id)
        assert isinstance(session, DurableSession)
        with contextlib.suppress(NoRunError):
            await self.cancel_run(
                session, "cancelled: the session was closed before the run finished"
            )
        if session.run is not None:
            await session.run.done.wait()
        self._sessions.pop(session_id, None)
        if not await self.call(self.storage.delete_session, session_id):
            raise SessionNotFoundError(session_id)
        await session.close()

    async def expire_idle(self) -> list[str]:
        """Delete the sessions idle for ``session_ttl`` seconds or more; return their ids."""
        before = time.time() - self.session_ttl
        expired: list[str] = await self.call(self.storage.idle_sessions, before)
        for session_id in expired:
            session = self._sessions.get(session_id)
            if session is not None and not session.idle:
                continue
            await self.call(self.storage.delete_session, session_id)
            session = self._sessions.pop(session_id, None)
            if session is not None:
                logger.info("session %s expired after being idle", session.label)
                await session.close()
        return expired

    # -- runs -------------------------------------------------------------------------------

    def start(self, session: Session, message: str | None) -> Run:
        """Not for a durable store: ``await store.begin(session, message)`` opens the run
        in the store first."""
        raise TypeError("a durable store starts runs with `await store.begin(session, message)`")

    async def begin(self, session: Session, message: str) -> Run:
        """Open a run of ``session`` in the store and start it here, as a DBOS workflow.

        Raises:
            StoreNotRunningError: The store is not entered.
            SessionNotFoundError: The session was deleted meanwhile.
            RunInProgressError: The session has an open run (in any process).
        """
        group = self._task_group
        if group is None:
            raise StoreNotRunningError
        assert isinstance(session, DurableSession)
        if session.closed:
            raise SessionNotFoundError(session.id)
        # The store decides (a run of another process counts; one that has closed its
        # run there but not yet ended here does not).
        run_id = str(uuid.uuid4())
        opened = await self.call(self.storage.open_run, session.id, run_id, self.executor_id)
        if opened is None:
            if await self.call(self.storage.load_session, session.id) is None:
                raise SessionNotFoundError(session.id)
            raise RunInProgressError(session.id)
        after, state = opened
        run = self._track(session, run_id, after)
        session.touch()
        group.start_soon(self._start, run, message, state, name=f"agentrt run {session.label}")
        return run

    def _track(self, session: DurableSession, run_id: str, after: int) -> DurableRun:
        run = DurableRun(session._new_adapter(), after=after, run_id=run_id, session_id=session.id)
        session.run = run
        self._runs[run_id] = run
        return run

    async def _start(self, run: DurableRun, message: str, state: dict[str, Any]) -> None:
        # A new run: nothing of it is recorded yet (see FreshRun).
        token = fresh_run.set(FreshRun(run.run_id))
        try:
            with SetWorkflowID(run.run_id):
                await self._workflow(run.session_id, run.run_id, message, state)
        except Interrupted:
            await self._cancelled(run.run_id)
        except DBOSException as error:
            # Cancelled in the store meanwhile: the run closed its stream already.
            logger.info("run %s ended: %s", run.run_id, error)
        except Exception as error:
            # It could not start (the store failed): close it if the store lets us,
            # else this executor closes it when it starts again.
            logger.error("run %s could not run: %s: %s", run.run_id, type(error).__name__, error)
            with contextlib.suppress(StoreFailedError):
                reason = f"the run could not start: {type(error).__name__}: {error}"
                await self._close_abandoned(run.session_id, run.run_id, reason)
        finally:
            fresh_run.reset(token)
            self._runs.pop(run.run_id, None)

    async def run_workflow(
        self, session_id: str, run_id: str, message: str, state: dict[str, Any]
    ) -> dict[str, Any]:
        """The body of a run's workflow, on the server's loop (new or recovered)."""
        session = await self.open(session_id)
        assert isinstance(session, DurableSession)
        run = self._runs.get(run_id)
        if run is None:
            # Recovered: DBOS found it unfinished in the store.
            known = await self.call(self.storage.open_run_of, session_id)
            if known is None or known.run_id != run_id:
                # Closed already (its stream ended): a run stopped by a failing store,
                # or closed by another process as abandoned. Nothing is left to do.
                logger.info("run %s: closed already, not recovered", run_id)
                return {"output": None}
            run = self._track(session, run_id, known.after)
            if known.cancel is not None:
                session._stop_local(run, known.cancel)
            logger.info("session %s: recovering run %s", session.label, run_id)
        await session.execute(run, message, state)
        result = run.adapter.result
        return {"output": None if result is None else str(result.output)}

    async def recovered(
        self, session_id: str, run_id: str, message: str, state: dict[str, Any]
    ) -> dict[str, Any]:
        """A run DBOS recovered: run its workflow body in the store's task group."""
        group = self._task_group
        if group is None:
            raise StoreNotRunningError
        outcome: dict[str, Any] = {}
        done = anyio.Event()

        async def body() -> None:
            try:
                outcome["value"] = await self.run_workflow(session_id, run_id, message, state)
            except BaseException as error:
                outcome["error"] = error
                raise
            finally:
                self._runs.pop(run_id, None)
                done.set()

        group.start_soon(body, name=f"agentrt recovered run {run_id}")
        await done.wait()
        error = outcome.get("error")
        if isinstance(error, Interrupted):
            await self._cancelled(run_id)
            raise asyncio.CancelledError  # cancelled in the store: nothing to record
        if error is not None:
            raise error
        return dict(outcome["value"])

    async def _cancelled(self, run_id: str) -> None:
        """Mark a run that stopped cancelled in DBOS: it is never recovered."""
        try:
            await DBOS.cancel_workflow_async(run_id)
        except Exception as error:
            # Its run is closed in the store; a recovery would find it so and stop.
            logger.warning("run %s: could not mark it cancelled: %s", run_id, error)

    async def cancel_run(self, session: DurableSession, reason: str) -> Run:
        """Cancel ``session``'s open run in the store, and stop it wherever it runs.

        Raises:
            NoRunError: The session has no open run.
        """
        open_run = await self.call(self.storage.open_run_of, session.id)
        if open_run is None:
            raise NoRunError(session.id)
        run_id = open_run.run_id
        await self.call(self.storage.request_cancel, run_id, reason)
        local = self._runs.get(run_id)
        if local is not None:
            session._stop_local(local, reason)
        await DBOS.cancel_workflow_async(run_id)
        if local is not None:
            return local
        # In another process: it stops at its next look; should it be dead, close
        # the run here (a reader would wait for its stream_stopped forever).
        assert self._task_group is not None
        self._task_group.start_soon(self._close_if_orphaned, session.id, run_id, reason)
        return DurableRun(
            session._new_adapter(), after=open_run.after, run_id=run_id, session_id=session.id
        )

    async def _close_if_orphaned(self, session_id: str, run_id: str, reason: str) -> None:
        deadline = anyio.current_time() + _ORPHAN_GRACE
        while anyio.current_time() < deadline:
            await anyio.sleep(_WATCH)
            current = await self.call(self.storage.open_run_of, session_id)
            if current is None or current.run_id != run_id:
                return
        await self._close_abandoned(session_id, run_id, reason)
