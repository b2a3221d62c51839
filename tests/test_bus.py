"""docs/events.md: the dispatch semantics, on the EventBus itself."""

import logging
from typing import Any

import anyio
import pytest

from agentrt import AgentEvents, EventBus, EventContext, EventSemantics
from agentrt.exceptions import InvalidEventNameError

Ctx = EventContext[dict[str, Any], Any]


class Boom(Exception):
    pass


# -- Requirement: Event Dispatch Semantics --------------------------------------------------


async def test_before_event_allows_interception() -> None:
    bus = EventBus()

    @bus.on(AgentEvents.TOOL_CALL_BEFORE)
    def change(ctx: Ctx) -> None:
        ctx.output = {"a": 2}

    ctx = await bus.apply(AgentEvents.TOOL_CALL_BEFORE, output={"a": 1}, tool_name="add")
    assert ctx.output == {"a": 2}
    assert ctx.semantics is EventSemantics.INTERCEPTABLE


async def test_after_event_ignores_output() -> None:
    bus = EventBus()
    seen: list[Any] = []

    @bus.on(AgentEvents.TOOL_CALL_AFTER)
    def set_output(ctx: Ctx) -> str:
        ctx.output = "ignored"
        return "also ignored"

    @bus.on(AgentEvents.TOOL_CALL_AFTER, priority=0)
    def later(ctx: Ctx) -> None:
        seen.append(ctx.output)

    ctx = await bus.do(AgentEvents.TOOL_CALL_AFTER, tool_name="add")
    assert ctx.output is None
    assert ctx.semantics is EventSemantics.SIGNAL
    # A signal handler's return value is not an output for the next one either.
    assert seen == ["ignored"]


# -- apply ------------------------------------------------------------------------------------


async def test_apply_without_handlers_returns_the_seed_output() -> None:
    bus = EventBus()
    ctx = await bus.apply("tool:call:before", output=41, tool_name="t")
    assert ctx.output == 41
    assert ctx.event is AgentEvents.TOOL_CALL_BEFORE
    assert ctx.parameters == {"tool_name": "t"}


async def test_apply_chains_output_through_handlers_in_priority_order() -> None:
    bus = EventBus()
    Steps = EventContext[dict[str, Any], list[str]]

    def low(ctx: Steps) -> list[str]:
        return [*(ctx.output or []), "low"]

    bus.on("x", low, priority=1)

    async def high(ctx: Steps) -> list[str]:
        return [*(ctx.output or []), "high"]

    bus.on("x", high, priority=300)

    def mid(ctx: Steps) -> None:
        ctx.output = [*(ctx.output or []), "mid"]

    bus.on("x", mid)
    seed: list[str] = []
    ctx = await bus.apply("x", output=seed)
    assert ctx.output == ["high", "mid", "low"]


async def test_returning_none_keeps_the_output() -> None:
    bus = EventBus()
    bus.on("x", lambda ctx: None)
    ctx = await bus.apply("x", output="kept")
    assert ctx.output == "kept"


async def test_ties_run_in_registration_order() -> None:
    bus = EventBus()
    order: list[str] = []
    for name in ("a", "b", "c"):
        bus.on("x", lambda ctx, name=name: order.append(name), priority=7)
    bus.on("x", lambda ctx: order.append("first"), priority=8)
    await bus.apply("x")
    await bus.do("x")
    assert order == ["first", "a", "b", "c", "first", "a", "b", "c"]


async def test_stop_ends_propagation() -> None:
    bus = EventBus()
    order: list[str] = []

    def stopper(ctx: Ctx) -> str:
        order.append("stopper")
        ctx.stop()
        return "final"

    bus.on("x", stopper, priority=200)
    bus.on("x", lambda ctx: order.append("never"))
    ctx = await bus.apply("x", output="seed")
    assert (ctx.output, ctx.stopped, order) == ("final", True, ["stopper"])
    order.clear()
    await bus.do("x")
    assert order == ["stopper"]


async def test_sync_handler_returning_an_awaitable_is_awaited() -> None:
    bus = EventBus()

    class AsyncCallable:
        async def __call__(self, ctx: Ctx) -> str:
            return "from awaitable"

    bus.on("x", AsyncCallable())
    assert (await bus.apply("x")).output == "from awaitable"
    calls: list[str] = []

    class AsyncObserver:
        async def __call__(self, ctx: Ctx) -> None:
            calls.append("observed")

    bus.on("y", AsyncObserver())
    await bus.do("y")
    assert calls == ["observed"]


async def test_parameters_are_read_only() -> None:
    bus = EventBus()

    def mutate(ctx: Ctx) -> None:
        ctx.parameters["tool_name"] = "other"

    bus.on("x", mutate)
    with pytest.raises(TypeError):
        await bus.apply("x", tool_name="t")


async def test_event_outside_the_enum_is_the_plain_string() -> None:
    bus = EventBus()
    seen: list[object] = []
    bus.on("vendor:thing", lambda ctx: seen.append(ctx.event))
    bus.on("message:append:before", lambda ctx: seen.append(ctx.event))
    await bus.do("vendor:thing")
    await bus.apply("message:append:before")
    assert seen == ["vendor:thing", AgentEvents.MESSAGE_APPEND_BEFORE]
    assert type(seen[0]) is str
    assert type(seen[1]) is AgentEvents


# -- predicates --------------------------------------------------------------------------


async def test_predicate_filters_handlers() -> None:
    bus = EventBus()
    calls: list[str] = []
    bus.on(
        "tool:call:before",
        lambda ctx: calls.append(ctx.parameters["tool_name"]),
        predicate=lambda ctx: ctx.parameters["tool_name"] == "search",
    )
    await bus.apply("tool:call:before", tool_name="other")
    await bus.apply("tool:call:before", tool_name="search")
    await bus.do("tool:call:before", tool_name="other")
    assert calls == ["search"]


async def test_predicate_sees_the_output_so_far() -> None:
    bus = EventBus()
    bus.on("x", lambda ctx: 2, priority=10)
    bus.on("x", lambda ctx: 3, priority=5, predicate=lambda ctx: ctx.output == 2)
    assert (await bus.apply("x", output=1)).output == 3


async def test_predicate_that_raises_in_apply_propagates() -> None:
    bus = EventBus()

    def bad(ctx: Ctx) -> bool:
        raise Boom("predicate")

    bus.on("x", lambda ctx: "never", predicate=bad)
    with pytest.raises(Boom, match="predicate"):
        await bus.apply("x")


async def test_predicate_that_raises_in_do_is_a_handler_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    calls: list[str] = []

    def bad(ctx: Ctx) -> bool:
        raise Boom("predicate")

    bus.on("x", lambda ctx: calls.append("guarded"), predicate=bad)
    bus.on("x", lambda ctx: calls.append("next"), priority=0)
    with caplog.at_level(logging.ERROR, logger="agentrt"):
        await bus.do("x")
    assert calls == ["next"]
    assert bus.handler_errors == 1
    assert "Boom: predicate" in caplog.text


# -- failures ------------------------------------------------------------------------------


async def test_apply_handler_exception_propagates_unchanged() -> None:
    bus = EventBus()
    error = Boom("control flow")
    after: list[str] = []

    async def raiser(ctx: Ctx) -> None:
        raise error

    bus.on("x", raiser)
    bus.on("x", lambda ctx: after.append("ran"), priority=0)
    with pytest.raises(Boom) as info:
        await bus.apply("x")
    assert info.value is error
    assert after == []
    assert bus.handler_errors == 0


async def test_do_handler_exception_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    calls: list[str] = []

    async def failing_observer(ctx: Ctx) -> None:
        raise Boom("observer broke")

    bus.on(AgentEvents.TOOL_CALL_AFTER, failing_observer)
    bus.on(AgentEvents.TOOL_CALL_AFTER, lambda ctx: calls.append("next"), priority=0)
    with caplog.at_level(logging.ERROR, logger="agentrt"):
        await bus.do(AgentEvents.TOOL_CALL_AFTER)
        await bus.do(AgentEvents.TOOL_CALL_AFTER)
    assert calls == ["next", "next"]
    assert bus.handler_errors == 2
    record = caplog.records[0]
    assert record.name == "agentrt"
    assert record.levelno == logging.ERROR
    assert "failing_observer" in record.getMessage()
    assert "'tool:call:after'" in record.getMessage()
    assert "Boom: observer broke" in record.getMessage()
    assert record.exc_info is not None


async def test_strict_mode_raises_signal_handler_failures() -> None:
    bus = EventBus(strict=True)

    def failing(ctx: Ctx) -> None:
        raise Boom("strict")

    bus.on("x", failing)
    with pytest.raises(Boom, match="strict"):
        await bus.do("x")
    assert bus.handler_errors == 0


async def test_cancellation_in_a_signal_handler_is_not_swallowed() -> None:
    import anyio

    bus = EventBus()
    reached: list[str] = []

    async def blocks(ctx: Ctx) -> None:
        await anyio.sleep_forever()

    bus.on("x", blocks)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await bus.do("x")
        reached.append("after do")  # pragma: no cover - cancellation must skip this
    assert reached == []
    assert scope.cancelled_caught
    assert bus.handler_errors == 0


# -- registration forms, removal, patterns ---------------------------------------------------


async def test_three_registration_forms() -> None:
    bus = EventBus()
    calls: list[str] = []

    def plain(ctx: Ctx) -> None:
        calls.append("plain")

    def via_decorator_call(ctx: Ctx) -> None:
        calls.append("decorator-call")

    assert bus.on("x", plain) is plain
    assert bus.on("x")(via_decorator_call) is via_decorator_call

    @bus.on("x", priority=50, predicate=lambda ctx: True)
    async def decorated(ctx: Ctx) -> None:
        calls.append("decorated")

    assert callable(decorated)
    await bus.do("x")
    assert calls == ["plain", "decorator-call", "decorated"]
    assert bus.handlers("x") == [plain, via_decorator_call, decorated]


async def test_off_removes_a_handler() -> None:
    bus = EventBus()
    calls: list[str] = []

    def handler(ctx: Ctx) -> None:
        calls.append("h")

    bus.on("x", handler)
    await bus.do("x")
    assert bus.off("x", handler) is True
    assert bus.off("x", handler) is False
    await bus.do("x")
    assert calls == ["h"]
    assert bus.handler_count() == 0


async def test_off_removes_the_latest_registration_of_a_handler_registered_twice() -> None:
    bus = EventBus()
    calls: list[int] = []

    def handler(ctx: Ctx) -> None:
        calls.append(1)

    bus.on("x", handler, priority=1)
    bus.on("x", handler, priority=2)
    assert bus.handler_count("x") == 2
    bus.off("x", handler)
    await bus.do("x")
    assert calls == [1]
    bus.clear()
    assert bus.handler_count() == 0


async def test_prefix_patterns_match_by_prefix() -> None:
    bus = EventBus()
    seen: list[tuple[str, str]] = []
    bus.on("message:*", lambda ctx: seen.append(("message:*", str(ctx.event))))
    bus.on("*", lambda ctx: seen.append(("*", str(ctx.event))), priority=500)
    bus.on("message:append:*", lambda ctx: seen.append(("append", str(ctx.event))), priority=1)
    await bus.do(AgentEvents.MESSAGE_APPEND_AFTER)
    await bus.do(AgentEvents.TOOL_CALL_AFTER)
    await bus.do("messages")  # shares the letters, not the "message:" prefix
    assert seen == [
        ("*", "message:append:after"),
        ("message:*", "message:append:after"),
        ("append", "message:append:after"),
        ("*", "tool:call:after"),
        ("*", "messages"),
    ]
    assert bus.off("message:*", bus.handlers("tool:call:after")[0]) is False


async def test_patterns_registered_after_a_dispatch_apply_to_later_ones() -> None:
    bus = EventBus()
    seen: list[str] = []
    await bus.do("tool:call:after")  # resolves (and caches) the empty handler list
    bus.on("tool:*", lambda ctx: seen.append("pattern"))
    await bus.do("tool:call:after")
    assert seen == ["pattern"]


@pytest.mark.parametrize("pattern", ["", "mes*sage", "message*", "*:append", "**"])
def test_malformed_names_are_rejected(pattern: str) -> None:
    bus = EventBus()
    with pytest.raises(InvalidEventNameError, match="invalid event name") as info:
        bus.on(pattern, lambda ctx: None)
    assert info.value.name == pattern
    assert isinstance(info.value, ValueError)


def test_registration_rejects_wrong_types() -> None:
    bus = EventBus()
    with pytest.raises(TypeError, match="an event name must be a string"):
        bus.on(42, lambda ctx: None)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="a handler must be callable"):
        bus.on("x", "not callable")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="a handler must be callable"):
        bus.on("x")(None)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="priority must be an int"):
        bus.on("x", lambda ctx: None, priority="high")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="priority must be an int"):
        bus.on("x", lambda ctx: None, priority=True)
    with pytest.raises(TypeError, match="predicate must be callable"):
        bus.on("x", lambda ctx: None, predicate=True)  # type: ignore[call-overload]
    assert bus.handler_count() == 0


async def test_dispatch_rejects_a_non_string_event() -> None:
    bus = EventBus()
    with pytest.raises(TypeError, match="an event name must be a string"):
        await bus.apply(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="an event name must be a string"):
        await bus.do(3)  # type: ignore[arg-type]


# -- changes during a dispatch -----------------------------------------------------------------


async def test_registering_during_dispatch_does_not_change_that_dispatch() -> None:
    bus = EventBus()
    calls: list[str] = []

    def late(ctx: Ctx) -> None:
        calls.append("late")

    def registers(ctx: Ctx) -> None:
        calls.append("registers")
        bus.on("x", late, priority=0)
        bus.on("x", late, priority=1000)

    bus.on("x", registers)
    await bus.do("x")
    assert calls == ["registers"]
    calls.clear()
    await bus.do("x")
    assert calls == ["late", "registers", "late"]


async def test_removing_during_dispatch_does_not_change_that_dispatch() -> None:
    bus = EventBus()
    calls: list[str] = []

    def second(ctx: Ctx) -> None:
        calls.append("second")

    def removes(ctx: Ctx) -> None:
        calls.append("removes")
        bus.off("x", second)
        bus.off("x", removes)

    bus.on("x", removes, priority=200)
    bus.on("x", second)
    await bus.apply("x")
    assert calls == ["removes", "second"]
    calls.clear()
    await bus.apply("x")
    assert calls == []


def test_context_repr_and_bus_repr_name_their_state() -> None:
    ctx: EventContext[dict[str, Any], int] = EventContext("x", {}, 1)
    assert repr(ctx) == "EventContext(event='x', semantics=INTERCEPTABLE, output=1, stopped=False)"
    assert repr(EventBus(strict=True)) == "<EventBus handlers=0 strict=True>"


def test_has_handlers_follows_registrations_and_patterns() -> None:
    bus = EventBus()

    def handler(ctx: Ctx) -> None:
        return None

    assert not bus.has_handlers(AgentEvents.TOOL_CALL_BEFORE)
    bus.on(AgentEvents.TOOL_CALL_BEFORE, handler)
    assert bus.has_handlers(AgentEvents.TOOL_CALL_BEFORE)
    assert bus.has_handlers("tool:call:before")  # the member and its string alike
    assert not bus.has_handlers(AgentEvents.TOOL_CALL_AFTER)
    bus.on("tool:*", handler)
    assert bus.has_handlers(AgentEvents.TOOL_CALL_AFTER)
    assert bus.has_handlers("tool:anything")
    assert not bus.has_handlers(AgentEvents.LLM_STREAM_CHUNK)
    assert bus.off("tool:*", handler)
    assert not bus.has_handlers(AgentEvents.TOOL_CALL_AFTER)
    assert bus.has_handlers(AgentEvents.TOOL_CALL_BEFORE)
    bus.on("*", handler)
    assert bus.has_handlers("any:thing")
    bus.clear()
    assert not bus.has_handlers("any:thing")
    assert not bus.has_handlers(AgentEvents.TOOL_CALL_BEFORE)


def test_a_bus_with_pattern_handlers_goes_with_its_last_reference() -> None:
    """No reference cycle: the bus (and the handlers it holds) is freed at once."""
    import gc
    import weakref

    bus = EventBus()
    bus.on("*", lambda ctx: None)
    assert bus.has_handlers("any:thing")
    gone = weakref.ref(bus)
    gc.disable()
    try:
        del bus
        assert gone() is None
    finally:
        gc.enable()


# -- signal_now: do() without a coroutine for a sole plain handler -----------------------------


async def test_signal_now_calls_a_sole_plain_handler_at_once() -> None:
    bus = EventBus()
    seen: list[Ctx] = []

    @bus.on(AgentEvents.LLM_STREAM_CHUNK)
    def observe(ctx: Ctx) -> str:
        seen.append(ctx)
        ctx.output = "ignored"
        return "also ignored"

    assert bus.signal_now(AgentEvents.LLM_STREAM_CHUNK, chunk="Hel") is None
    [ctx] = seen  # it ran already: nothing was awaited
    assert ctx.event is AgentEvents.LLM_STREAM_CHUNK
    assert ctx.semantics is EventSemantics.SIGNAL
    assert dict(ctx.parameters) == {"chunk": "Hel"}
    assert ctx.output is None


async def test_signal_now_returns_what_finishes_an_awaitable_result() -> None:
    bus = EventBus()
    order: list[str] = []

    async def later() -> None:
        order.append("awaited")

    @bus.on("x")
    def observe(ctx: Ctx) -> Any:
        order.append("called")
        return later()

    pending = bus.signal_now("x")
    assert order == ["called"]
    assert pending is not None
    await pending
    assert order == ["called", "awaited"]


async def test_signal_now_contains_failures_as_do_does(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()

    async def fails_later() -> None:
        raise Boom("later")

    handlers: list[Any] = [lambda ctx: 1 / 0, lambda ctx: fails_later()]
    with caplog.at_level(logging.ERROR, logger="agentrt"):
        for handler in handlers:
            bus.clear()
            bus.on("x", handler)
            pending = bus.signal_now("x")
            if pending is not None:
                await pending
    assert bus.handler_errors == 2
    assert "ZeroDivisionError" in caplog.records[0].getMessage()
    assert "Boom: later" in caplog.records[1].getMessage()

    strict = EventBus(strict=True)
    strict.on("x", lambda ctx: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        strict.signal_now("x")


async def test_signal_now_bounds_an_awaited_result_by_the_handler_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus(handler_timeout=0.01)
    bus.on("x", lambda ctx: anyio.sleep_forever())
    pending = bus.signal_now("x")
    assert pending is not None
    with caplog.at_level(logging.ERROR, logger="agentrt"):
        await pending
    assert bus.handler_errors == 1
    assert "HandlerTimeoutError" in caplog.text


async def test_signal_now_is_do_for_any_other_set_of_handlers() -> None:
    order: list[str] = []

    async def first(ctx: Ctx) -> None:
        order.append("async")

    def second(ctx: Ctx) -> None:
        order.append("plain")

    cases: list[list[tuple[Any, dict[str, Any]]]] = [
        [],
        [(first, {})],  # a sole async handler
        [(second, {"predicate": lambda ctx: True})],  # a sole handler with a predicate
        [(first, {"priority": 200}), (second, {})],  # two
    ]
    expected = [[], ["async"], ["plain"], ["async", "plain"]]
    for registrations, wanted in zip(cases, expected, strict=True):
        bus = EventBus()
        for handler, options in registrations:
            bus.on("x", handler, **options)
        order.clear()
        pending = bus.signal_now("x")
        assert pending is not None  # the do() coroutine
        await pending
        assert order == wanted


async def test_signal_now_follows_registrations_made_after_it() -> None:
    bus = EventBus()
    order: list[str] = []
    bus.on("x", lambda ctx: order.append("one"))
    assert bus.signal_now("x") is None
    bus.on("x", lambda ctx: order.append("two"))
    pending = bus.signal_now("x")  # two handlers now: do()
    assert pending is not None
    await pending
    assert order == ["one", "one", "two"]
