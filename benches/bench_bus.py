"""EventBus dispatch cost against a plain loop over a pre-sorted handler list.

The floor does the same work with nothing of the bus: build a context object, walk
a list sorted beforehand, check the one predicate, await each handler, keep a
non-None result as the output. Run with ``nox -s bench`` or
``python benches/bench_bus.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from _harness import Case, Result, machine, measure, table

from agentrt import EventBus

Handler = Callable[[Any], Awaitable[Any]]
Pred = Callable[[Any], bool] | None


class FloorContext:
    __slots__ = ("output", "parameters")

    def __init__(self, parameters: dict[str, Any], output: Any) -> None:
        self.parameters = parameters
        self.output = output


async def floor_apply(handlers: list[tuple[Handler, Pred]], output: Any, **params: Any) -> Any:
    ctx = FloorContext(params, output)
    for handler, predicate in handlers:
        if predicate is not None and not predicate(ctx):
            continue
        result = await handler(ctx)
        if result is not None:
            ctx.output = result
    return ctx


async def floor_do(handlers: list[tuple[Handler, Pred]], **params: Any) -> Any:
    ctx = FloorContext(params, None)
    for handler, predicate in handlers:
        try:
            if predicate is not None and not predicate(ctx):
                continue
            await handler(ctx)
        except Exception:  # the floor contains failures too, as do() must
            pass
    return ctx


async def noop(ctx: Any) -> None:
    return None


def never(ctx: Any) -> bool:
    return False


def build(count: int) -> tuple[EventBus, list[tuple[Handler, Pred]]]:
    """A bus and the equivalent pre-sorted list: ``count`` handlers, mixed priority."""
    bus = EventBus()
    spec: list[tuple[int, Handler, Pred]] = []
    for i in range(count):
        # Distinct function objects, so neither side benefits from one hot callee.
        async def handler(ctx: Any) -> None:
            return None

        priority = (i * 37) % 7 * 10
        predicate: Pred = never if (count > 1 and i == count // 2) else None
        spec.append((priority, handler, predicate))
        bus.on("tool:call:before", handler, priority=priority, predicate=predicate)
    ordered = [
        (h, p) for _, _, h, p in sorted(((-pr, i, h, p) for i, (pr, h, p) in enumerate(spec)))
    ]
    return bus, ordered


def cases() -> list[Case]:
    out: list[Case] = []
    targets = {0: 1.25, 1: 1.5, 10: 1.5}
    for count, label in ((0, "0 handlers"), (1, "1 async handler"), (10, "10 handlers")):
        bus, ordered = build(count)

        async def apply_floor(n: int, ordered: list[tuple[Handler, Pred]] = ordered) -> None:
            for _ in range(n):
                await floor_apply(ordered, 1, agent=None, tool_name="t")

        async def apply_bus(n: int, bus: EventBus = bus) -> None:
            for _ in range(n):
                await bus.apply("tool:call:before", 1, agent=None, tool_name="t")

        async def do_floor(n: int, ordered: list[tuple[Handler, Pred]] = ordered) -> None:
            for _ in range(n):
                await floor_do(ordered, agent=None, tool_name="t")

        async def do_bus(n: int, bus: EventBus = bus) -> None:
            for _ in range(n):
                await bus.do("tool:call:before", agent=None, tool_name="t")

        out.append(Case(f"apply, {label}", apply_floor, apply_bus, targets[count]))
        out.append(Case(f"do, {label}", do_floor, do_bus, targets[count]))

    # Prefix patterns for other domains must not tax this event's dispatch.
    patterned, _ = build(1)
    for prefix in ("message", "llm", "execute", "agent", "mode", "storage", "cache"):
        patterned.on(f"{prefix}:*", noop)
    patterned.on("tools:*", noop)
    _, one = build(1)

    async def one_floor(n: int) -> None:
        for _ in range(n):
            await floor_apply(one, 1, agent=None, tool_name="t")

    async def one_patterned(n: int) -> None:
        for _ in range(n):
            await patterned.apply("tool:call:before", 1, agent=None, tool_name="t")

    out.append(Case("apply, 1 async handler, 8 patterns elsewhere", one_floor, one_patterned, 1.5))
    return out


async def run(quick: bool) -> list[Result]:
    n, rounds = (2_000, 5) if quick else (20_000, 15)
    return [await measure(case, n=n, rounds=rounds) for case in cases()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    results = asyncio.run(run(args.quick))
    print(table("EventBus: cost per dispatch", results))
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
