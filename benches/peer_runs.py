"""Peer workloads 2 and 3: one agent run, and thousands at once, on agentrt and its peers.

The run, identical on every framework: the prompt, the scripted model's call of
``add(a=1, b=2)``, one hook on tool-call-before, the tool, the model's answer
"The answer is 3." (checked on every run: the model only says it once it has seen
the tool's result 3; the peers' hooks count their calls, checked before measuring).
Each peer's model is built from its own public API (peer_pydantic_ai.py,
peer_openai_agents.py, peer_strands.py); agentrt's is bench_agent.py's. The floor
is bench_agent.py's ``floor_run``: the same steps with dicts.

* Workload 2: µs per run, on a reused agent and on a fresh agent built for every
  run: agent, model and hook, while the peers' tools are decorated once at import,
  as their decorators are meant to be used (agentrt's fresh agent is also closed,
  as in bench_agent). ``measure_many``: interleaved rounds, and per framework a
  number of runs calibrated so that each framework's round takes about the same
  wall time.
* Workload 3: 1,000 and 10,000 concurrent runs, one agent each (built before the
  clock starts), the model sleeping 10 ms per call (asyncio.sleep), each framework
  in a fresh process (``python peer_runs.py --concurrent FRAMEWORK N`` prints
  ``[wall_ms, peak_rss_mib]``; the peak is VmHWM, see ``peak_rss_mib``). The ideal
  wall time is 20 ms. The floor's runs wait their two 10 ms and do floor_run's
  steps; its process imports agentrt (floor_run lives in bench_agent.py), so its
  peak RSS includes agentrt's import. The 1,000-run figures are medians of three
  processes where a process takes under 10 s, else of one. A peer whose
  10,000-run process would take over two minutes (extrapolated from its 1,000-run
  process, see GROWTH) runs fewer, as the row says.

Run alone: ``python peer_runs.py [--quick]`` (from benches/); the suite's runner
(bench_peers.py) calls ``collect``. Why a framework is n/a goes to ``peer_note``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from _harness import (
    PeerRow,
    Runner,
    measure_many,
    peak_rss_mib,
    peer_note,
    print_peer_rows,
    use_cpu_clock,
)
from peer_common import ANSWER, HOOKED, PROMPT

if TYPE_CHECKING:
    from agentrt import Agent, Model, ModelRequest, ToolCall

FRAMEWORKS = ("floor", "agentrt", "pydantic-ai", "openai-agents", "strands-agents")
PEERS = ("pydantic-ai", "openai-agents", "strands-agents")
LATENCY = 0.010  # seconds per model call in workload 3
IDEAL_MS = 2 * LATENCY * 1000  # two model calls per run
BUDGET_S = 120.0  # the longest a 10,000-run process may take before it is capped
# 10x the runs took 12-15x the wall time on every framework here, the floor included.
GROWTH = 1.5
CHILD_TIMEOUT_S = 300.0
REPEAT_BELOW_S = 10.0  # 1,000-run processes this quick are run three times (median)
WORKLOAD_2 = "one run: prompt, tool call, answer; one hook"
WORKLOAD_3 = "concurrent runs, model sleeps 10 ms per call"


@dataclass(frozen=True)
class Subject:
    """One framework's side of the run: build an agent, run the prompt once on it.

    ``new_agent(latency)`` builds an agent whose model sleeps ``latency`` seconds per
    call; ``run(agent)`` runs the prompt (resetting what the agent kept from a
    previous run) and returns the final text; ``close`` ends an agent, where the
    framework has such a step in its lifecycle.
    """

    new_agent: Callable[[float], Any]
    run: Callable[[Any], Coroutine[Any, Any, str]]
    close: Callable[[Any], Awaitable[None]] | None = None


# -- the floor and agentrt -----------------------------------------------------------------


def floor_agent(latency: float) -> float:
    """The floor has no agent: what it keeps per run is the model latency it waits."""
    return latency


def floor_subject() -> Subject:
    """The floor's run: the waits of its two model calls, then floor_run's steps."""
    from bench_agent import floor_run

    async def run(latency: float) -> str:
        await asyncio.sleep(latency)
        await asyncio.sleep(latency)
        return await floor_run(PROMPT)

    return Subject(floor_agent, run)


def agentrt_agent(latency: float, **options: Any) -> Agent:
    """bench_agent's agent (``new_agent``), given ``options`` (a name, say).

    With latency, the same agent on a ScriptedModel that sleeps before each answer.
    """
    from bench_agent import add, audit, new_agent, respond

    from agentrt import Agent

    if not latency and not options:
        return new_agent()
    agent = Agent(
        model=sleepy_model(respond, latency),
        tools=[add],
        instructions="You add numbers.",
        **options,
    )
    agent.hooks.on_tool_call_before(audit)
    return agent


def sleepy_model(script: Callable[[ModelRequest], ToolCall | str], latency: float) -> Model:
    """A ScriptedModel playing ``script``, sleeping ``latency`` seconds before each answer."""
    from agentrt import ScriptedModel

    if not latency:
        return ScriptedModel(script, record=False)

    async def slow(request: ModelRequest) -> ToolCall | str:
        await asyncio.sleep(latency)
        return script(request)

    return ScriptedModel(slow, record=False)


async def agentrt_run(agent: Agent) -> str:
    """One run of the prompt on a reset conversation; the final text."""
    await agent.reset()
    return (await agent.execute(PROMPT)).output


async def agentrt_close(agent: Agent) -> None:
    await agent.close()


def agentrt_subject() -> Subject:
    """bench_agent's agent and run (reset, execute), closed after a fresh agent's run."""
    return Subject(agentrt_agent, agentrt_run, agentrt_close)


def subject(framework: str) -> Subject:
    """The framework's Subject; imports the framework (ImportError if it is not installed)."""
    if framework == "floor":
        return floor_subject()
    if framework == "agentrt":
        return agentrt_subject()
    if framework == "pydantic-ai":
        import peer_pydantic_ai

        return Subject(peer_pydantic_ai.new_agent, peer_pydantic_ai.run)
    if framework == "openai-agents":
        import peer_openai_agents

        return Subject(peer_openai_agents.new_agent, peer_openai_agents.run)
    if framework == "strands-agents":
        import peer_strands

        return Subject(peer_strands.new_agent, peer_strands.run)
    raise ValueError(f"unknown framework {framework!r}")


def check_output(framework: str, output: str) -> None:
    if output != ANSWER:
        raise AssertionError(f"{framework} answered {output!r}, not {ANSWER!r}")


async def check(framework: str, s: Subject) -> None:
    """One run on a fresh agent: the right answer, and the peer's hook called once."""
    before = HOOKED.calls
    agent = s.new_agent(0.0)
    check_output(framework, await s.run(agent))
    if s.close is not None:
        await s.close(agent)
    if framework in PEERS and HOOKED.calls != before + 1:
        raise AssertionError(f"{framework}'s tool-call-before hook ran {HOOKED.calls - before}x")


# -- workload 2: one run ---------------------------------------------------------------------


def floor_runner() -> Runner:
    from bench_agent import floor_run

    async def runs(n: int) -> None:
        for _ in range(n):
            check_output("floor", await floor_run(PROMPT))

    return runs


def reused_runner(framework: str, s: Subject) -> Runner:
    agent = s.new_agent(0.0)

    async def runs(n: int) -> None:
        for _ in range(n):
            check_output(framework, await s.run(agent))

    return runs


def fresh_runner(framework: str, s: Subject) -> Runner:
    async def runs(n: int) -> None:
        for _ in range(n):
            agent = s.new_agent(0.0)
            check_output(framework, await s.run(agent))
            if s.close is not None:
                await s.close(agent)

    return runs


async def calibrate(runner: Runner, seconds: float) -> int:
    """How many operations of ``runner`` take about ``seconds`` (its runs warm it up too)."""
    n = 1
    while True:
        start = time.perf_counter()
        await runner(n)
        elapsed = time.perf_counter() - start
        if elapsed >= min(0.05, seconds / 2):
            return max(1, round(n * seconds / elapsed))
        n *= 4


async def one_run_rows(subjects: dict[str, Subject], quick: bool) -> list[PeerRow]:
    seconds, rounds = (0.05, 3) if quick else (0.25, 7)
    rows = []
    cases = (
        ("reused agent", reused_runner, 30.0),
        ("fresh agent each run", fresh_runner, 50.0),
    )
    for case, make, target in cases:
        runners = {"floor": floor_runner()}
        runners.update({name: make(name, s) for name, s in subjects.items()})
        counts = {name: await calibrate(runner, seconds) for name, runner in runners.items()}
        figures = await measure_many(runners, n=counts, rounds=rounds)
        rows.append(
            PeerRow(WORKLOAD_2, case, "µs", figures, f"<= {target:.0f} µs", met(figures, target))
        )
    return rows


# -- workload 3: concurrent runs, one process per framework ----------------------------------


async def concurrent(
    framework: str, count: int, make: Callable[[str], Subject] = subject
) -> tuple[float, float]:
    """``count`` runs at once, one agent each: wall ms and the process's peak RSS MiB.

    ``make`` gives the framework's Subject (peer_teams.py: a team is the agent).
    """
    s = make(framework)
    # One run first, untimed, for every framework alike: what is measured is the cost of
    # concurrency, not the first use in a process (lazy imports, schemas built on demand).
    check_output(framework, await s.run(s.new_agent(LATENCY)))
    agents = [s.new_agent(LATENCY) for _ in range(count)]
    hooked = HOOKED.calls
    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(s.run(agent)) for agent in agents]
    wall = time.perf_counter() - start
    for task in tasks:
        check_output(framework, task.result())
    if framework in PEERS and HOOKED.calls - hooked != count:
        raise AssertionError(f"{framework}'s hook ran {HOOKED.calls - hooked}x for {count} runs")
    return wall * 1000.0, peak_rss_mib()


def concurrent_in_child(
    framework: str, count: int, script: str = __file__
) -> tuple[float, float, float]:
    """Run ``concurrent`` in a fresh process: wall ms, peak MiB, and the process's seconds.

    The process is ``python SCRIPT --concurrent FRAMEWORK COUNT`` (this module by default).
    """
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(script), "--concurrent", framework, str(count)],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"still running after {CHILD_TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise RuntimeError(lines[-1])
    wall_ms, peak_mib = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(wall_ms), float(peak_mib), time.perf_counter() - start


def processes(
    framework: str, count: int, repeat: bool, script: str = __file__
) -> tuple[float, float, float]:
    """Medians of ``concurrent_in_child``: of three processes if ``repeat`` and they are quick."""
    samples = [concurrent_in_child(framework, count, script)]
    if repeat and samples[0][2] < REPEAT_BELOW_S:
        samples += [concurrent_in_child(framework, count, script) for _ in range(2)]
    wall, peak, seconds = (statistics.median(figure) for figure in zip(*samples, strict=True))
    return wall, peak, seconds


def concurrent_rows(frameworks: list[str], quick: bool, run_us: float | None) -> list[PeerRow]:
    """Workload 3's rows: wall and peak RSS of 1,000 (and, unless quick, 10,000) runs."""
    walls: dict[str, float] = {}
    peaks: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for framework in frameworks:
        try:
            walls[framework], peaks[framework], seconds[framework] = processes(
                framework, 1_000, repeat=not quick
            )
        except Exception as error:
            peer_note(framework, f"{WORKLOAD_3}, 1,000 runs", error)
    rows = [
        PeerRow(
            WORKLOAD_3,
            f"1,000 runs: wall (ideal {IDEAL_MS:.0f} ms)",
            "ms",
            walls,
            "<= 100 ms",
            met(walls, 100.0),
        ),
        PeerRow(WORKLOAD_3, "1,000 runs: peak RSS", "MiB", peaks, "<= 60 MiB", met(peaks, 60.0)),
    ]
    if quick:
        return rows

    walls, peaks, capped = {}, {}, []
    for framework, taken in seconds.items():
        count = 10_000
        # Extrapolated from its 1,000-run process (imports and all), times GROWTH: the
        # cost per run grows with the runs in flight (asyncio's too: see the floor).
        if taken * 10 * GROWTH > BUDGET_S:
            count = max(1_000, int(BUDGET_S / (taken * GROWTH)) * 1_000)
            capped.append(f"{framework} {count:,}")
        try:
            walls[framework], peaks[framework], _ = processes(framework, count, repeat=False)
        except Exception as error:
            peer_note(framework, f"{WORKLOAD_3}, {count:,} runs", error)
    wall_case, rss_case = f"10,000 runs: wall (ideal {IDEAL_MS:.0f} ms)", "10,000 runs: peak RSS"
    if capped:
        cap = f"{', '.join(capped)} runs: {BUDGET_S / 60:.0f} min cap"
        wall_case, rss_case = f"{wall_case[:-1]}; {cap})", f"{rss_case} ({cap})"
    if run_us is None:
        wall_target, wall_met = "<= 2x(20 ms + 10,000 x one run)", None
    else:
        limit = 2 * (IDEAL_MS + 10_000 * run_us / 1000)
        wall_target = f"<= 2x(20 ms + 10,000 x {run_us:.1f} µs) = {limit:.0f} ms"
        wall_met = met(walls, limit)
    return [
        *rows,
        PeerRow(WORKLOAD_3, wall_case, "ms", walls, wall_target, wall_met),
        PeerRow(WORKLOAD_3, rss_case, "MiB", peaks, "<= 200 MiB", met(peaks, 200.0)),
    ]


def met(figures: dict[str, float], limit: float) -> bool | None:
    """Whether agentrt's figure is within ``limit``; None when agentrt has none."""
    agentrt = figures.get("agentrt")
    return None if agentrt is None else agentrt <= limit


# -- the module interface --------------------------------------------------------------------


async def available() -> dict[str, Subject]:
    """agentrt and each peer that imports and passes the check run (peer_note says why not)."""
    subjects = {}
    for framework in FRAMEWORKS[1:]:
        try:
            s = subject(framework)
            await check(framework, s)
        except Exception as error:
            peer_note(framework, "one run (import and check run)", error)
            continue
        subjects[framework] = s
    return subjects


def collect(quick: bool) -> list[PeerRow]:
    """Workloads 2 and 3 on agentrt and the peers; ``quick``: fewer rounds, 1,000 runs only."""

    async def in_process() -> tuple[list[str], list[PeerRow]]:
        subjects = await available()
        return list(subjects), await one_run_rows(subjects, quick)

    frameworks, rows = asyncio.run(in_process())
    run_us = rows[0].figures.get("agentrt")  # a run on a reused agent: no construction
    return rows + concurrent_rows(["floor", *frameworks], quick, run_us)


def script_main(
    doc: str | None,
    collect: Callable[[bool], list[PeerRow]],
    frameworks: Sequence[str],
    make: Callable[[str], Subject] = subject,
) -> None:
    """The command line of a module with concurrent runs (this one, peer_teams.py).

    ``--quick`` prints its rows in a smoke run, ``--cpu-clock`` times the runs made in
    this process by its CPU time (``_harness.use_cpu_clock``: the concurrent rows keep
    the wall clock); ``--concurrent FRAMEWORK N`` is the child process of
    ``concurrent_in_child``: N runs of ``make(FRAMEWORK)`` at once.
    """
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, 1,000 runs only")
    parser.add_argument(
        "--cpu-clock",
        action="store_true",
        help="time the runs in this process by CPU time (a busy machine); not for quoting",
    )
    parser.add_argument(
        "--concurrent",
        nargs=2,
        metavar=("FRAMEWORK", "N"),
        help="in this process: N concurrent runs on FRAMEWORK; prints [wall_ms, peak_rss_mib]",
    )
    args = parser.parse_args()
    if args.concurrent:
        framework, count = args.concurrent[0], int(args.concurrent[1])
        print(json.dumps(asyncio.run(concurrent(framework, count, make))))
        return
    if args.cpu_clock:
        use_cpu_clock()
    print_peer_rows(collect(args.quick), frameworks)


def main() -> None:
    script_main(__doc__, collect, FRAMEWORKS)


if __name__ == "__main__":
    main()
