"""Peer workload 4: a model streams 10,000 one-character text chunks to the consumer.

The figure is µs per chunk from the model to the consumer's ``async for``, a whole
streamed run divided by its chunks, on each framework's streaming API:

* floor: bench_stream's bare async generator (``floor_relay``);
* agentrt: ``agent.stream()``, its ``agent_choice`` events (bench_stream's
  ``through_adapter``: a ScriptedModel with ``chunk_size=1``);
* pydantic-ai: ``agent.run_stream_events()``, its ``PartStartEvent``/``PartDeltaEvent``
  of the text part (``run_stream``'s ``stream_text`` debounces deltas into groups;
  ``iter`` yields graph nodes, each streamed separately);
* openai-agents: ``Runner.run_streamed(...).stream_events()``, its
  ``raw_response_event``s carrying a ``ResponseTextDeltaEvent``;
* strands-agents: ``agent.stream_async()``, its events with a ``"data"`` text delta.

Every consumer counts the deltas it received and the run fails unless there are
exactly 10,000. Each streamed run gets a new agent; the peers' models build their
stream events once, beforehand (see peer_openai_agents.py, peer_strands.py), and
pydantic-ai's FunctionModel streams from the floor's generator.

Run alone: ``python peer_streaming.py [--quick]`` (from benches/); the suite's
runner (bench_peers.py) calls ``collect``. Why a framework is n/a goes to ``peer_note``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from _harness import PeerRow, Runner, measure_many, peer_note, run_alone
from bench_stream import floor_relay, through_adapter

FRAMEWORKS = ("floor", "agentrt", "pydantic-ai", "openai-agents", "strands-agents")
CHUNKS = 10_000
TARGET_US = 2.0
WORKLOAD = "streaming: text chunk to the consumer's async iterator"

M = TypeVar("M")


def peer_runner(
    framework: str, model_for: Callable[[int], M], stream: Callable[[M], Awaitable[int]]
) -> Runner:
    """``runner(n)``: one streamed run of ``n`` chunks; fails unless all ``n`` arrive.

    The model for ``n`` is built on the first call with that ``n`` (the check run's or
    the warm-up's, never a timed round's) and kept.
    """
    models: dict[int, M] = {}

    async def runner(n: int) -> None:
        model = models.get(n)
        if model is None:
            model = models[n] = model_for(n)
        received = await stream(model)
        if received != n:
            raise AssertionError(f"{framework}'s consumer received {received} of {n} deltas")

    return runner


def runners() -> dict[str, Runner]:
    """The floor, agentrt and each peer that imports (peer_note says why not)."""
    found: dict[str, Runner] = {"floor": floor_relay, "agentrt": through_adapter}
    for framework in FRAMEWORKS[2:]:
        try:
            found[framework] = peer(framework)
        except Exception as error:
            peer_note(framework, WORKLOAD, error)
    return found


def peer(framework: str) -> Runner:
    """The peer's runner; imports the framework (ImportError if it is not installed)."""
    if framework == "pydantic-ai":
        import peer_pydantic_ai

        return peer_runner(framework, peer_pydantic_ai.stream_model, peer_pydantic_ai.stream)
    if framework == "openai-agents":
        import peer_openai_agents

        return peer_runner(framework, peer_openai_agents.stream_model, peer_openai_agents.stream)
    if framework == "strands-agents":
        import peer_strands

        return peer_runner(framework, peer_strands.stream_model, peer_strands.stream)
    raise ValueError(f"unknown framework {framework!r}")


async def checked(candidates: dict[str, Runner]) -> dict[str, Runner]:
    """The runners that stream a short run whole; peer_note says why the others do not."""
    passed = {}
    for framework, runner in candidates.items():
        try:
            await runner(100)
        except Exception as error:
            peer_note(framework, WORKLOAD, error)
            continue
        passed[framework] = runner
    return passed


def collect(quick: bool) -> list[PeerRow]:
    """Workload 4 on agentrt and the peers; ``quick``: fewer rounds."""

    async def measured() -> dict[str, float]:
        return await measure_many(await checked(runners()), n=CHUNKS, rounds=3 if quick else 7)

    figures = asyncio.run(measured())
    agentrt = figures.get("agentrt")
    return [
        PeerRow(
            WORKLOAD,
            f"{CHUNKS:,} one-character chunks",
            "µs",
            figures,
            f"<= {TARGET_US:.0f} µs",
            None if agentrt is None else agentrt <= TARGET_US,
        )
    ]


if __name__ == "__main__":
    run_alone(collect, FRAMEWORKS, __doc__)
