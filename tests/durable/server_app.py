"""The target of the server crash tests: ``agentrt serve tests.durable.server_app:make``.

Each session's agent answers from its conversation alone (the same in every server
process: a recovered run asks the model again from the same messages). The first user
message of the run picks the scenario:

* ``tools``: ``first`` (counts its calls in ``WORKDIR/first.count``), then ``slow``
  (writes its tool-call id to ``WORKDIR/slow.started``; with ``AGENTRT_TEST_BLOCK`` set it
  then waits forever: the test kills the server there; with ``AGENTRT_TEST_GATE`` set, until
  the test writes ``WORKDIR/slow.open``), then the answer;
* ``reasoned``: as ``tools``, each answer streamed after a reasoning of its own;
* ``confirm``: ``delete_file``, which asks for confirmation first (counts its calls in
  ``WORKDIR/delete.count``), then the answer;
* ``color``: ``change_color``, a tool an AG-UI client declares and runs, then the answer;
* ``all``: ``first``, ``delete_file`` (asks), ``slow``, then the answer;
* ``long N``: an answer of N streamed deltas (no tool); with ``AGENTRT_TEST_BLOCK`` set, the
  model writes ``WORKDIR/stream.started`` after half of them and waits forever;
* ``paced N``: an answer of N deltas, one every 50 ms (``WORKDIR/stream.started`` after the
  first).
* ``weather``: reasoning, then :data:`WEATHER` streamed in 4-character deltas; with
  ``AGENTRT_TEST_BLOCK`` set, the model writes ``WORKDIR/stream.started`` after
  :data:`WEATHER_CUT` and waits forever.

``WORKDIR`` is ``AGENTRT_TEST_WORKDIR``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from agentrt.agent import Agent
from agentrt.messages import ToolCall, Usage
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.tools import current_tool_context, tool

WORKDIR = Path(os.environ.get("AGENTRT_TEST_WORKDIR", "."))

PLANS: dict[str, list[ToolCall]] = {
    "tools": [
        ToolCall(id="call-first", name="first", arguments={"n": 1}),
        ToolCall(id="call-slow", name="slow", arguments={"n": 3}),
    ],
    "reasoned": [
        ToolCall(id="call-first", name="first", arguments={"n": 1}),
        ToolCall(id="call-slow", name="slow", arguments={"n": 3}),
    ],
    "confirm": [ToolCall(id="call-delete", name="delete_file", arguments={"path": "notes.txt"})],
    # change_color is an AG-UI frontend tool: the client declares it and runs it.
    "color": [ToolCall(id="call-color", name="change_color", arguments={"color": "teal"})],
    "all": [
        ToolCall(id="call-first", name="first", arguments={"n": 1}),
        ToolCall(id="call-delete", name="delete_file", arguments={"path": "notes.txt"}),
        ToolCall(id="call-slow", name="slow", arguments={"n": 3}),
    ],
}

WEATHER_REASONING = "The user asks about Lisbon. I should look it up."
WEATHER = "Let me check the weather in Lisbon first."
WEATHER_CUT = WEATHER[:28]
"""What the ``weather`` answer has streamed when a blocked model stops: 7 deltas."""


def _log(name: str, line: str) -> None:
    with (WORKDIR / name).open("a") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


class PlanModel:
    """Follows the plan its run's user message names, a step per tool result so far."""

    name = "plan"

    def _answer(self, request: ModelRequest) -> ModelResponse:
        users = [m for m in request.messages if m.role == "user"]
        prompt = users[-1].content if users else ""
        # The tool results of this run: those after its user message.
        last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
        results = [m.content for m in request.messages[last_user:] if m.role == "tool"]
        usage = Usage(1, 1, requests=1)
        if prompt.startswith(("long ", "paced ")):
            return ModelResponse(content="", usage=usage)
        if prompt == "weather":
            return ModelResponse(content=WEATHER, reasoning=WEATHER_REASONING, usage=usage)
        plan = PLANS.get(prompt, [])
        if len(results) < len(plan):
            call = plan[len(results)]
            # Ids unique in the session: a second run of a plan makes calls of its own.
            unique = call.model_copy(update={"id": f"{call.id}-{len(users)}"})
            return ModelResponse(tool_calls=(unique,), usage=usage)
        return ModelResponse(content="all done: " + "; ".join(results), usage=usage)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self._answer(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        users = [m for m in request.messages if m.role == "user"]
        prompt = users[-1].content if users else ""
        if prompt.startswith("paced "):
            for index in range(int(prompt.split()[1])):
                yield TextDelta(f"p{index} ")
                if index == 0:
                    _log("stream.started", "0")
                await anyio.sleep(0.05)
            yield UsageChunk(Usage(1, 1, requests=1))
            return
        if prompt.startswith("long "):
            count = int(prompt.split()[1])
            for index in range(count):
                if index == count // 2 and os.environ.get("AGENTRT_TEST_BLOCK"):
                    _log("stream.started", str(index))
                    await anyio.sleep_forever()
                yield TextDelta(f"d{index} ")
            yield UsageChunk(Usage(1, 1, requests=1))
            return
        if prompt == "weather":
            yield ReasoningDelta(WEATHER_REASONING)
            for index in range(0, len(WEATHER), 4):
                if index == len(WEATHER_CUT) and os.environ.get("AGENTRT_TEST_BLOCK"):
                    _log("stream.started", str(index))
                    await anyio.sleep_forever()
                yield TextDelta(WEATHER[index : index + 4])
            yield UsageChunk(Usage(1, 1, requests=1))
            return
        response = self._answer(request)
        if prompt == "reasoned":
            tools = sum(1 for m in request.messages if m.role == "tool")
            yield ReasoningDelta(f"after {tools} tool results, ")
            yield ReasoningDelta("the plan says what comes next")
        for index in range(0, len(response.content), 7):
            yield TextDelta(response.content[index : index + 7])
        for index, call in enumerate(response.tool_calls):
            yield ToolCallDelta(index, call.id, call.name, call.arguments)
        yield UsageChunk(response.usage)


def first(n: int) -> str:
    """The first tool: its side effect must happen exactly once."""
    _log("first.count", str(n))
    return f"first done ({n})"


async def slow(n: int) -> str:
    """A slow tool: blocks in the first server process, until it is killed."""
    context = current_tool_context()
    _log("slow.started", context.tool_call_id if context else "?")
    if os.environ.get("AGENTRT_TEST_BLOCK"):
        await anyio.sleep_forever()
    if os.environ.get("AGENTRT_TEST_GATE"):
        # Held until the test opens the gate: a file another process (the test) writes,
        # which no event of this process can tell; a bounded poll.
        with anyio.fail_after(120):
            while not (WORKDIR / "slow.open").exists():  # noqa: ASYNC110
                await anyio.sleep(0.02)
    return f"slow done ({n})"


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call)."""
    _log("delete.count", path)
    return f"deleted {path}"


def make() -> Agent:
    """A session's agent."""
    return Agent(model=PlanModel(), tools=[first, slow, delete_file], name="crash-server")
