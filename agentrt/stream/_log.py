"""A session's stream events, kept for readers that come, go and come back.

:class:`EventLog` is a sink for a :class:`~agentrt.stream.StreamAdapter` that never
makes the run wait: events are numbered from 1 and kept (the last ``retain`` of
them), and any number of readers follow from any number on — a reader that
disconnects loses nothing and can resume where it left off, and the run goes on
without it. This is the transport-facing counterpart of ``agent.stream()``, whose
single consumer paces the run::

    log = EventLog()
    adapter = StreamAdapter(agent, log)
    task_group.start_soon(adapter.run, "What is 1 + 2?")   # the run writes...
    async for sequence, event in log.follow(after=0):         # ...readers follow
        send(encode_sse(event, sequence=sequence))
"""

from collections import deque
from collections.abc import AsyncIterator
from itertools import islice, repeat

import anyio

from agentrt.exceptions import AgentrtError
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.events import StreamEvent

__all__ = ("EventLog", "EventsExpiredError")

_new_tuple = tuple.__new__


class EventsExpiredError(AgentrtError, LookupError):
    """A reader asked for events older than the log keeps.

    Attributes:
        after: The sequence number the reader asked to continue after.
        first: The oldest sequence number still kept.
    """

    def __init__(self, after: int, first: int) -> None:
        self.after = after
        self.first = first
        super().__init__(
            f"events after {after} are no longer kept: the oldest kept is {first}; "
            "read from there or start over"
        )


class EventLog:
    """An append-only log of one session's stream events, numbered from 1.

    Args:
        retain: How many of the latest events to keep for late readers.

    Raises:
        ValueError: ``retain`` is not a positive int.
    """

    def __init__(self, *, retain: int = 10_000) -> None:
        if isinstance(retain, bool) or not isinstance(retain, int) or retain < 1:
            raise ValueError(f"retain must be a positive int, got {retain!r}")
        self.retain = retain
        # The events alone, their numbers implied (the last is _next - 1): a server keeps
        # every idle session's log for its TTL, and a (number, event) pair per event was a
        # fifth of the objects a session holds, each walked by every full garbage
        # collection (bench_server.py). The pairs are made when read.
        self._events: deque[StreamEvent] = deque()
        self._next = 1
        self._closed = False
        # Made by the first follower that waits, and dropped once set: a log nobody
        # follows (a server session's, whose readers follow the session) makes no
        # Event per append, and keeps none.
        self._grown: anyio.Event | None = None

    async def __call__(self, event: StreamEvent) -> None:
        """Sink form of :meth:`append`, for :class:`~agentrt.stream.StreamAdapter`."""
        self.append(event)

    def append(self, event: StreamEvent) -> int:
        """Add ``event``; return its sequence number.

        Raises:
            anyio.ClosedResourceError: The log was closed.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        sequence = self._next
        self._next = sequence + 1
        events = self._events
        events.append(event)
        if len(events) > self.retain:
            events.popleft()
        if self._grown is not None:
            self._wake()
        return sequence

    def close(self) -> None:
        """No more events will come: followers finish once they have read the rest."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        grown, self._grown = self._grown, None
        if grown is not None:
            grown.set()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def last_sequence(self) -> int:
        """The number of the latest event (0 when there is none yet)."""
        return self._next - 1

    @property
    def first_sequence(self) -> int:
        """The number of the oldest kept event (0 when there is none)."""
        return self._next - len(self._events) if self._events else 0

    def since(self, after: int = 0, *, limit: int | None = None) -> list[SequencedEvent]:
        """The kept events numbered above ``after``, in order (at most ``limit`` of them).

        Raises:
            EventsExpiredError: Events right after ``after`` are no longer kept.
            ValueError: ``after`` is negative or not an int.
        """
        tail = self._tail(after, limit)
        # tuple.__new__ makes each pair in C: SequencedEvent's own __new__ is a Python
        # function, a call per event read (most of a live read's cost).
        pairs = zip(range(after + 1, after + 1 + len(tail)), tail, strict=True)
        return list(map(_new_tuple, repeat(SequencedEvent), pairs))

    def _tail(self, after: int, limit: int | None) -> list[StreamEvent]:
        """The kept events numbered above ``after`` (at most ``limit``), as :meth:`since`."""
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ValueError(f"after must be a non-negative int, got {after!r}")
        events = self._events
        count = self._next - 1 - after
        if count <= 0 or not events:
            return []
        if count > len(events):
            raise EventsExpiredError(after, self._next - len(events))
        if limit is not None and limit < count:
            # A reader catching up: the oldest ``limit`` of what it has not read.
            start = len(events) - count
            return list(islice(events, start, start + limit))
        # From the right: a live reader asks for the few newest events of a log that
        # may keep thousands (copying the whole deque to slice it cost O(retain)).
        tail = list(islice(reversed(events), count))
        tail.reverse()
        return tail

    async def follow(self, after: int = 0) -> AsyncIterator[SequencedEvent]:
        """Yield the events numbered above ``after``, then new ones as they come.

        Ends when the log is closed and everything was read. Stopping the iteration
        (a reader going away) does not affect the log or the run writing into it.

        Raises:
            EventsExpiredError: The reader fell behind the retained window.
        """
        while True:
            batch = self.since(after)
            for item in batch:
                yield item
            if batch:
                after = batch[-1].sequence
                continue
            if self._closed:
                return
            grown = self._grown
            if grown is None:
                grown = self._grown = anyio.Event()
            await grown.wait()
