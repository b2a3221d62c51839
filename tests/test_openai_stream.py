"""OpenAIChatModel's streamed answers: recorded servers' streams, variants, malformed ones."""

import dataclasses
import gzip
import itertools
import json
from collections.abc import AsyncIterator, Callable

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrt.exceptions import (
    ModelResponseError,
    StreamProtocolError,
)
from agentrt.messages import Usage
from agentrt.models.base import (
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from tests.openai_fixtures import (
    LLAMACPP_TOOLS_STREAM,
    OPENAI_COMPLETION,
    OPENAI_COMPLETION_EXPECTED,
    OPENAI_TEXT_EXPECTED,
    OPENAI_TEXT_STREAM,
    OPENAI_TOOLS_STREAM,
    RECORDED,
    VLLM_COMPLETION,
    VLLM_REASONING_STREAM,
    Recorded,
    wire,
)
from tests.openai_support import (
    REQUEST,
    SSE_HEADERS,
    Script,
    assemble,
    chunk_json,
    collect,
    model,
    sse,
    streamed,
)

# -- stream -------------------------------------------------------------------------------------


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
async def test_recorded_streams_assemble(recorded: Recorded) -> None:
    assert await streamed(recorded.body) == recorded.expected


async def test_openai_text_chunks_exactly() -> None:
    async with model(Script(sse(OPENAI_TEXT_STREAM))) as chat:
        chunks = await collect(chat)
    assert chunks == [
        TextDelta("Bonjour"),
        TextDelta("! Il fait"),
        TextDelta(" 18°C à"),
        TextDelta(" Paris 🌤"),
        TextDelta("."),
        UsageChunk(OPENAI_TEXT_EXPECTED.usage, "stop"),
    ]


async def test_parallel_tool_calls_chunks_exactly() -> None:
    async with model(Script(sse(OPENAI_TOOLS_STREAM))) as chat:
        chunks = await collect(chat)
    first, second = "call_9pQmZ2xR7tYb1LkW3nVc8dHe", "call_Hk4sD8fJ2mN6pQ0rT5vX1yZa"
    assert chunks[:-1] == [
        ToolCallDelta(0, id=first, name="get_weather", arguments=""),
        ToolCallDelta(0, arguments='{"ci'),
        ToolCallDelta(0, arguments='ty": "P'),
        ToolCallDelta(0, arguments='aris"}'),
        ToolCallDelta(1, id=second, name="get_weather", arguments=""),
        ToolCallDelta(1, arguments='{"ci'),
        ToolCallDelta(1, arguments='ty": "R'),
        ToolCallDelta(1, arguments='ome"}'),
    ]
    assert chunks[-1] == UsageChunk(
        Usage(input_tokens=1187, output_tokens=51, cached_tokens=1024, requests=1), "tool_calls"
    )


async def test_llamacpp_repeated_ids_names_and_function_call_are_not_duplicated() -> None:
    async with model(Script(sse(LLAMACPP_TOOLS_STREAM))) as chat:
        chunks = await collect(chat)
    paris, rome = "k3JrT8xWq2ZpL5vN9mB1cY7hD4fG6sA0", "Xe9Wq1Lr5Tz3Ky7Nu0Bv4Cm8Pa2Sd6Fh"
    assert chunks == [
        ToolCallDelta(0, id=paris, name="get_weather", arguments='{"city":'),
        ToolCallDelta(0, arguments=' "Paris"}'),
        ToolCallDelta(1, id=rome, name="get_weather", arguments='{"city":'),
        ToolCallDelta(1, arguments=' "Rome"}'),
        UsageChunk(Usage(input_tokens=310, output_tokens=42, requests=1), "tool_calls"),
    ]


async def test_vllm_reasoning_comes_before_the_answer() -> None:
    async with model(Script(sse(VLLM_REASONING_STREAM))) as chat:
        chunks = await collect(chat)
    kinds = [type(chunk).__name__ for chunk in chunks]
    assert kinds == ["ReasoningDelta"] * 4 + ["TextDelta"] * 2 + ["UsageChunk"]


async def test_a_legacy_function_call_alone_is_a_tool_call() -> None:
    body = wire(
        chunk_json({"function_call": {"name": "lookup", "arguments": '{"q"'}}),
        chunk_json({"function_call": {"arguments": ': "x"}'}}),
    )
    response = await streamed(body)
    (call,) = response.tool_calls
    assert (call.name, call.arguments) == ("lookup", '{"q": "x"}')


async def test_reasoning_field_refusal_and_null_content() -> None:
    body = wire(
        chunk_json({"role": "assistant", "content": None}),
        chunk_json({"reasoning": "Hmm.", "content": None}),
        chunk_json({"content": None, "refusal": "I can't."}),
        chunk_json({"content": ""}),
    )
    async with model(Script(sse(body))) as chat:
        chunks = await collect(chat)
    assert chunks == [ReasoningDelta("Hmm."), TextDelta("I can't."), UsageChunk(Usage(requests=1))]


async def test_usage_on_several_chunks_counts_once() -> None:
    running = [{"prompt_tokens": 5, "completion_tokens": n} for n in (1, 2, 3)]
    body = wire(
        chunk_json({"content": "a"}, usage=running[0]),
        chunk_json({"content": "b"}, usage=running[1]),
        chunk_json(None, usage=running[2]),
    )
    response = await streamed(body)
    assert response.usage == Usage(input_tokens=5, output_tokens=3, requests=1)


async def test_other_choices_and_event_types_are_skipped() -> None:
    two = {
        "choices": [
            {"index": 1, "delta": {"content": "other"}},
            {"index": 0, "delta": {"content": "mine"}, "finish_reason": "length"},
        ]
    }
    body = b"event: ping\ndata: {}\n\n" + wire(json.dumps(two))
    response = await streamed(body)
    assert (response.content, response.finish_reason) == ("mine", "length")


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(lambda b: b.replace(b"\n", b"\r\n"), id="CRLF"),
        pytest.param(lambda b: b.replace(b"\n", b"\r"), id="CR"),
        pytest.param(lambda b: b": OPENROUTER PROCESSING\n\n" + b, id="comments"),
        pytest.param(
            lambda b: b.replace(b'"choices":', b'\ndata: "choices":').replace(
                b"data: \ndata:", b"data:"
            ),
            id="multi-line-data",
        ),
    ],
)
async def test_wire_variants_assemble_the_same(variant: Callable[[bytes], bytes]) -> None:
    for recorded in RECORDED:
        assert await streamed(variant(recorded.body)) == recorded.expected, recorded.name


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(0, len(RECORDED) - 1),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(0, 20_000), max_size=60),
)
async def test_recorded_streams_split_at_random_points_assemble_the_same(
    index: int, crlf: bool, cuts: list[int]
) -> None:
    recorded = RECORDED[index]
    body = recorded.body.replace(b"\n", b"\r\n") if crlf else recorded.body
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    assert await streamed(pieces) == recorded.expected


async def test_a_json_answer_to_a_stream_request_still_streams() -> None:
    json_headers = {"content-type": "application/json"}
    script = Script(httpx.Response(200, headers=json_headers, content=VLLM_COMPLETION))
    async with model(script) as chat:
        chunks = await collect(chat)
    assert chunks == [
        ReasoningDelta("Okay, the user asks 2+2. That is 4.\n"),
        TextDelta("2 + 2 = **4**"),
        UsageChunk(
            Usage(input_tokens=14, output_tokens=59, reasoning_tokens=21, requests=1), "stop"
        ),
    ]


async def test_stops_at_done_even_if_the_server_keeps_the_line_open() -> None:
    async def forever() -> AsyncIterator[bytes]:
        yield OPENAI_TEXT_STREAM
        await anyio.sleep_forever()
        yield b""  # pragma: no cover

    script = Script(httpx.Response(200, headers=SSE_HEADERS, content=forever()))
    with anyio.fail_after(5):
        async with model(script) as chat:
            assert assemble(await collect(chat)) == OPENAI_TEXT_EXPECTED


async def test_breaking_off_closes_the_response() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield wire(chunk_json({"content": "a"})).removesuffix(b"data: [DONE]\n\n")
        await anyio.sleep_forever()
        yield b""  # pragma: no cover

    response = httpx.Response(200, headers=SSE_HEADERS, content=body())
    with anyio.fail_after(5):
        async with model(Script(response)) as chat:
            stream = chat.stream(REQUEST)
            assert await anext(stream) == TextDelta("a")
            assert not response.is_closed
            await stream.aclose()  # type: ignore[attr-defined]
    assert response.is_closed


async def test_a_json_answer_with_tool_calls_to_a_stream_request() -> None:
    json_headers = {"content-type": "application/json"}
    script = Script(httpx.Response(200, headers=json_headers, content=OPENAI_COMPLETION))
    async with model(script) as chat:
        assert assemble(await collect(chat)) == dataclasses.replace(
            OPENAI_COMPLETION_EXPECTED, model_name=None
        )


async def test_a_gzipped_stream() -> None:
    headers = {**SSE_HEADERS, "content-encoding": "gzip"}
    body = gzip.compress(OPENAI_TEXT_STREAM)
    pieces = [body[i : i + 50] for i in range(0, len(body), 50)]
    async with model(Script(sse(pieces, **headers))) as chat:
        assert assemble(await collect(chat)) == OPENAI_TEXT_EXPECTED


async def test_a_corrupt_gzipped_stream() -> None:
    headers = {**SSE_HEADERS, "content-encoding": "gzip"}
    async with model(Script(sse(b"data: not gzip at all", **headers))) as chat:
        with pytest.raises(ModelResponseError, match="the body cannot be decoded"):
            await collect(chat)


# -- malformed streams --------------------------------------------------------------------------


async def test_bad_json_names_the_chunk() -> None:
    body = wire(chunk_json({"content": "a"}), '{"choices": [{"delta": {"content": "b"}')
    async with model(Script(sse(body))) as chat:
        with pytest.raises(StreamProtocolError, match="a chunk is not valid JSON") as caught:
            await collect(chat)
    assert caught.value.chunk == '{"choices": [{"delta": {"content": "b"}'
    assert 'offending chunk: {"choices"' in str(caught.value)


async def test_a_fragment_for_an_unknown_index_without_a_name() -> None:
    stray = chunk_json({"tool_calls": [{"index": 3, "function": {"arguments": "{}"}}]})
    body = wire(
        chunk_json({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}), stray
    )
    async with model(Script(sse(body))) as chat:
        with pytest.raises(StreamProtocolError, match="index 3 has no name") as caught:
            await collect(chat)
    assert caught.value.chunk == stray


async def test_a_stream_without_done_fails_naming_the_last_chunk() -> None:
    last = chunk_json({"content": "b"})
    body = wire(chunk_json({"content": "a"}), last).removesuffix(b"data: [DONE]\n\n")
    async with model(Script(sse(body))) as chat:
        with pytest.raises(StreamProtocolError, match="ended without the closing") as caught:
            await collect(chat)
    assert caught.value.chunk == last


async def test_a_stream_cut_mid_event_names_what_arrived() -> None:
    body = wire(chunk_json({"content": "a"}))[:40]
    async with model(Script(sse(body))) as chat:
        with pytest.raises(StreamProtocolError, match="ended without") as caught:
            await collect(chat)
    assert caught.value.chunk == body.decode()


async def test_an_empty_stream_fails() -> None:
    async with model(Script(sse(b""))) as chat:
        with pytest.raises(StreamProtocolError, match="<no data>"):
            await collect(chat)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ("[1, 2]", "a chunk is not a JSON object"),
        ('{"choices": {"index": 0}}', "choices are not a list"),
        ('{"choices": ["x"]}', "a choice is not an object"),
        ('{"choices": [{"delta": "x"}]}', "a choice's delta is not an object"),
        ('{"choices": [{"delta": {"tool_calls": {"index": 0}}}]}', "tool_calls is not a list"),
        ('{"choices": [{"delta": {"tool_calls": ["x"]}}]}', "a tool-call delta is not an object"),
        (
            '{"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {}}]}}]}',
            "a tool-call delta has index '0'",
        ),
        (
            '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}',
            "function is not an object",
        ),
    ],
)
async def test_malformed_chunks(data: str, match: str) -> None:
    async with model(Script(sse(wire(data)))) as chat:
        with pytest.raises(StreamProtocolError, match=match) as caught:
            await collect(chat)
    assert caught.value.chunk == data


async def test_an_error_inside_the_stream_is_reported() -> None:
    error = '{"error": {"object": "error", "message": "KV cache exhausted", "code": 500}}'
    async with model(Script(sse(wire(chunk_json({"content": "a"}), error)))) as chat:
        with pytest.raises(ModelResponseError, match="mid-stream: KV cache exhausted"):
            await collect(chat)
    body = b'event: error\ndata: {"message": "overloaded"}\n\n'
    async with model(Script(sse(body))) as chat:
        with pytest.raises(ModelResponseError, match="an error event"):
            await collect(chat)
