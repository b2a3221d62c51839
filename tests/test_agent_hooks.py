"""docs/events.md: HooksAccessor through an Agent (agent.hooks), on real runs."""

from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentEvents,
    EventContext,
    HooksAccessor,
    Message,
    ScriptedModel,
    ToolCall,
    UserMessage,
)
from agentrt.events import MessageAppendBeforeParams, ToolCallBeforeParams
from tests.conftest import AgentFactory

# -- Requirement: HooksAccessor Class ----------------------------------------------------------


def test_access_via_agent_hooks() -> None:
    agent = Agent(model=ScriptedModel([]))
    assert isinstance(agent.hooks, HooksAccessor)
    assert agent.hooks.bus is agent.events


def test_lazy_initialization() -> None:
    agent = Agent(model=ScriptedModel([]))
    assert agent._hooks is None  # nothing is built until first access
    first = agent.hooks
    assert agent._hooks is first
    assert agent.hooks is first


# -- Requirement: Typed Handler Registration (runtime half; tests/typing has the static one) --


async def test_type_safe_message_append_handler(make_agent: AgentFactory) -> None:
    agent = make_agent(["answer"])
    seen: list[str] = []

    @agent.hooks.on_message_append_before
    def record(ctx: EventContext[MessageAppendBeforeParams, Message]) -> None:
        seen.append(ctx.parameters["message"].role)

    await agent.execute("question")
    assert seen == ["user", "assistant"]


async def test_type_safe_tool_call_handler(make_agent: AgentFactory) -> None:
    agent = make_agent([ToolCall(id="c", name="add", arguments={"a": 1, "b": 2}), "3"])
    seen: list[tuple[str, dict[str, Any]]] = []

    @agent.hooks.on_tool_call_before
    def record(ctx: EventContext[ToolCallBeforeParams, dict[str, Any]]) -> None:
        seen.append((ctx.parameters["tool_name"], ctx.parameters["arguments"]))

    await agent.execute("add")
    assert seen == [("add", {"a": 1, "b": 2})]


# -- Requirement: Decorator and Function Syntax / Priority and Predicate Parameters ------------


async def test_decorator_function_and_parameterized_forms_on_agent_hooks(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(["x"])
    order: list[str] = []

    @agent.hooks.on_message_append_after
    def decorated(ctx: EventContext[Any, None]) -> None:
        order.append("decorated")

    def called(ctx: EventContext[Any, None]) -> None:
        order.append("called")

    assert agent.hooks.on_message_append_after(called) is called

    @agent.hooks.on_message_append_after(priority=500)
    def first(ctx: EventContext[Any, None]) -> None:
        order.append("first")

    await agent.append(UserMessage(content="hi"))
    assert order == ["first", "decorated", "called"]


async def test_custom_priority(make_agent: AgentFactory) -> None:
    agent = make_agent([ToolCall(id="c", name="add", arguments={"a": 1, "b": 2}), "3"])
    order: list[int] = []
    agent.hooks.on_tool_call_before(lambda ctx: order.append(100))
    agent.hooks.on_tool_call_before(lambda ctx: order.append(200), priority=200)
    await agent.execute("add")
    assert order == [200, 100]


async def test_predicate_filter(make_agent: AgentFactory) -> None:
    calls = [
        ToolCall(id="1", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="2", name="divide", arguments={"a": 1, "b": 2}),
    ]
    agent = make_agent([calls, "done"])
    seen: list[str] = []
    agent.hooks.on_tool_call_before(
        lambda ctx: seen.append(ctx.parameters["tool_name"]),
        predicate=lambda ctx: ctx.parameters.get("tool_name") == "divide",
    )
    await agent.execute("both")
    assert seen == ["divide"]


# -- Requirement: Interceptable Event Methods / Signal Event Methods -----------------------------


async def test_interceptable_event_modifies_outcome(make_agent: AgentFactory) -> None:
    agent = make_agent(["raw"])
    agent.hooks.on_message_append_before(
        lambda ctx: (
            UserMessage(content="rewritten") if ctx.parameters["message"].role == "user" else None
        )
    )
    await agent.execute("original")
    assert agent.messages[0] == UserMessage(content="rewritten")


async def test_signal_event_ignores_output(make_agent: AgentFactory) -> None:
    agent = make_agent(["raw"])

    def try_to_replace(ctx: EventContext[Any, Any]) -> Message:
        ctx.output = UserMessage(content="ignored")
        return UserMessage(content="ignored")

    agent.hooks.on_message_append_after(try_to_replace)
    await agent.execute("original")
    assert [m.content for m in agent.messages] == ["original", "raw"]


async def test_signal_handler_failure_does_not_break_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = Agent(model=ScriptedModel(["fine"]))  # not strict: failures are logged

    def broken(ctx: EventContext[Any, None]) -> None:
        raise RuntimeError("observer bug")

    agent.hooks.on_message_append_after(broken)
    result = await agent.execute("go")
    assert result.output == "fine"
    assert agent.events.handler_errors == 2
    assert "observer bug" in caplog.text
    assert AgentEvents.MESSAGE_APPEND_AFTER.value in caplog.text
    await agent.close()


async def test_interceptable_handler_failure_propagates(make_agent: AgentFactory) -> None:
    agent = make_agent(["never"])

    def veto(ctx: EventContext[Any, Any]) -> None:
        raise PermissionError("not allowed")

    agent.hooks.on_llm_complete_before(veto)
    with pytest.raises(PermissionError, match="not allowed"):
        await agent.execute("go")
    assert [m.content for m in agent.messages] == ["go"]
