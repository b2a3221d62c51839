"""A streamed answer through a durable server's event log: events per second, and lag.

A real ``agentrt`` server (uvicorn on loopback, in this process) answers with a model
that streams 10,000 text deltas; an SSE client reads the run's ``POST .../messages``
stream. Every delta becomes an ``agent_choice`` event, numbered, written to the
store's event log (a batch per commit), and only then sent to the client.

Rows, per store (in memory, durable on SQLite, durable on Postgres):

* **events/s**: the model yields its deltas as fast as it can; 10,000 over the time
  from the first delta to the client's receiving the last;
* **lag**: the model yields 1,000 deltas per second (a fast model); the time from the
  model yielding a delta to the client receiving its event, median and p99.

Target: 1,000 deltas/s relayed durably with a p99 lag of at most 250 ms on SQLite.

Postgres: ``AGENTRT_BENCH_POSTGRES`` (a server URL without a database), else a private
server started from Debian's binaries (``apt-get install postgresql``), else its rows
are left out. Run with ``nox -s bench`` or ``python benches/bench_durable_stream.py
[--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
from _harness import machine

from agentrt.agent import Agent
from agentrt.messages import Usage
from agentrt.models.base import ModelRequest, ModelResponse, StreamChunk, TextDelta, UsageChunk
from agentrt.server import make_server
from agentrt.stream.codec import SSEEventDecoder
from agentrt.stream.events import AgentChoiceEvent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.durable.postgres import private_postgres

DELTAS = 10_000
RATE = 1_000.0  # deltas per second, for the lag rows
TARGET_P99_MS = 250.0


class DeltaModel:
    """Streams ``count`` deltas (``"i "``), at ``rate`` per second or as fast as it can,
    noting when it yielded each."""

    name = "deltas"

    def __init__(self, count: int, rate: float | None) -> None:
        self.count = count
        self.rate = rate
        self.sent: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError("the server streams")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        start = time.perf_counter()
        for index in range(self.count):
            if self.rate is not None:
                delay = start + index / self.rate - time.perf_counter()
                if delay > 0:
                    await anyio.sleep(delay)
            self.sent.append(time.perf_counter())
            yield TextDelta(f"{index} ")
        yield UsageChunk(Usage(1, self.count, requests=1))


@dataclass(frozen=True)
class Row:
    store: str
    events_per_s: float
    lag_median_ms: float
    lag_p99_ms: float


async def _relay(
    name: str, storage: str, count: int, rate: float | None
) -> tuple[list[float], list[float]]:
    """One run through a real server on ``storage``: when each delta was sent, and received."""
    model = DeltaModel(count, rate)
    # retain: the whole answer (a memory log keeps 10,000 events by default, and a
    # reader behind that window would be cut off).
    server = make_server(
        lambda: Agent(model=model),
        port=0,
        log_level="warning",
        storage=storage,
        retain=2 * count + 10,
    )
    received: list[float] = [0.0] * count
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await server.ready.wait()
        url = f"http://127.0.0.1:{server.port}"
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            session = (await client.post("/sessions")).json()["id"]
            decoder = SSEEventDecoder()
            async with client.stream(
                "POST", f"/sessions/{session}/messages", json={"message": "go"}
            ) as response:
                async for chunk in response.aiter_bytes():
                    now = time.perf_counter()
                    for _, event in decoder.feed(chunk):
                        if isinstance(event, AgentChoiceEvent):
                            received[int(event.content)] = now
        server.should_exit = True
    if len(model.sent) != count or not all(received):
        raise AssertionError(f"{name}: the run did not relay its whole answer")
    return model.sent, received


async def measure_store(name: str, storage: str, quick: bool) -> Row:
    count = DELTAS // 10 if quick else DELTAS
    sent, received = await _relay(name, storage, count, None)
    events_per_s = count / (received[-1] - sent[0])
    sent, received = await _relay(name, storage, count // 5 if quick else count // 2, RATE)
    lags = sorted((r - s) * 1000 for s, r in zip(sent, received, strict=True))
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    return Row(name, events_per_s, statistics.median(lags), p99)


@contextlib.contextmanager
def postgres() -> Iterator[str | None]:
    base = os.environ.get("AGENTRT_BENCH_POSTGRES")
    if base:
        yield f"{base}/agentrt_bench_{uuid.uuid4().hex[:8]}"
        return
    try:
        with private_postgres() as url:
            yield f"{url}/agentrt_bench"
    except FileNotFoundError as missing:
        print(f"(Postgres rows left out: {missing})")
        yield None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer deltas, for a smoke run")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as workdir, postgres() as pg:
        stores = [
            ("memory", "memory"),
            ("SQLite", f"sqlite:///{os.path.join(workdir, 'stream.sqlite')}"),
        ]
        if pg is not None:
            stores.append(("Postgres", pg))
        for name, storage in stores:
            rows.append(anyio.run(measure_store, name, storage, args.quick))
    count = DELTAS // 10 if args.quick else DELTAS
    print(f"### A streamed answer of {count} deltas through the server's event log")
    print()
    print("| store | events/s | lag median (ms) | lag p99 (ms) at 1,000 deltas/s |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.store} | {row.events_per_s:,.0f} | {row.lag_median_ms:.1f} "
            f"| {row.lag_p99_ms:.1f} |"
        )
    sqlite = next(row for row in rows if row.store == "SQLite")
    verdict = (
        "ok" if sqlite.lag_p99_ms <= TARGET_P99_MS and sqlite.events_per_s >= RATE else "MISSED"
    )
    print()
    print(f"Target (SQLite): >= {RATE:,.0f} events/s, p99 <= {TARGET_P99_MS:.0f} ms: {verdict}")
    print(f"\n{machine()}, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
