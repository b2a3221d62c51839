"""docs/events.md: HooksAccessor Class through TypedEventHandlersMixin Deprecation.

Exercised against ``HooksAccessor(EventBus())``; ``agent.hooks`` is the same class
over the agent's bus.
"""

import inspect
import warnings
from typing import Any

import pytest

import agentrt.hooks
from agentrt.agent import Agent
from agentrt.bus import DEFAULT_PRIORITY, EventBus, EventContext
from agentrt.events import (
    EVENT_PARAMS,
    EVENT_SEMANTICS,
    EXTENSION_POINTS,
    AgentEvents,
    EventSemantics,
    MessageAppendAfterParams,
    MessageAppendBeforeParams,
    ToolCallAfterParams,
    ToolCallBeforeParams,
)
from agentrt.hooks import HooksAccessor, TypedEventHandlersMixin
from agentrt.messages import Message, ToolCall, UserMessage
from agentrt.models.scripted import ScriptedModel
from agentrt.tools import tool

E = AgentEvents
AGENT = object()  # stands in for the Agent: the accessor never looks at parameters

SPEC_INTERCEPTABLE_METHODS = (
    "on_message_append_before",
    "on_message_create_before",
    "on_message_render_before",
    "on_message_replace_before",
    "on_message_set_system_before",
    "on_tool_call_before",
    "on_tool_call_error",
    "on_tools_provide",
    "on_tools_generate_signature",
    "on_llm_complete_before",
    "on_llm_extract_before",
    "on_llm_stream_before",
    "on_execute_before",
    "on_execute_error",
    "on_execute_iteration_before",
    "on_agent_close_before",
)
"""Interceptable event methods (docs/events.md)."""

SPEC_SIGNAL_METHODS = (
    "on_message_append_after",
    "on_message_create_after",
    "on_message_render_after",
    "on_message_replace_after",
    "on_message_set_system_after",
    "on_tool_call_after",
    "on_llm_complete_after",
    "on_llm_extract_after",
    "on_llm_stream_after",
    "on_llm_stream_chunk",
    "on_llm_error",
    "on_llm_complete_error",
    "on_execute_after",
    "on_execute_iteration_after",
    "on_agent_init_after",
    "on_agent_close_after",
    "on_agent_state_change",
    "on_agent_version_change",
    "on_mode_entering",
    "on_mode_entered",
    "on_mode_exiting",
    "on_mode_exited",
)
"""Signal event methods (docs/events.md)."""

INTERCEPTABLE_PREFIX = "Interceptable:"
SIGNAL_PREFIX = "Signal (ctx.output is ignored):"


def hook_method_names() -> list[str]:
    return sorted(name for name in dir(HooksAccessor) if name.startswith("on_"))


def doc_of(name: str) -> str:
    doc = inspect.getdoc(getattr(HooksAccessor, name))
    assert doc is not None, name
    return doc


@pytest.fixture
def bus() -> EventBus:
    return EventBus(strict=True)


@pytest.fixture
def hooks(bus: EventBus) -> HooksAccessor:
    return HooksAccessor(bus)


def noop(ctx: EventContext[Any, Any]) -> None:
    pass


# -- Requirement: HooksAccessor Class ---------------------------------------------------------


def test_accessor_fronts_the_bus(bus: EventBus, hooks: HooksAccessor) -> None:
    assert hooks.bus is bus
    assert repr(hooks) == f"<HooksAccessor bus={bus!r}>"


def test_accessor_needs_an_event_bus() -> None:
    with pytest.raises(TypeError, match="EventBus"):
        HooksAccessor(object())  # type: ignore[arg-type]


def test_off_removes_a_handler_registered_through_the_accessor(
    bus: EventBus, hooks: HooksAccessor
) -> None:
    hooks.on_tool_call_after(noop)
    assert hooks.off(E.TOOL_CALL_AFTER, noop) is True
    assert bus.handlers(E.TOOL_CALL_AFTER) == []
    assert hooks.off(E.TOOL_CALL_AFTER, noop) is False


def test_public_names() -> None:
    assert agentrt.hooks.__all__ == ("HookOptions", "HooksAccessor", "TypedEventHandlersMixin")
    for name in agentrt.hooks.__all__:
        assert getattr(agentrt.hooks, name) is not None


# -- Requirement: Decorator and Function Syntax -------------------------------------------------


async def test_decorator_syntax(bus: EventBus, hooks: HooksAccessor) -> None:
    seen: list[Message] = []

    @hooks.on_message_append_before
    def record(ctx: EventContext[MessageAppendBeforeParams, Message]) -> None:
        seen.append(ctx.parameters["message"])

    assert inspect.isfunction(record)
    assert record.__name__ == "record"
    assert bus.handlers(E.MESSAGE_APPEND_BEFORE) == [record]
    message = UserMessage(content="hi")
    await bus.apply(E.MESSAGE_APPEND_BEFORE, output=message, message=message, agent=AGENT)
    assert seen == [message]


async def test_function_syntax(bus: EventBus, hooks: HooksAccessor) -> None:
    seen: list[Message] = []

    async def my_handler(ctx: EventContext[MessageAppendBeforeParams, Message]) -> None:
        seen.append(ctx.parameters["message"])

    assert hooks.on_message_append_before(my_handler) is my_handler
    assert bus.handlers(E.MESSAGE_APPEND_BEFORE) == [my_handler]
    message = UserMessage(content="hi")
    await bus.apply(E.MESSAGE_APPEND_BEFORE, output=message, message=message, agent=AGENT)
    assert seen == [message]


async def test_parameterized_decorator(bus: EventBus, hooks: HooksAccessor) -> None:
    order: list[str] = []
    bus.on(E.MESSAGE_APPEND_BEFORE, lambda ctx: order.append("49"), priority=49)
    bus.on(E.MESSAGE_APPEND_BEFORE, lambda ctx: order.append("51"), priority=51)

    @hooks.on_message_append_before(priority=50)
    def fifty(ctx: EventContext[MessageAppendBeforeParams, Message]) -> None:
        order.append("50")

    assert inspect.isfunction(fifty)
    assert bus.handlers(E.MESSAGE_APPEND_BEFORE)[1] is fifty
    message = UserMessage(content="hi")
    await bus.apply(E.MESSAGE_APPEND_BEFORE, output=message, message=message, agent=AGENT)
    assert order == ["51", "50", "49"]


def test_function_syntax_accepts_options(bus: EventBus, hooks: HooksAccessor) -> None:
    hooks.on_tool_call_after(noop, priority=DEFAULT_PRIORITY - 1, predicate=lambda ctx: True)

    def first(ctx: EventContext[Any, Any]) -> None:
        pass

    hooks.on_tool_call_after(first)
    assert bus.handlers(E.TOOL_CALL_AFTER) == [first, noop]


# -- Requirement: Priority and Predicate Parameters ---------------------------------------------


async def test_custom_priority(bus: EventBus, hooks: HooksAccessor) -> None:
    order: list[str] = []
    hooks.on_tool_call_before(lambda ctx: order.append("default"))
    bus.on(E.TOOL_CALL_BEFORE, lambda ctx: order.append("201"), priority=201)
    bus.on(E.TOOL_CALL_BEFORE, lambda ctx: order.append("199"), priority=199)

    @hooks.on_tool_call_before(priority=200)
    def audit(ctx: EventContext[ToolCallBeforeParams, dict[str, Any]]) -> None:
        order.append("200")

    assert bus.handlers(E.TOOL_CALL_BEFORE)[1] is audit
    await bus.apply(E.TOOL_CALL_BEFORE, output={}, tool_name="search", agent=AGENT)
    assert order == ["201", "200", "199", "default"]


async def test_predicate_filter(bus: EventBus, hooks: HooksAccessor) -> None:
    called: list[str] = []

    @hooks.on_tool_call_before(predicate=lambda ctx: ctx.parameters.get("tool_name") == "search")
    def only_search(ctx: EventContext[ToolCallBeforeParams, dict[str, Any]]) -> None:
        called.append(ctx.parameters["tool_name"])

    await bus.apply(E.TOOL_CALL_BEFORE, output={}, tool_name="other", agent=AGENT)
    assert called == []
    await bus.apply(E.TOOL_CALL_BEFORE, output={}, tool_name="search", agent=AGENT)
    assert called == ["search"]


# -- bad input: the bus's own errors ------------------------------------------------------------


def test_non_callable_handler_is_rejected_by_the_bus(bus: EventBus, hooks: HooksAccessor) -> None:
    with pytest.raises(TypeError, match="a handler must be callable, got int"):
        hooks.on_tool_call_before(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="a handler must be callable, got str"):
        hooks.on_tool_call_after(priority=1)("not a function")  # type: ignore[type-var]
    assert bus.handler_count() == 0


@pytest.mark.parametrize("priority", ["high", 1.5, None, True])
def test_priority_must_be_an_int(hooks: HooksAccessor, priority: Any) -> None:
    with pytest.raises(TypeError, match="priority must be an int"):
        hooks.on_tool_call_before(noop, priority=priority)
    # The decorator form fails at once, before any handler is given.
    with pytest.raises(TypeError, match="priority must be an int"):
        hooks.on_tool_call_before(priority=priority)
    assert hooks.bus.handler_count() == 0


def test_predicate_must_be_callable(hooks: HooksAccessor) -> None:
    with pytest.raises(TypeError, match="predicate must be callable or None"):
        hooks.on_tool_call_before(noop, predicate="search")  # type: ignore[call-overload]


def test_unknown_option_is_rejected(hooks: HooksAccessor) -> None:
    with pytest.raises(TypeError, match="prio"):
        hooks.on_tool_call_before(noop, prio=5)  # type: ignore[call-overload]


# -- Requirement: Semantic Documentation --------------------------------------------------------


def test_interceptable_method_documentation() -> None:
    doc = doc_of("on_message_append_before")
    assert doc.startswith(INTERCEPTABLE_PREFIX)
    for key in MessageAppendBeforeParams.__required_keys__:
        assert f"``{key}``" in doc
    # How to modify the message: through ctx.output.
    assert "ctx.output" in doc
    assert "Message" in doc
    assert "original" in doc


def test_signal_method_documentation() -> None:
    doc = doc_of("on_message_append_after")
    assert doc.startswith(SIGNAL_PREFIX)
    assert "ctx.output is ignored" in doc
    for key in MessageAppendAfterParams.__required_keys__:
        assert f"``{key}``" in doc


@pytest.mark.parametrize("name", hook_method_names())
def test_every_method_documents_its_semantics_parameters_and_output(name: str) -> None:
    doc = doc_of(name)
    event = HooksAccessor.EVENTS[name]
    params = EVENT_PARAMS[event]
    assert params is not None
    assert 3 <= len(doc.splitlines()) <= 6, doc
    for key in params.__required_keys__ | params.__optional_keys__:
        assert f"``{key}``" in doc, key
    if EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE:
        assert doc.startswith(INTERCEPTABLE_PREFIX)
        assert "``ctx.output``:" in doc
    else:
        assert doc.startswith(SIGNAL_PREFIX)


# -- Requirement: Interceptable Event Methods ----------------------------------------------------


async def test_interceptable_event_modifies_outcome(bus: EventBus, hooks: HooksAccessor) -> None:
    original = UserMessage(content="secret: 1234")
    redacted = UserMessage(content="secret: ****")

    @hooks.on_message_append_before
    def redact(ctx: EventContext[MessageAppendBeforeParams, Message]) -> None:
        ctx.output = redacted

    ctx = await bus.apply(E.MESSAGE_APPEND_BEFORE, output=original, message=original, agent=AGENT)
    assert ctx.output is redacted


async def test_interceptable_handler_without_output_keeps_the_original(
    bus: EventBus, hooks: HooksAccessor
) -> None:
    hooks.on_message_append_before(noop)
    original = UserMessage(content="hi")
    ctx = await bus.apply(E.MESSAGE_APPEND_BEFORE, output=original, message=original, agent=AGENT)
    assert ctx.output is original


# -- Requirement: Signal Event Methods ------------------------------------------------------------


async def test_signal_event_ignores_output(bus: EventBus, hooks: HooksAccessor) -> None:
    calls: list[int] = []

    @hooks.on_message_append_after
    def try_to_change(ctx: EventContext[MessageAppendAfterParams, Any]) -> str:
        calls.append(ctx.parameters["index"])
        ctx.output = "ignored"
        return "also ignored"

    message = UserMessage(content="hi")
    ctx = await bus.do(E.MESSAGE_APPEND_AFTER, message=message, index=3, agent=AGENT)
    assert calls == [3]
    assert ctx.output is None
    assert ctx.semantics is EventSemantics.SIGNAL


# -- the method table --------------------------------------------------------------------------


def test_every_hook_method_maps_to_exactly_one_event() -> None:
    assert hook_method_names() == sorted(HooksAccessor.EVENTS)
    events = list(HooksAccessor.EVENTS.values())
    assert len(events) == len(set(events)), "two methods register for the same event"


def test_hook_methods_cover_every_dispatched_event() -> None:
    assert set(HooksAccessor.EVENTS.values()) == set(AgentEvents) - EXTENSION_POINTS


@pytest.mark.parametrize("name", hook_method_names())
def test_hook_method_registers_on_its_event(name: str) -> None:
    bus = EventBus()
    method = getattr(HooksAccessor(bus), name)

    def by_call(ctx: EventContext[Any, Any]) -> None:
        pass

    def by_decorator(ctx: EventContext[Any, Any]) -> None:
        pass

    def by_parameterized(ctx: EventContext[Any, Any]) -> None:
        pass

    assert method(by_call) is by_call
    assert method(by_decorator) is by_decorator
    assert method(priority=DEFAULT_PRIORITY + 1)(by_parameterized) is by_parameterized
    assert bus.handler_count() == 3
    landed = [event for event in AgentEvents if by_call in bus.handlers(event)]
    assert landed == [HooksAccessor.EVENTS[name]]
    assert bus.handlers(landed[0]) == [by_parameterized, by_call, by_decorator]


def test_docstring_semantics_match_event_semantics() -> None:
    names = hook_method_names()
    documented_interceptable = {n for n in names if doc_of(n).startswith(INTERCEPTABLE_PREFIX)}
    documented_signal = {n for n in names if doc_of(n).startswith(SIGNAL_PREFIX)}
    interceptable = {
        name
        for name, event in HooksAccessor.EVENTS.items()
        if EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE
    }
    assert documented_interceptable == interceptable
    assert documented_signal == set(names) - interceptable


def test_spec_method_lists_are_present_with_their_semantics() -> None:
    assert len(SPEC_INTERCEPTABLE_METHODS) == len(set(SPEC_INTERCEPTABLE_METHODS)) == 16
    assert len(SPEC_SIGNAL_METHODS) == len(set(SPEC_SIGNAL_METHODS)) == 22
    for name in SPEC_INTERCEPTABLE_METHODS:
        event = HooksAccessor.EVENTS[name]
        assert EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE, name
        assert doc_of(name).startswith(INTERCEPTABLE_PREFIX), name
    for name in SPEC_SIGNAL_METHODS:
        event = HooksAccessor.EVENTS[name]
        assert EVENT_SEMANTICS[event] is EventSemantics.SIGNAL, name
        assert doc_of(name).startswith(SIGNAL_PREFIX), name


# -- Requirement: TypedEventHandlersMixin Deprecation ---------------------------------------------


def test_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"agent\.hooks") as on_subclass:

        class Legacy(TypedEventHandlersMixin):
            pass

    with pytest.warns(DeprecationWarning, match=r"agent\.hooks") as on_instance:
        TypedEventHandlersMixin()
    # Both warnings point at this file, the user's code.
    assert [w.filename for w in on_subclass] == [__file__]
    assert [w.filename for w in on_instance] == [__file__]


@tool
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


# Made at import, as a user's module would: the one warning is recorded here.
with warnings.catch_warnings(record=True) as MADE:
    warnings.simplefilter("always")

    class LegacyAgent(TypedEventHandlersMixin, Agent):
        """An agent class of the first releases."""


async def test_a_deprecated_mixin_agent_warns_once_and_its_old_methods_register_handlers() -> None:
    assert [(w.category, w.filename) for w in MADE] == [(DeprecationWarning, __file__)]
    assert "agent.hooks" in str(MADE[0].message)
    seen: list[str] = []

    async def async_before(ctx: EventContext[ToolCallBeforeParams, Any]) -> None:
        seen.append(f"before {ctx.parameters['tool_name']}")

    call = ToolCall(id="c1", name="echo", arguments={"text": "hi"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # making and using the agent warns no more
        agent = LegacyAgent(model=ScriptedModel([call, "done"]), tools=[echo])
        assert agent.on_tool_call_before(async_before) is async_before

        @agent.on_message_append(priority=200)
        def appended(ctx: EventContext[MessageAppendAfterParams, Any]) -> None:
            seen.append(f"appended {ctx.parameters['message'].role}")

        @agent.on_tool_call_after
        def after(ctx: EventContext[ToolCallAfterParams, Any]) -> None:
            seen.append(f"after {ctx.parameters['response'].content}")

        try:
            assert (await agent.execute("go")).output == "done"
        finally:
            await agent.close()
    assert seen == [
        "appended user",
        "appended assistant",
        "before echo",
        "after hi",
        "appended tool",
        "appended assistant",
    ]


def test_each_old_method_is_the_matching_hooks_method() -> None:
    for name in HooksAccessor.EVENTS:
        assert getattr(LegacyAgent, name) is getattr(HooksAccessor, name), name
    assert LegacyAgent.on_message_append is HooksAccessor.on_message_append_after
    assert LegacyAgent.on_execute_iteration is HooksAccessor.on_execute_iteration_before


def test_the_mixin_without_an_agent_says_where_it_belongs() -> None:
    with pytest.warns(DeprecationWarning, match=r"agent\.hooks"):
        mixin = TypedEventHandlersMixin()
    with pytest.raises(TypeError, match=r"has no EventBus at \.events: mix it into Agent"):
        mixin.on_agent_init_after(lambda ctx: None)
