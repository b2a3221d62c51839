"""A durable agent: each run a DBOS workflow, each model and tool call a step."""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Collection, Mapping
from typing import Any, Literal

import anyio
import sqlalchemy as sa
from dbos import DBOS, DBOSConfig, SetWorkflowID, WorkflowHandleAsync
from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSNonExistentWorkflowError

from agentrt._loop import offered_tools
from agentrt._state import RunResult
from agentrt.agent import Agent
from agentrt.deferred import Answer, Approval, ToolResult, as_answers, check_answers
from agentrt.exceptions import AgentrtError
from agentrt.messages import Message
from agentrt.team import leaf_calls

from ._codec import (
    decode_messages,
    decode_result,
    decode_tool_results,
    encode_messages,
    encode_result,
    encode_tool_results,
    restore_conversation,
    restore_speaker,
    restore_waiting,
    speaker_of,
    waiting_of,
)
from ._members import make_steps
from ._steps import FreshRun, fresh_run

__all__ = (
    "DEFAULT_STORE",
    "DurableAgent",
    "RunCancelledError",
    "RunNotFoundError",
    "StoreUnavailableError",
    "cancel",
    "launch",
    "make_steps",
    "result",
    "shutdown",
)

DEFAULT_STORE = "sqlite:///agentrt.sqlite"
"""The store :func:`launch` uses unless told otherwise: a SQLite file in the working directory."""


class RunCancelledError(AgentrtError):
    """The durable run was cancelled: it has no result and is never recovered."""


class RunNotFoundError(AgentrtError, LookupError):
    """No durable run has this id in the store."""


class StoreUnavailableError(AgentrtError):
    """The durable store cannot be opened: unreachable, refused, or not writable."""


_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_AGENTS: dict[str, DurableAgent] = {}


class DurableAgent:
    """An :class:`~agentrt.Agent` whose runs survive the death of their process.

    Each :meth:`execute` is a DBOS workflow; each model call and each tool call is a step
    whose result DBOS records in its store. When a process dies mid-run and a process
    with the same executor id starts again on the same store (:func:`launch`), DBOS
    recovers the run: recorded steps are not made again (a completed tool call is never
    executed twice; its recorded result is used), and the run goes on from the first
    step without a record. A tool call interrupted in the middle may run again: the tool
    sees its tool-call id (``current_tool_context().tool_call_id``), the key to make its
    side effect idempotent. A model call interrupted mid-stream is made again from the
    start; its abandoned chunks were never recorded and are not mixed in.

    A team (see :mod:`agentrt.team`) is durable as a whole: the model and tool calls of
    each sub-agent and each agent handed to, at any depth, are steps of the run, named
    after that agent (``transfer_task`` and ``handoff`` calls are not steps: they run
    again, and the member runs they start replay their own steps). Steps are numbered in
    the order they start, so in a durable run the delegations of one turn take turns, in
    the order of their calls. The agent that speaks after a hand-off is recorded with
    the run, and so are the members whose calls a waiting run waits on: ``after=``
    goes on with that agent, and answers a member's calls by their ids.

    Recovery finds the run's workflow by this agent's ``name``: construct the durable
    agent, under the same name, in every process that may recover its runs, before
    :func:`launch` (at import time, like a route). Each name is registered once.

    The agent itself is changed in place: its model is wrapped, and a ``tools:provide``
    handler makes the offered tools durable (its team's members are made so as they are
    made; the sub-agents themselves are left as they are). Outside a durable run (a
    plain ``agent.execute()``) both call straight through.

    The runs of one durable agent share its agent and conversation, one at a time. DBOS
    recovers a run on an event loop of its own (a background thread): in the process
    that recovers, wait for the recovered runs (:func:`result`) before starting new
    ones on the same durable agent.

    A run that ends *waiting* on deferred tool calls (an
    :class:`~agentrt.deferred.ExternalTool`'s, or one a ``tool:call:before`` handler
    deferred; see :mod:`agentrt.deferred`) is a finished workflow: its recorded result
    holds the open calls (``pending_tool_calls``). ``execute(tool_results=...)`` answers
    them in a new workflow; ``after=`` that run's id continues the conversation the store
    recorded, so any process on the store (a fresh one after ``kill -9``, another one on
    Postgres) continues it.

    Args:
        agent: The agent to run durably.
        name: The stable name of its workflow (default: ``agent.name``): 1 to 100
            letters, digits, ``_``, ``-`` or ``.``.
        unrecorded_tools: Names of tools whose calls are not steps: pure or
            idempotent tools that may simply run again when a run is recovered (as
            pydantic-ai's DBOSAgent runs every function tool). A run then records one
            step fewer per such call. They apply to the team's members too.

    Raises:
        ValueError: The name is malformed, or already registered.
        TypeError: ``agent`` is not an Agent, or ``unrecorded_tools`` is not a
            collection of names.
    """

    def __init__(
        self, agent: Agent, *, name: str | None = None, unrecorded_tools: Collection[str] = ()
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"DurableAgent wraps an Agent, got {type(agent).__name__}")
        if isinstance(unrecorded_tools, str) or not all(
            isinstance(tool, str) for tool in unrecorded_tools
        ):
            raise TypeError(
                f"unrecorded_tools is a collection of tool names, got {unrecorded_tools!r}"
            )
        name = agent.name if name is None else name
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"a durable agent's name has 1 to 100 letters, digits, '_', '-' or '.', "
                f"got {name!r}"
            )
        if name in _AGENTS:
            raise ValueError(
                f"a durable agent named {name!r} is already registered; each name is "
                f"registered once per process"
            )
        self.agent = agent
        self.name = name
        prefix = f"agentrt.{name}"
        make_steps(agent, prefix, unrecorded=unrecorded_tools)

        async def run(
            messages: list[dict[str, Any]],
            prompt: str | None,
            max_iterations: int | None,
            stream: bool,
            # Last, with a default: a run recorded before deferred calls existed is
            # recovered with its four inputs.
            tool_results: dict[str, dict[str, Any]] | None = None,
            # The agent a hand-off gave the conversation to, by name (None: the agent),
            # and the members whose calls it waits on (see waiting_of).
            speaker: str | None = None,
            waiting: dict[str, Any] | None = None,
        ) -> dict[str, Any]:
            return await self._run(
                messages, prompt, max_iterations, stream, tool_results, speaker, waiting
            )

        self._workflow_name = f"{prefix}.run"
        self._workflow = DBOS.workflow(name=self._workflow_name)(run)
        self._lock = anyio.Lock()
        _AGENTS[name] = self

    async def execute(
        self,
        prompt: str | None = None,
        *,
        run_id: str | None = None,
        max_iterations: int | None = None,
        stream: bool = False,
        tool_results: Mapping[str, ToolResult] | None = None,
        after: str | None = None,
    ) -> RunResult[str]:
        """Run the agent durably until the model gives its final answer, or the run waits.

        Runs of one durable agent are serialized, as with ``Agent.execute``. A caller
        cancelled while it waits cancels the run in the store too: a cancelled run is
        never recovered.

        Args:
            prompt: The user's message; ``None`` continues the conversation as is.
            run_id: The run's workflow id (default: a new UUID). Starting a run with
                the id of a finished one returns that run's recorded result.
            max_iterations: This run's turn limit (default: the agent's).
            stream: Call the model with ``stream()``; chunks are announced live.
            tool_results: Answers to the calls the conversation's last run left open,
                by call id, as for ``Agent.execute`` (see :mod:`agentrt.deferred`).
                They are the new run's input: a recovered run gets them again.
            after: The id of a durable run of this agent whose conversation this run
                continues, as the store recorded it (the run's input and its new
                messages), rather than the conversation this process holds: a run
                that ended waiting, continued from any process. Waits for that run to
                finish.

        Returns:
            The run's output, new messages, usage and iteration count, and the calls
            it left open (``pending_tool_calls``).

        Raises:
            TypeError: ``prompt``, ``run_id`` or ``after`` is not a string, or
                ``tool_results`` not a mapping of call ids.
            NotPendingError: ``tool_results`` names a call that is not open.
            ToolResultError: A ``tool_results`` value does not fit its call.
            RunNotFoundError: No run of this agent has the id ``after``.
            RunCancelledError: The run ``after`` was cancelled.
            Exception: Whatever ``Agent.execute`` raises (or the run ``after`` raised).
        """
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string or None, got {type(prompt).__name__}")
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise TypeError(f"run_id must be a non-empty string, got {run_id!r}")
        if after is not None and (not isinstance(after, str) or not after):
            raise TypeError(f"after must be a non-empty run id, got {after!r}")
        answers = None if tool_results is None else as_answers(tool_results)
        # A run started here under a new id is fresh: nothing of it is recorded yet.
        fresh = run_id is None or await DBOS.get_workflow_status_async(run_id) is None
        run_id = run_id or str(uuid.uuid4())
        token = fresh_run.set(FreshRun(run_id) if fresh else None)
        try:
            async with self._lock:
                if after is not None:
                    messages, record = await self._conversation_after(after)
                    await restore_conversation(self.agent, messages)
                    restore_speaker(self.agent, record.get("speaker"))
                    await restore_waiting(self.agent, record.get("waiting"))
                encoded = None
                if answers is not None:
                    # Checked here, not in the workflow: a bad answer records no run.
                    await _check_answers(self.agent, answers)
                    encoded = encode_tool_results(answers)
                return await self._execute(prompt, run_id, max_iterations, stream, encoded)
        finally:
            fresh_run.reset(token)

    async def _conversation_after(self, run_id: str) -> tuple[list[Message], dict[str, Any]]:
        """The conversation as the durable run ``run_id`` left it (its input and new
        messages), and the run's record (who speaks then, the members that wait)."""
        found = await DBOS.list_workflows_async(workflow_ids=[run_id], load_output=False)
        if not found:
            raise RunNotFoundError(f"no durable run has the id {run_id!r}")
        status = found[0]
        if status.name != self._workflow_name or status.input is None:
            raise RunNotFoundError(
                f"the durable run {run_id!r} is not a run of durable agent {self.name!r} "
                f"(it is a {status.name!r} workflow)"
            )
        record = await _record_of(run_id)  # waits for a run still going on elsewhere
        finished = decode_result(record)
        messages = [*decode_messages(status.input["args"][0]), *finished.messages]
        return messages, record

    async def _execute(
        self,
        prompt: str | None,
        run_id: str,
        max_iterations: int | None,
        stream: bool,
        tool_results: dict[str, dict[str, Any]] | None,
    ) -> RunResult[str]:
        # The conversation so far is the workflow's input: a process that recovers
        # the run starts from it, and replays the run's own steps from the records.
        messages = encode_messages(list(self.agent.conversation))
        try:
            with SetWorkflowID(run_id):
                record = await self._workflow(
                    messages,
                    prompt,
                    max_iterations,
                    stream,
                    tool_results,
                    speaker_of(self.agent),
                    waiting_of(self.agent),
                )
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await DBOS.cancel_workflow_async(run_id)
            raise
        return decode_result(record)

    async def _run(
        self,
        messages: list[dict[str, Any]],
        prompt: str | None,
        max_iterations: int | None,
        stream: bool,
        tool_results: dict[str, dict[str, Any]] | None,
        speaker: str | None,
        waiting: dict[str, Any] | None,
    ) -> dict[str, Any]:
        agent = self.agent
        # A recovery in another process: the conversation the run started from, the
        # agent that answered it then, and the members whose calls it waited on.
        await restore_conversation(agent, decode_messages(messages))
        restore_speaker(agent, speaker)
        await restore_waiting(agent, waiting)
        result = await agent.execute(
            prompt,
            max_iterations=max_iterations,
            stream=stream,
            tool_results=None if tool_results is None else decode_tool_results(tool_results),
        )
        record = encode_result(result)
        record["speaker"] = speaker_of(agent)
        record["waiting"] = waiting_of(agent)
        return record


async def _check_answers(agent: Agent, answers: Mapping[str, Answer]) -> None:
    """Refuse answers that name no call the run waits on, at any depth, or do not fit it.

    Those to a waiting member's calls are checked against its calls; the call that
    delegated to it counts as approved (see :func:`agentrt.team.route_answers`).

    Raises:
        NotPendingError: An id is not one of a call the run waits on.
        ToolResultError: An answer does not fit its call.
    """
    mine = dict(answers)
    for call_id, member in (agent._waiting or {}).items():
        leaves = {call.id for call in leaf_calls(member)}
        theirs = {key: mine.pop(key) for key in list(mine) if key in leaves}
        if theirs:
            await _check_answers(member, theirs)
            mine[call_id] = Approval("approve")
    check_answers(mine, agent.conversation.pending_calls(), await offered_tools(agent))


async def result(run_id: str) -> RunResult[str]:
    """The result of the durable run ``run_id``, waiting for it to finish.

    A process that recovers runs reads their results with this.

    Raises:
        RunCancelledError: The run was cancelled.
        RunNotFoundError: No run has this id.
    """
    return decode_result(await _record_of(run_id))


async def _record_of(run_id: str) -> dict[str, Any]:
    """The recorded output of the durable run ``run_id`` (see :func:`result`)."""
    try:
        handle: WorkflowHandleAsync[dict[str, Any]] = await DBOS.retrieve_workflow_async(run_id)
        return await handle.get_result()
    except DBOSNonExistentWorkflowError:
        raise RunNotFoundError(f"no durable run has the id {run_id!r}") from None
    except DBOSAwaitedWorkflowCancelledError:
        raise RunCancelledError(f"the durable run {run_id!r} was cancelled") from None


async def cancel(run_id: str) -> None:
    """Cancel the durable run ``run_id``: it stops at its next step and is never recovered."""
    await DBOS.cancel_workflow_async(run_id)


def shown_store(store: str) -> str:
    """``store`` as messages and logs show it: no password, and a SQLite file's full path.

    ``sqlite:///runs.sqlite`` (three slashes) is relative to the working directory,
    which a reader of a failure cannot see: the resolved path is named beside it.
    """
    url = sa.make_url(store)
    shown = url.render_as_string(hide_password=True).replace(
        "postgresql+psycopg://", "postgresql://"
    )
    path = url.database if url.get_backend_name() == "sqlite" else None
    if path and path != ":memory:" and not os.path.isabs(path):
        shown += f" (the file {os.path.abspath(path)})"
    return shown


def store_unavailable(store: str, error: BaseException, what: str) -> StoreUnavailableError:
    """The :class:`StoreUnavailableError` for ``error``: the store, its file, the reason."""
    lines = str(getattr(error, "orig", None) or error).strip().splitlines()
    reason = lines[0] if lines else type(error).__name__
    url = sa.make_url(store)
    path = url.database if url.get_backend_name() == "sqlite" else None
    hint = ""
    if path and path != ":memory:":
        # SQLite says "unable to open database file" for a missing directory: say which.
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            reason += f" (the directory {folder} does not exist)"
        if not os.path.isabs(path):
            hint = "; sqlite:///PATH (three slashes) is relative, sqlite:////PATH absolute"
    return StoreUnavailableError(f"the durable store {shown_store(store)} {what}: {reason}{hint}")


def _sqlite_engine(store: str, synchronous: str) -> sa.Engine:
    """A SQLite engine in WAL mode: readers never wait for a writer, a commit syncs once.

    The connection settings DBOS gives its own SQLite engine are kept (IMMEDIATE
    transactions, a long busy timeout, foreign keys).
    """
    engine = sa.create_engine(store)

    @sa.event.listens_for(engine, "connect")
    def configure(connection: Any, record: Any) -> None:
        connection.isolation_level = "IMMEDIATE"
        connection.execute("PRAGMA busy_timeout=30000")
        connection.execute("PRAGMA foreign_keys=ON")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")

    return engine


def launch(
    store: str = DEFAULT_STORE,
    *,
    executor_id: str | None = None,
    app_name: str = "agentrt",
    log_level: str | None = None,
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL",
) -> None:
    """Start DBOS on ``store`` and recover the runs this executor left unfinished.

    Call it once per process, after every :class:`DurableAgent` is constructed.

    Args:
        store: ``sqlite:///PATH`` (one process) or ``postgresql://...`` (several).
        executor_id: This process's name. A process that starts with the id of one
            that died recovers that process's runs. Default: ``DBOS__VMID`` from
            the environment, else ``"local"``.
        app_name: The DBOS application name.
        log_level: DBOS's log level (``"WARNING"`` hides its start-up lines);
            default: DBOS's own (``INFO``).
        sqlite_synchronous: A SQLite store runs in WAL mode; ``"FULL"`` syncs each
            commit to disk (a recorded step survives a power loss), ``"NORMAL"``
            only at checkpoints: a recorded step survives the death of the process,
            not of the machine, and each step costs about half as much.

    Raises:
        ValueError: ``store`` is neither a sqlite nor a postgresql URL, or
            ``sqlite_synchronous`` is neither ``"FULL"`` nor ``"NORMAL"``.
        StoreUnavailableError: The store cannot be opened (the message says why;
            a password in the URL is not shown).
    """
    if not isinstance(store, str) or not store.startswith(
        ("sqlite:///", "postgresql://", "postgresql+psycopg://", "postgres://")
    ):
        raise ValueError(f"store must be sqlite:///PATH or postgresql://..., got {store!r}")
    if sqlite_synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f'sqlite_synchronous is "FULL" or "NORMAL", got {sqlite_synchronous!r}')
    config: DBOSConfig = {"name": app_name, "system_database_url": store}
    if store.startswith("sqlite:///"):
        config["system_database_engine"] = _sqlite_engine(store, sqlite_synchronous)
    if executor_id is not None:
        config["executor_id"] = executor_id
    if log_level is not None:
        config["log_level"] = log_level
    DBOS(config=config)
    try:
        DBOS.launch()
    except sa.exc.SQLAlchemyError as error:
        # Not half started: a later launch() (the store back) starts afresh.
        DBOS.destroy()
        raise store_unavailable(store, error, "cannot be opened") from error


class CancelledStepFilter(logging.Filter):
    """Drops DBOS's warning for each of its tasks that is cancelled.

    DBOS logs one, naming its internals, for every step and workflow task cancelled.
    A process that cancels its runs on purpose (a stop with Ctrl-C: they stay in the
    store, to recover) says so in its own words instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record but the cancelled-task warning."""
        return not record.getMessage().startswith("Asyncio task cancelled for workflow")


def shutdown() -> None:
    """Stop DBOS in this process (its runs in flight stay in the store, to recover)."""
    DBOS.destroy()
