"""Shared measuring code for the benchmarks: interleaved rounds, medians, a table.

Each case is a pair of zero-argument coroutine functions, ``(floor, subject)``,
that each perform ``n`` operations. Rounds alternate floor and subject so that the
machine's noise falls on both alike; the reported figure is the median per
operation over the rounds, and the ratio is subject / floor from the same run.
"""

from __future__ import annotations

import gc
import platform
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

Runner = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    name: str
    floor: Runner
    subject: Runner
    target: float | None = None  # the largest acceptable ratio subject / floor


@dataclass(frozen=True)
class Result:
    case: Case
    floor_us: float
    subject_us: float

    @property
    def ratio(self) -> float:
        return self.subject_us / self.floor_us

    @property
    def verdict(self) -> str:
        if self.case.target is None:
            return ""
        return "ok" if self.ratio <= self.case.target else "MISSED"


_clock = time.perf_counter_ns


def use_cpu_clock() -> None:
    """Time runners by this thread's CPU time rather than the wall clock.

    On a loaded machine the wall clock counts the time other processes held the
    core; the thread's CPU time does not (caches and a shared core still slow it).
    For comparing two checkouts on a busy machine, not for absolute figures.
    """
    global _clock
    _clock = time.thread_time_ns


async def _time(runner: Runner, n: int) -> float:
    gc.collect()
    start = _clock()
    await runner(n)
    return (_clock() - start) / n / 1000.0


async def measure(case: Case, *, n: int, rounds: int, warmup: int = 2) -> Result:
    for _ in range(warmup):
        await case.floor(n)
        await case.subject(n)
    floors: list[float] = []
    subjects: list[float] = []
    for i in range(rounds):
        # Alternate which one goes first, so neither always runs on a warmer cache.
        pair = (case.floor, case.subject) if i % 2 == 0 else (case.subject, case.floor)
        first = await _time(pair[0], n)
        second = await _time(pair[1], n)
        if i % 2 == 0:
            floors.append(first)
            subjects.append(second)
        else:
            subjects.append(first)
            floors.append(second)
    return Result(case, statistics.median(floors), statistics.median(subjects))


def machine() -> str:
    return (
        f"Python {sys.version.split()[0]} ({platform.python_implementation()}), "
        f"{platform.machine()}, {platform.system()} {platform.release()}"
    )


def table(title: str, results: Sequence[Result]) -> str:
    lines = [
        f"### {title}",
        "",
        "| case | floor µs | agentrt µs | ratio | target | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        target = f"<= {r.case.target:.2f}x" if r.case.target is not None else ""
        lines.append(
            f"| {r.case.name} | {r.floor_us:.3f} | {r.subject_us:.3f} | "
            f"{r.ratio:.2f}x | {target} | {r.verdict} |"
        )
    return "\n".join(lines)


# -- the comparison with other frameworks (bench_peers.py) ----------------------------------


@dataclass(frozen=True)
class PeerRow:
    """One row of the peer table: a workload measured on several frameworks in one run.

    ``figures`` maps a framework's name ("floor", "agentrt", "blinker", "pydantic-ai", ...)
    to its median in ``unit``; a framework that cannot run the workload is left out.
    ``target`` is agentrt's target in words (e.g. "<= 1.5x floor", "<= 30 µs") and
    ``met`` whether the agentrt figure of this run meets it (None: no target).
    """

    workload: str
    case: str
    unit: str
    figures: dict[str, float]
    target: str | None = None
    met: bool | None = None


def peer_table(rows: Sequence[PeerRow], frameworks: Sequence[str]) -> str:
    """A markdown table: one column per framework, ratios peer/agentrt beside each figure."""
    header = ["workload", "case", "unit", *frameworks, "agentrt target", ""]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * 3 + "---:|" * len(frameworks) + "---|---|",
    ]
    for row in rows:
        base = row.figures.get("agentrt")
        cells = [row.workload, row.case, row.unit]
        for name in frameworks:
            value = row.figures.get(name)
            if value is None:
                cells.append("n/a")
            elif name == "agentrt" or not base:
                cells.append(f"{value:,.3g}" if value < 100 else f"{value:,.0f}")
            else:
                shown = f"{value:,.3g}" if value < 100 else f"{value:,.0f}"
                cells.append(f"{shown} ({value / base:.2f}x)")
        verdict = "" if row.met is None else ("ok" if row.met else "MISSED")
        cells += [row.target or "", verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def measure_many(
    runners: dict[str, Runner], *, n: dict[str, int] | int, rounds: int, warmup: int = 1
) -> dict[str, float]:
    """Median µs per operation of each runner, rounds interleaved across all of them.

    ``n`` may differ per framework (a peer taking milliseconds per run needs fewer
    operations than the floor for the same wall time); the figure is per operation
    either way. The order rotates each round so none always runs on a warmer cache.
    """
    samples = await sample_many(runners, n=n, rounds=rounds, warmup=warmup)
    return {name: statistics.median(values) for name, values in samples.items()}


async def sample_many(
    runners: dict[str, Runner], *, n: dict[str, int] | int, rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """:func:`measure_many`'s figures before the median: µs per operation, one per round.

    Round ``i`` of every runner comes from the same stretch of time, so the ratio of two
    runners' ``i``-th figures is a ratio measured side by side (bench_server.py reports
    their range).
    """
    counts = {name: n if isinstance(n, int) else n[name] for name in runners}
    for _ in range(warmup):
        for name, runner in runners.items():
            await runner(counts[name])
    samples: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for i in range(rounds):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(await _time(runners[name], counts[name]))
    return samples


# -- what a peer could not do (bench_peers.py prints it below the table) -----------------------

PEER_NOTES: list[str] = []
"""Why a figure is missing from a row (n/a in the table), one line each.

Every workload module records here, through :func:`peer_note`, each framework that failed
to import or raised on a workload; the runner prints the lines below the table, so a
failing peer costs a cell, never the run.
"""


def peer_note(framework: str, workload: str, reason: str | BaseException) -> None:
    """Record why ``framework`` has no figure for ``workload``."""
    if isinstance(reason, BaseException):
        reason = f"{type(reason).__name__}: {reason}".strip().removesuffix(":")
    PEER_NOTES.append(f"{framework}, {workload}: {reason}")


def print_peer_rows(rows: Sequence[PeerRow], frameworks: Sequence[str]) -> None:
    """Print ``rows`` as a peer table, then every recorded note: a module run on its own."""
    print(peer_table(rows, frameworks))
    for line in PEER_NOTES:
        print(f"- n/a: {line}")
    print(f"\n{machine()}")


def peak_rss_mib() -> float:
    """This process's peak RSS in MiB: VmHWM on Linux, else ``ru_maxrss``.

    Linux carries ``ru_maxrss`` across exec: a child started by subprocess (a vfork
    of the parent) reports at least the parent's RSS, which here holds every peer
    and their agents. VmHWM belongs to the process image, so it starts at the exec.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_alone(
    collect: Callable[[bool], list[PeerRow]], frameworks: Sequence[str], doc: str | None
) -> None:
    """Run one workload module by itself: ``python peer_x.py [--quick]`` prints its rows."""
    import argparse

    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    print_peer_rows(collect(parser.parse_args().quick), frameworks)
