"""The session core's seams in a durable store: SQLite or Postgres (``agentrt[durable]``).

:class:`DurableBackend` is what ``agentrt serve --store sqlite:///PATH`` (the
default) or ``--store postgresql://...`` puts under the session core. What a
session is lives in the store's tables (:mod:`agentrt.server._storage`), not in a
process:

- **Sessions** and their conversations: any server process on the store serves any
  session (it makes the session's agent with its factory, then restores the
  conversation, who speaks on it after a hand-off, and the team members whose calls
  it waits on).
- **Runs** are DBOS workflows (each model call and each tool call a recorded step,
  a team's members' at any depth too, as with :class:`~agentrt.durable.DurableAgent`).
  A process that dies mid-run is started again with the same executor id
  (``--executor-id``); DBOS recovers its runs, and each goes on from its last
  recorded step: a completed tool call is never executed again. A run that ends
  *waiting* for tool results its caller runs (an AG-UI frontend's tools) is finished
  as a workflow: the next run, in any process, goes on from the stored conversation.
- **Event logs**: each run writes its events to the store before any reader sees
  them (:mod:`agentrt.server._runlog`), numbered across the session's runs. A client
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
import dataclasses
import logging
import shlex
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from dbos import DBOS, SetWorkflowID
from dbos._error import DBOSException

from agentrt.agent import Agent
from agentrt.durable import launch, shutdown
from agentrt.durable._agent import CancelledStepFilter
from agentrt.durable._codec import (
    decode_messages,
    decode_tool_results,
    encode_messages,
    encode_tool_results,
    restore_conversation,
    restore_speaker,
    restore_waiting,
    speaker_of,
    waiting_of,
)
from agentrt.durable._members import make_steps
from agentrt.durable._recording import FACTORY_ATTACHMENT, agent_record
from agentrt.durable._steps import FreshRun, fresh_run, record_pending
from agentrt.messages import Message, ToolCall, Usage
from agentrt.server._durable_fork import fork_in_store
from agentrt.server._runlog import StoreLog
from agentrt.server._storage import EventRow, Storage
from agentrt.server.session_errors import (
    AlreadyAnsweredError,
    NoRunError,
    RunEndedError,
    SessionNotFoundError,
    StoreFailedError,
)
from agentrt.server.sessions import Run, RunRequest, Session
from agentrt.server.store import SessionStore
from agentrt.stream.confirm import Confirmations, Decision, UnknownToolCallError
from agentrt.stream.events import ErrorEvent, StreamStoppedEvent

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

__all__ = (
    "DEFAULT_EXECUTOR_ID",
    "WORKFLOW",
    "DurableBackend",
    "check_storage",
    "restore_state",
    "state_of",
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
# Readers of a run in another process poll the store: soon after a change, less
# often while nothing happens.
_POLL = (0.02, 1.0)
# Seconds of one wait for a confirmation; the wait goes on until an answer comes.
_CONFIRM_WAIT = 24 * 3600.0


def check_storage(store: str) -> None:
    """Open ``store`` once, create the server's tables, and close it again.

    ``agentrt serve`` calls it before it listens: a store that cannot be used is
    then a one-line error and exit code 2, not a traceback from a started server.

    Raises:
        StoreUnavailableError: The store is unreachable, refused, or not writable.
    """
    Storage(store).close()


# -- the session's state across processes --------------------------------------------------


def state_of(agent: Agent) -> dict[str, Any]:
    """What a session keeps between runs: its conversation, its streams' state, who
    answers its next message (after a hand-off), and the team members whose calls it
    waits on."""
    state = agent.stream_state
    return {
        "messages": encode_messages(list(agent.conversation)),
        "usage": dataclasses.asdict(state.usage),
        "approvals": {
            "everything": state.approvals.everything,
            "tools": sorted(state.approvals.tools),
        },
        "title": state.session.title,
        "speaker": speaker_of(agent),
        "waiting": waiting_of(agent),
    }


async def restore_state(agent: Agent, state: Mapping[str, Any]) -> None:
    """Put ``state`` (see :func:`state_of`) back into ``agent``."""
    await restore_conversation(agent, decode_messages(state["messages"]))
    stream_state = agent.stream_state
    stream_state.usage = Usage(**state["usage"])
    stream_state.approvals.everything = bool(state["approvals"]["everything"])
    stream_state.approvals.tools = set(state["approvals"]["tools"])
    stream_state.session.title = state["title"]
    # Absent from the states stored before teams existed.
    restore_speaker(agent, state.get("speaker"))
    await restore_waiting(agent, state.get("waiting"))


def _topic(tool_call_id: str) -> str:
    return f"agentrt.confirm.{tool_call_id}"


class _StoredConfirmations(Confirmations):
    """Confirmations whose answers come from the store (a DBOS message per tool call).

    The wait is a DBOS ``recv`` of the run's workflow: an answer sent from any
    process reaches the run, a run recovered after a crash receives it too, and a
    replayed run gets the recorded one.
    """

    async def wait(self, call: ToolCall) -> tuple[Decision, str | None]:
        if call.id not in self._answers:
            await record_pending()  # a recv takes a place in the run's records too
            while True:
                message = await DBOS.recv_async(_topic(call.id), timeout_seconds=_CONFIRM_WAIT)
                if isinstance(message, dict):
                    break
            self._answers[call.id] = (message["decision"], message["reason"])
        return await super().wait(call)


class Interrupted(BaseException):
    """A run that stopped without an outcome to record (the user cancelled it)."""


# -- the workflow ---------------------------------------------------------------------------

_HOST: DurableBackend | None = None
_REGISTERED: list[Callable[..., Any]] = []


async def _server_run(
    session_id: str,
    run_id: str,
    message: str | None,
    state: dict[str, Any],
    tool_results: dict[str, Any] | None = None,
    defer_confirmations: bool = False,
) -> dict[str, Any]:
    """A server run, as a DBOS workflow (registered once per process)."""
    host = _HOST
    if host is None or host.loop is None:
        raise RuntimeError("no durable session store is running in this process")
    current = DBOS.workflow_id
    if current is not None and current != run_id:
        # A fork of the run (DurableBackend.fork): the same inputs, for the fork's session.
        forked = await asyncio.to_thread(host.storage.run, current)
        if forked is None:
            return {"output": None}
        session_id, run_id = forked.session_id, current
    answers = None if tool_results is None else decode_tool_results(tool_results)
    request = RunRequest(message, answers, defer_confirmations)
    if asyncio.get_running_loop() is host.loop:
        return await host.run_workflow(session_id, run_id, request, state)
    # DBOS recovers a run on its own event loop: the run belongs to the server's.
    future = asyncio.run_coroutine_threadsafe(
        host.recovered(session_id, run_id, request, state), host.loop
    )
    return await asyncio.wrap_future(future)


def _workflow() -> Callable[..., Any]:
    if not _REGISTERED:
        _REGISTERED.append(DBOS.workflow(name=WORKFLOW)(_server_run))
    return _REGISTERED[0]


class DurableBackend:
    """The seams of :mod:`agentrt.server.backend` in a durable store (see the module).

    The store it serves launches DBOS on the store as it is entered, and recovers
    the runs this executor left unfinished. One per process.

    Args:
        store: ``sqlite:///PATH`` or ``postgresql://...``.
        executor_id: This process's name (:data:`DEFAULT_EXECUTOR_ID` by default):
            a process that starts with the id of one that died recovers its runs.

    Raises:
        StoreUnavailableError: The store cannot be used.
        ValueError: The executor id is empty.
    """

    recovers_runs = True
    poll = _POLL
    confirmations: type[Confirmations] = _StoredConfirmations
    """Answers come through the store (a DBOS message per call), to whichever process
    runs the run (unless deferred: then the run ends waiting, and a new run goes on)."""

    def __init__(self, store: str, *, executor_id: str | None = None) -> None:
        executor_id = DEFAULT_EXECUTOR_ID if executor_id is None else executor_id
        if not isinstance(executor_id, str) or not executor_id.strip():
            raise ValueError(f"executor_id must be a non-empty string, got {executor_id!r}")
        self.store_url = store
        self.executor_id = executor_id
        self.storage = Storage(store)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._workflow = _workflow()
        self._store: SessionStore | None = None
        self._runs: dict[str, Run] = {}

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

    @asynccontextmanager
    async def lifetime(self, store: SessionStore, group: TaskGroup) -> AsyncIterator[None]:
        """Launch DBOS (it recovers this executor's runs), watch for cancellations."""
        global _HOST
        if _HOST is not None:
            raise RuntimeError("one durable session store runs per process at a time")
        _HOST, self._store = self, store
        self.loop = asyncio.get_running_loop()
        try:
            # DBOS recovers this executor's runs as it starts: they come to this loop.
            await anyio.to_thread.run_sync(
                lambda: launch(self.store_url, executor_id=self.executor_id, log_level="WARNING")
            )
        except BaseException:
            _HOST, self._store, self.loop = None, None, None
            self.storage.close()
            raise
        group.start_soon(self._watch, name="agentrt cancellations")
        group.start_soon(self._close_dead_runs, name="agentrt dead runs")
        logging.getLogger("dbos").addFilter(_QUIET)
        try:
            yield
        finally:
            # The runs were cancelled, not ended: they stay in the store, to recover.
            _HOST, self._store, self.loop = None, None, None
            with anyio.CancelScope(shield=True):
                try:
                    left = await self.call(self.storage.open_runs_of, self.executor_id)
                except StoreFailedError:
                    left = []
                await anyio.to_thread.run_sync(shutdown)
                self.storage.close()
            logging.getLogger("dbos").removeFilter(_QUIET)
            self._say_left(len(left))

    def _say_left(self, in_flight: int) -> None:
        """One line on a stop that leaves runs in the store: who recovers them."""
        if not in_flight:
            return
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
                    run.stop(reason)

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

    def _held(self, session_id: str) -> Session | None:
        store = self._store
        return None if store is None else store.sessions.get(session_id)

    async def _close_abandoned(self, session_id: str, run_id: str, reason: str) -> None:
        session = self._held(session_id)
        agent_name = "agent" if session is None else session.agent.name
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
                session.notify()

    # -- sessions ---------------------------------------------------------------------------

    def log_of(self, session: Session) -> StoreLog:
        """The session's log in the store."""
        return StoreLog(self, session)

    def prepare(self, agent: Agent) -> None:
        """Make the agent's model and tool calls steps of the run's workflow."""
        make_steps(agent, "agentrt.server")

    async def count(self, store: SessionStore) -> int:
        """The sessions in the store (every process's)."""
        return int(await self.call(self.storage.count_sessions))

    async def create(self, session: Session) -> bool:
        """Store the new session, with how its agent was made (for a replay); False
        when its id is taken."""
        made = agent_record(session.agent, session.store.agent_factory)
        attachments = {FACTORY_ATTACHMENT: made}
        created = await self.call(
            self.storage.create_session, session.id, state_of(session.agent), attachments
        )
        return bool(created)

    async def load(
        self, session_id: str, make_agent: Callable[[], Awaitable[Agent]]
    ) -> Agent | None:
        """A new agent with the stored session's conversation and state."""
        row = await self.call(self.storage.load_session, session_id)
        if row is None:
            return None
        agent = await make_agent()
        await restore_state(agent, row.state)
        return agent

    async def delete(self, session_id: str) -> bool:
        """Delete the session and all it holds from the store."""
        return bool(await self.call(self.storage.delete_session, session_id))

    async def expired(self, store: SessionStore, idle_since: float) -> list[str]:
        """Delete the sessions without an open run, idle for ``session_ttl`` in the store.

        The store's clock is wall time (every process reads it alike); a session a
        reader of this process still reads is kept.
        """
        before = time.time() - store.session_ttl
        deleted: list[str] = []
        for session_id in await self.call(self.storage.idle_sessions, before):
            session = store.sessions.get(session_id)
            if session is not None and not session.idle:
                continue
            if await self.call(self.storage.delete_session, session_id):
                deleted.append(session_id)
        return deleted

    async def refresh(self, session: Session) -> None:
        """Restore the stored state into the agent, unless a run of it is here."""
        if session.run is not None:
            return
        row = await self.call(self.storage.load_session, session.id)
        if row is None:
            raise SessionNotFoundError(session.id)
        await restore_state(session.agent, row.state)

    async def save(self, session: Session) -> None:
        """Store the agent's state now (between runs: an open run stores its own)."""
        saved = await self.call(self.storage.save_state, session.id, state_of(session.agent))
        if not saved:
            raise SessionNotFoundError(session.id)

    async def read_attachment(self, session: Session, name: str) -> dict[str, Any] | None:
        """From the store's attachments table."""
        data = await self.call(self.storage.read_attachment, session.id, name)
        return None if data is None else dict(data)

    async def write_attachment(self, session: Session, name: str, data: dict[str, Any]) -> None:
        """Into the store's attachments table."""
        await self.call(self.storage.write_attachment, session.id, name, data)

    async def attachments(self, store: SessionStore, name: str) -> dict[str, dict[str, Any]]:
        """From the store's attachments table: every process's sessions."""
        return dict(await self.call(self.storage.attachments, name))

    async def fork(
        self, store: SessionStore, source: Session, at: int, message: str | None
    ) -> Session:
        """Branch ``source`` at ``at`` in the store (see :mod:`agentrt.server._durable_fork`).

        Raises:
            CannotForkError: The recording of the run is gone, or an edited fork finds
                no user message to replace.
        """
        return await fork_in_store(self, store, source, at, message)

    async def messages(self, session: Session) -> list[Message]:
        """The conversation: live while this process runs it, else as last stored (the
        same messages either way, the agent's instructions included, as in memory)."""
        if session.run is not None:
            return list(session.agent.messages)
        row = await self.call(self.storage.load_session, session.id)
        if row is None:
            raise SessionNotFoundError(session.id)
        return decode_messages(row.state["messages"])

    # -- runs -------------------------------------------------------------------------------

    async def open_run(self, session: Session) -> tuple[str, int, Mapping[str, Any]] | None:
        """Open a run in the store (it decides: a run of another process counts)."""
        run_id = str(uuid.uuid4())
        opened = await self.call(self.storage.open_run, session.id, run_id, self.executor_id)
        if opened is None:
            if await self.call(self.storage.load_session, session.id) is None:
                raise SessionNotFoundError(session.id)
            return None
        after, state = opened
        return run_id, after, state

    def launch(self, group: TaskGroup, session: Session, run: Run, request: RunRequest) -> None:
        """Run it as a DBOS workflow, in ``group``."""
        self._runs[run.run_id] = run
        group.start_soon(self._start, session, run, request, name=f"agentrt run {session.label}")

    async def _start(self, session: Session, run: Run, request: RunRequest) -> None:
        # A new run: nothing of it is recorded yet (see FreshRun).
        token = fresh_run.set(FreshRun(run.run_id))
        try:
            with SetWorkflowID(run.run_id):
                await self._workflow(
                    session.id,
                    run.run_id,
                    request.message,
                    dict(run.state or {}),
                    None
                    if request.tool_results is None
                    else encode_tool_results(request.tool_results),
                    request.defer_confirmations,
                )
        except Interrupted:
            await self._cancelled(run.run_id)
        except DBOSException as error:
            # Cancelled in the store meanwhile: the run closed its stream already.
            logger.info("run %s ended: %s", run.run_id, error)
        except Exception as error:
            # It could not start (the store failed): close it if the store lets us,
            # else this executor closes it when it starts again.
            logger.error("run %s could not run: %s: %s", run.run_id, type(error).__name__, error)
            reason = f"the run could not start: {type(error).__name__}: {error}"
            with contextlib.suppress(StoreFailedError):
                await self._close_abandoned(session.id, run.run_id, reason)
            self._ended(session, run)
        finally:
            fresh_run.reset(token)
            self._runs.pop(run.run_id, None)

    @staticmethod
    def _ended(session: Session, run: Run) -> None:
        # A run that never reached Session.execute: end it here for its waiters.
        if not run.finished:
            session.release(run)

    async def run_workflow(
        self, session_id: str, run_id: str, request: RunRequest, state: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The body of a run's workflow, on the server's loop (new or recovered)."""
        store = self._store
        if store is None:
            raise RuntimeError("no durable session store is running in this process")
        session = await store.open(session_id)
        run = self._runs.get(run_id)
        if run is None:
            # Recovered: DBOS found it unfinished in the store.
            known = await self.call(self.storage.open_run_of, session_id)
            if known is None or known.run_id != run_id:
                # Closed already (its stream ended): a run stopped by a failing store,
                # or closed by another process as abandoned. Nothing is left to do.
                logger.info("run %s: closed already, not recovered", run_id)
                return {"output": None}
            run = self._runs[run_id] = session.adopt(
                run_id, known.after, state, defer_confirmations=request.defer_confirmations
            )
            if known.cancel is not None:
                run.stop(known.cancel)
            logger.info("session %s: recovering run %s", session.label, run_id)
        try:
            await restore_state(session.agent, state)
        except BaseException:
            self._ended(session, run)
            raise
        await session.execute(run, request)
        if run.cancelled_because is not None:
            # Cancelled (asked so, or stopped by a failing store): no outcome to
            # record; whoever started the workflow cancels it in the store.
            raise Interrupted
        result = run.adapter.result
        outcome: dict[str, Any] = {"output": None if result is None else str(result.output)}
        fresh = fresh_run.get()
        if fresh is not None and fresh.workflow_id == run_id and fresh.pending is not None:
            # The last answer a fresh run held back (see FreshRun) is recorded here, with
            # the run's outcome, at no cost of its own: a replay reads it back.
            outcome["final_step"], outcome["final"] = fresh.pending
        return outcome

    async def recovered(
        self, session_id: str, run_id: str, request: RunRequest, state: dict[str, Any]
    ) -> dict[str, Any]:
        """A run DBOS recovered: run its workflow body in the store's task group."""
        store = self._store
        group = None if store is None else store.task_group
        if group is None:
            raise RuntimeError("no durable session store is running in this process")
        outcome: dict[str, Any] = {}
        done = anyio.Event()

        async def body() -> None:
            try:
                outcome["value"] = await self.run_workflow(session_id, run_id, request, state)
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

    async def confirm(
        self, session: Session, tool_call_id: str, decision: str, reason: str | None
    ) -> None:
        """Record the answer in the store and send it to the run, whichever process runs it."""
        storage = self.storage
        produced_by = await self.call(storage.tool_call_run, session.id, tool_call_id)
        if produced_by is None:
            raise UnknownToolCallError(tool_call_id)
        current = await self.call(storage.open_run_of, session.id)
        if current is None or current.run_id != produced_by:
            raise RunEndedError(tool_call_id)
        if not await self.call(storage.add_answer, session.id, tool_call_id, decision, reason):
            raise AlreadyAnsweredError(tool_call_id)
        await DBOS.send_async(
            produced_by, {"decision": decision, "reason": reason}, _topic(tool_call_id)
        )

    async def cancel(self, session: Session, reason: str) -> None:
        """Cancel the run in the store first (never recovered), then stop it: here at
        once, in another process at its next look (a fraction of a second)."""
        open_run = await self.call(self.storage.open_run_of, session.id)
        if open_run is None:
            raise NoRunError(session.id)
        run_id = open_run.run_id
        await self.call(self.storage.request_cancel, run_id, reason)
        local = self._runs.get(run_id)
        if local is not None:
            local.stop(reason)
        await DBOS.cancel_workflow_async(run_id)
        if local is None:
            # In another process: it stops at its next look; should it be dead, close
            # the run here (a reader would wait for its stream_stopped forever).
            store = self._store
            assert store is not None
            assert store.task_group is not None
            store.task_group.start_soon(self._close_if_orphaned, session.id, run_id, reason)

    async def _close_if_orphaned(self, session_id: str, run_id: str, reason: str) -> None:
        deadline = anyio.current_time() + _ORPHAN_GRACE
        while anyio.current_time() < deadline:
            await anyio.sleep(_WATCH)
            current = await self.call(self.storage.open_run_of, session_id)
            if current is None or current.run_id != run_id:
                return
        await self._close_abandoned(session_id, run_id, reason)

    async def has_open_run(self, session: Session) -> bool:
        """Whether the store has an open run of ``session`` (any process's)."""
        return await self.call(self.storage.open_run_of, session.id) is not None
