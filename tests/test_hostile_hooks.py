"""Issue 8, hostile hooks and tools: the documented failure policy holds.

The policy, as these tests pin it down:

* A handler of an **interceptable** event that raises: the exception reaches the caller
  of ``execute`` unchanged (the same object; also when parallel tool calls ran it: not
  wrapped in an exception group), after ``execute:error`` handlers saw it.
* A handler of a **signal** that raises an ``Exception``: the run goes on; the failure is
  logged on the ``agentrt`` logger (event and handler named) and counted in
  ``bus.handler_errors``. With ``strict=True`` it propagates like an interceptable one.
  A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``) is never
  contained.
* A handler that sets an output of the wrong type: :class:`HookOutputError` naming the
  event (``context:provider:before`` takes any value, rendered with ``str()``;
  ``agent:close:before`` has no output to check).
* A handler that **hangs**: there is no per-handler timeout on the bus yet, so the run
  waits with it; a deadline around the run (``anyio.fail_after``) cancels it cleanly,
  like any cancellation (``test_cancellation_points.py``).
* Handlers that register or remove handlers while being dispatched change later
  dispatches only: a dispatch runs the snapshot taken when it began.
* A **tool** that raises an ``Exception`` is a tool message the model reads; one that
  raises ``KeyboardInterrupt`` or ``SystemExit`` stops the run and propagates unchanged
  (never a tool message, never a group, never killing the event loop from a task). A
  tool that returns a value that cannot be rendered as text is a tool error message.

Whatever happened, every assistant tool call has a tool message, and the agent is
IDLE and runs again.
"""

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt import (
    Agent,
    AgentEvents,
    AgentState,
    HookOutputError,
    ModelResponse,
    ScriptedModel,
    ToolCall,
    ToolError,
    ToolMessage,
)
from agentrt.bus import EventContext
from agentrt.messages import Message, UserMessage
from agentrt.models.scripted import ScriptItem
from agentrt.tools import ToolLike

E = AgentEvents
AFTER = "fine again"


class Boom(Exception):
    """What a hostile handler raises."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def wait_add(a: int, b: int) -> int:
    """Add two integers after a checkpoint."""
    await anyio.lowlevel.checkpoint()
    return a + b


def tool_calls(n: int, name: str = "add") -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id=f"c{i}", name=name, arguments={"a": i, "b": 1}) for i in range(n)
        )
    )


def make(
    script: Sequence[ScriptItem],
    *,
    tools: Sequence[ToolLike] = (add, wait_add),
    strict: bool = False,
    **options: Any,
) -> Agent:
    return Agent(model=ScriptedModel(list(script)), tools=tools, strict=strict, **options)


def check_consistent(messages: Sequence[Message]) -> None:
    called = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if m.role == "tool"]
    assert sorted(called) == sorted(answered), (called, answered)


async def check_usable(agent: Agent) -> None:
    """Consistent, IDLE, and a new run works (the bus is cleared of the hostile handlers)."""
    check_consistent(agent.messages)
    assert agent.state is AgentState.IDLE
    agent.events.clear()
    model = agent.model
    assert isinstance(model, ScriptedModel)
    model.reset([AFTER])
    with anyio.fail_after(5):
        assert (await agent.execute("again")).output == AFTER
    check_consistent(agent.messages)
    await agent.close()


# -- interceptable handlers that raise ----------------------------------------------------------

# (event, calls in the turn): where an interceptable handler raising is met in a run.
INTERCEPTABLE_SITES = [
    (E.EXECUTE_BEFORE, 1),
    (E.EXECUTE_ITERATION_BEFORE, 1),
    (E.TOOLS_PROVIDE, 1),
    (E.TOOLS_GENERATE_SIGNATURE, 1),
    (E.MESSAGE_RENDER_BEFORE, 1),
    (E.LLM_COMPLETE_BEFORE, 1),
    (E.MESSAGE_CREATE_BEFORE, 1),
    (E.MESSAGE_APPEND_BEFORE, 1),
    (E.TOOL_CALL_BEFORE, 1),
    (E.TOOL_CALL_BEFORE, 3),
    (E.TOOL_CALL_ERROR, 1),
    (E.TOOL_CALL_ERROR, 3),
]


@pytest.mark.parametrize(("event", "calls"), INTERCEPTABLE_SITES, ids=str)
async def test_an_interceptable_handler_that_raises_propagates_unchanged(
    event: AgentEvents, calls: int
) -> None:
    name = "nope" if event is E.TOOL_CALL_ERROR else "add"  # an unknown tool fails
    agent = make([tool_calls(calls, name), "done"])
    raised = Boom(str(event))
    seen: list[BaseException] = []

    @agent.events.on(event)
    def hostile(ctx: EventContext[Any, Any]) -> None:
        raise raised

    @agent.events.on(E.EXECUTE_ERROR)
    def observe(ctx: EventContext[Any, Any]) -> None:
        seen.append(ctx.parameters["error"])

    with pytest.raises(Boom) as caught:
        await agent.execute("go")
    assert caught.value is raised
    # execute:error sees what fails inside the loop (and did not recover); execute:before
    # and the user message come before it.
    before_loop = event in (E.EXECUTE_BEFORE, E.MESSAGE_CREATE_BEFORE, E.MESSAGE_APPEND_BEFORE)
    assert seen == ([] if before_loop else [raised])
    await check_usable(agent)


async def test_a_raising_predicate_of_an_interceptable_event_propagates() -> None:
    agent = make([tool_calls(2), "done"])
    raised = Boom("predicate")

    def predicate(ctx: EventContext[Any, Any]) -> bool:
        raise raised

    agent.events.on(E.TOOL_CALL_BEFORE, lambda ctx: None, predicate=predicate)
    with pytest.raises(Boom) as caught:
        await agent.execute("go")
    assert caught.value is raised
    await check_usable(agent)


# -- signal handlers that raise -----------------------------------------------------------------

SIGNALS = [
    E.AGENT_STATE_CHANGE,
    E.MESSAGE_CREATE_AFTER,
    E.MESSAGE_APPEND_AFTER,
    E.AGENT_VERSION_CHANGE,
    E.LLM_COMPLETE_AFTER,
    E.TOOL_CALL_AFTER,
    E.EXECUTE_ITERATION_AFTER,
    E.EXECUTE_AFTER,
]


@pytest.mark.parametrize("event", SIGNALS, ids=str)
async def test_a_signal_handler_that_raises_is_logged_and_counted(
    event: AgentEvents, caplog: pytest.LogCaptureFixture
) -> None:
    agent = make([tool_calls(2), "done"])
    calls = 0

    @agent.events.on(event)
    def hostile(ctx: EventContext[Any, Any]) -> int:
        nonlocal calls
        calls += 1
        raise Boom(f"signal {event}")

    with caplog.at_level(logging.ERROR, logger="agentrt"):
        result = await agent.execute("go")
    assert result.output == "done"
    assert calls >= 1
    assert agent.events.handler_errors == calls
    logged = [r for r in caplog.records if r.name == "agentrt"]
    assert len(logged) == calls
    for record in logged:
        assert record.exc_info is not None
        assert isinstance(record.exc_info[1], Boom)
        assert str(event) in record.getMessage()
        assert "hostile" in record.getMessage()
    await check_usable(agent)


@pytest.mark.parametrize("event", SIGNALS, ids=str)
async def test_in_strict_mode_a_signal_handler_failure_propagates(event: AgentEvents) -> None:
    agent = make([tool_calls(2), "done"], strict=True)
    raised = Boom(str(event))

    @agent.events.on(event)
    def hostile(ctx: EventContext[Any, Any]) -> None:
        raise raised

    with pytest.raises(Boom) as caught:
        await agent.execute("go")
    assert caught.value is raised
    await check_usable(agent)


async def test_a_signal_handler_raising_keyboard_interrupt_is_not_contained() -> None:
    agent = make([tool_calls(2), "done"])

    @agent.events.on(E.TOOL_CALL_AFTER)
    def hostile(ctx: EventContext[Any, Any]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await agent.execute("go")
    assert agent.events.handler_errors == 0
    await check_usable(agent)


async def test_a_signal_handler_returning_a_value_is_ignored() -> None:
    agent = make([tool_calls(1), "done"], strict=True)
    for event in SIGNALS:
        agent.events.on(event, lambda ctx: object())
    assert (await agent.execute("go")).output == "done"
    await check_usable(agent)


# -- wrong output types -------------------------------------------------------------------------

WRONG = object()


def wrong(ctx: EventContext[Any, Any]) -> object:
    return WRONG


# (event, the script, run options, calls that fail): each checks its handler's output.
OUTPUT_CHECKS: list[tuple[AgentEvents, list[ScriptItem], dict[str, Any]]] = [
    (E.EXECUTE_BEFORE, ["done"], {}),
    (E.EXECUTE_ITERATION_BEFORE, ["done"], {}),
    (E.TOOLS_PROVIDE, ["done"], {}),
    (E.TOOLS_GENERATE_SIGNATURE, ["done"], {}),
    (E.MESSAGE_RENDER_BEFORE, ["done"], {}),
    (E.LLM_COMPLETE_BEFORE, ["done"], {}),
    (E.LLM_STREAM_BEFORE, ["done"], {"stream": True}),
    (E.LLM_EXTRACT_BEFORE, ["[1, 2]"], {"output_type": list[int]}),
    (E.MESSAGE_CREATE_BEFORE, ["done"], {}),
    (E.MESSAGE_APPEND_BEFORE, ["done"], {}),
    (E.MESSAGE_SET_SYSTEM_BEFORE, ["done"], {}),
    (E.TOOL_CALL_BEFORE, [tool_calls(1), "done"], {}),
    (E.TOOL_CALL_BEFORE, [tool_calls(4), "done"], {}),
    (E.TOOL_CALL_ERROR, [tool_calls(1, "nope"), "done"], {}),
    (E.TOOL_CALL_ERROR, [tool_calls(4, "nope"), "done"], {}),
    (E.EXECUTE_ERROR, [ValueError("model down")], {}),
]


@pytest.mark.parametrize(("event", "script", "options"), OUTPUT_CHECKS, ids=str)
async def test_an_output_of_the_wrong_type_is_a_hook_output_error(
    event: AgentEvents, script: list[ScriptItem], options: dict[str, Any]
) -> None:
    agent = make(script, instructions="Be brief.")
    agent.events.on(event, wrong)
    with pytest.raises(HookOutputError) as caught:
        await agent.execute("go", **options)
    assert caught.value.event == event
    assert caught.value.output is WRONG
    await check_usable(agent)


@pytest.mark.parametrize(
    "rendered",
    [[1, 2], ["text"], [UserMessage(content="hi"), None]],
    ids=["ints", "strings", "a-None"],
)
async def test_a_rendered_list_of_non_messages_is_a_hook_output_error(rendered: list[Any]) -> None:
    agent = make(["done"])
    agent.events.on(E.MESSAGE_RENDER_BEFORE, lambda ctx: rendered)
    with pytest.raises(HookOutputError) as caught:
        await agent.execute("go")
    assert caught.value.event == E.MESSAGE_RENDER_BEFORE
    await check_usable(agent)


async def test_replace_and_close_outputs() -> None:
    agent = make(["done"])
    await agent.execute("go")
    agent.events.on(E.MESSAGE_REPLACE_BEFORE, wrong)
    with pytest.raises(HookOutputError):
        await agent.replace(0, UserMessage(content="other"))
    # agent:close:before has no output to check: a value is ignored.
    agent.events.on(E.AGENT_CLOSE_BEFORE, wrong)
    await agent.close()
    assert agent.closed


async def test_a_context_provider_value_of_any_type_is_rendered_with_str() -> None:
    agent = make(["done"], instructions="Today: {{ today }}")
    agent.add_context_provider("today", lambda: "Monday")
    agent.events.on(E.CONTEXT_PROVIDER_BEFORE, lambda ctx: math.pi)
    await agent.execute("go")
    assert agent.messages[0].content == f"Today: {math.pi}"
    await check_usable(agent)


# -- hanging handlers ---------------------------------------------------------------------------

HANG_SITES = [
    (E.EXECUTE_BEFORE, 1),
    (E.LLM_COMPLETE_BEFORE, 1),
    (E.TOOL_CALL_BEFORE, 1),
    (E.TOOL_CALL_BEFORE, 3),
    (E.TOOL_CALL_AFTER, 3),
    (E.MESSAGE_APPEND_AFTER, 1),
    (E.EXECUTE_AFTER, 1),
]


@pytest.mark.parametrize(("event", "calls"), HANG_SITES, ids=str)
async def test_a_hanging_handler_waits_until_the_callers_deadline(
    event: AgentEvents, calls: int
) -> None:
    """No per-handler timeout yet: the caller's deadline is what ends a hung handler."""
    agent = make([tool_calls(calls), "done"])

    @agent.events.on(event)
    async def hang(ctx: EventContext[Any, Any]) -> None:
        await anyio.sleep_forever()

    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.1):
            await agent.execute("go")
    await check_usable(agent)


async def test_a_hanging_handler_under_a_stream_ends_the_stream() -> None:
    agent = make([tool_calls(2), "done"])

    @agent.events.on(E.TOOL_CALL_BEFORE)
    async def hang(ctx: EventContext[Any, Any]) -> None:
        await anyio.sleep_forever()

    received: list[str] = []
    with anyio.move_on_after(0.2) as scope:
        async with agent.stream("go") as stream:
            async for event in stream:
                received.append(event.type)
    assert scope.cancelled_caught
    assert received[:2] == ["user_message", "stream_started"]
    await check_usable(agent)


# -- registering and removing handlers while being dispatched ------------------------------------


async def test_registering_during_a_dispatch_affects_later_dispatches_only() -> None:
    agent = make([tool_calls(1), "done"], strict=True)
    bus = agent.events
    runs: list[str] = []

    def late(ctx: EventContext[Any, Any]) -> None:
        runs.append(f"late:{ctx.event}")

    def removed(ctx: EventContext[Any, Any]) -> None:
        runs.append(f"removed:{ctx.event}")

    def first(ctx: EventContext[Any, Any]) -> None:
        runs.append(f"first:{ctx.event}")
        if len([r for r in runs if r.startswith("first:")]) == 1:
            bus.on(E.MESSAGE_APPEND_AFTER, late, priority=0)
            assert bus.off(E.MESSAGE_APPEND_AFTER, removed)

    bus.on(E.MESSAGE_APPEND_AFTER, first, priority=200)
    bus.on(E.MESSAGE_APPEND_AFTER, removed, priority=100)
    await agent.execute("go")
    event = str(E.MESSAGE_APPEND_AFTER)
    # The first dispatch ran its snapshot (removed still in, late not yet); later
    # dispatches (assistant, tool and final messages) run the new set.
    assert runs == [f"first:{event}", f"removed:{event}"] + [f"first:{event}", f"late:{event}"] * 3
    await check_usable(agent)


async def test_a_handler_that_clears_the_bus_mid_dispatch() -> None:
    agent = make([tool_calls(3), "done"], strict=True)
    ran: list[str] = []

    def clear(ctx: EventContext[Any, Any]) -> None:
        ran.append("clear")
        agent.events.clear()

    agent.events.on(E.TOOL_CALL_BEFORE, clear, priority=200)
    agent.events.on(E.TOOL_CALL_BEFORE, lambda ctx: ran.append("next"), priority=100)
    assert (await agent.execute("go")).output == "done"
    assert ran == ["clear", "next"]  # the first dispatch's snapshot; then nothing is left
    await check_usable(agent)


# A hostile dispatcher: at each dispatch a handler may register or remove handlers.
ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "remove-self", "nothing"]),
        st.sampled_from(["*", str(E.MESSAGE_APPEND_AFTER), str(E.TOOL_CALL_BEFORE), "message:*"]),
        st.integers(-5, 5),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(actions=ACTIONS, calls=st.integers(1, 3))
async def test_handlers_mutating_the_bus_during_dispatch_keep_snapshot_semantics(
    actions: list[tuple[str, str, int]], calls: int
) -> None:
    agent = make([tool_calls(calls), "done"], strict=True)
    bus = agent.events
    pending = list(actions)
    registered: list[tuple[str, Callable[[EventContext[Any, Any]], Any]]] = []
    # Per dispatch: the handlers it should run (its snapshot), and the ones it ran.
    dispatches: list[tuple[list[Any], list[Any]]] = []

    def opening(ctx: EventContext[Any, Any]) -> None:
        dispatches.append((bus.handlers(ctx.event)[1:], []))

    def make_handler() -> Callable[[EventContext[Any, Any]], Any]:
        def handler(ctx: EventContext[Any, Any]) -> None:
            dispatches[-1][1].append(handler)
            if not pending:
                return
            action, pattern, priority = pending.pop(0)
            if action == "add":
                new = make_handler()
                bus.on(pattern, new, priority=priority)
                registered.append((pattern, new))
            elif action == "remove" and registered:
                bus.off(*registered.pop(0))
            elif action == "remove-self":
                for entry in registered:
                    if entry[1] is handler:
                        registered.remove(entry)
                        bus.off(*entry)
                        break

        return handler

    bus.on("*", opening, priority=1_000)  # first in every dispatch: records its snapshot
    seed = make_handler()
    bus.on("*", seed, priority=0)
    registered.append(("*", seed))
    assert (await agent.execute("go")).output == "done"
    for expected, ran in dispatches:
        assert ran == expected
    await check_usable(agent)


# -- hostile tools ------------------------------------------------------------------------------


@pytest.mark.parametrize("calls", [1, 2, 5])
@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit], ids=lambda t: t.__name__)
async def test_a_tool_raising_a_base_exception_propagates_unchanged(
    raised: type[BaseException], calls: int
) -> None:
    instance = raised()

    async def interrupt(a: int, b: int) -> int:
        """Raise what the test says after a checkpoint, for the first call only."""
        if a == 0:
            raise instance
        await anyio.sleep(0.01)
        return a + b

    agent = make([tool_calls(calls, "interrupt"), "done"], tools=[interrupt])
    with pytest.raises(raised) as caught:
        await agent.execute("go")
    assert caught.value is instance
    answers = [m for m in agent.messages if isinstance(m, ToolMessage)]
    assert len(answers) == calls
    assert all(m.is_error and "cancelled" in m.content for m in answers)
    await check_usable(agent)


async def test_a_tool_raising_an_exception_is_a_tool_message() -> None:
    def broken(a: int, b: int) -> int:
        """Fail."""
        raise LookupError("no such row")

    agent = make([tool_calls(3, "broken"), "done"], tools=[broken], strict=True)
    result = await agent.execute("go")
    answers = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.content for m in answers] == [
        "Error: tool 'broken' raised LookupError: no such row"
    ] * 3
    await check_usable(agent)


class Opaque:
    """Nothing pydantic can serialize."""


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        pytest.param(Opaque(), "Opaque", id="object"),
        pytest.param(10**5000, "int", id="5000-digit-int"),
        pytest.param({"key": Opaque()}, "dict", id="dict-of-object"),
        pytest.param(lambda: None, "function", id="function"),
    ],
)
async def test_a_tool_returning_an_unrenderable_value_is_a_tool_error(
    value: object, type_name: str
) -> None:
    def returns(a: int, b: int) -> object:
        """Return the value."""
        return value

    agent = make([tool_calls(2, "returns"), "done"], tools=[returns], strict=True)
    errors: list[BaseException] = []
    agent.events.on(E.TOOL_CALL_ERROR, lambda ctx: errors.append(ctx.parameters["error"]))
    result = await agent.execute("go")
    answers = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert len(answers) == 2
    for answer in answers:
        assert answer.is_error
        assert answer.content.startswith(
            f"Error: tool 'returns' returned a value of type {type_name!r} that cannot be "
            "rendered as text"
        )
    assert len(errors) == 2
    assert all(type(error) is ToolError and error.__cause__ is not None for error in errors)
    await check_usable(agent)


async def test_circular_values_are_unrenderable_too() -> None:
    loop: list[Any] = []
    loop.append(loop)

    def returns(a: int, b: int) -> object:
        """Return a list that contains itself."""
        return loop

    agent = make([tool_calls(1, "returns"), "done"], tools=[returns], strict=True)
    result = await agent.execute("go")
    answer = result.messages[2]
    assert isinstance(answer, ToolMessage)
    assert answer.is_error
    assert "cannot be rendered as text" in answer.content
    await check_usable(agent)
