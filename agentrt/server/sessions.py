"""The session core: sessions, their runs, event logs, answers and expiry, written once.

No HTTP here: the routes (:mod:`agentrt.server.app`, :mod:`agentrt.server.agui`) are
projections of these objects and errors. No storage either: what differs between
memory, SQLite and Postgres is behind the seams of :mod:`agentrt.server.backend`,
implemented by :mod:`agentrt.server.memory` and :mod:`agentrt.server.durable`.

A :class:`Session` is one conversation: an agent made by the server's factory, and
an event log numbered across all of the session's runs, so that a
``Last-Event-ID`` names one event of the session, whichever run it came from. At
most one run is open at a time. Each run is a
:class:`~agentrt.stream.StreamAdapter` writing into the log; the log never makes
the run wait, so readers come and go without pacing or stopping it.

A run cancelled before it finished (``DELETE /sessions/{id}/run``, the session
closed or expired, a memory server shutting down) ends its stream with an
``error`` event that says so, then ``stream_stopped``: a reader, who may not be the
client that cancelled it, never takes it for a run that answered. A run may also
end *waiting*: with tool calls its caller runs (an AG-UI frontend's tools); its
``stream_stopped`` then carries their ids, and the next run goes on with their
results.

Runs do not live in the task of the request that started them: the
:class:`SessionStore` owns a task group (entered by the app's lifespan), and a run
started there survives its client's disconnection. The store also bounds what the
server keeps: ``retain`` events per session, ``max_sessions`` sessions, and
sessions idle for ``session_ttl`` seconds are closed and forgotten. Idle means no
reader and no run at work: a run that can go on only with a client's answer (every
tool call it left open waits for a confirmation) is idle too, so that a client that
walked away does not hold the run, and a place under the cap on runs, forever; it
is cancelled with its session.

The store is :mod:`agentrt.server.store`; the errors are in
:mod:`agentrt.server.session_errors` (and importable from here).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel

from agentrt.agent import Agent
from agentrt.deferred import as_answers
from agentrt.messages import Message
from agentrt.server.backend import EncodedEvent, RunSink, SessionLog
from agentrt.server.session_errors import (
    AlreadyAnsweredError,
    NoRunError,
    RunEndedError,
    RunInProgressError,
    SessionError,
    SessionExistsError,
    SessionLimitError,
    SessionNotFoundError,
    StoreFailedError,
    StoreNotRunningError,
)
from agentrt.stream._adapter import StreamAdapter
from agentrt.stream._log import EventsExpiredError
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.confirm import DECISIONS, InvalidDecisionError
from agentrt.stream.events import ErrorEvent, StreamEvent, StreamStoppedEvent

if TYPE_CHECKING:
    from agentrt.server.store import SessionStore

__all__ = (
    "AlreadyAnsweredError",
    "NoRunError",
    "Run",
    "RunEndedError",
    "RunInProgressError",
    "RunRequest",
    "Session",
    "SessionError",
    "SessionExistsError",
    "SessionLimitError",
    "SessionNotFoundError",
    "StoreFailedError",
    "StoreNotRunningError",
)

logger = logging.getLogger("agentrt.server")

# Events per batch sent to a reader: a late reader catching up on a long log gets
# it in pieces of bounded size rather than one write of the whole retained window.
BATCH = 256

CANCELLED_BY_REQUEST = "cancelled: DELETE /sessions/{id}/run stopped the run before it finished"
CANCELLED_BY_CLOSE = "cancelled: the session was closed before the run finished"


_Read = TypeVar("_Read", SequencedEvent, SequencedEvent | EncodedEvent)


def _type_of(item: SequencedEvent | EncodedEvent) -> str:
    return item.type if isinstance(item, EncodedEvent) else item.event.type


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What a run is asked to do.

    Attributes:
        message: The user's message; ``None`` goes on from the conversation as it is.
        tool_results: Answers to the tool calls the previous run left waiting, by
            call id (see :mod:`agentrt.deferred`).
        defer_confirmations: A call that needs approval ends the run waiting, rather
            than wait in it (see :mod:`agentrt.stream.confirm`).
    """

    message: str | None
    tool_results: Mapping[str, Any] | None = None
    defer_confirmations: bool = False


class _RunOutput:
    """Where a run's adapter puts its events: the run's sink, and its ``stream_stopped``.

    Apart from the :class:`Run`, which keeps its adapter: were the adapter's sinks the
    run's own methods, the two would make a reference cycle, and every ended run (its
    adapter, scope, events, ...: 26 objects) would wait for the cyclic garbage
    collector, through every generation, instead of going when its last reader does.
    """

    __slots__ = ("sink", "stopped")

    def __init__(self) -> None:
        self.sink: RunSink | None = None
        self.stopped: StreamStoppedEvent | None = None

    async def put(self, event: StreamEvent) -> None:
        self.take(event)

    def take(self, event: StreamEvent) -> bool:
        sink = self.sink
        if sink is None:
            return True
        if isinstance(event, StreamStoppedEvent):
            # The run's last events are written by Session.execute, which knows how
            # the run ended: the adapter does not tell a cancelled run from one that
            # answered.
            self.stopped = event
            return True
        return sink.add(event)


@dataclass(eq=False, slots=True)
class Run:
    """One message being answered: a stream session in the session's log.

    Attributes:
        run_id: The run's id (a durable run's workflow id).
        after: The log's last sequence number before the run's first event.
        state: What the backend handed over when it opened the run (a durable
            session's stored state).
        adapter: The stream adapter of the run (its confirmations live there).
        scope: Cancels the run.
        finished: Whether the run has ended (its ``stream_stopped`` is in the log).
        done: Set when the run has ended.
        cancelled_because: Why the run was cancelled, once it was.
        sink: Where the run's events go while it runs (the session's log).
        stopped: The adapter's own ``stream_stopped``, held back for the run's end.
    """

    run_id: str
    after: int
    state: Mapping[str, Any] | None = None
    adapter: StreamAdapter = field(init=False)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    finished: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    cancelled_because: str | None = None
    _output: _RunOutput = field(init=False, default_factory=_RunOutput, repr=False)

    @property
    def sink(self) -> RunSink | None:
        return self._output.sink

    @sink.setter
    def sink(self, sink: RunSink | None) -> None:
        self._output.sink = sink

    @property
    def stopped(self) -> StreamStoppedEvent | None:
        return self._output.stopped

    async def put(self, event: StreamEvent) -> None:
        """The adapter's sink: :meth:`take`."""
        self._output.take(event)

    def take(self, event: StreamEvent) -> bool:
        """The adapter's ``sink_nowait``: ``event`` into the run's sink, never waiting.

        Per run, not per session: a run that has ended in the store may still be in
        its last steps here while the session's next run begins.
        """
        return self._output.take(event)

    def stop(self, reason: str) -> None:
        """Cancel the run here (the first reason given stands)."""
        self.cancelled_because = self.cancelled_because or reason
        self.scope.cancel()


class Session:
    """One conversation of the server: an agent, its event log, its current run.

    Made by its :class:`SessionStore`; not meant to be built directly. Every method
    the routes use is async: a backend may have to ask its store.

    Args:
        store: The store the session belongs to.
        session_id: The session's unguessable id.
        agent: The session's own agent (in this process).
        label: A short name for logs (the id is a secret: logs do not show it).
    """

    def __init__(self, store: SessionStore, session_id: str, agent: Agent, *, label: str) -> None:
        self.store = store
        self.id = session_id
        self.agent = agent
        self.label = label
        self.run: Run | None = None
        """The run in progress in this process, if any."""
        self.readers = 0
        """How many clients are reading the session's events now (in this process)."""
        self.closed = False
        """Whether :meth:`close` ran (the session is forgotten by this process)."""
        self.attachments: dict[str, Any] = {}
        """What projections keep with the session in this process (an AG-UI thread)."""
        self._streams_ended = False
        self.last_active = store.clock()
        """When a request, a reader or a run last touched the session (store clock)."""
        # Made only when a reader is about to wait, and dropped once set: a run's events
        # wake nobody when nobody waits, and making an anyio.Event per event was a tenth
        # of a server's CPU (bench_server.py). The version tells a reader whether
        # something changed while it awaited something else (a read of the log).
        self._changed: anyio.Event | None = None
        self._version = 0
        self.log: SessionLog = store.backend.log_of(self)
        """The session's event log."""

    # -- state ------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Whether nothing uses the session: no reader, and no run or one waiting for a client.

        See :meth:`waits_for_client`: a run that waits for answers nobody reads for is
        idle, and its session expires with it.
        """
        return self.readers == 0 and (self.run is None or self.waits_for_client())

    def waits_for_client(self) -> bool:
        """Whether the run in progress here can go on only with a client's answer.

        True when every tool call the conversation leaves open waits for a
        confirmation; False with no run, or while a tool or the model is at work.
        """
        run = self.run
        if run is None or run.finished:
            return False
        pending = run.adapter.confirmations.pending
        if not pending:
            return False
        open_calls = {call.id for call in self.agent.conversation.unanswered_calls()}
        return bool(open_calls) and open_calls <= set(pending)

    def touch(self) -> None:
        """Note that the session is in use (postpones its idle expiry)."""
        self.last_active = self.store.clock()

    def notify(self) -> None:
        """Wake the readers: the log grew, or something their ``until`` reads changed."""
        # The waiting readers' event is set and dropped: later waits need a later change.
        self._version += 1
        changed = self._changed
        if changed is not None:
            self._changed = None
            changed.set()

    # -- runs -------------------------------------------------------------------------

    def adopt(
        self,
        run_id: str,
        after: int,
        state: Mapping[str, Any] | None = None,
        *,
        defer_confirmations: bool = False,
    ) -> Run:
        """Make ``run_id`` this session's run here (a backend recovering it calls this)."""
        options = self.store.stream_options
        run = Run(run_id, after, state=state)
        adapter = run.adapter = StreamAdapter(
            self.agent,
            run._output.put,
            sink_nowait=run._output.take,
            session_id=self.id,
            **options,
        )
        adapter.confirmations = self.store.backend.confirmations(
            self.agent,
            auto_approve=bool(options.get("auto_approve", False)),
            policy=options.get("confirmation_policy"),
            defer=defer_confirmations,
        )
        if self.run is None:
            self.store.runs += 1
        self.run = run
        return run

    def release(self, run: Run) -> None:
        """``run`` ended here: it is no longer the session's run, and its waiters wake."""
        run.finished = True
        if self.run is run:
            self.run = None
            self.store.runs -= 1
        self.touch()
        self.notify()
        run.done.set()

    async def append(self, messages: Sequence[Message]) -> None:
        """Add ``messages`` to the conversation between runs, and keep them (a client's
        history, as an AG-UI client sends it).

        Raises:
            RunInProgressError: A run is in progress here.
            SessionNotFoundError: The session was deleted meanwhile.
        """
        if not messages:
            return
        if self.run is not None:
            raise RunInProgressError(self.id)
        for message in messages:
            await self.agent.append(message)
        await self.store.backend.save(self)

    async def start(
        self,
        message: str | None,
        *,
        tool_results: Mapping[str, Any] | None = None,
        defer_confirmations: bool = False,
    ) -> Run:
        """Start answering ``message``; return the run (its events follow ``run.after``).

        ``None`` continues the conversation as it is (it ends with tool results the
        model has not read yet, say); ``tool_results`` answers the tool calls the
        previous run left waiting (see :mod:`agentrt.deferred`). With
        ``defer_confirmations``, a call that needs approval ends the run waiting
        rather than wait in it.

        Raises:
            StoreNotRunningError: The store is not entered.
            SessionNotFoundError: The session was closed or deleted meanwhile.
            RunInProgressError: The previous run has not ended (in any process).
            TypeError, ToolResultError: ``tool_results`` is not a mapping of call
                ids to answers (see :mod:`agentrt.deferred`).
        """
        group = self.store.task_group
        if group is None:
            raise StoreNotRunningError
        if tool_results is not None:
            # Checked here, before a run opens: a bad answer refuses the request.
            tool_results = as_answers(tool_results)
        if self.closed:
            # Deleted or expired while this request read its body: as if never found.
            raise SessionNotFoundError(self.id, in_memory=self.store.in_memory)
        backend = self.store.backend
        # The backend decides, atomically where other processes may open runs too (a
        # durable run that has closed in the store may still be in its last steps
        # here: the next one may begin meanwhile).
        opened = await backend.open_run(self)
        if opened is None:
            raise RunInProgressError(self.id)
        run_id, after, state = opened
        run = self.adopt(run_id, after, state, defer_confirmations=defer_confirmations)
        self.touch()
        backend.launch(group, self, run, RunRequest(message, tool_results, defer_confirmations))
        return run

    async def execute(self, run: Run, request: RunRequest) -> None:
        """Run ``run`` to its end, its events into the log (the backend's launch calls it).

        Ends with an ``error`` when the run was cancelled or failed outside the
        stream, then ``stream_stopped``. A cancellation from outside (the server
        shutting down) of a backend that recovers runs writes nothing more: the
        run goes on after the restart.
        """
        try:
            async with self.log.writing(run) as sink:
                run.sink = sink
                unsaid: str | None = None
                try:
                    # Our own scope: the cancel endpoint's cancellation ends here, while
                    # a cancellation from outside (shutdown) goes on to the task group.
                    with run.scope:
                        if request.tool_results is None:
                            await run.adapter.run(request.message)
                        else:
                            await run.adapter.run(
                                request.message, tool_results=request.tool_results
                            )
                    if run.adapter.result is None:
                        unsaid = run.cancelled_because or "cancelled: the run was cancelled"
                except Exception as error:
                    # The failure is in the stream already (an error event before
                    # stream_stopped); the server itself goes on.
                    logger.info(
                        "session %s: the run failed: %s: %s",
                        self.label,
                        type(error).__name__,
                        error,
                    )
                except BaseException as error:
                    if isinstance(error, anyio.get_cancelled_exc_class()):
                        if self.store.backend.recovers_runs:
                            raise  # left open in the store, to recover
                        reason = "cancelled: the server shut down before the run finished"
                        unsaid = run.cancelled_because or reason
                    else:
                        unsaid = f"{type(error).__name__}: {error}"
                    # No await: the stream ends here and now, whatever cancels us.
                    self._last_events(sink, run, unsaid)
                    raise
                self._last_events(sink, run, unsaid)
                await sink.finish()
        finally:
            run.sink = None
            self.release(run)

    def _last_events(self, sink: RunSink, run: Run, unsaid: str | None) -> None:
        stopped = run.stopped
        if unsaid is not None:
            sink.add(ErrorEvent(session_id=self.id, agent_name=self.agent.name, error=unsaid))
            stopped = None
        # The adapter's own stream_stopped when the run ended as it says (it tells
        # which tool calls wait, if any); a fresh one after an error of ours.
        sink.add(stopped or StreamStoppedEvent(session_id=self.id))

    async def cancel(self, reason: str = CANCELLED_BY_REQUEST) -> None:
        """Cancel the run in progress, wherever it runs.

        The run stops at once wherever it waits (the model, tools, a confirmation);
        its tool calls cut short are answered as cancelled in the conversation, and
        its stream ends with an ``error`` saying it was cancelled, then
        ``stream_stopped``.

        Raises:
            NoRunError: No run is in progress.
        """
        await self.store.backend.cancel(self, reason)

    async def confirm(self, tool_call_id: str, decision: str, reason: str | None = None) -> None:
        """Answer the confirmation of a tool call of the current run, wherever it runs.

        Raises:
            InvalidDecisionError: ``decision`` is not one of
                :data:`~agentrt.stream.DECISIONS`.
            AlreadyAnsweredError: The call was answered before.
            RunEndedError: The call belongs to a run that has ended.
            UnknownToolCallError: No run of this session produced the call.
        """
        if decision not in DECISIONS:
            raise InvalidDecisionError(decision)
        await self.store.backend.confirm(self, tool_call_id, decision, reason)

    async def refresh(self) -> None:
        """Bring the agent up to date with the store (another process may have run the
        session since this one last did); nothing while a run of it is here.

        Raises:
            SessionNotFoundError: The session was deleted meanwhile.
        """
        await self.store.backend.refresh(self)

    async def messages(self) -> list[Message]:
        """The conversation so far (``GET /sessions/{id}/messages``)."""
        return await self.store.backend.messages(self)

    # -- readers ----------------------------------------------------------------------

    async def check_after(self, after: int) -> None:
        """Check that a reader may start after ``after`` (before any response is sent).

        Raises:
            ValueError: ``after`` is negative or beyond the latest event.
            EventsExpiredError: Events right after ``after`` are no longer kept.
        """
        if after < 0:
            raise ValueError(f"after must be a non-negative int, got {after!r}")
        first, last = await self.log.bounds()
        if after > last:
            raise ValueError(f"after={after} is beyond this session's latest event ({last})")
        if first and after + 1 < first:
            raise EventsExpiredError(after, first)

    def follow(
        self,
        after: int,
        *,
        run: Run | None = None,
        heartbeat: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> AsyncGenerator[list[SequencedEvent], None]:
        """Yield the events after ``after`` in batches, then new ones as they come.

        An empty batch means ``heartbeat`` seconds passed without an event. Ends,
        with ``run``, after that run's ``stream_stopped``; without, once the session
        has no open run (in any process) and everything was yielded. Ends once
        caught up when the session's streams are ended (it was closed, or the
        server shuts down), even with a run in progress, and once caught up when
        ``until()`` says so (checked after every change and :meth:`notify`).

        Events written here come as soon as they are; events of a run in another
        process (a durable store) within a poll of the store.

        Raises:
            EventsExpiredError: The reader fell behind the retained window.
        """
        return self._follow(self.log.read, after, run, heartbeat, until)

    def follow_encoded(
        self,
        after: int,
        *,
        run: Run | None = None,
        heartbeat: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> AsyncGenerator[list[SequencedEvent | EncodedEvent], None]:
        """As :meth:`follow`, for a reader that only sends the events on (an SSE stream):
        the log may give any of them as an :class:`~agentrt.server.backend.EncodedEvent`,
        its JSON.

        Raises:
            EventsExpiredError: The reader fell behind the retained window.
        """
        return self._follow(self.log.read_encoded, after, run, heartbeat, until)

    async def _follow(
        self,
        read: Callable[[int, int], Awaitable[list[_Read]]],
        after: int,
        run: Run | None,
        heartbeat: float | None,
        until: Callable[[], bool] | None,
    ) -> AsyncGenerator[list[_Read], None]:
        poll = self.store.backend.poll
        wait = math.inf if heartbeat is None else heartbeat
        interval = wait if poll is None else poll[0]
        quiet = 0.0
        yielded = False
        self.readers += 1
        try:
            while True:
                version = self._version
                batch = await read(after, BATCH)
                if batch:
                    if run is not None:
                        for n, item in enumerate(batch):
                            if _type_of(item) == "stream_stopped":
                                yield batch[: n + 1]
                                return
                    yield batch
                    after = batch[-1].sequence
                    quiet = 0.0
                    if poll is not None:
                        interval = poll[0]
                    continue
                # Checked once caught up, so that a reader ended mid-way still gets
                # what the log holds (a closed session's final stream_stopped).
                if self._streams_ended or (until is not None and until()):
                    return
                if run is None:
                    if poll is None:
                        if self.run is None:
                            return
                    elif not await self._open_elsewhere():
                        # The run may have closed (its last events written with it)
                        # between the read above and this look: one more read says.
                        if not await self.log.read(after, 1):
                            return
                        continue
                if self._version != version:
                    continue  # it changed while this reader awaited: read again
                if not yielded:
                    # Once, before the first timed wait: one turn of the event loop. A run
                    # just started here (the reader of POST .../messages) has often written
                    # its events by then, and the wait's cancel scope and timer, a few per
                    # cent of a run (bench_server.py), are not needed.
                    yielded = True
                    await anyio.lowlevel.checkpoint()
                    continue
                changed = self._changed
                if changed is None:
                    changed = self._changed = anyio.Event()
                with anyio.move_on_after(min(interval, wait - quiet)):
                    await changed.wait()
                if changed.is_set():
                    if poll is not None:
                        interval = poll[0]
                    continue
                quiet += min(interval, wait - quiet)
                if quiet >= wait:
                    quiet = 0.0
                    yield []
                if poll is not None:
                    interval = min(interval * 2, poll[1])
        finally:
            self.readers -= 1
            self.touch()

    async def _open_elsewhere(self) -> bool:
        if self.run is not None:
            return True
        return await self.store.backend.has_open_run(self)

    def end_streams(self) -> None:
        """End the readers' streams once they have read the log; the run goes on."""
        self._streams_ended = True
        self.notify()

    async def close(self) -> None:
        """Cancel the run here, end the readers and close the agent (idempotent).

        The session is forgotten by this process; a durable store still holds it.
        """
        if self.closed:
            return
        self.closed = True
        run = self.run
        if run is not None:
            run.stop(CANCELLED_BY_CLOSE)
            # The agent is closed after its run has ended, never under it; and the
            # readers end after its stream_stopped.
            await run.done.wait()
        self.end_streams()
        try:
            await self.agent.close("the server session ended")
        except Exception:
            # A failing close handler must not keep the other sessions from closing.
            logger.exception("session %s: closing its agent failed", self.label)
