"""agentrt/models/openai.py (OpenAIChatModel) against mock transports and a local server."""

import dataclasses
import email.utils
import gzip
import itertools
import json
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentrt import Agent, AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentrt.exceptions import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    StreamProtocolError,
)
from agentrt.messages import Message, Usage
from agentrt.models.assemble import ResponseAssembler
from agentrt.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.models.openai import DEFAULT_BASE_URL, DEFAULT_TIMEOUT, OpenAIChatModel
from tests.openai_fixtures import (
    LLAMACPP_COMPLETION,
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
    Turn,
    completion_body,
    sse_stream,
    wire,
)

BASE = "http://llm.test/v1"
URL = f"{BASE}/chat/completions"
REQUEST = ModelRequest(messages=[UserMessage(content="Weather in Paris?")])
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}

Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Script:
    """A mock server: answers requests from a list, in order, and records them."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return answer
        return answer(request)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


class Sleeps(list[float]):
    """An injected sleep that records the delays instead of waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def sse(body: bytes | Sequence[bytes], **headers: str) -> httpx.Response:
    """A streamed 200 response: ``body`` as one piece, or as the given pieces."""
    pieces = [body] if isinstance(body, bytes) else list(body)

    async def stream() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    return httpx.Response(200, headers={**SSE_HEADERS, **headers}, content=stream())


def model(script: Script, **options: Any) -> OpenAIChatModel:
    options.setdefault("api_key", "sk-test")
    options.setdefault("sleep", Sleeps())
    return OpenAIChatModel("gpt-4o-mini", base_url=BASE, transport=script.transport, **options)


async def collect(chat: OpenAIChatModel, request: ModelRequest = REQUEST) -> list[StreamChunk]:
    return [chunk async for chunk in chat.stream(request)]


def assemble(chunks: Sequence[StreamChunk]) -> ModelResponse:
    assembler = ResponseAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.response()


async def streamed(body: bytes | Sequence[bytes]) -> ModelResponse:
    async with model(Script(sse(body))) as chat:
        return assemble(await collect(chat))


# -- construction -------------------------------------------------------------------------------


def test_is_a_model() -> None:
    chat = OpenAIChatModel("gpt-4o-mini", api_key="sk-test")
    assert isinstance(chat, Model)
    assert chat.name == "gpt-4o-mini"


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    chat = OpenAIChatModel("qwen3")
    assert chat.base_url == "http://127.0.0.1:8000/v1"
    assert chat.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert chat._headers["Authorization"] == "Bearer sk-env"


def test_without_environment_the_openai_api_and_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat = OpenAIChatModel("gpt-4o-mini")
    assert chat.base_url == DEFAULT_BASE_URL == "https://api.openai.com/v1"
    assert "Authorization" not in chat._headers


def test_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    chat = OpenAIChatModel("m", base_url="http://arg/v1", api_key="sk-arg")
    assert chat.url == "http://arg/v1/chat/completions"
    assert chat._headers["Authorization"] == "Bearer sk-arg"


def test_repr_never_shows_the_key() -> None:
    chat = OpenAIChatModel("gpt-4o-mini", base_url=BASE, api_key="sk-secret")
    assert repr(chat) == f"OpenAIChatModel('gpt-4o-mini', base_url='{BASE}')"


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"model": 3}, TypeError, "model must be a model id string, got int"),
        ({"model": "  "}, ValueError, "non-empty model id"),
        ({"base_url": b"http://x"}, TypeError, "base_url must be a string, got bytes"),
        ({"base_url": "localhost:8000/v1"}, ValueError, "http:// or https:// URL"),
        ({"api_key": 42}, TypeError, "api_key must be a string or None"),
        ({"client": object()}, TypeError, "client must be an httpx.AsyncClient"),
        ({"transport": object()}, TypeError, "transport must be an httpx.AsyncBaseTransport"),
        ({"timeout": "10"}, TypeError, "timeout must be seconds or an httpx.Timeout"),
        ({"timeout": True}, TypeError, "timeout must be seconds"),
        ({"headers": {"X-A": 1}}, TypeError, "headers must be a mapping of str to str"),
        ({"max_retries": -1}, ValueError, "max_retries must be 0 or more"),
        ({"max_retries": 2.0}, TypeError, "max_retries must be an int"),
        ({"max_retries": True}, TypeError, "max_retries must be an int"),
        ({"backoff_base": -0.1}, ValueError, "backoff_base must be 0 or more"),
        ({"backoff_max": float("nan")}, ValueError, "backoff_max must be 0 or more"),
        ({"max_retry_after": "60"}, TypeError, "max_retry_after must be a number"),
        ({"strict_output": 1}, TypeError, "strict_output must be a bool"),
        ({"sleep": 0.5}, TypeError, "sleep must be an async function"),
    ],
)
def test_arguments_are_checked(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    options = {"model": "gpt-4o-mini", "api_key": "sk-test", **options}
    with pytest.raises(error, match=match):
        OpenAIChatModel(**options)


async def test_client_excludes_transport_and_timeout() -> None:
    async with httpx.AsyncClient() as client:
        with pytest.raises(ValueError, match="either client= or transport="):
            OpenAIChatModel("m", client=client, transport=httpx.MockTransport(Script()))
        with pytest.raises(ValueError, match="set the timeout on the client"):
            OpenAIChatModel("m", client=client, timeout=3.0)


async def test_aclose_closes_the_client_it_created() -> None:
    chat = OpenAIChatModel("m", base_url=BASE, api_key="k", timeout=30.0)
    assert chat._client.timeout == httpx.Timeout(30.0)
    async with chat as entered:
        assert entered is chat
    assert chat._client.is_closed


async def test_a_given_client_stays_open_and_is_used() -> None:
    script = Script(httpx.Response(200, content=OPENAI_COMPLETION))
    async with httpx.AsyncClient(transport=script.transport) as client:
        async with OpenAIChatModel("m", base_url=BASE, client=client) as chat:
            await chat.complete(REQUEST)
        assert not client.is_closed
    assert len(script.requests) == 1


def test_default_timeout_allows_a_slow_model() -> None:
    chat = OpenAIChatModel("m", api_key="k")
    assert chat._client.timeout == DEFAULT_TIMEOUT
    assert (DEFAULT_TIMEOUT.read, DEFAULT_TIMEOUT.connect) == (600.0, 5.0)


# -- the request --------------------------------------------------------------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

CONVERSATION: list[Message] = [
    SystemMessage(content="You are terse."),
    UserMessage(content="Weather in Paris and Rome?"),
    AssistantMessage(
        content="",
        reasoning="Two cities: two calls.",
        tool_calls=(
            ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
            ToolCall(id="call_2", name="get_weather", arguments='{"city": "Rome"}'),
        ),
        usage=Usage(input_tokens=10, output_tokens=5, requests=1),
    ),
    ToolMessage(content="18°C", tool_call_id="call_1", name="get_weather"),
    ToolMessage(content="boom", tool_call_id="call_2", name="get_weather", is_error=True),
    AssistantMessage(content="Paris 18°C; Rome unknown."),
]

CONVERSATION_WIRE = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
    {"role": "assistant", "content": "Paris 18°C; Rome unknown."},
]


async def test_complete_posts_messages_tools_and_settings() -> None:
    script = Script(httpx.Response(200, content=OPENAI_COMPLETION))
    request = ModelRequest(
        messages=list(CONVERSATION),
        tools=[WEATHER_TOOL],
        settings={
            "temperature": 0.2,
            "max_tokens": 256,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "seed": 7,
        },
    )
    async with model(script, headers={"OpenAI-Organization": "org-1"}) as chat:
        await chat.complete(request)
    (sent,) = script.requests
    assert sent.method == "POST"
    assert str(sent.url) == URL
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["openai-organization"] == "org-1"
    assert script.bodies == [
        {
            "model": "gpt-4o-mini",
            "temperature": 0.2,
            "max_tokens": 256,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "seed": 7,
            "messages": CONVERSATION_WIRE,
            "tools": [WEATHER_TOOL],
        }
    ]


async def test_stream_asks_for_a_stream_with_usage() -> None:
    script = Script(sse(OPENAI_TEXT_STREAM))
    request = ModelRequest(
        messages=[UserMessage(content="hi")],
        settings={"stream_options": {"continuous_usage_stats": True}},
    )
    async with model(script) as chat:
        await collect(chat, request)
    (body,) = script.bodies
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert script.requests[0].headers["accept"] == "text/event-stream"


def test_settings_openai_would_reject_are_left_out() -> None:
    chat = OpenAIChatModel("m", api_key="k")
    request = ModelRequest(
        messages=[UserMessage(content="hi")],
        settings={
            "tool_choice": "auto",
            "parallel_tool_calls": False,
            "top_p": 0.9,
            "stream_options": {"include_usage": True},
        },
    )
    assert chat.request_body(request) == {
        "model": "m",
        "top_p": 0.9,
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_output_schema_becomes_a_json_schema_response_format() -> None:
    schema = {
        "title": "City Weather",
        "type": "object",
        "properties": {"temperature": {"type": "number"}},
        "required": ["temperature"],
    }
    request = ModelRequest(messages=[UserMessage(content="hi")], output_schema=schema)
    body = OpenAIChatModel("m", api_key="k").request_body(request)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City_Weather", "schema": schema, "strict": False},
    }
    strict = OpenAIChatModel("m", api_key="k", strict_output=True).request_body(request)
    assert strict["response_format"]["json_schema"]["strict"] is True


def test_an_untitled_schema_is_named_output_and_settings_win() -> None:
    chat = OpenAIChatModel("m", api_key="k")
    request = ModelRequest(messages=[], output_schema={"type": "array"})
    assert chat.request_body(request)["response_format"]["json_schema"]["name"] == "output"
    request.settings = {"response_format": {"type": "json_object"}}
    assert chat.request_body(request)["response_format"] == {"type": "json_object"}


def test_settings_cannot_replace_what_the_model_sets() -> None:
    chat = OpenAIChatModel("m", api_key="k")
    request = ModelRequest(messages=[], settings={"messages": [], "stream": True})
    with pytest.raises(ValueError, match=r"cannot set \['messages', 'stream'\]"):
        chat.request_body(request)


def test_an_unknown_message_type_is_refused() -> None:
    request = ModelRequest(messages=[object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="cannot send a object"):
        OpenAIChatModel("m", api_key="k").request_body(request)


async def test_settings_that_are_not_json_fail_before_sending() -> None:
    script = Script()
    request = ModelRequest(messages=[], settings={"temperature": object()})
    async with model(script) as chat:
        with pytest.raises(TypeError, match="cannot be sent as JSON"):
            await chat.complete(request)
    assert script.requests == []


# -- complete -----------------------------------------------------------------------------------


async def test_complete_parses_an_openai_tool_call_answer() -> None:
    async with model(Script(httpx.Response(200, content=OPENAI_COMPLETION))) as chat:
        assert await chat.complete(REQUEST) == OPENAI_COMPLETION_EXPECTED


async def test_complete_parses_vllm_reasoning_content_and_reasoning_tokens() -> None:
    async with model(Script(httpx.Response(200, content=VLLM_COMPLETION))) as chat:
        response = await chat.complete(REQUEST)
    assert response == ModelResponse(
        content="2 + 2 = **4**",
        reasoning="Okay, the user asks 2+2. That is 4.\n",
        usage=Usage(input_tokens=14, output_tokens=59, reasoning_tokens=21, requests=1),
        finish_reason="stop",
        model_name="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    )


async def test_complete_parses_llamacpp() -> None:
    async with model(Script(httpx.Response(200, content=LLAMACPP_COMPLETION))) as chat:
        response = await chat.complete(REQUEST)
    assert response.content == "Hello! How can I help?"
    assert response.reasoning == "The user greets me."
    assert response.usage == Usage(input_tokens=9, output_tokens=12, requests=1)
    assert response.model_name == "qwen2.5-7b-instruct-q4_k_m.gguf"


def completion(message: dict[str, Any], **extra: Any) -> httpx.Response:
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return httpx.Response(200, json={"choices": [choice], **extra})


async def test_complete_takes_the_reasoning_field_and_cached_tokens() -> None:
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 1920},
        "completion_tokens_details": {"reasoning_tokens": 256},
    }
    message = {"role": "assistant", "content": "Yes.", "reasoning": "Think."}
    async with model(Script(completion(message, usage=usage))) as chat:
        response = await chat.complete(REQUEST)
    assert response.reasoning == "Think."
    assert response.usage == Usage(2000, 300, cached_tokens=1920, reasoning_tokens=256, requests=1)
    assert response.model_name == "gpt-4o-mini"  # the server named none


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "ab"),
        ({"content": None, "refusal": "I can't help with that."}, "I can't help with that."),
        ({"content": None}, ""),
        ({}, ""),
    ],
)
async def test_complete_content_shapes(message: dict[str, Any], content: str) -> None:
    async with model(Script(completion({"role": "assistant", **message}))) as chat:
        response = await chat.complete(REQUEST)
    assert response.content == content
    assert response.usage == Usage(requests=1)


async def test_complete_takes_a_legacy_function_call_and_object_arguments() -> None:
    legacy = {"role": "assistant", "function_call": {"name": "f", "arguments": '{"a": 1}'}}
    objects = {
        "role": "assistant",
        "tool_calls": [{"id": "c9", "function": {"name": "g", "arguments": {"b": 2}}}],
    }
    async with model(Script(completion(legacy), completion(objects))) as chat:
        first = await chat.complete(REQUEST)
        second = await chat.complete(REQUEST)
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("f", '{"a": 1}')
    assert call.id.startswith("call_")
    assert second.tool_calls == (ToolCall(id="c9", name="g", arguments='{"b":2}'),)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>Bad gateway</html>", "the body is not JSON"),
        (b"[1, 2]", "the body is not a JSON object"),
        (b'{"error": {"message": "model not loaded", "code": 503}}', "model not loaded"),
        (b'{"object": "chat.completion", "choices": []}', "the answer has no choices"),
        (b'{"error": "model crashed"}', "reported an error: model crashed"),
        (b'{"choices": [{"index": 0, "text": "hi"}]}', "the first choice has no message"),
        (
            b'{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {}}]}}]}',
            "a tool call has no function name",
        ),
    ],
)
async def test_complete_unusable_answers(body: bytes, reason: str) -> None:
    async with model(Script(httpx.Response(200, content=body))) as chat:
        with pytest.raises(ModelResponseError, match=reason) as caught:
            await chat.complete(REQUEST)
    assert caught.value.url == URL
    assert caught.value.body == body.decode()


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


def chunk_json(delta: dict[str, Any] | None = None, **fields: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
    return json.dumps({"object": "chat.completion.chunk", "choices": choices, **fields})


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


# -- failures and retries -----------------------------------------------------------------------


def status(code: int, body: str = "", **headers: str) -> httpx.Response:
    return httpx.Response(code, content=body.encode(), headers=headers)


async def test_500_then_success_honours_retry_after_seconds() -> None:
    sleeps = Sleeps()
    script = Script(
        status(500, '{"error": {"message": "internal"}}', **{"Retry-After": "2"}),
        httpx.Response(200, content=OPENAI_COMPLETION),
    )
    async with model(script, sleep=sleeps) as chat:
        assert await chat.complete(REQUEST) == OPENAI_COMPLETION_EXPECTED
    assert sleeps == [2.0]
    assert len(script.requests) == 2
    assert script.requests[0].content == script.requests[1].content


async def test_retry_after_as_an_http_date() -> None:
    sleeps = Sleeps()
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    script = Script(status(503, **{"Retry-After": when}), status(200, OPENAI_COMPLETION.decode()))
    async with model(script, sleep=sleeps) as chat:
        await chat.complete(REQUEST)
    (delay,) = sleeps
    assert 28 <= delay <= 30


async def test_unreadable_retry_after_falls_back_to_backoff() -> None:
    sleeps = Sleeps()
    script = Script(
        status(503, **{"Retry-After": "soon"}),
        status(503, **{"retry-after-ms": "x"}),
        status(200, OPENAI_COMPLETION.decode()),
    )
    async with model(script, sleep=sleeps) as chat:
        await chat.complete(REQUEST)
    assert sleeps == [0.5, 1.0]


async def test_retry_after_ms_wins_and_past_dates_mean_now() -> None:
    sleeps = Sleeps()
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    script = Script(
        status(429, **{"retry-after-ms": "250", "Retry-After": "1"}),
        status(429, **{"Retry-After": past}),
        status(200, OPENAI_COMPLETION.decode()),
    )
    async with model(script, sleep=sleeps) as chat:
        await chat.complete(REQUEST)
    assert sleeps == [0.25, 0.0]


async def test_429_exhausting_retries_with_exponential_backoff() -> None:
    sleeps = Sleeps()
    body = '{"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests"}}'
    script = Script(*(status(429, body) for _ in range(3)))
    async with model(script, sleep=sleeps, backoff_base=0.5) as chat:
        with pytest.raises(ModelHTTPError) as caught:
            await chat.complete(REQUEST)
    error = caught.value
    assert (error.status, error.attempts, error.url, error.retry_after) == (429, 3, URL, None)
    assert error.body == body
    assert sleeps == [0.5, 1.0]
    assert len(script.requests) == 3
    assert str(error) == (
        f"POST {URL} answered HTTP 429 (after 3 attempts): rate limited or out of quota; "
        f"body: {body}"
    )


async def test_backoff_doubles_up_to_its_cap() -> None:
    sleeps = Sleeps()
    script = Script(*(status(502) for _ in range(6)))
    async with model(script, sleep=sleeps, max_retries=5, backoff_base=1, backoff_max=3) as chat:
        with pytest.raises(ModelHTTPError, match="HTTP 502 \\(after 6 attempts\\)"):
            await chat.complete(REQUEST)
    assert sleeps == [1.0, 2.0, 3.0, 3.0, 3.0]


async def test_400_is_not_retried_and_shows_the_body() -> None:
    sleeps = Sleeps()
    body = json.dumps(
        {
            "error": {
                "message": "Invalid schema for function 'get_weather': 'strin' is not valid",
                "type": "invalid_request_error",
                "param": "tools[0].function.parameters",
            }
        }
    )
    script = Script(status(400, body), status(200, OPENAI_COMPLETION.decode()))
    async with model(script, sleep=sleeps) as chat:
        with pytest.raises(ModelHTTPError) as caught:
            await chat.complete(REQUEST)
    message = str(caught.value)
    assert message.startswith(f"POST {URL} answered HTTP 400: the server rejected the request")
    assert "Invalid schema for function 'get_weather'" in message
    assert (caught.value.status, caught.value.attempts) == (400, 1)
    assert sleeps == []
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    ("code", "hint"),
    [(401, "check the API key"), (404, "check base_url and the model name"), (418, "did not")],
)
async def test_other_4xx_fail_at_once_with_a_hint(code: int, hint: str) -> None:
    async with model(Script(status(code, "nope"))) as chat:
        with pytest.raises(ModelHTTPError, match=hint):
            await chat.complete(REQUEST)


async def test_a_long_error_body_is_cut() -> None:
    async with model(Script(status(500, "x" * 10_000)), max_retries=0) as chat:
        with pytest.raises(ModelHTTPError) as caught:
            await chat.complete(REQUEST)
    assert caught.value.body == "x" * 2000 + "…"
    assert len(str(caught.value)) < 700


async def test_a_retry_after_beyond_the_limit_fails_at_once() -> None:
    sleeps = Sleeps()
    script = Script(status(429, "quota", **{"Retry-After": "3600"}))
    async with model(script, sleep=sleeps) as chat:
        with pytest.raises(ModelHTTPError, match="asked to retry after 3600 s") as caught:
            await chat.complete(REQUEST)
    assert caught.value.retry_after == 3600.0
    assert sleeps == []


async def test_max_retries_zero_never_retries() -> None:
    script = Script(status(503))
    async with model(script, max_retries=0) as chat:
        with pytest.raises(ModelHTTPError, match="HTTP 503: the server failed"):
            await chat.complete(REQUEST)


@pytest.mark.parametrize(
    ("failure", "error", "match"),
    [
        (httpx.ConnectTimeout("timed out"), ModelTimeoutError, r"timed out \(connect\)"),
        (httpx.ReadTimeout("timed out"), ModelTimeoutError, r"timed out \(read\)"),
        (httpx.WriteTimeout("timed out"), ModelTimeoutError, r"timed out \(write\)"),
        (httpx.PoolTimeout("timed out"), ModelTimeoutError, r"timed out \(pool\)"),
        (httpx.ConnectError("Connection refused"), ModelConnectionError, "Connection refused"),
        (httpx.RemoteProtocolError("Server disconnected"), ModelConnectionError, "disconnected"),
    ],
)
async def test_transport_failures_are_typed_and_retried(
    failure: Exception, error: type[ModelError], match: str
) -> None:
    sleeps = Sleeps()
    async with model(Script(failure, failure, failure), sleep=sleeps, backoff_base=0.1) as chat:
        with pytest.raises(error, match=match) as caught:
            await chat.complete(REQUEST)
    assert caught.value.attempts == 3  # type: ignore[attr-defined]
    assert "(after 3 attempts)" in str(caught.value)
    assert isinstance(caught.value.__cause__, type(failure))
    assert sleeps == [0.1, 0.2]


async def test_a_timeout_then_success() -> None:
    sleeps = Sleeps()
    script = Script(httpx.ReadTimeout("slow"), status(200, OPENAI_COMPLETION.decode()))
    async with model(script, sleep=sleeps) as chat:
        assert (await chat.complete(REQUEST)).tool_calls
    assert sleeps == [0.5]


async def test_a_body_cut_off_while_reading_a_complete_answer_is_retried() -> None:
    async def cut() -> AsyncIterator[bytes]:
        yield OPENAI_COMPLETION[:50]
        raise httpx.ReadError("connection reset")

    script = Script(httpx.Response(200, content=cut()), status(200, OPENAI_COMPLETION.decode()))
    async with model(script) as chat:
        assert await chat.complete(REQUEST) == OPENAI_COMPLETION_EXPECTED
    assert len(script.requests) == 2


async def test_stream_retries_before_the_first_chunk() -> None:
    sleeps = Sleeps()
    script = Script(
        status(503, "loading model", **{"Retry-After": "1"}),
        httpx.ConnectError("refused"),
        sse(OPENAI_TEXT_STREAM),
    )
    async with model(script, sleep=sleeps) as chat:
        assert assemble(await collect(chat)) == OPENAI_TEXT_EXPECTED
    assert sleeps == [1.0, 1.0]
    assert len(script.requests) == 3


async def test_stream_timeout_before_any_chunk_is_retried() -> None:
    async def silent() -> AsyncIterator[bytes]:
        yield b": keep-alive\n\n"
        yield wire(chunk_json({"role": "assistant", "content": None}))[:-15]
        raise httpx.ReadTimeout("no tokens")

    script = Script(
        httpx.Response(200, headers=SSE_HEADERS, content=silent()), sse(OPENAI_TEXT_STREAM)
    )
    async with model(script) as chat:
        assert assemble(await collect(chat)) == OPENAI_TEXT_EXPECTED


async def test_stream_failing_after_a_chunk_is_not_retried() -> None:
    async def cut() -> AsyncIterator[bytes]:
        yield wire(chunk_json({"content": "Hel"})).removesuffix(b"data: [DONE]\n\n")
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message")

    script = Script(
        httpx.Response(200, headers=SSE_HEADERS, content=cut()), sse(OPENAI_TEXT_STREAM)
    )
    received: list[StreamChunk] = []

    async def consume(chat: OpenAIChatModel) -> None:
        async for chunk in chat.stream(REQUEST):
            received.append(chunk)

    async with model(script) as chat:
        with pytest.raises(ModelConnectionError, match="peer closed connection") as caught:
            await consume(chat)
    assert received == [TextDelta("Hel")]
    assert caught.value.attempts == 1
    assert len(script.requests) == 1


async def test_stream_http_error_exhausting_retries() -> None:
    sleeps = Sleeps()
    script = Script(status(500), status(500), status(500, "still down"))
    async with model(script, sleep=sleeps, backoff_base=0) as chat:
        with pytest.raises(ModelHTTPError, match="still down") as caught:
            await collect(chat)
    assert caught.value.attempts == 3
    assert sleeps == [0.0, 0.0]


async def test_the_default_sleep_is_anyio_sleep() -> None:
    script = Script(status(500), status(200, OPENAI_COMPLETION.decode()))
    chat = OpenAIChatModel("m", base_url=BASE, transport=script.transport, backoff_base=0)
    async with chat:
        await chat.complete(REQUEST)
    assert len(script.requests) == 2


def test_retry_delay_decisions() -> None:
    chat = OpenAIChatModel("m", api_key="k", max_retries=3, backoff_base=0.25, backoff_max=10)
    server_error = ModelHTTPError(500, URL, "")
    assert [chat.retry_delay(n, server_error) for n in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, None]
    assert chat.retry_delay(1, ModelHTTPError(429, URL, "", retry_after=7)) == 7
    assert chat.retry_delay(1, ModelHTTPError(409, URL, "")) is None
    assert chat.retry_delay(1, ModelTimeoutError(URL, "read")) == 0.25
    assert chat.retry_delay(1, ModelConnectionError(URL, "refused")) == 0.25
    assert chat.retry_delay(1, ModelResponseError(URL, "not JSON", "")) is None
    assert chat.retry_delay(1, StreamProtocolError("bad", chunk="")) is None


def test_errors_are_model_errors() -> None:
    for error in (
        ModelHTTPError(500, URL, ""),
        ModelTimeoutError(URL, "read"),
        ModelConnectionError(URL, "refused"),
        ModelResponseError(URL, "not JSON", ""),
    ):
        assert isinstance(error, ModelError)
        assert URL in str(error)


# -- against a real local server ----------------------------------------------------------------


@asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a free 127.0.0.1 port in this event loop; yield its API URL."""
    # A socket bound here (port 0: the system picks a free one) and handed to uvicorn,
    # so no other process can take the port between choosing and binding it.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [sock])
        with anyio.fail_after(10):
            # uvicorn offers a flag, not an event, to wait on; polling is bounded above.
            while not server.started:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            server.should_exit = True
    sock.close()


class ChatServer:
    """A Starlette app speaking the chat-completions API from a function of the request."""

    def __init__(
        self, answer: Callable[[dict[str, Any], int], Turn | Response], *, piece: int = 7
    ) -> None:
        self.answer = answer
        self.piece = piece
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        answer = self.answer(body, len(self.bodies))
        if isinstance(answer, Response):
            return answer
        if not body.get("stream"):
            return Response(completion_body(answer), media_type="application/json")
        data = sse_stream(answer)
        size = self.piece

        async def pieces() -> AsyncIterator[bytes]:
            # Odd-sized pieces, so chunks arrive cut mid-line and mid-character.
            for i in range(0, len(data), size):
                yield data[i : i + size]

        return StreamingResponse(pieces(), media_type="text/event-stream")


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
async def test_local_server_replays_recorded_streams(recorded: Recorded) -> None:
    async def replay(request: Request) -> Response:
        async def pieces() -> AsyncIterator[bytes]:
            for i in range(0, len(recorded.body), 13):
                yield recorded.body[i : i + 13]

        return StreamingResponse(pieces(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", replay, methods=["POST"])])
    async with serve(app) as base_url, OpenAIChatModel("m", base_url=base_url) as chat:
        assert assemble(await collect(chat)) == recorded.expected


async def test_local_server_500_then_success_with_retry_after() -> None:
    def answer(body: dict[str, Any], count: int) -> Turn | Response:
        if count == 1:
            return JSONResponse(
                {"error": {"message": "upstream overloaded"}},
                status_code=500,
                headers={"Retry-After": "3"},
            )
        return Turn(content="Recovered.")

    server = ChatServer(answer)
    sleeps = Sleeps()
    async with (
        serve(server.app) as base_url,
        OpenAIChatModel("m", base_url=base_url, sleep=sleeps) as chat,
    ):
        response = await chat.complete(REQUEST)
        chunks = await collect(chat)
    assert response.content == assemble(chunks).content == "Recovered."
    assert sleeps == [3.0]
    assert len(server.bodies) == 3


async def test_local_server_400_is_not_retried() -> None:
    def answer(body: dict[str, Any], count: int) -> Response:
        return JSONResponse({"error": {"message": "max_tokens is too large"}}, status_code=400)

    server = ChatServer(answer)
    async with (
        serve(server.app) as base_url,
        OpenAIChatModel("m", base_url=base_url) as chat,
    ):
        with pytest.raises(ModelHTTPError, match="max_tokens is too large"):
            await collect(chat)
    assert len(server.bodies) == 1


async def test_local_server_read_timeout() -> None:
    release = anyio.Event()

    async def stall(request: Request) -> Response:
        async def pieces() -> AsyncIterator[bytes]:
            yield b": accepted\n\n"
            await release.wait()
            yield wire()

        return StreamingResponse(pieces(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", stall, methods=["POST"])])
    async with serve(app) as base_url:
        client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.2))
        async with (
            client,
            OpenAIChatModel("m", base_url=base_url, client=client, max_retries=0) as chat,
        ):
            with pytest.raises(ModelTimeoutError, match=r"timed out \(read\)"):
                await collect(chat)
        release.set()


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return {"Paris": "18°C, sunny", "Rome": "24°C, clear"}[city]


def weather_turns(body: dict[str, Any], count: int) -> Turn:
    """Call get_weather for two cities, then answer from the tool results."""
    messages = body["messages"]
    if messages[-1]["role"] == "user":
        return Turn(
            reasoning="Two cities, so two calls.",
            tool_calls=(
                ("call_paris", "get_weather", '{"city": "Paris"}'),
                ("call_rome", "get_weather", '{"city": "Rome"}'),
            ),
            usage=(40, 24),
        )
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    return Turn(
        content=f"Paris: {results['call_paris']}. Rome: {results['call_rome']}. ✓",
        usage=(90, 15),
    )


async def test_agent_end_to_end_complete_and_stream_agree() -> None:
    server = ChatServer(weather_turns)
    async with (
        serve(server.app) as base_url,
        OpenAIChatModel("local-test-model", base_url=base_url, api_key="sk-local") as chat,
    ):
        async with Agent(model=chat, tools=[get_weather], strict=True) as agent:
            completed = await agent.execute("Weather in Paris and Rome?")
        async with Agent(model=chat, tools=[get_weather], strict=True) as agent:
            streamed_run = await agent.execute("Weather in Paris and Rome?", stream=True)

    answer = "Paris: 18°C, sunny. Rome: 24°C, clear. ✓"
    assert completed.output == streamed_run.output == answer
    assert completed.messages == streamed_run.messages
    assert completed.usage == streamed_run.usage == Usage(130, 39, requests=2)
    assistant = completed.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.reasoning == "Two cities, so two calls."
    assert [call.id for call in assistant.tool_calls] == ["call_paris", "call_rome"]

    assert [body.get("stream", False) for body in server.bodies] == [False, False, True, True]
    assert all(h["authorization"] == "Bearer sk-local" for h in server.headers)
    first, second = server.bodies[0], server.bodies[1]
    assert first["model"] == "local-test-model"
    assert first["messages"] == [{"role": "user", "content": "Weather in Paris and Rome?"}]
    (tool,) = first["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "get_weather"
    assert tool["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert tool["function"]["parameters"]["required"] == ["city"]
    assert second["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_paris",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_rome",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_paris", "content": "18°C, sunny"},
        {"role": "tool", "tool_call_id": "call_rome", "content": "24°C, clear"},
    ]
    assert server.bodies[2]["messages"] == first["messages"]
    assert server.bodies[3]["messages"] == second["messages"]
    assert server.bodies[2]["stream_options"] == {"include_usage": True}
