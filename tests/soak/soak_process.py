"""The soaks, each in a process of its own: ``python -m tests.soak.soak_process MODE``.

``tests/soak/test_soak.py`` runs this module in a fresh interpreter so that the
memory figures belong to the soak alone: in a process where an earlier test freed
hundreds of MiB (10,000 concurrent streams), a leak would first fill that freed
memory and not show in the resident size. It prints one :class:`SoakReport` as JSON.

Modes:

* ``one-agent``: ``runs`` sequential runs on one agent, the conversation reset
  before each.
* ``many-agents``: ``runs`` agents, each created, run once and closed.

Runs alternate between ``execute`` and ``stream``, so that both paths' lifecycles
(the stream's task group, its adapter subscribing to the bus and leaving it) repeat
``runs / 2`` times. ``warmup`` runs come first, outside the figures: the first runs
fill caches and pools that later runs reuse.
"""

import argparse
import asyncio
import dataclasses
import json
import time
import weakref
from dataclasses import dataclass
from typing import Any

from agentrt import Agent, SystemMessage
from tests.soak.measure import handler_counts, other_tasks, rss_mib
from tests.soak.scenario import (
    EXPECTED_MESSAGES,
    INSTRUCTIONS,
    ToolCallAudit,
    executed_run_problem,
    new_agent,
    streamed_run_problem,
)

MODES = ("one-agent", "many-agents")


@dataclass(frozen=True)
class SoakReport:
    """What one soak measured and found.

    Attributes:
        mode: ``one-agent`` or ``many-agents``.
        runs: Runs measured (after the warm-up).
        warmup: Runs made before the first memory sample.
        seconds: Wall time of the measured runs.
        rss_mib: Resident memory at the start, middle and end of the measured runs.
        wrong: Runs (warm-up included) whose result or stream was not the expected one.
        first_wrong: What was wrong with the first of them.
        audited: Tool calls the user's hook saw (one per run).
        handlers_before: The bus's handler counts at the start (one-agent), or those
            of every agent before its run (many-agents).
        handlers_after: The same at the end, or those of an agent that ended with
            other counts than it started with (many-agents).
        handler_changes: Agents whose handler counts changed over their run and close.
        tasks_before: asyncio tasks besides the soak's own, at the start.
        tasks_after: The same at the end.
        agents_alive: Agents of the soak still in memory at the end (many-agents).
    """

    mode: str
    runs: int
    warmup: int
    seconds: float
    rss_mib: list[float]
    wrong: int
    first_wrong: str | None
    audited: int
    handlers_before: dict[str, int]
    handlers_after: dict[str, int]
    handler_changes: int
    tasks_before: int
    tasks_after: int
    agents_alive: int

    @property
    def growth_percent(self) -> float:
        """Resident memory growth from the start to the end of the measured runs."""
        start, _, end = self.rss_mib
        return (end - start) / start * 100

    def summary(self) -> str:
        """The figures on one line, for the closing note."""
        start, middle, end = self.rss_mib
        return (
            f"{self.runs:,} runs (half execute, half stream) after {self.warmup:,} warm-up "
            f"in {self.seconds:.1f} s ({self.runs / self.seconds:,.0f} runs/s); "
            f"RSS start {start:.1f} MiB, middle {middle:.1f} MiB, end {end:.1f} MiB: "
            f"growth {self.growth_percent:+.2f}%"
        )

    def to_json(self) -> str:
        """The report as one JSON object."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "SoakReport":
        """The report :meth:`to_json` printed."""
        fields: dict[str, Any] = json.loads(text)
        return cls(**fields)


class Tally:
    """Counts wrong runs and keeps the first problem."""

    def __init__(self) -> None:
        self.wrong = 0
        self.first: str | None = None

    def add(self, problem: str | None) -> None:
        if problem is not None:
            self.wrong += 1
            if self.first is None:
                self.first = problem


async def run_once(agent: Agent, index: int) -> str | None:
    """Run ``agent`` once, with ``execute`` for even ``index`` and ``stream`` for odd."""
    if index % 2:
        return await streamed_run_problem(agent)
    return await executed_run_problem(agent)


async def soak_one_agent(runs: int, warmup: int) -> SoakReport:
    """``warmup`` then ``runs`` sequential runs on one agent, resetting the conversation."""
    audit = ToolCallAudit()
    agent = new_agent(audit)
    tally = Tally()
    for index in range(warmup):
        await agent.reset()
        tally.add(await run_once(agent, index))
    handlers_before = handler_counts(agent.events)
    tasks_before = len(other_tasks())
    samples = [rss_mib()]
    started = time.perf_counter()
    for index in range(runs):
        await agent.reset()
        tally.add(await run_once(agent, index))
        if index + 1 == runs // 2:
            samples.append(rss_mib())
    seconds = time.perf_counter() - started
    samples.append(rss_mib())
    # The reset kept the system message, and the last run added exactly its messages.
    if agent.messages != (SystemMessage(content=INSTRUCTIONS), *EXPECTED_MESSAGES):
        tally.add(f"conversation after the last run: {agent.messages!r}")
    handlers_after = handler_counts(agent.events)
    await agent.close()
    return SoakReport(
        mode="one-agent",
        runs=runs,
        warmup=warmup,
        seconds=seconds,
        rss_mib=samples,
        wrong=tally.wrong,
        first_wrong=tally.first,
        audited=audit.calls,
        handlers_before=handlers_before,
        handlers_after=handlers_after,
        handler_changes=int(handlers_after != handlers_before),
        tasks_before=tasks_before,
        tasks_after=len(other_tasks()),
        agents_alive=0,
    )


async def soak_many_agents(runs: int, warmup: int) -> SoakReport:
    """``warmup`` then ``runs`` agents, each created, run once and closed."""
    audit = ToolCallAudit()
    tally = Tally()
    alive: weakref.WeakSet[Agent] = weakref.WeakSet()
    changes = 0
    # The handler counts of the first agent whose counts changed, else of the last one.
    counts: tuple[dict[str, int], dict[str, int]] | None = None
    changed = False

    async def lifetime(index: int) -> None:
        nonlocal changes, counts, changed
        agent = new_agent(audit)
        alive.add(agent)
        before = handler_counts(agent.events)
        async with agent:
            tally.add(await run_once(agent, index))
        if not agent.closed:
            tally.add(f"agent {index} is not closed after its async with block")
        after = handler_counts(agent.events)
        if after != before:
            changes += 1
        if not changed:
            counts = (before, after)
            changed = after != before

    for index in range(warmup):
        await lifetime(index)
    tasks_before = len(other_tasks())
    samples = [rss_mib()]
    started = time.perf_counter()
    for index in range(runs):
        await lifetime(index)
        if index + 1 == runs // 2:
            samples.append(rss_mib())
    seconds = time.perf_counter() - started
    samples.append(rss_mib())
    assert counts is not None  # runs > 0
    return SoakReport(
        mode="many-agents",
        runs=runs,
        warmup=warmup,
        seconds=seconds,
        rss_mib=samples,
        wrong=tally.wrong,
        first_wrong=tally.first,
        audited=audit.calls,
        handlers_before=counts[0],
        handlers_after=counts[1],
        handler_changes=changes,
        tasks_before=tasks_before,
        tasks_after=len(other_tasks()),
        agents_alive=len(alive),
    )


def main() -> None:
    """Run the soak the command line names and print its report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=5_000)
    args = parser.parse_args()
    soak = soak_one_agent if args.mode == "one-agent" else soak_many_agents
    report = asyncio.run(soak(args.runs, args.warmup))
    print(report.to_json())


if __name__ == "__main__":
    main()
