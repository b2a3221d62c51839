"""Start-up: how long a fresh program waits before agentrt does what it was started for.

Each case is a fresh interpreter (``python -c CODE``, or ``python -m agentrt --help``);
the figure is its median wall time minus the bare interpreter's (``python -c pass``),
runs interleaved (each round starts with another case, so that a slower stretch of
the machine falls on all alike), after a warm-up round that also writes the bytecode
caches. The cases:

* ``agentrt --help``: the command line's help (also what a usage error costs);
* ``import agentrt``: the package alone (it loads its names on first use);
* ``from agentrt import Agent``: the agent, its messages, pydantic;
* ``import agentrt.stream``: the package (it loads its names on first use, as agentrt);
* a stream reader's imports: the decoder, ``parse_event`` and ``validate``, what a client
  of ``agentrt serve`` needs (the event models and pydantic, not the agent);
* first streamed event: build an agent on a ScriptedModel and read the first event of
  its first ``agent.stream()``.

The import row of ``bench_peers.py`` sets agentrt against its peers; this script is
agentrt's own start-up, case by case. Run with ``nox -s bench`` or
``python benches/bench_startup.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _harness import machine

FIRST_EVENT = """\
import anyio
from agentrt import Agent, ScriptedModel

async def main() -> None:
    agent = Agent(model=ScriptedModel(["Hello."]))
    async with agent.stream("Hi") as events:
        async for event in events:
            return

anyio.run(main)
"""

CASES: dict[str, list[str]] = {
    "bare interpreter": ["-c", "pass"],
    "agentrt --help": ["-m", "agentrt", "--help"],
    "import agentrt": ["-c", "import agentrt"],
    "from agentrt import Agent": ["-c", "from agentrt import Agent"],
    "import agentrt.stream": ["-c", "import agentrt.stream"],
    "a stream reader's imports": [
        "-c",
        "from agentrt.stream import SSEEventDecoder, parse_event, validate",
    ],
    "first streamed event": ["-c", FIRST_EVENT],
}
TARGETS_MS = {"agentrt --help": 60.0, "import agentrt": 80.0}
"""What the help of the command line may cost (twice its 30 ms of 2026-11-26 here: it
loads no agent, and should come at once), and the bare package (issue 13's 80 ms)."""


def wall_ms(args: list[str]) -> float:
    """Wall time of a fresh interpreter run with ``args``, in ms (it must succeed)."""
    start = time.perf_counter_ns()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, timeout=300)
    return (time.perf_counter_ns() - start) / 1e6


def measure_startup(rounds: int) -> dict[str, float]:
    """Each case's median over ``rounds`` interleaved rounds, the bare start-up subtracted."""
    names = list(CASES)
    for name in names:
        wall_ms(CASES[name])  # the warm-up round
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(wall_ms(CASES[name]))
    bare = statistics.median(samples.pop("bare interpreter"))
    return {"bare interpreter": bare} | {
        name: statistics.median(values) - bare for name, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    figures = measure_startup(3 if args.quick else 11)
    bare = figures.pop("bare interpreter")
    print(f"### Start-up: fresh interpreters, the bare start-up ({bare:.0f} ms) subtracted\n")
    print("| case | ms | target | |")
    print("|---|---:|---:|---|")
    for name, value in figures.items():
        target = TARGETS_MS.get(name)
        verdict = "" if target is None else ("ok" if value <= target else "MISSED")
        shown = "" if target is None else f"<= {target:.0f}"
        print(f"| {name} | {value:.1f} | {shown} | {verdict} |")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
