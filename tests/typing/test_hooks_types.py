"""Static type checks of :class:`~agentrt.hooks.HooksAccessor` (docs/events.md).

Checked by ``mypy --strict`` with ``warn_unused_ignores``: every ``assert_type``
must hold, and every must-fail line carries a coded ``# type: ignore[...]`` that
mypy would report as unused if the line type-checked. The checks sit in test
functions so that pytest runs them too (``assert_type`` does nothing at runtime).
"""

from collections.abc import Callable
from typing import Any, assert_type

import pytest

from agentrt.bus import EventBus, EventContext
from agentrt.events import (
    AgentEvents,
    ExecuteErrorParams,
    MessageAppendAfterParams,
    MessageAppendBeforeParams,
    ToolCallBeforeParams,
)
from agentrt.hooks import HookOptions, HooksAccessor
from agentrt.messages import Message, ToolResponse, UserMessage

AppendCtx = EventContext[MessageAppendBeforeParams, Message]
ToolCtx = EventContext[ToolCallBeforeParams, dict[str, Any]]
AppendHandler = Callable[[AppendCtx], Message | None]
ToolHandler = Callable[[ToolCtx], None]


class CallableAppendHandler:
    """A handler that is an object, not a function: its own class must come back."""

    def __call__(self, ctx: AppendCtx) -> None:
        pass


def append_handler(ctx: EventContext[MessageAppendBeforeParams, Message]) -> Message | None:
    # Scenario: type-safe message append handler.
    assert_type(ctx.parameters["message"], Message)
    assert_type(ctx.output, Message | None)
    return None


def tool_handler(ctx: EventContext[ToolCallBeforeParams, dict[str, Any]]) -> None:
    # Scenario: type-safe tool call handler.
    assert_type(ctx.parameters["tool_name"], str)
    assert_type(ctx.parameters["arguments"], dict[str, Any])
    assert_type(ctx.output, dict[str, Any] | None)


def any_handler(ctx: EventContext[Any, Any]) -> None:
    pass


def make_hooks() -> HooksAccessor:
    return HooksAccessor(EventBus())


def append_ctx() -> AppendCtx:
    message = UserMessage(content="hi")
    return EventContext(
        AgentEvents.MESSAGE_APPEND_BEFORE, {"message": message, "agent": None}, message
    )


def tool_ctx() -> ToolCtx:
    return EventContext(AgentEvents.TOOL_CALL_BEFORE, {"tool_name": "search", "arguments": {}})


# -- the three forms return the handler's own type ---------------------------------------------


def test_function_form_returns_the_handler_type() -> None:
    hooks = make_hooks()
    typed: AppendHandler = append_handler
    assert_type(hooks.on_message_append_before(typed), AppendHandler)
    assert_type(hooks.on_message_append_before(CallableAppendHandler()), CallableAppendHandler)
    tool: ToolHandler = tool_handler
    assert_type(hooks.on_tool_call_before(tool, priority=200), ToolHandler)
    # Calling the returned handler keeps its precise return type (not the bound's Any).
    assert_type(hooks.on_message_append_before(append_handler)(append_ctx()), Message | None)


def test_parameterized_decorator_form_returns_the_handler_type() -> None:
    hooks = make_hooks()
    typed: AppendHandler = append_handler
    assert_type(hooks.on_message_append_before(priority=50)(typed), AppendHandler)
    decorate = hooks.on_tool_call_before(priority=200, predicate=lambda ctx: True)
    tool: ToolHandler = tool_handler
    assert_type(decorate(tool), ToolHandler)


async def test_decorator_forms_keep_the_decorated_function_type() -> None:
    hooks = make_hooks()

    @hooks.on_message_append_before
    def keep(ctx: AppendCtx) -> Message | None:
        return ctx.output

    @hooks.on_message_append_before(priority=50)
    def keep_too(ctx: AppendCtx) -> Message | None:
        return ctx.output

    @hooks.on_tool_call_before(priority=200)
    async def audit(ctx: ToolCtx) -> dict[str, Any] | ToolResponse:
        return ToolResponse("cached")

    assert_type(keep(append_ctx()), Message | None)
    assert_type(keep_too(append_ctx()), Message | None)
    assert_type(await audit(tool_ctx()), dict[str, Any] | ToolResponse)


# -- accepted handler annotations ---------------------------------------------------------------


def test_precise_output_annotations_are_accepted() -> None:
    hooks = make_hooks()
    # EventContext is invariant in its output type: the bounds use Any so that these pass.
    hooks.on_tool_call_before(tool_handler)

    def answer(ctx: EventContext[ToolCallBeforeParams, dict[str, Any] | ToolResponse]) -> None:
        pass

    def recover(ctx: EventContext[ExecuteErrorParams, Any]) -> str:
        assert_type(ctx.parameters["error"], Exception)
        assert_type(ctx.parameters["iteration"], int)
        return "sorry"

    hooks.on_tool_call_before(answer)
    hooks.on_execute_error(recover)
    # A handler for any event is accepted everywhere.
    hooks.on_message_append_before(any_handler)
    hooks.on_mode_entered(any_handler)
    options: HookOptions = {"priority": 10, "predicate": None}
    hooks.on_tool_call_before(tool_handler, **options)
    assert len(hooks.bus.handlers(AgentEvents.TOOL_CALL_BEFORE)) == 3


# -- must-fail lines ------------------------------------------------------------------------------


def test_handler_for_another_event_is_a_type_error() -> None:
    hooks = make_hooks()
    # At runtime the bus does not check annotations; mypy does.
    hooks.on_message_append_before(tool_handler)  # type: ignore[type-var]
    hooks.on_message_append_before(priority=50)(tool_handler)  # type: ignore[type-var]
    hooks.on_tool_call_before(append_handler)  # type: ignore[type-var]
    hooks.on_execute_before(recover_from_error)  # type: ignore[type-var]

    def after_handler(ctx: EventContext[MessageAppendAfterParams, Any]) -> None:
        pass

    hooks.on_message_append_before(after_handler)  # type: ignore[type-var]
    hooks.on_message_append_after(append_handler)  # type: ignore[type-var]

    @hooks.on_message_append_before  # type: ignore[type-var]
    def wrong(ctx: ToolCtx) -> None:
        pass

    assert len(hooks.bus.handlers(AgentEvents.MESSAGE_APPEND_BEFORE)) == 4


def recover_from_error(ctx: EventContext[ExecuteErrorParams, Any]) -> None:
    pass


def test_bad_options_are_type_errors() -> None:
    hooks = make_hooks()
    with pytest.raises(TypeError):
        hooks.on_tool_call_before(tool_handler, priority="high")  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        hooks.on_tool_call_before(priority="high")  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        hooks.on_tool_call_before(tool_handler, prio=5)  # type: ignore[call-overload]
    bad: HookOptions = {"priority": 1, "prio": 5}  # type: ignore[typeddict-unknown-key]
    with pytest.raises(TypeError):
        hooks.on_tool_call_before(tool_handler, **bad)
    assert hooks.bus.handler_count() == 0
