"""A session of a durable server store, and its runs (see :mod:`agentrt.server.durable`).

A :class:`DurableSession` keeps nothing a process could lose: its conversation and
state are in the store between runs, its runs' events are written there by a
:class:`~agentrt.server.runlog.RunLog` before anyone reads them, readers read them
from there, and its confirmations are answered there.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from dbos import DBOS

from agentrt.agent import Agent
from agentrt.durable import step_journal
from agentrt.durable._codec import decode_messages, encode_messages, restore_conversation
from agentrt.durable._steps import record_pending
from agentrt.messages import Message, ToolCall, Usage
from agentrt.server.runlog import RunLog
from agentrt.server.sessions import (
    AlreadyAnsweredError,
    Run,
    RunEndedError,
    Session,
    SessionNotFoundError,
)
from agentrt.stream.adapter import StreamAdapter
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.confirm import (
    DECISIONS,
    Confirmations,
    Decision,
    InvalidDecisionError,
    UnknownToolCallError,
)
from agentrt.stream.events import ErrorEvent, StreamEvent, StreamStoppedEvent
from agentrt.stream.log import EventLog, EventsExpiredError
from agentrt.stream.parse import parse_event

if TYPE_CHECKING:
    from agentrt.server.durable import DurableSessionStore

__all__ = ("DurableRun", "DurableSession", "Interrupted", "restore_state", "state_of")

logger = logging.getLogger("agentrt.server")

# Events per read of the log: a late reader gets a long log in bounded pieces.
_BATCH = 256
# Readers of a run in another process poll the store: soon after a change, less
# often while nothing happens.
_POLL = (0.02, 1.0)
# Seconds of one wait for a confirmation; the wait goes on until an answer comes.
_CONFIRM_WAIT = 24 * 3600.0


# -- the session's state across processes --------------------------------------------------


def state_of(agent: Agent) -> dict[str, Any]:
    """What a session keeps between runs: its conversation and its streams' state."""
    state = agent.stream_state
    return {
        "messages": encode_messages(list(agent.conversation)),
        "usage": dataclasses.asdict(state.usage),
        "approvals": {
            "everything": state.approvals.everything,
            "tools": sorted(state.approvals.tools),
        },
        "title": state.session.title,
    }


async def restore_state(agent: Agent, state: Mapping[str, Any]) -> None:
    await restore_conversation(agent, decode_messages(state["messages"]))
    stream_state = agent.stream_state
    stream_state.usage = Usage(**state["usage"])
    stream_state.approvals.everything = bool(state["approvals"]["everything"])
    stream_state.approvals.tools = set(state["approvals"]["tools"])
    stream_state.session.title = state["title"]


def _topic(tool_call_id: str) -> str:
    return f"agentrt.confirm.{tool_call_id}"


class _DurableConfirmations(Confirmations):
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


# -- sessions and runs ---------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class DurableRun(Run):
    """A run of a durable session in this process (see :class:`~agentrt.server.Run`).

    Attributes:
        run_id: The run's id, its DBOS workflow id.
        session_id: Its session.
    """

    run_id: str = ""
    session_id: str = ""


class _Produced(EventLog):
    """What ``session.log`` tells of a durable session: how far its events have got.

    The events themselves are in the store (:meth:`DurableSession.follow` reads them);
    :attr:`last_sequence` is the number of the latest one the run in this process has
    produced (a commit away from the store), as a memory session's log tells it.
    """

    def __init__(self, session: DurableSession) -> None:
        super().__init__(retain=1)
        self._session = session

    @property
    def last_sequence(self) -> int:
        log = self._session._log
        return 0 if log is None else log.cursor


class Interrupted(BaseException):
    """A run that stopped without an outcome to record (the user cancelled it)."""


class DurableSession(Session):
    """A session of a :class:`DurableSessionStore`: its log and runs are in the store.

    Made by the store; not meant to be built directly.
    """

    def __init__(self, store: DurableSessionStore, session_id: str, agent: Agent, label: str):
        super().__init__(
            session_id,
            agent,
            label=label,
            retain=store.retain,
            clock=store.clock,
            stream_options=store.stream_options,
        )
        self.store = store
        self._log: RunLog | None = None
        self.log = _Produced(self)

    # -- the run's sink -------------------------------------------------------------------

    async def _append(self, event: StreamEvent) -> None:
        self._append_nowait(event)

    def _append_nowait(self, event: StreamEvent) -> bool:
        if event.type == "stream_stopped" or self._log is None:
            # The run's last events are the session's to write (see Session._execute).
            return True
        return self._log.add(event)

    def _new_adapter(self) -> StreamAdapter:
        options = dict(self._stream_options)
        adapter = StreamAdapter(
            self.agent,
            self._append,
            sink_nowait=self._append_nowait,
            session_id=self.id,
            **options,
        )
        adapter.confirmations = _DurableConfirmations(
            self.agent,
            auto_approve=bool(options.get("auto_approve", False)),
            policy=options.get("confirmation_policy"),
        )
        return adapter

    # -- what the app awaits --------------------------------------------------------------

    async def read_messages(self) -> list[Message]:
        """The conversation: live while this process runs it, else as last stored."""
        if self.run is not None:
            return list(self.agent.messages)
        row = await self.store.call(self.store.storage.load_session, self.id)
        if row is None:
            raise SessionNotFoundError(self.id)
        return [m for m in decode_messages(row.state["messages"]) if m.role != "system"]

    async def confirm(self, tool_call_id: str, decision: str, reason: str | None = None) -> None:
        """Answer a confirmation of the session's run, whichever process runs it.

        Raises:
            InvalidDecisionError: ``decision`` is not one of
                :data:`~agentrt.stream.DECISIONS`.
            AlreadyAnsweredError: The call was answered before.
            RunEndedError: The call belongs to a run that has ended.
            UnknownToolCallError: No run of this session produced the call.
        """
        if decision not in DECISIONS:
            raise InvalidDecisionError(decision)
        storage = self.store.storage
        produced_by = await self.store.call(storage.tool_call_run, self.id, tool_call_id)
        if produced_by is None:
            raise UnknownToolCallError(tool_call_id)
        current = await self.store.call(storage.open_run_of, self.id)
        if current is None or current.run_id != produced_by:
            raise RunEndedError(tool_call_id)
        if not await self.store.call(storage.add_answer, self.id, tool_call_id, decision, reason):
            raise AlreadyAnsweredError(tool_call_id)
        await DBOS.send_async(
            produced_by, {"decision": decision, "reason": reason}, _topic(tool_call_id)
        )

    async def stop(self) -> Run:
        """Cancel the session's run, whichever process runs it.

        It is cancelled in the store first (never recovered), then stopped: here
        at once, in another process at its next look (a fraction of a second).

        Raises:
            NoRunError: No run is in progress.
        """
        reason = "cancelled: DELETE /sessions/{id}/run stopped the run before it finished"
        return await self.store.cancel_run(self, reason)

    async def check_resume(self, after: int) -> None:
        """Check that a reader may start after ``after`` (before any response is sent).

        Raises:
            ValueError: ``after`` is beyond the latest event.
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        first, last = await self.store.call(self.store.storage.bounds, self.id)
        if after > last:
            raise ValueError(f"after={after} is beyond this session's latest event ({last})")
        if first and after + 1 < first:
            raise EventsExpiredError(after, first)

    def cancel(self) -> Run:
        """Not for a durable session: ``await session.stop()`` cancels in the store."""
        raise TypeError("a durable session's run is cancelled with `await session.stop()`")

    def answer(self, tool_call_id: str, decision: str, reason: str | None = None) -> None:
        """Not for a durable session: ``await session.confirm(...)`` answers in the store."""
        raise TypeError("a durable session's confirmations are answered with `await confirm()`")

    # -- readers ----------------------------------------------------------------------------

    async def follow(
        self,
        after: int,
        *,
        run: Run | None = None,
        heartbeat: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> AsyncGenerator[list[SequencedEvent], None]:
        """Yield the events after ``after`` from the store in batches, then new ones.

        As :meth:`Session.follow <agentrt.server.sessions.Session.follow>`: with
        ``run``, ends after that run's ``stream_stopped``; without, once the
        session has no open run (in any process) and everything was yielded.
        Events of a run in this process come as soon as they are written; of a
        run in another process, within a poll of the store. Ends once caught up
        when ``until()`` says so.

        Raises:
            EventsExpiredError: The reader fell behind the retained window.
        """
        store = self.store
        run_id = run.run_id if isinstance(run, DurableRun) else None
        self.readers += 1
        try:
            poll = _POLL[0]
            quiet = 0.0
            while True:
                changed = self._changed
                rows = await store.call(store.storage.read, self.id, after, _BATCH)
                if rows:
                    if rows[0][0] != after + 1:
                        raise EventsExpiredError(after, rows[0][0])
                    batch: list[SequencedEvent] = []
                    for seq, owner, data in rows:
                        event = parse_event(data)
                        batch.append(SequencedEvent(seq, event))
                        if run_id == owner and event.type == "stream_stopped":
                            yield batch
                            return
                    yield batch
                    after = rows[-1][0]
                    poll, quiet = _POLL[0], 0.0
                    continue
                if self._streams_ended or (until is not None and until()):
                    return
                if run_id is None:
                    open_run = await store.call(store.storage.open_run_of, self.id)
                    if open_run is None and after >= await store.call(
                        store.storage.last_seq, self.id
                    ):
                        return
                with anyio.move_on_after(poll):
                    await changed.wait()
                if changed.is_set():
                    poll = _POLL[0]
                    continue
                quiet += poll
                poll = min(poll * 2, _POLL[1])
                if heartbeat is not None and quiet >= heartbeat:
                    quiet = 0.0
                    yield []
        finally:
            self.readers -= 1
            self.touch()

    # -- running ------------------------------------------------------------------------------

    async def execute(self, run: DurableRun, message: str, state: Mapping[str, Any]) -> None:
        """Run ``message`` as ``run`` (inside its workflow), its events into the store.

        Ends as :class:`~agentrt.server.sessions.Session` runs end (an ``error``
        when cancelled, then ``stream_stopped``), written with the session's new
        state in the transaction that closes the run. A cancellation from outside
        (the server shutting down) writes nothing more: the run stays in the
        store, to recover.
        """
        store = self.store
        try:
            await restore_state(self.agent, state)
            written = await store.call(store.storage.last_seq, self.id)
        except BaseException:
            self._ended(run)
            raise
        log = self._log = RunLog(
            store.storage,
            self.id,
            run.run_id,
            after=run.after,
            written=written,
            agent_name=self.agent.name,
            on_written=self._notify,
            on_failure=lambda reason: self._stop_local(run, f"cancelled: {reason}"),
        )
        token = step_journal.set(log)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(log.flusher, name=f"agentrt events {self.label}")
                unsaid: str | None = None
                try:
                    with run.scope:
                        await run.adapter.run(message)
                    if run.adapter.result is None:
                        unsaid = run.cancelled_because or "cancelled: the run was cancelled"
                except Exception as error:
                    logger.info(
                        "session %s: the run failed: %s: %s",
                        self.label,
                        type(error).__name__,
                        error,
                    )
                if unsaid is not None:
                    name = self.agent.name
                    log.add(ErrorEvent(session_id=self.id, agent_name=name, error=unsaid))
                log.add(StreamStoppedEvent(session_id=self.id))
                # Not shielded: a server shutting down meanwhile leaves the run open in
                # the store (DBOS recovers it), rather than wait for a store that is gone.
                await log.close(state_of(self.agent), store.retain)
                group.cancel_scope.cancel()
        finally:
            step_journal.reset(token)
            if self._log is log:
                self._log = None
            self._ended(run)
        if run.cancelled_because is not None:
            # Cancelled (asked so, or stopped by a failing store): no outcome to
            # record; whoever started the workflow cancels it in the store.
            raise Interrupted

    def _ended(self, run: Run) -> None:
        run.finished = True
        if self.run is run:
            self.run = None
        self.touch()
        self._notify()
        run.done.set()

    def _stop_local(self, run: Run, reason: str) -> None:
        run.cancelled_because = run.cancelled_because or reason
        run.scope.cancel()

    async def close(self) -> None:
        """Forget the session in this process (its agent is closed); the store keeps it."""
        if self.closed:
            return
        self.closed = True
        self.end_streams()
        try:
            await self.agent.close("the server session ended")
        except Exception:
            logger.exception("session %s: closing its agent failed", self.label)
