"""Workload 1, event dispatch: agentrt's EventBus against blinker, pyee and a plain loop.

One dispatch of a signal (``tool:call:before`` with ``agent`` and ``tool_name``), awaited
until every handler has run, with 0 handlers, 1 async handler, and 10 async handlers of
mixed priority of which one has a predicate that is false. Per dispatch:

* floor: ``bench_bus.floor_do``, a loop over a list sorted beforehand (imported, so the
  floor is the one ``bench_bus.py`` measures);
* agentrt: ``EventBus.do``, handlers registered with their priority and predicate;
* blinker: ``Signal.send_async``; pyee: ``AsyncIOEventEmitter.emit`` then
  ``wait_for_complete()``, since pyee runs async handlers as tasks and returns before
  they finish, while the others return after the last handler.

Neither peer has priorities or predicates, so they get what a user would write: the
handlers connected in the order the bus would call them (priority first, ties in
registration order) and the predicate checked at the top of the handler. blinker calls
its receivers in set order, not connection order, so its figure is what an unordered
dispatch costs; pyee keeps the order but runs the handlers concurrently as tasks.

Run with ``nox -s bench`` (through ``bench_peers.py``) or
``python benches/peer_dispatch.py [--quick]``.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from _harness import PeerRow, Runner, measure_many, peer_note, run_alone
from bench_bus import Handler, Pred, build, floor_do

from agentrt import EventBus

WORKLOAD = "dispatch"
EVENT = "tool:call:before"
FRAMEWORKS = ("floor", "agentrt", "blinker", "pyee")
CASES = ((0, "0 handlers"), (1, "1 async handler"), (10, "10 handlers, mixed, 1 predicate false"))
# The largest acceptable ratio agentrt / floor, per handler count (issue 7).
TARGETS = {0: 1.25, 1: 1.5, 10: 1.5}

Receiver = Callable[..., Awaitable[None]]


def receivers(ordered: list[tuple[Handler, Pred]]) -> list[Receiver]:
    """One peer receiver per bus handler, in the bus's order, predicate inside.

    The predicates of ``bench_bus.build`` ignore their argument; the peers pass them the
    keyword arguments they received, which is what their handlers have in place of a
    context.
    """
    out: list[Receiver] = []
    for _handler, predicate in ordered:
        # Distinct function objects per handler, as the bus side has.
        async def receive(*args: Any, predicate: Pred = predicate, **params: Any) -> None:
            if predicate is not None and not predicate(params):
                return

        out.append(receive)
    return out


def floor_runner(ordered: list[tuple[Handler, Pred]]) -> Runner:
    async def run(n: int) -> None:
        for _ in range(n):
            await floor_do(ordered, agent=None, tool_name="t")

    return run


def agentrt_runner(bus: EventBus) -> Runner:
    async def run(n: int) -> None:
        for _ in range(n):
            await bus.do(EVENT, agent=None, tool_name="t")

    return run


def blinker_runner(handlers: list[Receiver]) -> Runner:
    import blinker

    signal = blinker.Signal()
    for receive in handlers:
        # weak=True is the default; ``handlers`` outlives the measurement, so none is lost.
        signal.connect(receive)

    async def run(n: int) -> None:
        for _ in range(n):
            await signal.send_async(None, agent=None, tool_name="t")

    return run


def pyee_runner(handlers: list[Receiver]) -> Runner:
    from pyee.asyncio import AsyncIOEventEmitter

    emitter = AsyncIOEventEmitter()
    for receive in handlers:
        emitter.on(EVENT, receive)

    async def run(n: int) -> None:
        for _ in range(n):
            emitter.emit(EVENT, agent=None, tool_name="t")
            await emitter.wait_for_complete()

    return run


PEERS: dict[str, tuple[str, Callable[[list[Receiver]], Runner]]] = {
    "blinker": ("blinker", blinker_runner),
    "pyee": ("pyee.asyncio", pyee_runner),
}


def importable() -> list[str]:
    """The peers that import; each that does not gets one note for the whole workload."""
    names = []
    for name, (module, _) in PEERS.items():
        try:
            importlib.import_module(module)
        except ImportError as exc:
            peer_note(name, WORKLOAD, exc)
        else:
            names.append(name)
    return names


async def measure_case(count: int, label: str, peers: list[str], quick: bool) -> PeerRow:
    bus, ordered = build(count)
    handlers = receivers(ordered)
    runners: dict[str, Runner] = {"floor": floor_runner(ordered), "agentrt": agentrt_runner(bus)}
    for name in peers:
        make = PEERS[name][1]
        try:
            runners[name] = make(handlers)
            await runners[name](1)  # fail here, not in the middle of the rounds
        except Exception as exc:
            runners.pop(name, None)
            peer_note(name, f"{WORKLOAD}, {label}", exc)
    base = 2_000 if quick else 20_000
    # pyee pays for a task per handler: a tenth of the dispatches takes as long.
    n = {name: base // 10 if name == "pyee" else base for name in runners}
    figures = await measure_many(runners, n=n, rounds=5 if quick else 15)
    target = TARGETS[count]
    return PeerRow(
        workload=WORKLOAD,
        case=label,
        unit="µs",
        figures=figures,
        target=f"<= {target:g}x floor",
        met=figures["agentrt"] <= target * figures["floor"],
    )


def collect(quick: bool) -> list[PeerRow]:
    """The dispatch rows: one per handler count, medians in µs per dispatch."""

    peers = importable()

    async def run_all() -> list[PeerRow]:
        return [await measure_case(count, label, peers, quick) for count, label in CASES]

    return asyncio.run(run_all())


if __name__ == "__main__":
    run_alone(collect, FRAMEWORKS, __doc__)
