"""Forks on a durable store: a run's recorded DBOS steps stand in up to the event.

A session's log keeps, with each event, the run that produced it (a DBOS workflow,
whose inputs hold the session's state at the run's start and whose steps record each
model answer and tool result, and how far the run's events had got when each ended).
A fork at event ``at`` of a run is that run forked as a DBOS workflow from its first
step that had not ended before ``at`` (or the first confirmation it had no answer to
then): the new session's log holds the events up to the end of the last step that
stands in, the forked workflow replays those steps (their
events are in the log already, as for a run recovered after a crash) and goes on live.
It is queued in the store: any server process on it runs it, with this one's code.

After a finished run's last answer (nothing that shows a change of the conversation
follows the event), the fork holds the conversation the run left, and nothing runs.
An edited fork starts from the state before the run of the message it replaces.
"""

from __future__ import annotations

import secrets
import uuid
from typing import TYPE_CHECKING, Any

from dbos import DBOS, SetWorkflowID

from agentrt.server._fork import CONTENT, nothing_to_edit, renamed_json
from agentrt.server._storage import OpenRun, RunSpan
from agentrt.server.session_errors import CannotForkError, SessionNotFoundError

if TYPE_CHECKING:
    from agentrt.server.durable import DurableBackend
    from agentrt.server.sessions import Session
    from agentrt.server.store import SessionStore

__all__ = ("answered_by", "fork_in_store", "replayed_until")

# The parameters of a server run's workflow, in order: a recorded run's inputs are
# its arguments (agentrt.server.durable._server_run).
_RUN_ARGUMENTS = ("session_id", "run_id", "message", "state", "tool_results")


def replayed_until(steps: list[Any], at: int, after: int, answered: int) -> tuple[int, int]:
    """The first step of a run a fork at event ``at`` runs again, and the number of the
    last event the steps before it produced (``after``, the run's start, when none).

    A step records how far the run's events had got when it ended (the journal of
    :class:`~agentrt.server._runlog.RunLog`): the steps that had ended before event
    ``at`` was produced stand in (what they answered is in the conversation then). So do
    the first ``answered`` confirmations' answers (each a DBOS ``recv``, in the order
    the run asked), and what DBOS records with them; the first step past those runs
    again, and all after it.
    """
    start = steps[-1]["function_id"] + 1 if steps else 1
    upto = after
    received = 0
    for step in steps:
        output = step["output"]
        journal = output.get("journal") if isinstance(output, dict) else None
        if step["function_name"] == "DBOS.recv":
            received += 1
            if received > answered:
                start = step["function_id"]
                break
        elif isinstance(journal, int) and not isinstance(journal, bool):
            if journal >= at:
                start = step["function_id"]
                break
            upto = max(upto, journal)
    return start, upto


def answered_by(events: list[tuple[int, str, str | None]], at: int) -> int:
    """How many of the confirmations the run asked among ``events`` were answered by
    event ``at``: the run shows a confirmed call's ``tool_call`` once it has its answer
    (a rejected one's too)."""
    asked = [call for _, kind, call in events if kind == "tool_call_confirmation"]
    shown = {call for seq, kind, call in events if kind == "tool_call" and seq <= at}
    count = 0
    for call in asked:
        if call not in shown:
            break
        count += 1
    return count


async def _inputs(run_id: str) -> tuple[str | None, dict[str, Any]]:
    """The message and the session's state a recorded run started with.

    Raises:
        CannotForkError: The store no longer holds the run's workflow.
    """
    found = await DBOS.list_workflows_async(workflow_ids=[run_id], load_output=False)
    inputs = found[0].input if found else None
    if inputs is None:
        raise CannotForkError(
            f"the recording of run {run_id} is no longer in the store: "
            "fork from an event of a later run"
        )
    arguments = dict(zip(_RUN_ARGUMENTS, inputs["args"], strict=False))
    arguments.update(inputs["kwargs"])
    return arguments["message"], dict(arguments["state"])


async def _asked(spans: list[RunSpan], at: int) -> tuple[RunSpan, dict[str, Any]]:
    """The latest of ``spans`` a user message started, and the state it started with."""
    for span in reversed(spans):
        message, state = await _inputs(span.run_id)
        if message is not None:
            return span, state
    raise nothing_to_edit(at)


async def fork_in_store(
    backend: DurableBackend, store: SessionStore, source: Session, at: int, message: str | None
) -> Session:
    """Branch ``source`` at its event ``at`` into a new session of ``store`` (see the
    module docstring); the new session, held by the store.

    Raises:
        CannotForkError: The recording of the run is gone, or an edited fork finds no
            user message to replace.
    """
    storage = backend.storage
    spans = await backend.call(storage.runs_in, source.id)
    index = max((n for n, span in enumerate(spans) if span.after < at), default=None)
    if index is None:
        raise CannotForkError(f"event {at} belongs to no run of this session")
    span = spans[index]
    new_id = secrets.token_urlsafe(24)

    def rename(data: str) -> str:
        return renamed_json(data, new_id)

    async def make(state: dict[str, Any], upto: int, run: OpenRun | None = None) -> Session:
        await backend.call(
            storage.fork_session, source.id, new_id, state, upto, run, span.run_id, rename
        )
        return await store.open(new_id)

    if message is not None:
        asked, state = await _asked(spans[: index + 1], at)
        session = await make(state, asked.after)
        await session.start(message)
        return session
    events = await backend.call(storage.kinds, source.id, span.after, span.last)
    open_run = await backend.call(storage.open_run_of, source.id)
    finished = open_run is None or open_run.run_id != span.run_id
    if finished and CONTENT.isdisjoint(kind for seq, kind, _ in events if seq > at):
        # After a finished run's last answer: the conversation it left, its events.
        if index + 1 < len(spans):
            state = (await _inputs(spans[index + 1].run_id))[1]
        else:
            row = await backend.call(storage.load_session, source.id)
            if row is None:
                raise SessionNotFoundError(source.id)
            state = row.state
        return await make(state, span.last)
    state = (await _inputs(span.run_id))[1]
    steps = await DBOS.list_workflow_steps_async(span.run_id)
    start_step, upto = replayed_until(steps, at, span.after, answered_by(events, at))
    run = OpenRun(str(uuid.uuid4()), new_id, span.after, backend.executor_id, None)
    forked = await make(state, upto, run)
    # Queued in the store: any server process on it runs it, with this one's code.
    with SetWorkflowID(run.run_id):
        await DBOS.fork_workflow_async(
            span.run_id, start_step, application_version=DBOS.application_version
        )
    return forked
