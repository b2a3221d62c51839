"""Static type checks of the EventBus and the params TypedDicts (docs/events.md).

Checked by ``mypy --strict`` with ``warn_unused_ignores``: every ``assert_type``
must hold and every must-fail line carries a coded ``# type: ignore[...]`` that
mypy would flag as unused if the line type-checked. pytest runs the functions too.
"""

from typing import Any, assert_type

import pytest

from agentrt import Agent, AgentEvents, EventBus, EventContext, ScriptedModel
from agentrt.control import Recovery
from agentrt.events import AgentCloseParams, ExecuteErrorParams, MessageAppendBeforeParams
from agentrt.messages import Message, UserMessage

AppendCtx = EventContext[MessageAppendBeforeParams, Message]


class ObjectHandler:
    """A handler that is an object: the bus must hand back this very class."""

    def __call__(self, ctx: EventContext[Any, Any]) -> None:
        pass


def on_append(ctx: AppendCtx) -> Message | None:
    # Scenario: type-safe handler registration (MessageAppendBeforeParams).
    assert_type(ctx.parameters["message"], Message)
    assert_type(ctx.parameters["agent"], Agent)
    assert_type(ctx.output, Message | None)
    return None


def unknown_key_is_a_type_error(ctx: AppendCtx) -> object:
    return ctx.parameters["nope"]  # type: ignore[typeddict-item]


def on_close(ctx: EventContext[AgentCloseParams, None]) -> None:
    # Scenario: type-safe close handler; reason is optional, so .get() is the way.
    assert_type(ctx.parameters["agent"], Agent)
    assert_type(ctx.parameters.get("reason"), str | None)


def on_error(ctx: EventContext[ExecuteErrorParams, Any]) -> Recovery | None:
    # Scenario: type-safe error handler.
    assert_type(ctx.parameters["error"], Exception)
    assert_type(ctx.parameters["iteration"], int)
    return None


def append_ctx() -> AppendCtx:
    message = UserMessage(content="hi")
    return EventContext(
        AgentEvents.MESSAGE_APPEND_BEFORE, {"message": message, "agent": None}, message
    )


def test_three_registration_forms_return_the_handler_type() -> None:
    bus = EventBus()
    registered = bus.on(AgentEvents.MESSAGE_APPEND_BEFORE, on_append)
    assert_type(registered(append_ctx()), Message | None)
    handler = ObjectHandler()
    assert_type(bus.on("x", handler), ObjectHandler)
    assert_type(bus.on("x")(handler), ObjectHandler)
    assert_type(bus.on("x", priority=50, predicate=lambda ctx: True)(handler), ObjectHandler)

    @bus.on("x", priority=50)
    def decorated(ctx: EventContext[Any, Any]) -> int:
        return 1

    # The decorated name keeps its exact signature: calling it gives int back.
    assert_type(decorated(EventContext("x", {})), int)
    assert bus.handler_count("x") == 4


async def test_dispatch_results_are_typed() -> None:
    bus = EventBus()
    ctx = await bus.apply("x", output=3)
    assert_type(ctx.output, int | None)
    assert_type(ctx.event, AgentEvents | str)
    signal = await bus.do("x")
    assert_type(signal.output, Any | None)
    with pytest.raises(TypeError):
        await bus.apply(3)  # type: ignore[arg-type]
    assert ctx.output == 3


async def test_handlers_run_with_the_typed_contexts() -> None:
    async with Agent(model=ScriptedModel(["ok"])) as agent:
        agent.hooks.on_message_append_before(on_append)
        agent.hooks.on_execute_error(on_error)
        agent.hooks.on_agent_close_before(on_close)
        await agent.append(UserMessage(content="hi"))
    assert agent.closed
