"""The event contract (docs/events.md) over whole recorded runs.

* Every dispatch uses the semantics EVENT_SEMANTICS declares for its event.
* Every dispatch passes exactly the keys of its EVENT_PARAMS TypedDict.
* Every AgentEvents member is dispatched by core, or is an extension point.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pydantic import BaseModel

from agentrt import (
    EXTENSION_POINTS,
    Agent,
    AgentEvents,
    OutputValidationError,
    ScriptedModel,
    ToolCall,
    ToolResponse,
    UserMessage,
)
from agentrt.testing import EventRecorder, contract_violations
from agentrt.tools import current_tool_context
from tests.conftest import AgentFactory

E = AgentEvents
ADD = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})
ZERO = ToolCall(id="call_0", name="divide", arguments={"a": 1, "b": 0})


class Down(Exception):
    pass


class City(BaseModel):
    name: str
    population: int


Scenario = Callable[[AgentFactory, EventRecorder], Awaitable[None]]


def recorded(make_agent: AgentFactory, recorder: EventRecorder, script: Any, **kw: Any) -> Agent:
    agent = make_agent(script, **kw)
    # Highest priority, so the recorder sees each dispatch before any handler acts.
    agent.events.on("*", recorder, priority=1_000_000)
    return agent


async def text_answer(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, ["hello"], instructions="Be kind.")
    await agent.execute("hi")
    await agent.close()


async def tool_call_then_answer(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, [ADD, "3"])
    await agent.execute("1+2?")
    await agent.close("done")


async def tool_error_without_fallback(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, [ZERO, "cannot"])
    await agent.execute("1/0?")
    await agent.close()


async def tool_error_with_fallback(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, [ZERO, "inf"])
    agent.hooks.on_tool_call_error(lambda ctx: ToolResponse("infinity"))
    await agent.execute("1/0?")
    await agent.close()


async def model_error_without_recovery(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, [Down("503")])
    with pytest.raises(Down):
        await agent.execute("hi")
    await agent.close()


async def model_error_with_recovery(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, [Down("503")])
    agent.hooks.on_execute_error(lambda ctx: "fallback answer")
    await agent.execute("hi")
    await agent.close()


async def streamed_run(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    model = ScriptedModel([ADD, "three"], chunk_size=3)
    agent = recorded(make_agent, recorder, model)
    await agent.execute("1+2?", stream=True)
    model.reset([Down("stream cut")])
    with pytest.raises(Down):
        await agent.execute("again", stream=True)
    await agent.close()


async def extraction(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(
        make_agent,
        recorder,
        ['{"name": "Paris", "population": 2100000}', '{"name": 1}', "not json", "[]"],
    )
    result = await agent.execute("Biggest city?", output_type=City)
    assert result.value == City(name="Paris", population=2100000)
    with pytest.raises(OutputValidationError):
        await agent.execute("Again?", output_type=City)
    await agent.close()


async def tool_mode_extraction(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    answer = ToolCall(id="o", name="final_output", arguments={"name": "Rome", "population": 1})
    agent = recorded(make_agent, recorder, [ADD, answer])
    result = await agent.execute("Add, then a city", output_type=City, output_mode="tool")
    assert result.value == City(name="Rome", population=1)
    await agent.close()


async def everything_else(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(
        make_agent,
        recorder,
        ["ok"],
        instructions="Hello {{ who }}.",
        context_providers={"who": lambda: "world"},
    )
    async with agent.mode("review", instructions="Review."):
        await agent.execute("go")
    await agent.replace(-1, UserMessage(content="replaced"))
    await agent.close()


async def tool_output(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    async def report(text: str) -> str:
        """Report the text as output while running, then return it."""
        context = current_tool_context()
        assert context is not None
        await context.emit(text)
        return text

    call = ToolCall(id="call_r", name="report", arguments={"text": "halfway"})
    agent = recorded(make_agent, recorder, [call, "done"], tools=[report])
    await agent.execute("report")
    await agent.close()


SCENARIOS: dict[str, Scenario] = {
    "text answer": text_answer,
    "tool call then answer": tool_call_then_answer,
    "tool error without fallback": tool_error_without_fallback,
    "tool error with fallback": tool_error_with_fallback,
    "model error without recovery": model_error_without_recovery,
    "model error with recovery": model_error_with_recovery,
    "streamed run": streamed_run,
    "extraction": extraction,
    "tool-mode extraction": tool_mode_extraction,
    "modes, providers, replace": everything_else,
    "tool output": tool_output,
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_every_dispatch_keeps_semantics_and_params(
    make_agent: AgentFactory, recorder: EventRecorder, scenario: str
) -> None:
    await SCENARIOS[scenario](make_agent, recorder)
    assert recorder.events, "the scenario dispatched nothing"
    assert contract_violations(recorder) == []


async def test_every_event_is_dispatched_or_an_extension_point(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    for scenario in SCENARIOS.values():
        await scenario(make_agent, recorder)
    dispatched = {recorded.event for recorded in recorder.events}
    assert set(AgentEvents) - EXTENSION_POINTS - dispatched == set()
    assert dispatched & EXTENSION_POINTS == set()


async def test_text_answer_event_sequence(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    await text_answer(make_agent, recorder)
    assert recorder.names() == [
        "agent:init:after",
        "agent:state:change",  # idle -> running
        "execute:before",
        "message:set_system:before",
        "message:set_system:after",
        "agent:version:change",
        "message:create:before",
        "message:create:after",
        "message:append:before",
        "message:append:after",
        "agent:version:change",
        "execute:iteration:before",
        "agent:state:change",  # running -> calling_model
        "tools:provide",
        "tools:generate_signature",
        "tools:generate_signature",
        "message:render:before",
        "message:render:after",
        "llm:complete:before",
        "llm:complete:after",
        "message:create:before",
        "message:create:after",
        "message:append:before",
        "message:append:after",
        "agent:version:change",
        "execute:iteration:after",
        "execute:after",
        "agent:state:change",  # calling_model -> idle
        "agent:close:before",
        "agent:state:change",  # idle -> closing
        "agent:state:change",  # closing -> closed
        "agent:close:after",
    ]


async def test_tool_turn_event_sequence(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = recorded(make_agent, recorder, [ADD, "3"], tools=[])
    agent.events.off("*", recorder)
    agent.events.on("tool:*", recorder)
    agent.events.on("message:*", recorder)
    await agent.execute("1+2?")
    # Without the tool offered, the call still yields a tool message (unknown tool).
    assert recorder.names() == [
        "message:create:before",
        "message:create:after",
        "message:append:before",
        "message:append:after",
        "message:render:before",
        "message:render:after",
        "message:create:before",
        "message:create:after",
        "message:append:before",
        "message:append:after",
        "tool:call:error",
        "message:create:before",
        "message:create:after",
        "message:append:before",
        "message:append:after",
        "message:render:before",
        "message:render:after",
        "message:create:before",
        "message:create:after",
        "message:append:before",
        "message:append:after",
    ]
