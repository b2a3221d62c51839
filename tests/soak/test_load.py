"""Load (issue 8): 10,000 concurrent runs in one process, each result and stream exact.

One agent per run, all started in one anyio task group, over a ScriptedModel whose
every call takes 10 ms. Afterwards no task is left running and every agent's bus
has the handlers it had before.
"""

import time
from collections.abc import Awaitable, Callable

import anyio
import pytest

from agentrt import Agent, ModelRequest
from agentrt.models.scripted import ScriptItem
from tests.soak.conftest import Figures
from tests.soak.measure import handler_counts, other_tasks, rss_mib
from tests.soak.scenario import (
    ToolCallAudit,
    executed_run_problem,
    new_agent,
    respond,
    streamed_run_problem,
)

pytestmark = pytest.mark.slow

RUNS = 10_000
LATENCY = 0.010
"""Seconds each model call takes."""
TIME_LIMIT = 300.0
"""Seconds after which a hung load test fails (it takes about 20)."""


class LatentModel:
    """The model's script: :func:`respond` after ``LATENCY``, once every run is calling it.

    Each run's first model call waits until all ``runs`` runs have made theirs: no run
    gets an answer before every one of them is in flight at the same time, so the
    runs are concurrent by construction. A runtime that serialised runs would hang
    here, which ``TIME_LIMIT`` turns into a failure.
    """

    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.first_calls = 0
        self.all_in_flight = anyio.Event()

    async def __call__(self, request: ModelRequest) -> ScriptItem:
        if request.messages[-1].role == "user":
            self.first_calls += 1
            if self.first_calls == self.runs:
                self.all_in_flight.set()
            await self.all_in_flight.wait()
        await anyio.sleep(LATENCY)
        return respond(request)


async def run_concurrently(
    figures: Figures, run: Callable[[Agent], Awaitable[str | None]]
) -> None:
    """Run ``RUNS`` agents at once with ``run`` and check every run and the aftermath."""
    assert other_tasks() == set()
    model = LatentModel(RUNS)
    audit = ToolCallAudit()
    agents = [new_agent(audit, model) for _ in range(RUNS)]
    handlers_before = [handler_counts(agent.events) for agent in agents]
    problems: dict[int, str | None] = {}

    async def one(index: int) -> None:
        problems[index] = await run(agents[index])

    started = time.perf_counter()
    with anyio.fail_after(TIME_LIMIT):
        async with anyio.create_task_group() as group:
            for index in range(RUNS):
                group.start_soon(one, index)
    seconds = time.perf_counter() - started
    figures(
        f"{RUNS:,} concurrent runs in {seconds:.2f} s ({RUNS / seconds:,.0f} runs/s), "
        f"RSS afterwards (the {RUNS:,} agents open) {rss_mib():.1f} MiB"
    )

    assert model.first_calls == RUNS
    assert model.all_in_flight.is_set()
    assert len(problems) == RUNS
    wrong = {index: problem for index, problem in problems.items() if problem is not None}
    assert wrong == {}
    assert audit.calls == RUNS
    assert other_tasks() == set()
    assert [handler_counts(agent.events) for agent in agents] == handlers_before
    for agent in agents:
        await agent.close()


async def test_10000_concurrent_runs_each_return_the_exact_result(figures: Figures) -> None:
    await run_concurrently(figures, executed_run_problem)


async def test_10000_concurrent_streams_each_yield_the_exact_valid_stream(
    figures: Figures,
) -> None:
    await run_concurrently(figures, streamed_run_problem)
