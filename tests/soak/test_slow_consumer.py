"""Slow consumer (issue 8): one event read per 10 ms while the model streams fast.

The model streams 50,000 numbered text pieces as fast as the run asks for them; the
consumer reads the first 500 events 10 ms apart, then the rest at full speed. No
event may be lost, duplicated or reordered, the stream must validate, and the
bounded buffer must hold the run back: it never gets more than the buffer's size
ahead of the consumer, so memory does not grow while the consumer is slow.
"""

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import pytest

from agentrt import Agent, ModelRequest, ModelResponse, StreamChunk, TextDelta, Usage, UsageChunk
from agentrt.stream.events import AgentChoiceEvent, StreamEvent
from agentrt.stream.validate import StreamValidator, Violation
from tests.soak.conftest import Figures
from tests.soak.measure import other_tasks, rss_mib

pytestmark = pytest.mark.slow
RSS_IN_PROCESS = True
"""Run before the load test (see tests/soak/conftest.py): memory is measured here."""

CHUNKS = 50_000
BUFFER = 64
SLOW_READS = 500
READ_EVERY = 0.010
"""Seconds the consumer spends on each of its first ``SLOW_READS`` events: its workload."""
LEADING = ("user_message", "stream_started")
"""The events before the first piece of text."""
MAX_SLOW_GROWTH_MIB = 1.0
"""Resident memory the stream may add while the consumer is slow. Measured: 0.0 MiB;
with an unbounded buffer the run gets all 50,000 events ahead, about 31 MiB."""
MAX_END_GROWTH_MIB = 4.0
"""Resident memory the run may leave behind: the 0.4 MiB answer it keeps, and the
pages its 50,000 pieces took while the answer was assembled (measured: 2.4 MiB in all).
Keeping every stream event would leave about 31 MiB."""


def piece(index: int) -> str:
    """The ``index``-th text piece: numbered, so a lost or reordered one shows."""
    return f"{index:07d} "


class FastStreamingModel:
    """Streams ``chunks`` text pieces as fast as they are asked for.

    Each piece is made when the run asks for the next one, so the model holds no
    more memory for a long answer than for a short one: memory that grows with the
    stream is the runtime's. :attr:`yielded` is its progress: pieces handed over.
    """

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.yielded = 0
        self.usage = Usage(1, chunks, 0, 0, 1)

    @property
    def name(self) -> str:
        return "fast-streaming"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The whole answer at once."""
        text = "".join(piece(index) for index in range(self.chunks))
        return ModelResponse(content=text, usage=self.usage, finish_reason="stop")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """The answer piece by piece, then the usage."""
        for index in range(self.chunks):
            self.yielded += 1
            yield TextDelta(piece(index))
        yield UsageChunk(self.usage, "stop")


def expected(position: int, chunks: int) -> tuple[str, str | None]:
    """The type and text of the stream's event at ``position``."""
    if position < len(LEADING):
        return LEADING[position], None
    if position < len(LEADING) + chunks:
        return "agent_choice", piece(position - len(LEADING))
    return ("token_usage", "stream_stopped")[position - len(LEADING) - chunks], None


def seen(event: StreamEvent) -> tuple[str, str | None]:
    """The type and text of ``event``, as :func:`expected` gives them."""
    return event.type, event.content if isinstance(event, AgentChoiceEvent) else None


@dataclass
class Reading:
    """What the consumer saw."""

    events: int = 0
    wrong: list[tuple[int, tuple[str, str | None]]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    most_ahead: int = 0
    """The most events the run had made and the consumer not yet read."""
    rss_mib: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    output: str | None = None


async def read_slowly(model: FastStreamingModel) -> Reading:
    """Stream an agent on ``model``; read ``SLOW_READS`` events ``READ_EVERY`` apart, then fast."""
    reading = Reading()
    validator = StreamValidator()
    reading.rss_mib["before"] = rss_mib()
    started = time.perf_counter()
    async with Agent(model=model) as agent, agent.stream("Count.", buffer_size=BUFFER) as stream:
        async for event in stream:
            position = reading.events
            reading.events += 1
            reading.most_ahead = max(
                reading.most_ahead, len(LEADING) + model.yielded - reading.events
            )
            reading.violations += validator.check(event)
            if seen(event) != expected(position, model.chunks):
                reading.wrong.append((position, seen(event)))
            if reading.events <= SLOW_READS:
                await anyio.sleep(READ_EVERY)
                if reading.events in (100, SLOW_READS):
                    reading.rss_mib[f"after {reading.events} slow reads"] = rss_mib()
    reading.seconds = time.perf_counter() - started
    reading.rss_mib["at the end"] = rss_mib()
    reading.violations += validator.finish()
    if stream.result is not None:
        reading.output = stream.result.output
    return reading


async def test_slow_consumer_loses_nothing_and_holds_the_run_back(figures: Figures) -> None:
    # A first, short stream makes the one-time allocations (validators, caches) before
    # the memory baseline of the measured one.
    warmup = FastStreamingModel(50)
    assert (await read_slowly(warmup)).wrong == []
    reading = await read_slowly(FastStreamingModel(CHUNKS))
    figures(
        f"{reading.events:,} events in {reading.seconds:.1f} s, the run at most "
        f"{reading.most_ahead} events ahead (buffer {BUFFER}); RSS "
        + ", ".join(f"{when} {mib:.1f} MiB" for when, mib in reading.rss_mib.items())
    )

    assert other_tasks() == set()
    assert reading.wrong == []
    assert reading.events == len(LEADING) + CHUNKS + 2
    assert reading.violations == []
    assert reading.output == "".join(piece(index) for index in range(CHUNKS))
    # The run filled the buffer (the model is fast) and got no further: when the
    # consumer takes an event from a full buffer, the event the run was waiting to
    # hand over takes its place.
    assert reading.most_ahead == BUFFER
    rss = reading.rss_mib
    assert rss["after 100 slow reads"] - rss["before"] < MAX_SLOW_GROWTH_MIB
    assert rss[f"after {SLOW_READS} slow reads"] - rss["before"] < MAX_SLOW_GROWTH_MIB
    assert rss["at the end"] - rss["before"] < MAX_END_GROWTH_MIB
