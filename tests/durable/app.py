"""A durable agent in a process of its own, for the crash tests (``python -m tests.durable.app``).

``python -m tests.durable.app MODE STORE WORKDIR RUN_ID`` with MODE one of:

* ``run``: start the run ``RUN_ID`` and print its output;
* ``recover``: launch (DBOS recovers this executor's unfinished runs), wait for ``RUN_ID``
  and print its output, or ``cancelled`` when it was cancelled;
* ``cancel``: cancel ``RUN_ID``;
* ``wait``: start the run ``RUN_ID`` of the agent whose calls wait (below) and print the
  ids of the calls it left open; it also writes them to ``WORKDIR/waiting``, then, when
  ``AGENTRT_TEST_BLOCK`` is set, waits forever (the test kills the process there);
* ``answer``: answer those calls in the run ``RUN_ID.answer``, continuing the conversation
  the store recorded for ``RUN_ID`` (``after=``), and print its output.

The run: the model asks for ``first`` (counts its calls in ``WORKDIR/first.count``), then
for ``slow`` (writes ``WORKDIR/slow.started`` with its tool-call id and, when
``AGENTRT_TEST_BLOCK`` is set, waits forever: the test kills the process there), then
answers. The model writes one line per call it really makes to ``WORKDIR/model.count``.
``AGENTRT_TEST_STREAM=1`` runs with ``stream=True``; ``AGENTRT_TEST_PARALLEL=1`` makes the
first turn two calls of ``first`` at once; ``AGENTRT_TEST_BLOCK_STREAM=1`` makes a streamed
answer wait forever after its second chunk (``WORKDIR/stream.started``). The executor id is
``AGENTRT_TEST_EXECUTOR``.

The agent whose calls wait (``deferred-test``): its model asks for ``locate``, an
external tool, and ``charge``, which a ``tool:call:before`` handler defers for approval;
the run ends waiting on both. Answered (``Lyon``, approved), ``charge`` runs (it writes
``WORKDIR/charge.count``; with ``AGENTRT_TEST_BLOCK_CHARGE`` set it writes
``WORKDIR/charge.started`` and waits forever first) and the model answers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from agentrt import DEFER, Agent, Approval, ExternalTool, ToolResult
from agentrt.bus import EventContext
from agentrt.durable import DurableAgent, RunCancelledError, cancel, launch, result
from agentrt.messages import ToolCall, Usage
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.tools import current_tool_context

WORKDIR = Path(os.environ.get("AGENTRT_TEST_WORKDIR", "."))


def _log(name: str, line: str) -> None:
    with (WORKDIR / name).open("a") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


class StepModel:
    """Answers by how many tool messages the request holds: a model that is the same in every
    process (a scripted model would start its script again in the recovering process)."""

    name = "steps"

    def _answer(self, request: ModelRequest) -> ModelResponse:
        results = [message.content for message in request.messages if message.role == "tool"]
        _log("model.count", str(len(results)))
        usage = Usage(1, 1, requests=1)
        calls: tuple[ToolCall, ...]
        if os.environ.get("AGENTRT_TEST_PARALLEL") == "1":
            # Two calls of one tool at once: their steps must replay in the same order.
            turns = [
                (
                    ToolCall(id="call-first-a", name="first", arguments={"n": 1}),
                    ToolCall(id="call-first-b", name="first", arguments={"n": 2}),
                ),
                (),
                (),
            ]
            done = 2
        else:
            turns = [(ToolCall(id="call-first", name="first", arguments={"n": 1}),), (), ()]
            done = 1
        if len(results) < done:
            calls = turns[0]
        elif len(results) == done:
            calls = (ToolCall(id="call-slow", name="slow", arguments={"n": 3}),)
        else:
            return ModelResponse(content="all done: " + "; ".join(results), usage=usage)
        return ModelResponse(tool_calls=calls, usage=usage)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self._answer(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = self._answer(request)
        for index in range(0, len(response.content), 7):
            yield TextDelta(response.content[index : index + 7])
            if index == 7 and os.environ.get("AGENTRT_TEST_BLOCK_STREAM"):
                # Two chunks of the final answer are out: the test kills the process.
                _log("stream.started", response.content[: index + 7])
                await anyio.sleep_forever()
        for index, call in enumerate(response.tool_calls):
            yield ToolCallDelta(index, call.id, call.name, call.arguments)
        yield UsageChunk(response.usage)


def first(n: int) -> str:
    """The first tool: its side effect must happen exactly once."""
    _log("first.count", str(n))
    return f"first done ({n})"


async def slow(n: int) -> str:
    """The second tool: blocks in the first process, until it is killed."""
    context = current_tool_context()
    _log("slow.started", context.tool_call_id if context else "?")
    if os.environ.get("AGENTRT_TEST_BLOCK"):
        await anyio.sleep_forever()
    return f"slow done ({n})"


durable = DurableAgent(Agent(model=StepModel(), tools=[first, slow]), name="crash-test")


class WaitingModel:
    """Asks for ``locate`` and ``charge``, then answers with their results (from the request)."""

    name = "waiting"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        results = [message.content for message in request.messages if message.role == "tool"]
        _log("model.count", str(len(results)))
        usage = Usage(1, 1, requests=1)
        if not results:
            calls = (
                ToolCall(id="call-locate", name="locate", arguments={}),
                ToolCall(id="call-charge", name="charge", arguments={"amount": 10}),
            )
            return ModelResponse(content="One moment.", tool_calls=calls, usage=usage)
        return ModelResponse(content="done: " + "; ".join(results), usage=usage)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        raise NotImplementedError("the waiting agent's runs do not stream")
        yield  # pragma: no cover


async def charge(amount: int) -> str:
    """Charge the customer: its side effect must happen exactly once, once approved."""
    if os.environ.get("AGENTRT_TEST_BLOCK_CHARGE"):
        _log("charge.started", str(amount))
        await anyio.sleep_forever()
    _log("charge.count", str(amount))
    return f"charged {amount}"


def hold_charges(ctx: EventContext[Any, Any]) -> None:
    """Every charge waits for a person's approval, outside the run."""
    if ctx.parameters["tool_name"] == "charge":
        ctx.output = DEFER


locate = ExternalTool("locate", "Where the user is.", {"type": "object", "properties": {}})
waiting_agent = Agent(model=WaitingModel(), tools=[locate, charge])
waiting_agent.events.on("tool:call:before", hold_charges)
waiting = DurableAgent(waiting_agent, name="deferred-test")


async def main(mode: str, store: str, run_id: str) -> None:
    launch(store, executor_id=os.environ.get("AGENTRT_TEST_EXECUTOR", "local"))
    if mode == "run":
        stream = os.environ.get("AGENTRT_TEST_STREAM") == "1"
        done = await durable.execute("go", run_id=run_id, stream=stream)
        print(done.output, flush=True)
    elif mode == "recover":
        try:
            done = await result(run_id)
        except RunCancelledError:
            print("cancelled", flush=True)
        else:
            print(done.output, flush=True)
    elif mode == "cancel":
        await cancel(run_id)
        print("cancel sent", flush=True)
    elif mode == "wait":
        done = await waiting.execute("Where am I? Charge 10.", run_id=run_id)
        ids = ",".join(call.id for call in done.pending_tool_calls)
        _log("waiting", ids)
        print(ids, flush=True)
        if os.environ.get("AGENTRT_TEST_BLOCK"):
            await anyio.sleep_forever()
    elif mode == "answer":
        answers: dict[str, ToolResult] = {
            "call-locate": "Lyon",
            "call-charge": Approval("approve"),
        }
        done = await waiting.execute(tool_results=answers, after=run_id, run_id=f"{run_id}.answer")
        print(done.output, flush=True)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
