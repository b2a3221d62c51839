"""The steps of a durable run: each model call and each tool call, recorded by DBOS.

Outside a DBOS workflow (a plain ``agent.execute()``) the wrappers call straight
through: a durable agent still works as an ordinary one.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from dbos import DBOS

from agentrt.deferred import ExternalTool
from agentrt.exceptions import AgentrtError, ToolError
from agentrt.messages import ToolCall, new_tool_call_id, to_text
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.tools import Tool, current_tool_context

from ._codec import decode_response, encode_response

__all__ = (
    "DurableModel",
    "DurableReplayError",
    "FreshRun",
    "RecordedToolError",
    "StepJournal",
    "durable_tool",
    "fresh_run",
    "record_pending",
    "step_journal",
)


class StepJournal(Protocol):
    """Keeps something in step with a durable run's steps (the server's event log).

    Whatever :meth:`finished` returns is recorded with the step's output; a run that
    is recovered gets it back from :meth:`replayed` where the step would have run.
    The server's journal records there how far the run's events had got, so that a
    recovered run, which produces its events again, writes only those that were
    never written.
    """

    def started(self) -> None:
        """The step runs for real: it has no record (the first one past a recovery)."""

    async def finished(self) -> Any:
        """The step ran, and the run saw all it produced: data to record with it."""

    def replayed(self, data: Any) -> None:
        """A recorded step was replayed, after the run saw what its replay produced."""

    def muted(self) -> Any:
        """A context manager: what the run produces inside it is a replay's echo."""


step_journal: ContextVar[StepJournal | None] = ContextVar("agentrt_step_journal", default=None)
"""The journal of the durable run in this context, if it has one."""


class DurableReplayError(AgentrtError):
    """A recovered run took another path than the one its records describe.

    The steps of a workflow are matched by their position: a run whose handlers or
    tools decide differently on replay (a random choice outside a step, a tool table
    changed between the crash and the restart) cannot reuse the records.
    """


class RecordedToolError(ToolError):
    """A tool call's recorded failure, raised again when a recovered run replays it."""


@dataclass(slots=True)
class FreshRun:
    """A durable run this process started afresh: none of its steps is recorded yet.

    Such a run need not ask the store, before each step, whether the step was
    recorded: it was not. And a model answer that asks for no tool (most often the
    final one) is not recorded as it comes: the run's result records it. It is held
    back (``pending``) and recorded only if another step follows, at its place in
    the run, before that step; a process that dies before then asks the model again,
    which nothing recorded depended on.

    Attributes:
        workflow_id: The run's workflow id.
        pending: The step name and record of an answer held back.
    """

    workflow_id: str
    pending: tuple[str, dict[str, Any]] | None = None


fresh_run: ContextVar[FreshRun | None] = ContextVar("agentrt_fresh_run", default=None)
"""The fresh run of this context (set around the workflow by whoever starts it)."""


def _fresh() -> FreshRun | None:
    run = fresh_run.get()
    return run if run is not None and run.workflow_id == DBOS.workflow_id else None


async def _record(step_name: str, record: dict[str, Any]) -> None:
    async def recorded() -> dict[str, Any]:
        return record

    await DBOS.run_step_async({"name": step_name}, recorded)


async def record_pending() -> None:
    """Record the answer the fresh run of this context holds back, if any.

    Called before each step of a durable run (and before anything else that takes a
    place in its records, such as a DBOS ``recv``): the answer keeps its place.
    """
    run = _fresh()
    if run is not None and run.pending is not None:
        (step_name, record), run.pending = run.pending, None
        await _record(step_name, record)


def _in_workflow() -> bool:
    # Inside a step (a model that calls a tool itself) there is nothing more to record.
    return DBOS.workflow_id is not None and DBOS.step_id is None


def _used_ids(request: ModelRequest) -> set[str]:
    return {
        call.id
        for message in request.messages
        if message.role == "assistant"
        for call in message.tool_calls
    }


def _distinct(response: ModelResponse, request: ModelRequest) -> ModelResponse:
    """``response`` with a fresh id for each call whose id is empty or already used.

    The loop would otherwise make them after the step, at random: a replay would then
    see other ids than the recorded tool steps. Made inside the step, they are recorded.
    """
    used = _used_ids(request)
    calls: list[ToolCall] = []
    changed = False
    for call in response.tool_calls:
        if not call.id or call.id in used:
            call = call.model_copy(update={"id": new_tool_call_id()})
            changed = True
        used.add(call.id)
        calls.append(call)
    if not changed:
        return response
    response.tool_calls = tuple(calls)
    return response


def _replayed_chunks(response: ModelResponse) -> list[StreamChunk]:
    """The chunks that assemble into ``response``: a recorded stream, given again at once."""
    chunks: list[StreamChunk] = []
    if response.reasoning is not None:
        chunks.append(ReasoningDelta(response.reasoning))
    if response.content:
        chunks.append(TextDelta(response.content))
    for index, call in enumerate(response.tool_calls):
        chunks.append(ToolCallDelta(index, call.id, call.name, call.arguments))
    chunks.append(UsageChunk(response.usage, response.finish_reason))
    return chunks


class DurableModel:
    """A model whose calls are DBOS steps: a recovered run reuses each recorded answer.

    Args:
        model: The model that answers.
        step_name: The name of its steps in the workflow's records.
    """

    def __init__(self, model: Model, step_name: str) -> None:
        self.wrapped = model
        self.step_name = step_name
        # A structured run asks whether the model takes a JSON schema.
        self.supports_output_schema = getattr(model, "supports_output_schema", False) is True

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.wrapped.name

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.wrapped.complete(request)
        if not isinstance(response, ModelResponse):
            raise TypeError(
                f"{type(self.wrapped).__name__}.complete() returned "
                f"{type(response).__name__}, not a ModelResponse"
            )
        return response

    async def _keep(
        self, run: FreshRun, record: dict[str, Any], journal: StepJournal | None
    ) -> None:
        """Record a fresh run's answer now if it asks for tools, else hold it back."""
        if journal is not None:
            record["journal"] = await journal.finished()
        if record["tool_calls"]:
            await _record(self.step_name, record)
        else:
            run.pending = (self.step_name, record)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``; inside a durable run, once per recorded step."""
        if not _in_workflow():
            return await self.wrapped.complete(request)
        journal = step_journal.get()
        run = _fresh()
        if run is not None:
            await record_pending()
            if journal is not None:
                journal.started()
            response = _distinct(await self._complete(request), request)
            await self._keep(run, encode_response(response), journal)
            return response
        ran = False

        async def call() -> dict[str, Any]:
            nonlocal ran
            ran = True
            if journal is not None:
                journal.started()
            record = encode_response(_distinct(await self._complete(request), request))
            if journal is not None:
                record["journal"] = await journal.finished()
            return record

        record = await DBOS.run_step_async({"name": self.step_name}, call)
        if journal is not None and not ran:
            journal.replayed(record.get("journal"))
        return decode_response(record)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream ``request``'s answer; inside a durable run the step records the whole answer.

        Chunks reach the run as the model yields them. If the process dies mid-stream,
        the recovered run calls the model again from the start: the abandoned chunks
        were never recorded, so they are not mixed into the new answer. A replayed
        (recorded) call yields its answer as one chunk per part.
        """
        if not _in_workflow():
            async for chunk in self.wrapped.stream(request):
                yield chunk
            return
        run = _fresh()
        if run is not None:
            async for chunk in self._stream_fresh(run, request):
                yield chunk
            return
        send, receive = anyio.create_memory_object_stream[StreamChunk](math.inf)
        journal = step_journal.get()
        # Set once the run has taken every chunk in: what the journal records is then
        # complete (the run's events of the last chunk included).
        drained = anyio.Event()
        ran = False

        async def call() -> dict[str, Any]:
            nonlocal ran
            ran = True
            if journal is not None:
                journal.started()
            assembler = ResponseAssembler()
            claim = _IdClaimer(request)
            async with send:
                async for chunk in self.wrapped.stream(request):
                    chunk = claim(chunk)
                    assembler.add(chunk)
                    send.send_nowait(chunk)
            record = encode_response(assembler.response())
            if journal is not None:
                await drained.wait()
                record["journal"] = await journal.finished()
            return record

        async def step() -> dict[str, Any]:
            try:
                recorded: dict[str, Any] = await DBOS.run_step_async(
                    {"name": self.step_name}, call
                )
                return recorded
            finally:
                send.close()

        # A task of its own, always joined below, rather than a task group: a task
        # group's cancel scope would stay open across this generator's yields and
        # interleave with the consumer's scopes. (DBOS runs on asyncio only.)
        task = asyncio.ensure_future(step())
        try:
            with receive:
                async for chunk in receive:
                    yield chunk
            drained.set()
            record = await task
        finally:
            if not task.done():
                task.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait([task])
            if not task.cancelled():
                task.exception()  # retrieved: raised above, or superseded by ours
        if not ran:
            # The recorded answer again, in one chunk per part: an echo of events the
            # journal (when there is one) already has.
            with nullcontext() if journal is None else journal.muted():
                for chunk in _replayed_chunks(decode_response(record)):
                    yield chunk
            if journal is not None:
                journal.replayed(record.get("journal"))

    async def _stream_fresh(
        self, run: FreshRun, request: ModelRequest
    ) -> AsyncIterator[StreamChunk]:
        """A fresh run's streamed call: straight through, recorded (or held back) at its end."""
        await record_pending()
        journal = step_journal.get()
        if journal is not None:
            journal.started()
        assembler = ResponseAssembler()
        claim = _IdClaimer(request)
        chunks = self.wrapped.stream(request)
        try:
            async for chunk in chunks:
                chunk = claim(chunk)
                assembler.add(chunk)
                yield chunk
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        # Here the run has taken every chunk in (it asked for the next one).
        await self._keep(run, encode_response(assembler.response()), journal)


class _IdClaimer:
    """Gives each streamed tool call a fresh id when its own is empty or already used.

    Settled inside the step, recorded with the answer (see :func:`_distinct`).
    """

    __slots__ = ("_opened", "_used")

    def __init__(self, request: ModelRequest) -> None:
        self._used = _used_ids(request)
        self._opened: set[int] = set()

    def __call__(self, chunk: StreamChunk) -> StreamChunk:
        if type(chunk) is ToolCallDelta and chunk.index not in self._opened:
            self._opened.add(chunk.index)
            if not chunk.id or chunk.id in self._used:
                chunk = ToolCallDelta(chunk.index, new_tool_call_id(), chunk.name, chunk.arguments)
            self._used.add(chunk.id or "")
        return chunk


class _DurableTool(Tool[Any, Any]):
    """A tool whose calls are DBOS steps keyed by the tool call (see :func:`durable_tool`)."""

    __slots__ = ("_step_name", "wrapped")

    wrapped: Tool[Any, Any]
    _step_name: str

    async def run(self, arguments: dict[str, Any]) -> Any:
        """Run the tool once per tool call: a recovered run reuses the recorded result."""
        context = current_tool_context()
        if not _in_workflow() or context is None:
            return await self.wrapped.run(arguments)
        call_id = context.tool_call_id
        failure: ToolError | None = None
        journal = step_journal.get()
        ran = False

        async def outcome() -> dict[str, Any]:
            nonlocal failure
            try:
                result = await self.wrapped.run(arguments)
                return {"id": call_id, "text": to_text(result)}
            except ToolError as error:
                failure = error
                return {"id": call_id, "error": str(error)}
            except ValueError as error:
                # Not renderable as text: recorded as the failure the loop would report.
                failure = ToolError(
                    f"tool {self.name!r} returned a value that cannot be rendered as text "
                    f"({error})"
                )
                return {"id": call_id, "error": str(failure)}

        async def call() -> dict[str, Any]:
            nonlocal ran
            ran = True
            if journal is not None:
                journal.started()
            record = await outcome()
            if journal is not None:
                record["journal"] = await journal.finished()
            return record

        await record_pending()
        record = await DBOS.run_step_async({"name": self._step_name}, call)
        if journal is not None and not ran:
            journal.replayed(record.get("journal"))
        if record["id"] != call_id:
            raise DurableReplayError(
                f"the recorded step of tool {self.name!r} answers call {record['id']!r}, "
                f"this run is at call {call_id!r}"
            )
        if "error" in record:
            raise failure if failure is not None else RecordedToolError(record["error"])
        return record["text"]


def durable_tool(tool: Tool[Any, Any], step_prefix: str) -> Tool[Any, Any]:
    """``tool`` with each call a DBOS step named ``{step_prefix}.tool.{name}``.

    An external tool is returned as it is: it never runs in the agent, so there is
    nothing to record (its result comes in a later run's input). A tool durable under
    another name already (a sub-agent that is another durable agent's too) is named anew.
    """
    if isinstance(tool, ExternalTool):
        return tool
    if isinstance(tool, _DurableTool):
        if tool._step_name == f"{step_prefix}.tool.{tool.name}":
            return tool
        tool = tool.wrapped
    # A copy of the Tool's own fields (name, schema, timeout, confirmation): the
    # analysis of the function is not made again.
    durable = Tool.__new__(_DurableTool)
    for slot in Tool.__slots__:
        object.__setattr__(durable, slot, getattr(tool, slot))
    durable.wrapped = tool
    durable._step_name = f"{step_prefix}.tool.{tool.name}"
    return durable
