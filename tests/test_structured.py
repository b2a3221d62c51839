"""Structured output: execute(prompt, output_type=...) in native and tool modes."""

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from agentrt import (
    AgentEvents,
    EventContext,
    ModelRequest,
    OutputValidationError,
    ScriptedModel,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentrt.events import LLMExtractAfterParams, LLMExtractBeforeParams
from agentrt.structured import OUTPUT_TOOL_NAME, OutputSpec
from agentrt.testing import EventRecorder
from tests.conftest import AgentFactory

E = AgentEvents


class City(BaseModel):
    name: str
    population: int


@dataclass
class Point:
    x: int
    y: int


async def test_native_output_is_validated_into_the_type(make_agent: AgentFactory) -> None:
    model = ScriptedModel(['{"name": "Paris", "population": 2100000}'])
    agent = make_agent(model)
    result = await agent.execute("Biggest city in France?", output_type=City)
    assert result.value == City(name="Paris", population=2100000)
    assert result.output == '{"name": "Paris", "population": 2100000}'
    schema = model.requests[0].output_schema
    assert schema is not None
    assert schema["required"] == ["name", "population"]
    # Native mode sends the schema, not an output tool.
    assert OUTPUT_TOOL_NAME not in [t["function"]["name"] for t in model.requests[0].tools]


async def test_plain_runs_have_the_text_as_value(make_agent: AgentFactory) -> None:
    result = await make_agent(["hello"]).execute("hi")
    assert result.value == "hello"


async def test_invalid_output_is_sent_back_with_the_error_and_retried(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    model = ScriptedModel(['{"name": "Paris"}', '{"name": "Paris", "population": 1}'])
    agent = make_agent(model)
    agent.events.on("llm:*", recorder)
    result = await agent.execute("City?", output_type=City)
    assert result.value == City(name="Paris", population=1)
    correction = agent.messages[2]
    assert isinstance(correction, UserMessage)
    assert correction.content.startswith("Your output did not validate: population: Field")
    # The second request carried the invalid answer and the correction.
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "user"]
    assert recorder.names() == [
        "llm:extract:before",
        "llm:extract:error",
        "llm:error",
        "llm:extract:before",
        "llm:extract:after",
    ]
    assert recorder.events[2].parameters["operation"] == "extract"


async def test_retries_are_bounded_and_the_last_error_is_raised(make_agent: AgentFactory) -> None:
    agent = make_agent(["nope", "still no", '{"name": 3}'], max_output_retries=2)
    with pytest.raises(OutputValidationError) as info:
        await agent.execute("City?", output_type=City)
    assert info.value.content == '{"name": 3}'
    assert "name: Input should be a valid string" in str(info.value)
    assert info.value.output_type is City


async def test_output_error_goes_through_execute_error(make_agent: AgentFactory) -> None:
    agent = make_agent(["bad"], max_output_retries=0)
    agent.hooks.on_execute_error(lambda ctx: "gave up")
    result = await agent.execute("City?", output_type=City)
    assert result.output == "gave up"


async def test_tool_mode_ends_the_run_with_the_output_call(make_agent: AgentFactory) -> None:
    final = ToolCall(id="f", name=OUTPUT_TOOL_NAME, arguments={"name": "Rome", "population": 3})
    add_call = ToolCall(id="a", name="add", arguments={"a": 1, "b": 2})
    model = ScriptedModel([add_call, final])
    agent = make_agent(model)
    result = await agent.execute("Go", output_type=City, output_mode="tool")
    assert result.value == City(name="Rome", population=3)
    assert result.iterations == 2
    tools_offered = [t["function"]["name"] for t in model.requests[0].tools]
    assert tools_offered == ["add", "divide", OUTPUT_TOOL_NAME]
    assert model.requests[0].output_schema is None
    # The output call is answered, so the conversation stays well formed.
    assert agent.messages[-1] == ToolMessage(
        content="Final output accepted.", tool_call_id="f", name=OUTPUT_TOOL_NAME
    )


async def test_tool_mode_runs_other_calls_of_the_same_turn(make_agent: AgentFactory) -> None:
    calls = [
        ToolCall(id="a", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="f", name=OUTPUT_TOOL_NAME, arguments={"x": 1, "y": 2}),
    ]
    agent = make_agent([calls])
    result = await agent.execute("Go", output_type=Point, output_mode="tool")
    assert result.value == Point(x=1, y=2)
    answered = {m.tool_call_id: m.content for m in agent.messages if isinstance(m, ToolMessage)}
    assert answered == {"a": "3", "f": "Final output accepted."}


async def test_tool_mode_wraps_non_object_types(make_agent: AgentFactory) -> None:
    bad = ToolCall(id="1", name=OUTPUT_TOOL_NAME, arguments={"value": ["x"]})
    good = ToolCall(id="2", name=OUTPUT_TOOL_NAME, arguments={"value": [1, 2, 3]})
    model = ScriptedModel([bad, good])
    agent = make_agent(model)
    result = await agent.execute("Numbers", output_type=list[int], output_mode="tool")
    assert result.value == [1, 2, 3]
    signature = model.requests[0].tools[-1]["function"]["parameters"]
    assert signature["required"] == ["value"]
    retry = agent.messages[2]
    assert isinstance(retry, ToolMessage)
    assert retry.is_error
    assert "0: Input should be a valid integer" in retry.content


async def test_tool_mode_without_value_key_is_a_validation_error() -> None:
    spec = OutputSpec(list[int], "tool")
    with pytest.raises(OutputValidationError, match="an object with a 'value' key"):
        spec.parse_call(ToolCall(name=OUTPUT_TOOL_NAME, arguments={"values": [1]}))


async def test_extract_before_may_change_the_request(make_agent: AgentFactory) -> None:
    model = ScriptedModel(['{"name": "Oslo", "population": 1}'])
    agent = make_agent(model)
    seen: list[Any] = []

    @agent.hooks.on_llm_extract_before
    def tighten(ctx: EventContext[LLMExtractBeforeParams, ModelRequest]) -> ModelRequest:
        seen.append(ctx.parameters["output_type"])
        request = ctx.parameters["request"]
        assert request.output_schema is not None
        request.settings["temperature"] = 0
        return request

    values: list[Any] = []

    @agent.hooks.on_llm_extract_after
    def record(ctx: EventContext[LLMExtractAfterParams, None]) -> None:
        values.append(ctx.parameters["output"])

    await agent.execute("City?", output_type=City)
    assert seen == [City]
    assert model.requests[0].settings == {"temperature": 0}
    assert values == [City(name="Oslo", population=1)]


async def test_structured_output_while_streaming(make_agent: AgentFactory) -> None:
    model = ScriptedModel(['{"name": "Lima", "population": 10}'], chunk_size=5)
    agent = make_agent(model)
    chunks: list[object] = []
    agent.hooks.on_llm_stream_chunk(lambda ctx: chunks.append(ctx.parameters["chunk"]))
    result = await agent.execute("City?", output_type=City, stream=True)
    assert result.value == City(name="Lima", population=10)
    assert len(chunks) > 5


async def test_bad_output_arguments_are_clear_errors(make_agent: AgentFactory) -> None:
    agent = make_agent(["x"])
    with pytest.raises(ValueError, match="output_mode must be 'native' or 'tool'"):
        await agent.execute("x", output_type=City, output_mode="json")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="only meaningful with an output_type"):
        await agent.execute("x", output_mode="tool")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"cannot use .* as an output type"):
        await agent.execute("x", output_type=object())  # type: ignore[call-overload]
    assert agent.messages == ()


# -- LLM stream events: the assembled message equals complete()'s ---------------------------------


@pytest.mark.parametrize("chunk_size", [1, 3, 64])
async def test_streamed_message_is_identical_to_completed_message(
    make_agent: AgentFactory, chunk_size: int
) -> None:
    from agentrt import AssistantMessage, ModelResponse, Usage
    from agentrt.models.scripted import ScriptItem

    script: list[ScriptItem] = [
        ModelResponse(
            content="Let me add.",
            reasoning="The user wants a sum.",
            tool_calls=(
                ToolCall(id="a", name="add", arguments={"a": 1, "b": 2}),
                ToolCall(id="b", name="add", arguments={"a": 3, "b": 4}),
            ),
            usage=Usage(input_tokens=10, output_tokens=5, requests=1),
        ),
        "3 and 7.",
    ]
    completed = make_agent(ScriptedModel(list(script)))
    streamed = make_agent(ScriptedModel(list(script), chunk_size=chunk_size))
    await completed.execute("sums")
    await streamed.execute("sums", stream=True)
    assert streamed.messages == completed.messages
    assert isinstance(streamed.messages[1], AssistantMessage)
    assert streamed.messages[1].usage == Usage(input_tokens=10, output_tokens=5, requests=1)


def test_models_declare_native_structured_output() -> None:
    from agentrt import LocalModel, OpenAIChatModel

    assert OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1").supports_output_schema
    server = OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", supports_output_schema=False)
    assert not server.supports_output_schema
    assert LocalModel.supports_output_schema is True
    assert ScriptedModel([]).supports_output_schema
