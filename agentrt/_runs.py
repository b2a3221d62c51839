"""Around every run of an agent: who observes runs starting, one run at a time, its last check.

:func:`observe_runs` lets instrumentation see every agent's runs (those of agents made
before it too); :class:`RunGate` serializes the runs of one agent, first come, first
served; :func:`checkpoint_if_cancelled` is the cancellation check a run ends with.
:class:`~agentrt.Agent` uses them; ``observe_runs`` is public from :mod:`agentrt.agent`.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

if TYPE_CHECKING:
    from agentrt.agent import Agent

try:
    from sniffio import current_async_library_cvar as _library_of_context
    from sniffio import thread_local as _library_of_thread
except ImportError:  # pragma: no cover - anyio runs without sniffio: asyncio only then
    _library_of_context = _library_of_thread = None  # type: ignore[assignment]

__all__ = ("RUN_OBSERVERS", "RunGate", "checkpoint_if_cancelled", "observe_runs")

RUN_OBSERVERS: list[Callable[[Agent], object]] = []
"""The observers of :func:`observe_runs`, called in order as each run starts."""


def observe_runs(observer: Callable[[Agent], object]) -> Callable[[], None]:
    """Call ``observer(agent)`` as each run of any agent starts, before ``execute:before``.

    For instrumentation that must see every agent, those made before it too (see
    :func:`agentrt.tracing.instrument`): the observer may register handlers on the
    agent's bus, and they see the whole run. It is called in the run's task, once the
    run has its turn on the agent; what it raises propagates from ``execute()``.
    Without observers a run pays one test of an empty list.

    Returns:
        A function that removes the observer (calling it again does nothing).

    Raises:
        TypeError: ``observer`` is not callable.
    """
    if not callable(observer):
        raise TypeError(f"a run observer must be callable, got {type(observer).__name__}")
    RUN_OBSERVERS.append(observer)

    def remove() -> None:
        if observer in RUN_OBSERVERS:
            RUN_OBSERVERS.remove(observer)

    return remove


class RunGate:
    """First-come, first-served exclusion of runs on one agent.

    Not an ``anyio.Lock``: measured at about 2 µs per uncontended acquire and
    release here (a cancellation checkpoint and task lookup), a tenth of a whole
    scripted run. This gate costs a flag test when nobody waits and hands itself
    to the longest waiter on release.
    """

    __slots__ = ("_busy", "_waiters")

    def __init__(self) -> None:
        self._busy = False
        self._waiters: deque[anyio.Event] = deque()

    def enter_nowait(self) -> bool:
        """Take the gate if it is free; whether it was taken (no coroutine needed)."""
        if self._busy:
            return False
        self._busy = True
        return True

    async def enter(self) -> None:
        """Take the gate, waiting for its turn behind earlier waiters."""
        if self.enter_nowait():
            return
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                self._release()  # handed the gate while being cancelled: pass it on
            else:
                self._waiters.remove(turn)
            raise

    def leave(self) -> None:
        """Give the gate to the longest waiter, or free it."""
        if self._waiters:
            self._waiters.popleft().set()  # stays busy: ownership moves to the waiter
        else:
            self._busy = False

    _release = leave


# -- the check a run ends with ------------------------------------------------------------------
#
# A run that never waits (a scripted model, sync hooks) meets no checkpoint, so it ends
# with a cancellation check. anyio.lowlevel.checkpoint_if_cancelled() finds the running
# library on every call through sniffio, which under a plain asyncio.run() (uvicorn, most
# programs) learns it by importing and calling asyncio.current_task(): ~1 µs of a 30 µs
# scripted run (bench_agent.py), a getpid() system call included (CPython 3.11's
# get_running_loop() makes one). The answer is known beforehand: a coroutine runs, so a
# library runs it, and when sniffio has no name for it (trio and trio-asyncio name the
# thread's library, anyio.run() the context's, and only asyncio is left: sniffio's own
# conclusion), it is asyncio, whose anyio backend is then called directly. That class is
# anyio's public EventLoopToken.backend_class (anyio >= 4.11), learnt from the first check
# made the slow way.

_ASYNCIO_OR_NONE = (None, "asyncio")  # what sniffio's context variable may say here
_asyncio_backend: Any = None  # anyio's asyncio backend class, once learnt


def checkpoint_if_cancelled() -> Awaitable[None]:
    """:func:`anyio.lowlevel.checkpoint_if_cancelled`, without asking sniffio under asyncio.

    Enters a checkpoint if the enclosing cancel scope was cancelled; otherwise lets no
    other task run. See the comment above.
    """
    backend = _asyncio_backend
    if backend is not None and (
        # _asyncio_by_default(), inline: this is every run's path.
        _library_of_thread is None
        or (_library_of_thread.name is None and _library_of_context.get() in _ASYNCIO_OR_NONE)
    ):
        return backend.checkpoint_if_cancelled()  # type: ignore[no-any-return]
    return _checkpoint_and_learn()


def _asyncio_by_default() -> bool:
    """Whether sniffio names asyncio or nothing for this thread and context."""
    return _library_of_thread is None or (
        _library_of_thread.name is None and _library_of_context.get() in _ASYNCIO_OR_NONE
    )


async def _checkpoint_and_learn() -> None:
    """anyio's own check; the first one made under asyncio learns its backend class."""
    global _asyncio_backend
    asyncio = sys.modules.get("asyncio")
    current_token = getattr(anyio.lowlevel, "current_token", None)  # anyio >= 4.11
    if (
        _asyncio_backend is None
        and asyncio is not None
        and current_token is not None
        and asyncio._get_running_loop() is not None
        and _asyncio_by_default()
    ):
        _asyncio_backend = current_token().backend_class
    await anyio.lowlevel.checkpoint_if_cancelled()
