"""Streamed-answer cost per chunk: SSE decoding, chunk parsing, assembly and dispatch.

The stream is 10,000 OpenAI text chunks (``data: {...}`` events of about 250 bytes,
as gpt-4o-mini sends them) fed as bytes in network-sized pieces: 1,460 bytes (one
TCP segment, about six events) or one event per piece (a slow model, each token in
its own read). The floor is the least any parser must do: split at blank lines,
strip ``data: ``, ``json.loads`` each chunk.

Rows:

* decode only: :class:`agentrt.models._sse.SSEDecoder` against the floor's split,
  and httpx-sse's decoders (line decoder, event decoder, incremental UTF-8) for
  the build-or-reuse decision;
* decode and parse into :data:`StreamChunk` values;
* the whole path of ``agent.execute(stream=True)`` minus the agent: the
  :class:`OpenAIChatModel` stream over an ``httpx.MockTransport``, a
  :class:`ResponseAssembler`, and ``await bus.do(LLM_STREAM_CHUNK, ...)`` with no
  handlers per chunk (targets: at most 5 µs per chunk, and 1.5 times the floor);
  the same with httpx-sse's ``aiter_sse()`` in place of the decoder.

Run with ``nox -s bench`` or ``python benches/bench_sse.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import importlib.util
import json
from collections.abc import AsyncIterator, Callable

import httpx
from _harness import Case, Result, Runner, machine, measure, table

from agentrt import AgentEvents, EventBus, ModelRequest, StreamChunk, UserMessage
from agentrt.models._assemble import ResponseAssembler
from agentrt.models._openai_wire import ChunkReader
from agentrt.models._sse import SSEDecoder
from agentrt.models.openai import OpenAIChatModel

# httpx-sse is not a dependency of agentrt: without it, its comparison rows are left out.
HTTPX_SSE = importlib.util.find_spec("httpx_sse") is not None
CHUNKS = 10_000
BASE = "http://bench/v1"
FULL = "stream + assemble + bus.do"
SEGMENT = 1_460
TARGET_US = 5.0
WORDS = (" The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", " 🦊")


def stream_body(count: int) -> list[bytes]:
    """``count`` content events and the closing ones, one bytes object per event."""
    head = {
        "id": "chatcmpl-AXq2kP9wZ1vB3nRtY6sL0mE8cFh",
        "object": "chat.completion.chunk",
        "created": 1732623456,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0705bf87c0",
    }
    events = []
    for i in range(count):
        delta = {"content": WORDS[i % len(WORDS)]}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        events.append({**head, "choices": [choice], "usage": None})
    usage = {"prompt_tokens": 12, "completion_tokens": count, "total_tokens": 12 + count}
    events.append({**head, "choices": [], "usage": usage})
    encoded = [f"data: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in events]
    return [*encoded, b"data: [DONE]\n\n"]


def segments(events: list[bytes], size: int) -> list[bytes]:
    body = b"".join(events)
    return [body[i : i + size] for i in range(0, len(body), size)]


BY_SEGMENT = segments(stream_body(CHUNKS), SEGMENT)
BY_EVENT = stream_body(CHUNKS)
REQUEST = ModelRequest(messages=[UserMessage(content="Tell me about foxes.")])


# -- floors -----------------------------------------------------------------------------------


def floor_split(pieces: list[bytes]) -> int:
    count = 0
    buffer = b""
    for piece in pieces:
        buffer += piece
        *blocks, buffer = buffer.split(b"\n\n")
        for block in blocks:
            block[6:].decode()
            count += 1
    return count


def floor_json(pieces: list[bytes]) -> int:
    count = 0
    buffer = b""
    for piece in pieces:
        buffer += piece
        *blocks, buffer = buffer.split(b"\n\n")
        for block in blocks:
            data = block[6:]
            if data != b"[DONE]":
                json.loads(data)
            count += 1
    return count


# -- subjects ---------------------------------------------------------------------------------


def decode_agentrt(pieces: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for piece in pieces:
        count += len(decoder.feed(piece))
    return count


def decode_httpx_sse(pieces: list[bytes]) -> int:
    # What EventSource.aiter_sse() does per piece, without its async generators.
    from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
    from httpx_sse._decoders import SSELineDecoder as HttpxSSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")()
    lines = HttpxSSELineDecoder()
    events = HttpxSSEDecoder()
    count = 0
    for piece in pieces:
        for line in lines.decode(text.decode(piece)):
            if events.decode(line) is not None:
                count += 1
    return count


def parse_agentrt(pieces: list[bytes]) -> int:
    decoder = SSEDecoder()
    state = ChunkReader("http://bench")
    count = 0
    for piece in pieces:
        for event in decoder.feed(piece):
            if event.data == "[DONE]":
                state.finish()
            else:
                count += len(state.feed(event.data, event.event))
    return count


def transport(pieces: list[bytes]) -> httpx.MockTransport:
    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return httpx.MockTransport(handler)


async def full_agentrt(model: OpenAIChatModel, bus: EventBus) -> int:
    assembler = ResponseAssembler()
    async for chunk in model.stream(REQUEST):
        assembler.add(chunk)
        await bus.do(AgentEvents.LLM_STREAM_CHUNK, agent=None, request=REQUEST, chunk=chunk)
    return len(assembler.response().content)


async def full_httpx_sse(client: httpx.AsyncClient, bus: EventBus) -> int:
    from httpx_sse import EventSource

    assembler = ResponseAssembler()
    state = ChunkReader("http://bench")
    async with client.stream("POST", f"{BASE}/chat/completions") as response:
        async for event in EventSource(response).aiter_sse():
            chunks: list[StreamChunk]
            if event.data == "[DONE]":
                chunks = [state.finish()]
            else:
                chunks = state.feed(event.data, event.event)
            for chunk in chunks:
                assembler.add(chunk)
                await bus.do(
                    AgentEvents.LLM_STREAM_CHUNK, agent=None, request=REQUEST, chunk=chunk
                )
    return len(assembler.response().content)


def repeat(fn: Callable[[list[bytes]], int], pieces: list[bytes]) -> Runner:
    """A runner doing ``n`` chunks' worth of ``fn`` over ``pieces`` (whole streams)."""

    async def run(n: int) -> None:
        for _ in range(max(1, n // CHUNKS)):
            fn(pieces)

    return run


def cases() -> list[Case]:
    bus = EventBus()
    out: list[Case] = []
    for label, pieces in (("1,460-byte pieces", BY_SEGMENT), ("one event per piece", BY_EVENT)):
        split, parse = repeat(floor_split, pieces), repeat(floor_json, pieces)
        out.append(Case(f"decode, {label}", split, repeat(decode_agentrt, pieces), 3.0))
        out.append(
            Case(f"decode with httpx-sse, {label}", split, repeat(decode_httpx_sse, pieces))
        )
        out.append(
            Case(f"decode + parse to chunks, {label}", parse, repeat(parse_agentrt, pieces), 1.5)
        )
        model = OpenAIChatModel("gpt-4o-mini", base_url=BASE, transport=transport(pieces))
        client = httpx.AsyncClient(transport=transport(pieces))

        async def full(n: int, model: OpenAIChatModel = model) -> None:
            for _ in range(max(1, n // CHUNKS)):
                await full_agentrt(model, bus)

        async def full_hx(n: int, client: httpx.AsyncClient = client) -> None:
            for _ in range(max(1, n // CHUNKS)):
                await full_httpx_sse(client, bus)

        # The ratio target holds on a busy machine too, where the absolute one cannot.
        out.append(Case(f"{FULL}, {label}", parse, full, 1.5))
        if HTTPX_SSE:
            out.append(Case(f"same with httpx-sse aiter_sse, {label}", parse, full_hx))
    return out


async def run(quick: bool) -> list[Result]:
    rounds = 3 if quick else 11
    return [await measure(case, n=CHUNKS, rounds=rounds, warmup=1) for case in cases()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    results = asyncio.run(run(args.quick))
    print(table(f"SSE: cost per chunk ({CHUNKS:,}-chunk text stream)", results))
    print()
    for r in results:
        if r.case.name.startswith(FULL):
            verdict = "ok" if r.subject_us <= TARGET_US else "MISSED"
            target = f"target <= {TARGET_US:g} µs"
            print(f"- {r.case.name}: {r.subject_us:.2f} µs a chunk ({target}) {verdict}")
    if not HTTPX_SSE:
        print("\n(httpx-sse is not installed: its comparison rows are left out)")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
