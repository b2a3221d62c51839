"""What a replay costs against the run it replays (``agentrt.durable.replay``).

A durable server (in this process, called through ASGI) serves sessions from a
store; each session has one run: a streamed tool call of ``add``, its result, then
an answer streamed in 50 deltas, from a scripted model (no network: the original's
cost is agentrt's and the store's, not a model's). Then the server is shut down and
each run is replayed from its recording.

Rows, per store (durable on SQLite, durable on Postgres), medians over the runs:

* **original**: the run, from its ``POST /sessions/{id}/messages`` to the end of its
  event stream (every event written to the store first, each step recorded);
* **read**: ``read_recording``: the run's workflow, steps, events and answers read
  back (DBOS is not started);
* **replay**: ``replay_recording``: the agent made again, the run made again with the
  recorded answers and results standing in, its events collected;
* **ratio**: (read + replay) / original.

A run on a real model costs its model calls on top (seconds, where these are
milliseconds): a replay calls none. Postgres: ``AGENTRT_BENCH_POSTGRES`` (a server URL
without a database), else a private server from Debian's binaries, else its row is
left out. Run with ``nox -s bench`` or ``python benches/bench_replay.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass

import anyio
import httpx
from _harness import machine
from bench_durable_stream import postgres

from agentrt.agent import Agent
from agentrt.durable import read_recording, replay_recording
from agentrt.messages import ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptedModel
from agentrt.server import create_app

DELTAS = 50
ANSWER = "".join(f"w{i:02d} " for i in range(DELTAS))  # 4 characters a delta


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _answer(request: ModelRequest) -> str | ToolCall:
    if request.messages[-1].role == "user":
        return ToolCall(id="call-add", name="add", arguments={"a": 2, "b": 3})
    return ANSWER


def make() -> Agent:
    """The served agent: its answers in deltas of 4 characters."""
    return Agent(model=ScriptedModel(_answer, chunk_size=4, record=False), tools=[add])


@dataclass
class Row:
    store: str
    original_ms: float
    read_ms: float
    replay_ms: float

    @property
    def ratio(self) -> float:
        return (self.read_ms + self.replay_ms) / self.original_ms


async def _record(store: str, runs: int) -> tuple[list[str], list[float]]:
    """``runs`` sessions of one run each; their ids and the time of each run."""
    app = create_app(make, storage=store, executor_id="bench")
    sessions: list[str] = []
    timings: list[float] = []
    transport = httpx.ASGITransport(app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost") as client,
    ):
        for _ in range(runs):
            session = (await client.post("/sessions")).json()["id"]
            start = time.perf_counter()
            body = await client.post(f"/sessions/{session}/messages", json={"message": "go"})
            timings.append(time.perf_counter() - start)
            if b"stream_stopped" not in body.content:
                raise AssertionError("the run did not end")
            sessions.append(session)
    return sessions, timings


async def measure_store(name: str, store: str, quick: bool) -> Row:
    runs = 3 if quick else 30
    sessions, originals = await _record(store, runs)
    reads: list[float] = []
    replays: list[float] = []
    for session in sessions:
        start = time.perf_counter()
        recording = await read_recording(store, session)
        read = time.perf_counter()
        replayed = await replay_recording(recording, make)
        reads.append(read - start)
        replays.append(time.perf_counter() - read)
        if not replayed.matches:
            raise AssertionError(f"{name}: the replay differs: {replayed.differences()[:1]}")
    # The first of each is a cold start (imports, connections): left out.
    return Row(
        name,
        statistics.median(originals[1:] or originals) * 1000,
        statistics.median(reads[1:] or reads) * 1000,
        statistics.median(replays[1:] or replays) * 1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 runs per store, a smoke run")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as workdir, postgres() as pg:
        stores = [("SQLite", f"sqlite:///{os.path.join(workdir, 'replay.sqlite')}")]
        if pg is not None:
            stores.append(("Postgres", pg))
        for name, store in stores:
            rows.append(anyio.run(measure_store, name, store, args.quick))
    print(f"### A run (a tool call, an answer in {DELTAS} deltas) and its replay, medians")
    print()
    print("| store | original run (ms) | read (ms) | replay (ms) | (read + replay) / original |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.store} | {row.original_ms:.1f} | {row.read_ms:.1f} | "
            f"{row.replay_ms:.1f} | {row.ratio:.2f} |"
        )
    print(f"\n{machine()}, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
