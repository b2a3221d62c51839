"""LocalModel on the real SmolLM2-135M, in-process through llama-cpp-python."""

import dataclasses
import importlib
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from agentrt import Agent, EventContext
from agentrt.events.params import LLMCallBeforeParams
from agentrt.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from agentrt.models.base import ModelRequest, TextDelta, ToolCallDelta, UsageChunk
from agentrt.models.local import LocalModel
from tests.live.conftest import record_timing

pytestmark = pytest.mark.live

FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    return f"Sunny and 21 °C in {city}"


WEATHER_TOOL = {
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


@pytest.fixture
async def model() -> AsyncIterator[LocalModel]:
    # Greedy decoding and a fixed seed: the same answer on every run of this build.
    async with LocalModel(seed=0, settings={"temperature": 0.0, "max_tokens": 64}) as model:
        yield model


def ask(text: str, **request: Any) -> ModelRequest:
    return ModelRequest(messages=[UserMessage(content=text)], **request)


def force_weather_first(agent: Agent) -> None:
    """Force a get_weather call on the first model call, and text after it.

    A 135M model does not reliably decide to call a tool by itself; forcing the first
    call makes the run deterministic, and ``"none"`` afterwards stops it from calling
    the tool again and again.
    """

    async def choose(ctx: EventContext[LLMCallBeforeParams, Any]) -> ModelRequest:
        request = ctx.parameters["request"]
        first = not any(isinstance(m, ToolMessage) for m in request.messages)
        choice = FORCE_WEATHER if first else "none"
        return dataclasses.replace(request, settings={**request.settings, "tool_choice": choice})

    agent.hooks.on_llm_complete_before(choose)
    agent.hooks.on_llm_stream_before(choose)


async def test_plain_completion_returns_text(model: LocalModel) -> None:
    started = time.perf_counter()
    first = await model.complete(ask("What is the capital of France?"))
    record_timing("LocalModel load + first completion", time.perf_counter() - started)
    started = time.perf_counter()
    response = await model.complete(ask("What is the capital of France?"))
    record_timing("LocalModel completion (loaded)", time.perf_counter() - started)
    assert response.content.strip()
    assert response.content == first.content  # greedy: the same answer twice
    assert response.finish_reason in {"stop", "length"}
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.usage.requests == 1
    assert response.model_name == "SmolLM2-135M-Instruct.Q4_1"


async def test_streamed_text_arrives_in_pieces_with_usage(model: LocalModel) -> None:
    # Room to stop by itself: a stream cut at max_tokens may count one token fewer.
    request = ask("Name three colours.", settings={"max_tokens": 256})
    whole = await model.complete(request)
    assert whole.finish_reason == "stop"
    started = time.perf_counter()
    chunks = [chunk async for chunk in model.stream(request)]
    record_timing("LocalModel streamed completion", time.perf_counter() - started)
    texts = [chunk.text for chunk in chunks if isinstance(chunk, TextDelta)]
    assert len(texts) > 1
    assert "".join(texts) == whole.content
    last = chunks[-1]
    assert isinstance(last, UsageChunk)
    # Counted from the context (the stream reports none): equal to the one-piece count.
    assert last.usage == whole.usage
    assert last.finish_reason == whole.finish_reason


async def test_a_forced_tool_call_streams_its_arguments(model: LocalModel) -> None:
    request = ask(
        "What is the weather in Paris?",
        tools=[WEATHER_TOOL],
        settings={"tool_choice": FORCE_WEATHER},
    )
    chunks = [chunk async for chunk in model.stream(request)]
    calls = [chunk for chunk in chunks if isinstance(chunk, ToolCallDelta)]
    assert len(calls) > 1
    assert calls[0].name == "get_weather"
    assert calls[0].id
    # The repeated id and name are passed on once.
    assert all(call.id is None and call.name is None for call in calls[1:])
    arguments = "".join(call.arguments for call in calls)
    assert set(ToolCall(name="get_weather", arguments=arguments).parse_arguments()) == {"city"}
    assert isinstance(chunks[-1], UsageChunk)
    assert chunks[-1].finish_reason == "tool_calls"


async def test_auto_tool_choice_answers_in_a_stream(model: LocalModel) -> None:
    # With "auto" the model may call the tool (then llama-cpp-python cannot stream and
    # LocalModel answers in one piece) or answer in text: either way a whole answer.
    request = ask("What is the weather in Paris?", tools=[WEATHER_TOOL])
    chunks = [chunk async for chunk in model.stream(request)]
    assert isinstance(chunks[-1], UsageChunk)
    assert chunks[-1].usage.input_tokens > 0
    answered = [chunk for chunk in chunks if isinstance(chunk, TextDelta | ToolCallDelta)]
    assert answered


async def test_a_stream_left_early_frees_the_model_for_the_next_call(model: LocalModel) -> None:
    async with aclosing(model.stream(ask("Count from one to twenty."))) as stream:
        async for chunk in stream:
            assert isinstance(chunk, TextDelta)
            break
    with anyio.fail_after(30):
        response = await model.complete(ask("Say hello."))
    assert response.content.strip()


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_an_agent_calls_a_tool_end_to_end(model: LocalModel, stream: bool) -> None:
    async with Agent(model=model, tools=[get_weather], strict=True) as agent:
        force_weather_first(agent)
        started = time.perf_counter()
        result = await agent.execute("What is the weather in Paris?", stream=stream)
        record_timing(
            f"LocalModel agent run with a tool ({'stream' if stream else 'complete'})",
            time.perf_counter() - started,
        )
    call_message, tool_message, answer = result.messages[1:]
    assert isinstance(call_message, AssistantMessage)
    (call,) = call_message.tool_calls
    assert call.name == "get_weather"
    city = call.parse_arguments()["city"]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.content == f"Sunny and 21 °C in {city}"
    assert not tool_message.is_error
    assert isinstance(answer, AssistantMessage)
    assert result.output == answer.content
    assert result.output.strip()
    assert result.usage.requests == 2
    assert result.usage.input_tokens > 0
    assert result.usage.output_tokens > 0
    assert result.iterations == 2


def test_the_function_calling_prompt_holds_tool_arguments_verbatim() -> None:
    # The prompt llama-cpp-python's own chatml-function-calling handler renders from
    # what LocalModel sends: earlier tool calls, their results and the messages must
    # reach the model as written, not HTML-escaped (the model copied the entities).
    from agentrt.models.local import chat_completion_kwargs

    llama_chat_format: Any = importlib.import_module("llama_cpp.llama_chat_format")

    class Rendered(Exception):
        """Carries the prompt out of the handler: no model needed."""

    class PromptRecorder:
        verbose = False

        def create_completion(self, prompt: str, **options: Any) -> Any:
            raise Rendered(prompt)

    conversation: list[Message] = [
        UserMessage(content='Note "Paris" & <weather>'),
        AssistantMessage(
            content="",
            tool_calls=(ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}'),),
        ),
        ToolMessage(content='"Sunny" & 21 °C', tool_call_id="c1", name="get_weather"),
    ]
    kwargs = chat_completion_kwargs(
        ModelRequest(messages=conversation, tools=[WEATHER_TOOL]),
        chat_format="chatml-function-calling",
    )
    with pytest.raises(Rendered) as rendered:
        llama_chat_format.chatml_function_calling(llama=PromptRecorder(), **kwargs)
    prompt = rendered.value.args[0]
    assert 'Note "Paris" & <weather><|im_end|>' in prompt
    assert 'functions.get_weather:\n{"city": "Paris"}<|im_end|>' in prompt
    assert 'functions.get_weather returned:\n"Sunny" & 21 °C<|im_end|>' in prompt
    assert "&#34;" not in prompt
    assert "&amp;" not in prompt
