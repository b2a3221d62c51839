"""The cancellation contract holds for durable runs, and a cancelled run stays cancelled.

At every event boundary of a durable run in turn, the caller is cancelled: the run never
reports success, every tool call it made is answered, usage is kept, the agent is idle,
and the store says CANCELLED: a restarted process does not recover the run.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from dbos import DBOS

from agentrt import Agent, AgentState, EventContext, ScriptedModel, ToolCall
from agentrt.durable import DurableAgent
from agentrt.models.scripted import ScriptItem
from agentrt.testing import run_violations

from .conftest import in_process_store

PROMPT = "add 2 and 3"
_names = itertools.count()


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _durable() -> DurableAgent:
    script: list[ScriptItem] = [
        [
            ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3}),
            ToolCall(id="c2", name="add", arguments={"a": 1, "b": 1}),
        ],
        "5 and 2",
    ]
    agent = Agent(model=ScriptedModel(script), tools=[add])
    return DurableAgent(agent, name=f"cancel-kit-{next(_names)}")


class CancelAt:
    """A "*" handler that cancels the caller at the k-th dispatch (0: only counts)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.count = 0
        self.event: str | None = None
        self.scope: anyio.CancelScope | None = None

    async def __call__(self, ctx: EventContext[Any, Any]) -> None:
        self.count += 1
        if self.count == self.k and self.scope is not None:
            self.event = str(ctx.event)
            self.scope.cancel()
            # Delivered inside this dispatch, not at the run's next checkpoint.
            await anyio.lowlevel.checkpoint()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with in_process_store(tmp_path_factory, "cancel-kit") as url:
        yield url


async def _violations_when_cancelled_at(k: int, stream: bool) -> tuple[int, list[str]]:
    durable = _durable()
    counter = CancelAt(k)
    durable.agent.events.on("*", counter, priority=sys.maxsize)
    run_id = f"cancel-{durable.name}"
    succeeded = False
    with anyio.CancelScope() as scope:
        counter.scope = scope
        await durable.execute(PROMPT, run_id=run_id, stream=stream)
        succeeded = True
    if k == 0:
        return counter.count, [] if succeeded else ["the uncancelled run failed"]
    found = [] if counter.event else ["the dispatch never came"]
    if succeeded:
        found.append("the run reported success")
    found.extend(run_violations(durable.agent.messages, None, prompt=PROMPT))
    if durable.agent.state is not AgentState.IDLE:
        found.append(f"the agent is {durable.agent.state}, not idle")
    status = await DBOS.get_workflow_status_async(run_id)
    if status is None or status.status != "CANCELLED":
        found.append(f"the store says {status.status if status else None}, not CANCELLED")
    return counter.count, [f"cancelled at {k} ({counter.event}): {p}" for p in found]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_a_durable_run_cancelled_at_every_event_boundary_keeps_the_contract(
    store: str, stream: bool
) -> None:
    total, _ = await _violations_when_cancelled_at(0, stream)
    assert total > 20  # the run is the one with two tool calls and two model calls
    problems: list[str] = []
    for k in range(1, total + 1):
        _, found = await _violations_when_cancelled_at(k, stream)
        problems.extend(found)
    assert problems == []
