"""Durable runs: one run (prompt -> add tool call -> answer) in memory and durable on SQLite
and on Postgres, agentrt's ``DurableAgent`` beside pydantic-ai's ``DBOSAgent``, in the same
process and run.

Both frameworks run on the same DBOS instance and store (agentrt.durable.launch: SQLite
in WAL mode, each ``synchronous`` setting in turn, then Postgres), with a zero-latency
scripted model (agentrt: bench_agent's ``ScriptedModel``; pydantic-ai: peer_pydantic_ai's
``FunctionModel``) and one tool-call-before hook each. Each row's in-memory and durable
figures come from interleaved rounds (``_harness.measure``); the overhead is durable minus
in memory. Target: agentrt's durable overhead at most half of pydantic-ai's.

What each durable run records differs: agentrt makes each model call that asks for tools
*and each tool call* a step (a completed tool call never runs again on recovery), and
records the final answer with the run's result; pydantic-ai's DBOSAgent makes both model
calls steps and runs plain function tools inside the workflow (not recorded). Both come
to six commits per run.

The "tool unrecorded" row is agentrt with ``add`` in ``unrecorded_tools``: the records
of pydantic-ai's run (the tool may run again on recovery; one step fewer).

The DBOS floor row is a workflow of two empty steps: what any integration recording
two steps per run pays DBOS at least (the last column: that floor over pydantic-ai's
overhead; below it, no such integration can go).

Postgres: ``AGENTRT_BENCH_POSTGRES`` (a server URL without a database), else a private
server started from Debian's binaries, else its rows are left out (see
bench_durable_stream.py).

Run with ``nox -s bench`` or ``python benches/bench_durable.py [--quick]`` (needs
``agentrt[durable]`` and ``pydantic-ai-slim[dbos]``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import warnings
from typing import Any

from _harness import Case, Result, machine, measure
from bench_agent import new_agent as new_agentrt_agent
from bench_durable_stream import postgres
from dbos import DBOS
from peer_common import PROMPT, add
from peer_pydantic_ai import audit, scripted_model
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import Hooks
from pydantic_ai.durable_exec.dbos import DBOSAgent

from agentrt.durable import DurableAgent, launch, shutdown

TARGET = 0.5  # agentrt's durable overhead / pydantic-ai's, at most


def new_pydantic_agent() -> PydanticAgent[None, str]:
    """peer_pydantic_ai's agent, named (DBOSAgent registers its workflow by the name)."""
    return PydanticAgent(
        scripted_model(0.0),
        tools=[add],
        instructions="You add numbers.",
        capabilities=[Hooks(before_tool_execute=audit)],
        name="bench_pydantic_ai",
    )


def cases() -> list[Case]:
    # Constructed before launch(): DBOS registers the workflows of both at import time.
    plain = new_agentrt_agent()
    durable = DurableAgent(new_agentrt_agent(), name="bench-agentrt")
    # The records of pydantic-ai's DBOSAgent: its function tools are not steps.
    like_pydantic = DurableAgent(
        new_agentrt_agent(), name="bench-agentrt-unrecorded", unrecorded_tools={"add"}
    )
    pydantic_plain = new_pydantic_agent()
    with warnings.catch_warnings():
        # 2.68 deprecates DBOSAgent for a DBOSDurability capability; the issue names
        # DBOSAgent, and both record the same steps.
        warnings.simplefilter("ignore")
        pydantic_durable = DBOSAgent(new_pydantic_agent())

    async def agentrt_memory(n: int) -> None:
        for _ in range(n):
            await plain.reset()
            await plain.execute(PROMPT)

    async def agentrt_durable(n: int) -> None:
        for _ in range(n):
            await durable.agent.reset()
            await durable.execute(PROMPT)

    async def agentrt_unrecorded(n: int) -> None:
        for _ in range(n):
            await like_pydantic.agent.reset()
            await like_pydantic.execute(PROMPT)

    async def pydantic_memory(n: int) -> None:
        for _ in range(n):
            await pydantic_plain.run(PROMPT)

    async def pydantic_durable_runs(n: int) -> None:
        for _ in range(n):
            await pydantic_durable.run(PROMPT)

    async def nothing(n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    async def floor_runs(n: int) -> None:
        for _ in range(n):
            await _floor_workflow()

    return [
        Case("agentrt: memory -> durable", agentrt_memory, agentrt_durable),
        Case(
            "agentrt, tool unrecorded: memory -> durable, add in unrecorded_tools",
            agentrt_memory,
            agentrt_unrecorded,
        ),
        Case("pydantic-ai: memory -> DBOSAgent", pydantic_memory, pydantic_durable_runs),
        Case("DBOS floor: nothing -> workflow of two empty steps", nothing, floor_runs),
    ]


async def _empty_step() -> dict[str, str]:
    return {}


@DBOS.workflow(name="bench.floor")
async def _floor_workflow() -> None:
    """What any integration that records two steps per run pays DBOS, at least."""
    await DBOS.run_step_async({"name": "first"}, _empty_step)
    await DBOS.run_step_async({"name": "second"}, _empty_step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    n, rounds = (5, 3) if args.quick else (40, 9)
    made = cases()
    rows: list[tuple[str, Result, Result, Result, Result]] = []

    def measure_on(label: str, store: str, **options: Any) -> None:
        launch(store, log_level="WARNING", **options)
        try:

            async def run_all() -> list[Result]:
                return [await measure(case, n=n, rounds=rounds, warmup=1) for case in made]

            ours, unrecorded, theirs, floor = asyncio.run(run_all())
        finally:
            shutdown()
        rows.append((label, ours, unrecorded, theirs, floor))

    with tempfile.TemporaryDirectory() as workdir:
        for synchronous in ("FULL", "NORMAL"):
            store = f"sqlite:///{os.path.join(workdir, f'bench-{synchronous}.sqlite')}"
            measure_on(f"SQLite, synchronous={synchronous}", store, sqlite_synchronous=synchronous)
    with postgres() as pg:
        if pg is not None:
            measure_on("Postgres", pg)
    print("### Durable runs: one run with one tool call, ms per run")
    print()
    print("| store | framework | in memory | durable | overhead |")
    print("|---|---|---:|---:|---:|")
    for label, *results in rows:
        for result in results:
            memory, durable = result.floor_us / 1000, result.subject_us / 1000
            name = result.case.name.split(":")[0]
            print(f"| {label} | {name} | {memory:.2f} | {durable:.2f} | {durable - memory:.2f} |")
    print()
    print("Overheads over pydantic-ai's (target: agentrt's at most 0.5):")
    print()
    print("| store | agentrt | | agentrt, tool unrecorded | | DBOS floor (two steps) |")
    print("|---|---:|---|---:|---|---:|")

    def ratio(result: Result, base: float) -> str:
        value = (result.subject_us - result.floor_us) / base
        return f"{value:.2f} | {'ok' if value <= TARGET else 'MISSED'}"

    for label, ours, unrecorded, theirs, floor in rows:
        base = theirs.subject_us - theirs.floor_us
        least = (floor.subject_us - floor.floor_us) / base
        print(f"| {label} | {ratio(ours, base)} | {ratio(unrecorded, base)} | {least:.2f} |")
    print(f"\n{machine()}, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
