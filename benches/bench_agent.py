"""Agent run cost: prompt -> one tool call -> answer, against a plain-asyncio floor.

Rows:

* one run on a reused agent (conversation reset between runs), and with a fresh
  agent built (and closed) for every run; one hook on ``tool:call:before``; a
  zero-latency ScriptedModel; an ``async def`` tool, which runs on the event loop (as
  the peers' in bench_peers.py). The floor does the same steps with dicts: a model
  coroutine, the hook, JSON argument parsing, the tool, message dicts.
* the same run with a plain ``def`` tool, which agentrt runs in a worker thread
  (``anyio.to_thread``): its floor hops to a thread the same way, so the ratio is what
  agentrt adds beyond the hop, and the difference with the first row what the hop costs.
* 1,000 concurrent runs (one agent each) with a model that sleeps 10 ms per
  call, in a fresh process: wall time (ideal 20 ms) and peak RSS.

Run with ``nox -s bench`` or ``python benches/bench_agent.py [--quick] [--cpu-clock]``.
Another checkout's agentrt runs the same cases with ``PYTHONPATH=CHECKOUT python
benches/bench_agent.py`` (the script imports only what ``2394e25`` already had).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
from _harness import Case, Result, machine, measure, peak_rss_mib, table, use_cpu_clock

from agentrt import Agent, ModelRequest, ScriptedModel, Tool, ToolCall

CALL = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_in_thread(a: int, b: int) -> int:
    """Add two integers (a plain def: agentrt runs it in a worker thread)."""
    return a + b


def respond(request: ModelRequest) -> ToolCall | str:
    return CALL if request.messages[-1].role == "user" else "The answer is 3."


def audit(ctx: Any) -> None:
    return None


# -- the floor: the same steps with dicts ----------------------------------------------


async def floor_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if messages[-1]["role"] == "user":
        return {"tool_calls": [{"id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'}]}
    return {"content": "The answer is 3."}


async def floor_hook(arguments: dict[str, Any]) -> dict[str, Any] | None:
    return None


async def floor_run(
    prompt: str,
    *,
    thread: bool = False,
    model: Callable[[list[dict[str, Any]]], Awaitable[dict[str, Any]]] = floor_model,
    tool: Callable[..., Awaitable[Any]] = add,
) -> str:
    """The run's steps with dicts; ``model`` and ``tool`` another script's (peer_teams.py)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(10):
        response = await model(messages)
        messages.append({"role": "assistant", **response})
        calls = response.get("tool_calls")
        if not calls:
            return str(response["content"])
        for call in calls:
            arguments = json.loads(call["arguments"])
            arguments = await floor_hook(arguments) or arguments
            if thread:
                a, b = arguments["a"], arguments["b"]
                result = await anyio.to_thread.run_sync(add_in_thread, a, b)
            else:
                result = await tool(**arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
    raise RuntimeError("too many iterations")


# -- agentrt -------------------------------------------------------------------------------


def new_agent(tool: Any = add) -> Agent:
    model = ScriptedModel(respond, record=False)
    agent = Agent(model=model, tools=[tool], instructions="You add numbers.")
    agent.hooks.on_tool_call_before(audit)
    return agent


def cases() -> list[Case]:
    reused = new_agent()
    threaded = new_agent(Tool(add_in_thread, name="add"))

    async def floor(n: int) -> None:
        for _ in range(n):
            await floor_run("What is 1 + 2?")

    async def reused_runs(n: int) -> None:
        for _ in range(n):
            await reused.reset()
            await reused.execute("What is 1 + 2?")

    async def floor_thread(n: int) -> None:
        for _ in range(n):
            await floor_run("What is 1 + 2?", thread=True)

    async def threaded_runs(n: int) -> None:
        for _ in range(n):
            await threaded.reset()
            await threaded.execute("What is 1 + 2?")

    async def fresh_runs(n: int) -> None:
        for _ in range(n):
            agent = new_agent()
            await agent.execute("What is 1 + 2?")
            await agent.close()

    return [
        Case("one run, reused agent", floor, reused_runs, None),
        Case("one run, fresh agent", floor, fresh_runs, None),
        Case("one run, plain def tool", floor_thread, threaded_runs, None),
    ]


TARGETS_US = {"one run, reused agent": 30.0, "one run, fresh agent": 50.0}


# -- 1,000 concurrent runs, in a fresh process -----------------------------------------------


async def concurrent(count: int) -> tuple[float, float]:
    import anyio

    async def slow(request: ModelRequest) -> ToolCall | str:
        await anyio.sleep(0.010)
        return respond(request)

    def new() -> Agent:
        return Agent(model=ScriptedModel(slow, record=False), tools=[add])

    # One run first, untimed (as peer_runs does for every framework): the figure is the
    # cost of concurrency, not of the first use in a process (schemas built on demand).
    assert (await new().execute("What is 1 + 2?")).output == "The answer is 3."
    agents = [new() for _ in range(count)]
    outputs: list[str] = []

    async def run(agent: Agent) -> None:
        outputs.append((await agent.execute("What is 1 + 2?")).output)

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for agent in agents:
            group.start_soon(run, agent)
    wall = time.perf_counter() - start
    assert outputs == ["The answer is 3."] * count
    return wall, peak_rss_mib() * 1024.0


def concurrent_in_child(count: int) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--concurrent-child", str(count)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    wall, peak_kib = json.loads(out)
    return wall * 1000.0, peak_kib / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    parser.add_argument(
        "--cpu-clock",
        action="store_true",
        help="time the one-run cases by CPU time (to compare checkouts on a busy machine)",
    )
    parser.add_argument("--concurrent-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.concurrent_child:
        print(json.dumps(asyncio.run(concurrent(args.concurrent_child))))
        return
    if args.cpu_clock:
        use_cpu_clock()
    n, rounds = (200, 5) if args.quick else (2_000, 11)

    async def run_all() -> list[Result]:
        return [await measure(case, n=n, rounds=rounds) for case in cases()]

    results = asyncio.run(run_all())
    print(table("Agent: one run (prompt -> tool call -> answer)", results))
    print()
    print("| case | agentrt µs | target |  |")
    print("|---|---:|---:|---|")
    for r in results:
        target = TARGETS_US.get(r.case.name)
        if target is None:
            continue  # the thread hop's row: measured beside the others, no target
        verdict = "ok" if r.subject_us <= target else "MISSED"
        print(f"| {r.case.name} | {r.subject_us:.1f} | <= {target:.0f} | {verdict} |")
    walls, peaks = [], []
    for _ in range(1 if args.quick else 3):
        wall_ms, peak_mib = concurrent_in_child(1000)
        walls.append(wall_ms)
        peaks.append(peak_mib)
    walls.sort()
    peaks.sort()
    wall, peak = walls[len(walls) // 2], peaks[len(peaks) // 2]
    print()
    print("### 1,000 concurrent runs, model sleeps 10 ms per call (ideal wall 20 ms)")
    print()
    print("| figure | median | target | |")
    print("|---|---:|---:|---|")
    print(f"| wall ms | {wall:.1f} | <= 100 | {'ok' if wall <= 100 else 'MISSED'} |")
    print(f"| peak RSS MiB | {peak:.1f} | <= 60 | {'ok' if peak <= 60 else 'MISSED'} |")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
