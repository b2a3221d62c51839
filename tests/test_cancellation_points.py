"""Issue 8, cancellation contract: cancel a standard run at every event boundary in turn.

For each standard run (a text answer; a tool call then the answer; two parallel tool
calls, one of which waits), :func:`agentrt.testing.cancellation_violations` cancels the
run at its k-th dispatch, for every k from the first dispatch to the last, and checks
the cancellation contract each time (the run never reports success, the conversation
stays consistent and keeps the prompt, the stream validates and ends with one
``stream_stopped``, the usage spent is in the stream, no task is left, the agent is
idle). The run is cancelled three ways:

* ``execute``, the caller's scope cancelled;
* a :class:`~agentrt.stream.StreamAdapter` feeding a list (the producer side of
  ``agent.stream``), the caller's scope cancelled;
* the consumer of ``agent.stream``: what it read must be the beginning of a session.

and at a boundary two ways: the cancellation delivered inside the k-th dispatch, or left
to the run's next checkpoint (a scripted run may have none before its end: it must still
not report success).

After each cancelled run the same agent answers :data:`AGAIN`: its model answers from
the conversation, so the script does not depend on where the cancelled run stopped, and
counting those answers shows one cancelled run per boundary.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import anyio.lowlevel
import pytest

from agentrt import Agent, ModelResponse, ScriptedModel, ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptItem
from agentrt.testing import EventRecorder, cancellation_violations

AGAIN = "again"
AFTERWARDS = "answer after the cancelled run"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def slow_add(a: int, b: int) -> int:
    """Add two integers, taking a checkpoint first (a tool that waits)."""
    await anyio.lowlevel.checkpoint()
    return a + b


@dataclass(frozen=True)
class Scenario:
    name: str
    script: Callable[[], Sequence[ScriptItem]]


SCENARIOS = (
    Scenario("text", lambda: ["Hello there"]),
    Scenario(
        "tool-then-answer",
        lambda: [ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}), "It is 3."],
    ),
    Scenario(
        "parallel-tools",
        lambda: [
            ModelResponse(
                tool_calls=(
                    ToolCall(id="p1", name="slow_add", arguments={"a": 1, "b": 2}),
                    ToolCall(id="p2", name="add", arguments={"a": 3, "b": 4}),
                )
            ),
            "3 and 7.",
        ],
    ),
)


class Agents:
    """Makes the scenario's agents (strict, with ``add`` and ``slow_add``).

    Each model answers a run's n-th model call with the script's n-th item, and
    :data:`AGAIN` with :data:`AFTERWARDS`, counted in :attr:`afterwards`.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.script = scenario.script()
        self.afterwards = 0

    def answer(self, request: ModelRequest) -> ScriptItem:
        turn = 0
        for message in reversed(request.messages):
            if message.role == "user":
                if message.content == AGAIN:
                    self.afterwards += 1
                    return AFTERWARDS
                return self.script[turn]
            turn += message.role == "assistant"
        raise AssertionError(f"a model call without a user message: {request.messages}")

    def __call__(self) -> Agent:
        return Agent(model=ScriptedModel(self.answer), tools=[add, slow_add], strict=True)


async def boundaries(agents: Agents, *, stream: bool) -> int:
    """The dispatches of one run that nothing cancels: where the kit cancels it."""
    agent = agents()
    recorder = EventRecorder()
    agent.events.on("*", recorder)
    if stream:
        async with agent.stream("go") as events:
            async for _ in events:
                pass
    else:
        await agent.execute("go")
    count = len(recorder.events)
    await agent.close()
    assert count > 10
    return count


CHECKPOINTS = pytest.mark.parametrize(
    "checkpoint", [True, False], ids=["delivered-at-k", "next-checkpoint"]
)
EACH_SCENARIO = pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)


@CHECKPOINTS
@EACH_SCENARIO
async def test_execute_cancelled_at_every_event(scenario: Scenario, checkpoint: bool) -> None:
    agents = Agents(scenario)
    total = await boundaries(agents, stream=False)
    problems = await cancellation_violations(agents, "go", checkpoint=checkpoint, then=AGAIN)
    assert problems == []
    assert agents.afterwards == total


@CHECKPOINTS
@EACH_SCENARIO
async def test_stream_adapter_cancelled_at_every_event(
    scenario: Scenario, checkpoint: bool
) -> None:
    agents = Agents(scenario)
    total = await boundaries(agents, stream=True)
    problems = await cancellation_violations(
        agents,
        "go",
        stream="adapter",
        checkpoint=checkpoint,
        then=AGAIN,
    )
    assert problems == []
    assert agents.afterwards == total


@pytest.mark.parametrize("stream", ["adapter", "consumer"])
@EACH_SCENARIO
async def test_a_stream_cancelled_inside_any_dispatch_keeps_the_usage_spent(
    scenario: Scenario, stream: Literal["adapter", "consumer"]
) -> None:
    """Also when a handler before the adapter's takes the cancellation in the very
    dispatch that appends the assistant message: its usage is reported at the end."""
    problems = await cancellation_violations(Agents(scenario), "go", stream=stream, then=AGAIN)
    assert problems == []


@EACH_SCENARIO
async def test_agent_stream_consumer_cancelled_at_every_event(scenario: Scenario) -> None:
    agents = Agents(scenario)
    total = await boundaries(agents, stream=True)
    problems = await cancellation_violations(agents, "go", stream="consumer", then=AGAIN)
    assert problems == []
    assert agents.afterwards == total


@pytest.mark.parametrize("runner", ["asyncio.run", "anyio.run"])
def test_a_run_that_never_waits_is_cancelled_under_a_plain_event_loop(runner: str) -> None:
    # Outside the test plugin's loop: asyncio.run() names no library for sniffio (uvicorn
    # runs the server so), anyio.run() names asyncio; the run's last check finds the
    # backend without sniffio there (agentrt._runs). A hook cancels the caller's scope
    # and nothing after it waits: only that check can take the cancellation. Three runs:
    # the first check learns the backend, the later ones use it.
    import asyncio

    async def main() -> list[bool]:
        agent = Agent(model=ScriptedModel(lambda request: "done"))
        caught = []
        for _ in range(3):
            with anyio.CancelScope() as scope:
                agent.events.on("execute:after", lambda ctx: scope.cancel())
                await agent.execute("hi")
                caught.append(False)  # not reached: the run must not report success
            caught.append(scope.cancelled_caught)
            agent.events.clear()
        return caught

    caught = asyncio.run(main()) if runner == "asyncio.run" else anyio.run(main)
    assert caught == [True, True, True]
