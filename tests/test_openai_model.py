"""OpenAIChatModel (agentrt/models/openai.py): construction, the request it sends, whole answers.

Against mock transports; streams are tests/test_openai_stream.py's, failures and retries
tests/test_openai_retries.py's, a real local server tests/test_openai_server.py's.
"""

from typing import Any

import httpx
import pytest

from agentrt import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentrt.exceptions import (
    ModelResponseError,
)
from agentrt.messages import Message, Usage
from agentrt.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
)
from agentrt.models.openai import DEFAULT_BASE_URL, DEFAULT_TIMEOUT, OpenAIChatModel
from tests.openai_fixtures import (
    LLAMACPP_COMPLETION,
    OPENAI_COMPLETION,
    OPENAI_COMPLETION_EXPECTED,
    OPENAI_TEXT_STREAM,
    VLLM_COMPLETION,
)
from tests.openai_support import (
    BASE,
    REQUEST,
    URL,
    Script,
    collect,
    model,
    sse,
)

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
