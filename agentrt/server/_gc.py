"""How a serving process's garbage collector spends less time on what the server keeps.

A server keeps every idle session (its agent, its conversation, its event log: about 50
objects the cyclic collector tracks) for its TTL. CPython 3.11-3.13 runs a *full*
collection, which walks every tracked object of the process, each time the objects
that reached the oldest generation since the last one number a quarter of those that
were there: with thousands of idle sessions each full collection walks hundreds of
thousands of objects that are neither garbage nor changing. In
``benches/bench_server.py`` (200 concurrent runs, every run a new session) the full
collections were a sixth of the server's CPU time.

:func:`server_collections` does two things while a server serves:

* it raises the collector's third threshold (full collections wait for at least
  ``FULL_COLLECTION_THRESHOLD`` collections of the middle generation, rather than 10);
* it *freezes* what survives the middle generation (:func:`gc.freeze` after each of its
  collections): those objects move to the permanent generation, which no collection
  walks, rather than into the old generation, which every full collection walks. An
  object there that becomes unreachable is still freed at once by its reference count;
  only one caught in a reference cycle waits (an expired session whose agent refers to
  itself, say). So that such cycles cannot pile up, everything is thawed
  (:func:`gc.unfreeze`) once the memory blocks the process has allocated
  (:func:`sys.getallocatedblocks`; cheap to read, unlike the count of frozen objects)
  have doubled since the last full collection, and nothing is frozen until the next
  full collection has walked it all: cycles hold at most about as much memory as the
  rest, and the walk of everything is paid once per doubling of the heap rather than
  once per growth of the old generation by a quarter.

While it is frozen, an object is not in :func:`gc.get_objects` and an explicit
:func:`gc.collect` does not free it if it is caught in a cycle.

The young generations are collected as before, so short-lived garbage, cycles
included, goes as fast as ever. Python 3.14's incremental collector has no full
collections of this kind, and a process that froze objects itself before the server
started (a pre-fork server) is left as it is: there it is the application's policy.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ("FULL_COLLECTION_THRESHOLD", "server_collections")

FULL_COLLECTION_THRESHOLD = 100
"""The garbage collector's third threshold while a server serves (CPython's is 10)."""

# The incremental collector of 3.14 walks the old generation a slice at a time.
_GENERATIONAL = sys.version_info < (3, 14)

_LOOK_EVERY = 8
"""The heap is measured at every 8th collection of the middle generation: reading it
visits every memory pool (80 us at 6 million blocks), and a doubling is seen soon enough."""


class _Freezer:
    """A :data:`gc.callbacks` entry: freeze what survives the middle generation, thaw at times."""

    __slots__ = ("countdown", "thawed", "walked")

    def __init__(self) -> None:
        self.walked = sys.getallocatedblocks()  # the heap after the last full collection
        self.thawed = False
        self.countdown = _LOOK_EVERY

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        generation = info["generation"]
        if generation == 0 or (self.thawed and generation == 1):
            return
        if generation == 2:
            if phase == "stop":
                # What the full collection walked, every object of the process, is freed
                # or frozen: the next doubling counts from here.
                gc.freeze()
                self.walked, self.thawed = sys.getallocatedblocks(), False
        elif phase == "start":
            self.countdown -= 1
            if self.countdown:
                return
            self.countdown = _LOOK_EVERY
            if sys.getallocatedblocks() >= 2 * self.walked:
                gc.unfreeze()  # into the old generation, for the next full collection
                self.thawed = True
        else:
            gc.freeze()


@contextmanager
def server_collections() -> Iterator[None]:
    """Collect as a server's process should (see the module) until the block ends.

    On the way out the threshold is set back (unless someone changed it meanwhile)
    and what was frozen is unfrozen, so later full collections walk it as before.
    """
    first, second, third = gc.get_threshold()
    ours = (first, second, max(third, FULL_COLLECTION_THRESHOLD))
    gc.set_threshold(*ours)
    freezer = _Freezer() if _GENERATIONAL and gc.get_freeze_count() == 0 else None
    if freezer is not None:
        gc.callbacks.append(freezer)
    try:
        yield
    finally:
        if freezer is not None:
            gc.callbacks.remove(freezer)
            gc.unfreeze()
        # Unless someone set it meanwhile (another server in this process that ended
        # first set it back already, or the application changed it).
        if gc.get_threshold() == ours:
            gc.set_threshold(first, second, third)
