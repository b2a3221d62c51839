"""agentrt against its peers: every workload of issue 7 in one markdown table.

Calls the ``collect`` of each workload module in turn, in one process (the modules
start their own fresh processes where a workload needs one):

1. ``peer_dispatch``: event dispatch (agentrt EventBus, blinker, pyee, a plain loop);
2. ``peer_runs``: one run on a fresh and on a reused agent, and concurrent runs;
3. ``peer_streaming``: µs per streamed text chunk reaching the consumer;
4. ``peer_footprint``: import time, and memory per idle agent with a conversation;
5. ``peer_teams``: a team's run (one delegation) and concurrent team runs.

Then prints the table (medians; beside each peer's figure its ratio peer/agentrt), why
any figure is missing, the machine (with its load: it is shared) and the version of
every framework. A module that is missing or fails costs its rows, never the run.
Run with ``nox -s bench`` or, from benches/, ``python bench_peers.py [--quick]``;
``--quick`` is a smoke run of a couple of minutes whose figures are not to be quoted.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from importlib import metadata

from _harness import PEER_NOTES, PeerRow, machine, peer_note, peer_table

Collect = Callable[[bool], list[PeerRow]]
MODULES = ("peer_dispatch", "peer_runs", "peer_streaming", "peer_footprint", "peer_teams")
FRAMEWORKS = (
    "floor",
    "agentrt",
    "pydantic-ai",
    "openai-agents",
    "strands-agents",
    "blinker",
    "pyee",
    "pydantic",
)
# The distributions that provide each framework, the first installed one reported.
DISTRIBUTIONS = {
    "agentrt": ("agentrt",),
    "pydantic": ("pydantic",),
    "pydantic-ai": ("pydantic-ai", "pydantic-ai-slim"),
    "openai-agents": ("openai-agents",),
    "strands-agents": ("strands-agents",),
    "blinker": ("blinker",),
    "pyee": ("pyee",),
}


def collect_all(quick: bool) -> list[PeerRow]:
    rows: list[PeerRow] = []
    for name in MODULES:
        started = time.perf_counter()
        try:
            collect: Collect = importlib.import_module(name).collect
            rows += collect(quick)
        except Exception as exc:
            # A workload module that is missing or breaks costs its rows, not the run.
            if not (isinstance(exc, ModuleNotFoundError) and exc.name == name):
                traceback.print_exc()
            peer_note("all", name, exc)
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load() -> str:
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def version(framework: str) -> str:
    for distribution in DISTRIBUTIONS[framework]:
        try:
            return f"{distribution} {metadata.version(distribution)}"
        except metadata.PackageNotFoundError:
            continue
    return f"{DISTRIBUTIONS[framework][0]} not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer rounds")
    args = parser.parse_args()
    load_before = load()
    rows = collect_all(args.quick)
    print(
        f"## agentrt and its peers, {datetime.date.today()}" + (" (quick)" if args.quick else "")
    )
    print()
    print(peer_table(rows, FRAMEWORKS))
    print()
    print("Medians; beside each peer's figure, its ratio peer/agentrt (lower is faster).")
    if PEER_NOTES:
        print()
        print("Missing figures (n/a):")
        print()
        for line in PEER_NOTES:
            print(f"- {line}")
    print()
    print(f"- machine: {machine()}; {cpu_model()}, {os.cpu_count()} cores")
    print(f"- load average (1, 5, 15 min): {load_before} before, {load()} after")
    print(f"- versions: {'; '.join(version(name) for name in DISTRIBUTIONS)}")


if __name__ == "__main__":
    main()
