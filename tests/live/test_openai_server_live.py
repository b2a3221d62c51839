"""OpenAIChatModel against ``python -m llama_cpp.server`` serving SmolLM2-135M on loopback."""

import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentrt import Agent, EventContext
from agentrt.events.params import LLMCallBeforeParams
from agentrt.messages import AssistantMessage, ToolMessage, UserMessage
from agentrt.models.base import ModelRequest, TextDelta, ToolCallDelta, UsageChunk
from tests.live.conftest import record_timing

openai = pytest.importorskip(
    "agentrt.models.openai",
    reason="agentrt.models.openai (OpenAIChatModel) is not in this tree yet",
)

pytestmark = pytest.mark.live

FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    return f"Sunny and 21 °C in {city}"


@pytest.fixture
async def model(llama_server: str) -> AsyncIterator[Any]:
    # No retries: a failure here should show at once, not after backoff.
    async with openai.OpenAIChatModel(
        "smollm2", base_url=llama_server, api_key="unused", max_retries=0
    ) as model:
        yield model


def ask(text: str, **settings: Any) -> ModelRequest:
    return ModelRequest(
        messages=[UserMessage(content=text)],
        settings={"temperature": 0.0, "max_tokens": 64, "seed": 0, **settings},
    )


def force_weather_first(agent: Agent) -> None:
    """Force a get_weather call on the first model call, and text after it.

    A 135M model does not reliably decide to call a tool by itself, and the server
    streams tool calls only when one is forced; ``"none"`` afterwards stops the model
    from calling the tool again and again.
    """

    async def choose(ctx: EventContext[LLMCallBeforeParams, Any]) -> ModelRequest:
        request = ctx.parameters["request"]
        first = not any(isinstance(m, ToolMessage) for m in request.messages)
        choice = FORCE_WEATHER if first else "none"
        return dataclasses.replace(request, settings={**request.settings, "tool_choice": choice})

    agent.hooks.on_llm_complete_before(choose)
    agent.hooks.on_llm_stream_before(choose)


async def test_plain_completion_returns_text_and_usage(model: Any) -> None:
    await model.complete(ask("Say hello."))  # warm: the server loads the model lazily
    started = time.perf_counter()
    response = await model.complete(ask("What is the capital of France?"))
    record_timing("OpenAIChatModel completion via llama_cpp.server", time.perf_counter() - started)
    assert response.content.strip()
    assert response.finish_reason in {"stop", "length"}
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.usage.requests == 1


async def test_streamed_text_arrives_in_pieces(model: Any) -> None:
    request = ask("Name three colours.")
    whole = await model.complete(request)
    started = time.perf_counter()
    chunks = [chunk async for chunk in model.stream(request)]
    record_timing("OpenAIChatModel stream via llama_cpp.server", time.perf_counter() - started)
    texts = [chunk.text for chunk in chunks if isinstance(chunk, TextDelta)]
    assert len(texts) > 1
    assert "".join(texts) == whole.content
    last = chunks[-1]
    assert isinstance(last, UsageChunk)
    assert last.finish_reason == whole.finish_reason
    # llama_cpp.server ignores stream_options.include_usage: a stream reports no tokens.
    assert last.usage.requests == 1


async def test_a_forced_tool_call_streams_with_its_id_and_name_once(model: Any) -> None:
    request = dataclasses.replace(
        ask("What is the weather in Paris?", tool_choice=FORCE_WEATHER),
        tools=[_weather_schema()],
    )
    chunks = [chunk async for chunk in model.stream(request)]
    calls = [chunk for chunk in chunks if isinstance(chunk, ToolCallDelta)]
    assert calls[0].name == "get_weather"
    assert calls[0].id
    assert all(call.id is None and call.name is None for call in calls[1:])
    last = chunks[-1]
    assert isinstance(last, UsageChunk)
    assert last.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_an_agent_calls_a_tool_end_to_end(model: Any, stream: bool) -> None:
    settings = {"temperature": 0.0, "max_tokens": 64, "seed": 0}
    async with Agent(model=model, tools=[get_weather], settings=settings, strict=True) as agent:
        force_weather_first(agent)
        started = time.perf_counter()
        result = await agent.execute("What is the weather in Paris?", stream=stream)
        record_timing(
            f"OpenAIChatModel agent run with a tool ({'stream' if stream else 'complete'})",
            time.perf_counter() - started,
        )
    call_message, tool_message, answer = result.messages[1:]
    assert isinstance(call_message, AssistantMessage)
    (call,) = call_message.tool_calls
    assert call.name == "get_weather"
    city = call.parse_arguments()["city"]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.content == f"Sunny and 21 °C in {city}"
    assert isinstance(answer, AssistantMessage)
    assert result.output == answer.content
    assert result.output.strip()
    assert result.usage.requests == 2
    assert result.iterations == 2
    if not stream:
        assert result.usage.input_tokens > 0
        assert result.usage.output_tokens > 0


def _weather_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
