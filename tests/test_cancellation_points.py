"""Issue 8, cancellation contract: cancel a standard run at every event boundary in turn.

For each standard run (a text answer; a tool call then the answer; two parallel tool
calls), a ``"*"`` handler counts the agent's dispatches and cancels the caller's cancel
scope at the k-th, for every k from the first dispatch to the last. Each time:

* the cancellation propagates: ``execute`` never returns a result, the caller's scope
  catches the cancellation;
* the conversation stays consistent: every assistant tool call has exactly one tool
  message;
* the agent is back to IDLE and runs again;
* streamed (:class:`StreamAdapter` feeding a list, the producer side of
  ``agent.stream``): the events validate and end with exactly one ``stream_stopped``;
* through ``agent.stream``, whose consumer is the task being cancelled: what it read
  validates as the beginning of a session (it cannot read the ``stream_stopped`` sent
  after it left), and no task of the run is left behind.

Two ways to cancel at a boundary: ``scope.cancel()`` and a checkpoint in the handler
(the cancellation is delivered inside that very dispatch), and ``scope.cancel()`` alone
(delivered at the run's next checkpoint; a scripted run may have none before its end,
so this checks that the run still does not report success).

:class:`CancelAt` and :func:`check_consistent` are the small kit used here; the
library-level kit in ``agentrt.testing`` is a separate task.
"""

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentrt import Agent, AgentState, ModelResponse, ScriptedModel, ToolCall
from agentrt.bus import EventContext
from agentrt.messages import Message
from agentrt.models.scripted import ScriptItem
from agentrt.stream import StreamAdapter, StreamEvent, StreamStoppedEvent, validate

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


class CancelAt:
    """A ``"*"`` handler: counts dispatches and cancels :attr:`scope` at the k-th.

    Args:
        k: The dispatch to cancel at (1 is the first); 0 never cancels (a counting run).
        checkpoint: Take a checkpoint right after cancelling, so that the cancellation
            is raised inside this dispatch.
    """

    def __init__(self, k: int, *, checkpoint: bool) -> None:
        self.k = k
        self.checkpoint = checkpoint
        self.count = 0
        self.scope: anyio.CancelScope | None = None
        self.fired_at: str | None = None

    async def __call__(self, ctx: EventContext[Any, Any]) -> None:
        if self.scope is None:
            return  # not armed (the run after the cancelled one)
        self.count += 1
        if self.count == self.k:
            self.fired_at = str(ctx.event)
            self.scope.cancel()
            if self.checkpoint:
                await anyio.lowlevel.checkpoint()


def check_consistent(messages: Sequence[Message]) -> None:
    """Every assistant tool call is answered by exactly one tool message, after it."""
    called: list[str] = []
    answered: list[str] = []
    for message in messages:
        if message.role == "assistant":
            called.extend(call.id for call in message.tool_calls)
        elif message.role == "tool":
            assert message.tool_call_id in called, f"answer before call: {message}"
            answered.append(message.tool_call_id)
    assert sorted(called) == sorted(answered), (called, answered)
    assert len(set(called)) == len(called), f"duplicate tool call ids: {called}"


def make_agent(scenario: Scenario, cancel: CancelAt) -> Agent:
    model = ScriptedModel([*scenario.script(), AFTERWARDS])
    agent = Agent(model=model, tools=[add, slow_add], strict=True)
    agent.events.on("*", cancel, priority=10_000)
    return agent


async def check_usable(agent: Agent, cancel: CancelAt) -> None:
    """Idle, and a new run on the same agent works (answering from the script's end)."""
    assert agent.state is AgentState.IDLE
    check_consistent(agent.messages)
    cancel.scope = None
    model = agent.model
    assert isinstance(model, ScriptedModel)
    # The cancelled run may have stopped before its last model call: skip to the end.
    model.reset([AFTERWARDS])
    with anyio.fail_after(5):
        result = await agent.execute("again")
    assert result.output == AFTERWARDS
    check_consistent(agent.messages)
    await agent.close()


async def dispatch_count(scenario: Scenario, *, stream: bool) -> int:
    counter = CancelAt(0, checkpoint=False)
    agent = make_agent(scenario, counter)
    counter.scope = anyio.CancelScope()
    if stream:
        events: list[StreamEvent] = []

        async def sink(event: StreamEvent) -> None:
            events.append(event)

        await StreamAdapter(agent, sink).run("go")
        assert validate(events) == []
    else:
        await agent.execute("go")
    total = counter.count
    counter.scope = None
    await agent.close()
    assert total > 10
    return total


async def cancel_execute(scenario: Scenario, k: int, *, checkpoint: bool) -> None:
    cancel = CancelAt(k, checkpoint=checkpoint)
    agent = make_agent(scenario, cancel)
    returned = False
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        cancel.scope = scope
        await agent.execute("go")
        returned = True
    where = f"{scenario.name}: cancelled at dispatch {k} ({cancel.fired_at})"
    assert cancel.fired_at is not None, where
    assert not returned, f"{where}: the run reported success"
    assert scope.cancelled_caught, where
    await check_usable(agent, cancel)


async def cancel_adapter(scenario: Scenario, k: int, *, checkpoint: bool) -> None:
    cancel = CancelAt(k, checkpoint=checkpoint)
    agent = make_agent(scenario, cancel)
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        events.append(event)

    adapter = StreamAdapter(agent, sink)
    returned = False
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        cancel.scope = scope
        await adapter.run("go")
        returned = True
    where = f"{scenario.name}: cancelled at dispatch {k} ({cancel.fired_at})"
    assert not returned, f"{where}: the run reported success"
    assert scope.cancelled_caught, where
    assert adapter.result is None, where
    assert validate(events) == [], (where, validate(events))
    stops = [e for e in events if isinstance(e, StreamStoppedEvent)]
    assert len(stops) == 1, where
    assert events[-1] is stops[0], where
    await check_usable(agent, cancel)


async def cancel_agent_stream(scenario: Scenario, k: int) -> None:
    cancel = CancelAt(k, checkpoint=True)
    agent = make_agent(scenario, cancel)
    events: list[StreamEvent] = []
    tasks = asyncio.all_tasks()
    returned = False
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        cancel.scope = scope
        async with agent.stream("go") as stream:
            async for event in stream:
                events.append(event)
        returned = True
    where = f"{scenario.name}: cancelled at dispatch {k} ({cancel.fired_at})"
    assert not returned, f"{where}: the run reported success"
    assert scope.cancelled_caught, where
    # The consumer was cancelled too: it read a prefix of the session, which has no
    # stream_stopped (sent after the consumer left) and may not have reached
    # stream_started; everything else about it must hold.
    problems = [
        v
        for v in validate(events)
        if v.rule not in ("stream_stopped_missing", "stream_started_missing")
    ]
    assert problems == [], (where, problems)
    assert asyncio.all_tasks() == tasks, f"{where}: a task of the run is left"
    await check_usable(agent, cancel)


@pytest.mark.parametrize("checkpoint", [True, False], ids=["delivered-at-k", "next-checkpoint"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_execute_cancelled_at_every_event(scenario: Scenario, checkpoint: bool) -> None:
    total = await dispatch_count(scenario, stream=False)
    for k in range(1, total + 1):
        await cancel_execute(scenario, k, checkpoint=checkpoint)


@pytest.mark.parametrize("checkpoint", [True, False], ids=["delivered-at-k", "next-checkpoint"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_stream_adapter_cancelled_at_every_event(
    scenario: Scenario, checkpoint: bool
) -> None:
    total = await dispatch_count(scenario, stream=True)
    for k in range(1, total + 1):
        await cancel_adapter(scenario, k, checkpoint=checkpoint)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_agent_stream_cancelled_at_every_event(scenario: Scenario) -> None:
    total = await dispatch_count(scenario, stream=True)
    for k in range(1, total + 1):
        await cancel_agent_stream(scenario, k)
