"""One streamed A2A task against one streamed run on the server's own SSE route.

A real ``agentrt`` server (uvicorn on loopback, in this process) whose model streams
text deltas; the same server answers both ways, with the same httpx client reading the
raw SSE bytes (no SDK on the client side: what is measured is the server):

* **own route**: ``POST /sessions``, then ``POST /sessions/{id}/messages``, read to
  ``stream_stopped``;
* **A2A**: one JSON-RPC ``SendStreamingMessage`` to ``POST /a2a`` (a new context), read
  to the ``COMPLETED`` status update; each delta an artifact update.

Rows, per store (memory; durable on SQLite):

* **short run**: an answer of 20 deltas, median over rounds (alternating the routes):
  the time to the first delta and to the end of the stream, a new conversation each;
* **events/s**: 10,000 deltas yielded as fast as the model can, over the time from the
  first delta to the client's receiving the last;
* **lag**: 1,000 deltas per second; the time from the model yielding a delta to the
  client receiving it, median and p99.

Run with ``nox -s bench`` or ``python benches/bench_a2a.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio
import httpx
from _harness import machine
from bench_durable_stream import RATE, DeltaModel

from agentrt.agent import Agent
from agentrt.server import AgentServer, make_server
from agentrt.stream.codec import SSEEventDecoder
from agentrt.stream.events import AgentChoiceEvent

SHORT = 20
LONG = 10_000
ROUNDS = 30
HEADERS = {"A2A-Version": "1.0"}
T = TypeVar("T")


@dataclass
class Timing:
    """When a run's stream delivered each delta, and when it ended (perf_counter)."""

    started: float
    received: dict[int, float]
    ended: float


async def own_route(client: httpx.AsyncClient) -> Timing:
    """A run on ``POST /sessions/{id}/messages``, read to ``stream_stopped``."""
    started = time.perf_counter()
    received: dict[int, float] = {}
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
    return Timing(started, received, time.perf_counter())


def _send(index: int) -> dict[str, object]:
    message = {"messageId": f"m-{index}", "role": "ROLE_USER", "parts": [{"text": "go"}]}
    return {
        "jsonrpc": "2.0",
        "id": index,
        "method": "SendStreamingMessage",
        "params": {"message": message},
    }


async def a2a_route(client: httpx.AsyncClient) -> Timing:
    """A task on ``POST /a2a`` (SendStreamingMessage), read to its ``COMPLETED`` update."""
    started = time.perf_counter()
    received: dict[int, float] = {}
    state = ""
    buffer = b""
    async with client.stream("POST", "/a2a", json=_send(1), headers=HEADERS) as response:
        async for chunk in response.aiter_bytes():
            now = time.perf_counter()
            buffer += chunk
            *frames, buffer = buffer.split(b"\r\n\r\n" if b"\r\n\r\n" in buffer else b"\n\n")
            for frame in frames:
                for line in frame.splitlines():
                    if not line.startswith(b"data:"):
                        continue
                    result = json.loads(line[5:])["result"]
                    if "artifactUpdate" in result:
                        text = result["artifactUpdate"]["artifact"]["parts"][0].get("text")
                        if text:
                            received[int(text)] = now
                    elif "statusUpdate" in result:
                        state = result["statusUpdate"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        raise AssertionError(f"the A2A task ended {state!r}")
    return Timing(started, received, time.perf_counter())


ROUTES = {"own route": own_route, "A2A": a2a_route}


@dataclass(frozen=True)
class Row:
    store: str
    route: str
    first_ms: float
    whole_ms: float
    events_per_s: float
    lag_median_ms: float
    lag_p99_ms: float


def _server(model: DeltaModel, storage: str, count: int) -> AgentServer:
    return make_server(
        lambda: Agent(model=model),
        port=0,
        log_level="warning",
        storage=storage,
        retain=2 * count + 10,
    )


async def _serve_and(
    model: DeltaModel, storage: str, count: int, work: Callable[[httpx.AsyncClient], Awaitable[T]]
) -> T:
    server = _server(model, storage, count)
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await server.ready.wait()
        url = f"http://127.0.0.1:{server.port}"
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            result = await work(client)
        server.should_exit = True
    return result


async def short_runs(storage: str, rounds: int) -> dict[str, tuple[float, float]]:
    """Median ms to the first delta and to the end, per route, routes alternating."""
    model = DeltaModel(SHORT, None)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in ROUTES}

    async def work(client: httpx.AsyncClient) -> None:
        for round_ in range(rounds + 2):
            order = list(ROUTES) if round_ % 2 == 0 else list(reversed(ROUTES))
            for name in order:
                timing = await ROUTES[name](client)
                if round_ >= 2:  # two warm-up rounds
                    first = min(timing.received.values()) - timing.started
                    times[name].append((first * 1000, (timing.ended - timing.started) * 1000))

    await _serve_and(model, storage, SHORT * (rounds + 2) * 2, work)
    return {
        name: (
            statistics.median(first for first, _ in pairs),
            statistics.median(whole for _, whole in pairs),
        )
        for name, pairs in times.items()
    }


async def relay(storage: str, route: str, count: int, rate: float | None) -> Timing:
    model = DeltaModel(count, rate)

    async def work(client: httpx.AsyncClient) -> Timing:
        return await ROUTES[route](client)

    timing = await _serve_and(model, storage, count, work)
    if len(timing.received) != count:
        raise AssertionError(f"{route}: {len(timing.received)} of {count} deltas arrived")
    timing.received = {i: timing.received[i] - model.sent[i] for i in range(count)}
    timing.started = model.sent[0]
    return timing


async def measure(store: str, storage: str, quick: bool) -> list[Row]:
    rounds = 5 if quick else ROUNDS
    count = LONG // 10 if quick else LONG
    shorts = await short_runs(storage, rounds)
    rows = []
    for route in ROUTES:
        fast = await relay(storage, route, count, None)
        events_per_s = count / (fast.ended - fast.started)
        paced = await relay(storage, route, count // 5 if quick else count // 2, RATE)
        lags = sorted(lag * 1000 for lag in paced.received.values())
        p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
        first, whole = shorts[route]
        rows.append(Row(store, route, first, whole, events_per_s, statistics.median(lags), p99))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as workdir:
        stores = [
            ("memory", "memory"),
            ("SQLite", f"sqlite:///{os.path.join(workdir, 'a2a.sqlite')}"),
        ]
        for name, storage in stores:
            rows += anyio.run(measure, name, storage, args.quick)
    count = LONG // 10 if args.quick else LONG
    print("### One streamed A2A task against one streamed run on the own SSE route")
    print()
    print(
        f"| store | route | short run: first delta (ms) | short run: whole (ms) "
        f"| events/s ({count:,} deltas) | lag median (ms) | lag p99 (ms) at 1,000/s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.store} | {row.route} | {row.first_ms:.2f} | {row.whole_ms:.2f} "
            f"| {row.events_per_s:,.0f} | {row.lag_median_ms:.2f} | {row.lag_p99_ms:.2f} |"
        )
    print()
    for store in ("memory", "SQLite"):
        own, a2a = (r for r in rows if r.store == store)
        print(
            f"{store}: A2A / own route: short run {a2a.whole_ms / own.whole_ms:.2f}x, "
            f"throughput {a2a.events_per_s / own.events_per_s:.2f}x"
        )
    print(f"\n{machine()}, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
