"""Streaming adapter throughput: text chunks from a scripted model to a consumer.

A ScriptedModel streams N one-character text chunks; ``agent.stream()`` turns
each into an ``agent_choice`` event model that the consumer receives. The floor
relays the same chunks through a bare async generator. A second pair adds JSON
encoding of every event (NDJSON) on the consumer side, against a floor that
encodes each chunk with ``json.dumps``. A third pair paces the chunks as a network
model does, the model yielding to the event loop before each one, so that every chunk
wakes the consumer (a task switch each way): its floor is the bare relay with the same
yield to the loop per chunk, in one task. Run with ``nox -s bench`` or
``python benches/bench_stream.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
from _harness import Case, Result, machine, measure, table

from agentrt import Agent, ModelRequest, ScriptedModel, StreamChunk
from agentrt.stream.codec import encode_ndjson


def text_of(n: int) -> str:
    return "x" * n


async def chunks(n: int) -> AsyncIterator[str]:
    for piece in text_of(n):
        yield piece


async def floor_relay(n: int) -> None:
    count = 0
    async for _ in chunks(n):
        count += 1
    assert count == n


async def floor_relay_json(n: int) -> None:
    size = 0
    async for piece in chunks(n):
        size += len(json.dumps({"type": "agent_choice", "content": piece}))
    assert size


def agent_for(n: int) -> Agent:
    model = ScriptedModel([text_of(n)], chunk_size=1, record=False)
    return Agent(model=model, name="bench")


async def through_adapter(n: int) -> None:
    agent = agent_for(n)
    count = 0
    async with agent.stream(None, buffer_size=256) as events:
        async for event in events:
            count += event.type == "agent_choice"
    assert count == n


async def through_adapter_json(n: int) -> None:
    agent = agent_for(n)
    size = 0
    async with agent.stream(None, buffer_size=256) as events:
        async for event in events:
            size += len(encode_ndjson(event))
    assert size


class PacedModel(ScriptedModel):
    """A ScriptedModel that yields to the event loop before each chunk, as a socket read does."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        async for chunk in super().stream(request):
            await anyio.lowlevel.checkpoint()
            yield chunk


async def floor_paced(n: int) -> None:
    count = 0
    async for _ in chunks(n):
        await anyio.lowlevel.checkpoint()
        count += 1
    assert count == n


async def through_adapter_paced(n: int) -> None:
    agent = Agent(model=PacedModel([text_of(n)], chunk_size=1, record=False), name="bench")
    count = 0
    async with agent.stream(None) as events:
        async for event in events:
            count += event.type == "agent_choice"
    assert count == n


def cases() -> list[Case]:
    return [
        Case("chunk to consumer", floor_relay, through_adapter, None),
        Case("chunk to consumer, JSON encoded", floor_relay_json, through_adapter_json, None),
        Case("chunk to consumer, paced by the event loop", floor_paced, through_adapter_paced),
    ]


TARGETS_US = {"chunk to consumer": 2.0, "chunk to consumer, JSON encoded": 4.0}
"""Per-chunk targets; the paced case has none (it shows what a real stream costs)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer chunks, for a smoke run")
    args = parser.parse_args()
    n, rounds = (10_000, 3) if args.quick else (100_000, 5)

    async def run_all() -> list[Result]:
        return [await measure(case, n=n, rounds=rounds, warmup=1) for case in cases()]

    results = asyncio.run(run_all())
    print(table(f"Stream adapter: {n:,} text chunks", results))
    print()
    print("| case | agentrt µs per chunk | target | |")
    print("|---|---:|---:|---|")
    for r in results:
        target = TARGETS_US.get(r.case.name)
        if target is None:
            print(f"| {r.case.name} | {r.subject_us:.2f} | | |")
            continue
        verdict = "ok" if r.subject_us <= target else "MISSED"
        print(f"| {r.case.name} | {r.subject_us:.2f} | <= {target:.0f} | {verdict} |")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
