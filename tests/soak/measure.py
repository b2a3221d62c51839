"""What the load and soak tests measure: resident memory, bus handlers, asyncio tasks."""

import asyncio
import gc
from pathlib import Path
from typing import Any

from agentrt import AgentEvents, EventBus

_STATUS = Path("/proc/self/status")


def rss_mib() -> float:
    """This process's resident set size (VmRSS) in MiB, after a full garbage collection.

    Collecting first makes samples comparable: what is still resident afterwards is
    memory something still holds, not garbage waiting for the next collection.
    """
    gc.collect()
    for line in _STATUS.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS line in {_STATUS}")


def handler_counts(bus: EventBus) -> dict[str, int]:
    """How many handlers ``bus`` has: in all (``"*all*"``) and per event that has any.

    ``EventBus.handler_count()`` counts every registration (patterns included); the
    per-event counts show which event a leaked handler sits on.
    """
    counts = {"*all*": bus.handler_count()}
    for event in AgentEvents:
        count = bus.handler_count(event)
        if count:
            counts[event.value] = count
    return counts


def other_tasks() -> set[asyncio.Task[Any]]:
    """The asyncio tasks alive besides the current one."""
    return asyncio.all_tasks() - {asyncio.current_task()}
