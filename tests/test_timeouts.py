"""Per-handler timeouts on the bus and a per-run deadline (issue 8, cancellation contract)."""

import logging
from typing import Any

import anyio
import pytest

from agentrt import (
    Agent,
    AgentState,
    EventBus,
    EventContext,
    HandlerTimeoutError,
    RunTimeoutError,
    ScriptedModel,
    ToolCall,
    ToolMessage,
)
from tests.conftest import AgentFactory


async def hangs(ctx: EventContext[Any, Any]) -> None:
    await anyio.sleep_forever()


async def test_a_hung_interceptable_handler_fails_the_dispatch_naming_it() -> None:
    bus = EventBus(handler_timeout=0.01)
    bus.on("tool:call:before", hangs)
    with pytest.raises(
        HandlerTimeoutError, match=r"handler .*hangs of 'tool:call:before'"
    ) as info:
        await bus.apply("tool:call:before", output={})
    assert info.value.timeout == 0.01
    assert info.value.event == "tool:call:before"


async def test_a_hung_signal_handler_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus(handler_timeout=0.01)
    after: list[str] = []
    bus.on("tool:call:after", hangs)
    bus.on("tool:call:after", lambda ctx: after.append("next"), priority=0)
    with caplog.at_level(logging.ERROR, logger="agentrt"):
        await bus.do("tool:call:after")
    assert bus.handler_errors == 1
    assert after == ["next"]
    assert "HandlerTimeoutError" in caplog.text


async def test_strict_bus_raises_a_hung_signal_handler() -> None:
    bus = EventBus(handler_timeout=0.01, strict=True)
    bus.on("x", hangs)
    with pytest.raises(HandlerTimeoutError):
        await bus.do("x")


async def test_fast_handlers_and_sync_handlers_are_unaffected() -> None:
    bus = EventBus(handler_timeout=5)

    async def quick(ctx: EventContext[Any, Any]) -> int:
        return 2

    bus.on("x", quick)
    bus.on("x", lambda ctx: ctx.output + 1, priority=0)
    assert (await bus.apply("x", output=0)).output == 3


@pytest.mark.parametrize("value", [0, -1, True, "1"])
def test_handler_timeout_must_be_positive(value: object) -> None:
    with pytest.raises(ValueError, match="handler_timeout must be a positive number"):
        EventBus(handler_timeout=value)  # type: ignore[arg-type]


async def test_agent_hooks_get_the_handler_timeout() -> None:
    agent = Agent(model=ScriptedModel(["x"]), handler_timeout=0.01)
    agent.hooks.on_llm_complete_before(hangs)
    with pytest.raises(HandlerTimeoutError):
        await agent.execute("hi")
    assert agent.state is AgentState.IDLE
    await agent.close()


async def test_a_run_past_its_deadline_is_cancelled_and_consistent(
    make_agent: AgentFactory,
) -> None:
    async def slow() -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    async def add(a: int, b: int) -> int:
        # On the loop: done at once, whatever the load (a plain def would take a
        # worker thread, which a loaded machine may not give it within the deadline).
        return a + b

    calls = [
        ToolCall(id="a", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="s", name="slow"),
    ]
    agent = make_agent([calls, "unused"], tools=[slow, add])
    with pytest.raises(RunTimeoutError, match=r"deadline of 0\.05 s") as info:
        await agent.execute("go", deadline=0.05)
    assert info.value.timeout == 0.05
    answers = {m.tool_call_id: m.content for m in agent.messages if isinstance(m, ToolMessage)}
    assert answers["a"] == "3"
    assert answers["s"].startswith("Error: the tool call was cancelled")
    assert agent.state is AgentState.IDLE


async def test_a_run_within_its_deadline_returns(make_agent: AgentFactory) -> None:
    result = await make_agent(["fine"]).execute("hi", deadline=30)
    assert result.output == "fine"


@pytest.mark.parametrize("value", [0, -2, True])
async def test_deadline_must_be_positive(make_agent: AgentFactory, value: object) -> None:
    agent = make_agent(["x"])
    with pytest.raises(ValueError, match="deadline must be a positive number"):
        await agent.execute("hi", deadline=value)  # type: ignore[call-overload]
    assert agent.messages == ()
