"""agentrt/tools.py: Tool and the tool decorator."""

import threading
from collections.abc import Awaitable
from typing import Any, Literal, cast

import anyio
import pytest

from agentrt import AgentEvents, EventContext, ToolCall
from agentrt.exceptions import (
    ToolArgumentsError,
    ToolDefinitionError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from agentrt.tools import (
    SYNC_TOOL_THREADS,
    Tool,
    current_tool_context,
    sync_tool_limiter,
    tool,
)
from tests.conftest import AgentFactory

# -- functions to wrap --------------------------------------------------------------------------


def get_weather(city: str, days: int = 3, units: str | None = None) -> str:
    """Get the weather
    for a city.

    A second paragraph that is not part of the description.

    Args:
        city (str): The city
            name, in English.
        days: How many
            days to forecast.
        units (str, optional): Metric or imperial.

    Returns:
        The forecast: as text.
    """
    return f"{city}:{days}:{units}"


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def no_docstring(x: int) -> int:
    return x


def mode_switch(mode: Literal["fast", "slow"] = "fast") -> str:
    """Pick a mode.

    Arguments:
        mode: How to run.

    Raises:
        ValueError: Never, in fact.
    """
    return mode


def _params(t: Tool[Any, Any]) -> dict[str, Any]:
    return cast("dict[str, Any]", t.parameters["properties"])


# -- name, description, parameter descriptions --------------------------------------------------


def test_name_is_the_function_name() -> None:
    assert Tool(get_weather).name == "get_weather"


def test_description_is_the_first_paragraph_joined_on_one_line() -> None:
    assert Tool(get_weather).description == "Get the weather for a city."


def test_parameter_descriptions_come_from_the_args_section() -> None:
    props = _params(Tool(get_weather))
    # `name (type): desc` form, with a multi-line description joined with spaces.
    assert props["city"]["description"] == "The city name, in English."
    assert props["days"]["description"] == "How many days to forecast."
    assert props["units"]["description"] == "Metric or imperial."


def test_arguments_header_and_other_sections() -> None:
    t = Tool(mode_switch)
    assert t.description == "Pick a mode."
    # "Arguments:" is an Args header; "Raises:" entries are not parameters.
    assert _params(t)["mode"]["description"] == "How to run."
    assert set(_params(t)) == {"mode"}


def test_no_docstring_gives_empty_description_and_no_parameter_descriptions() -> None:
    t = Tool(no_docstring)
    assert t.description == ""
    assert "description" not in _params(t)["x"]


def test_parameter_without_docs_has_no_description_key() -> None:
    def f(documented: int, undocumented: int) -> None:
        """Do.

        Args:
            documented: Has docs.
        """

    props = _params(Tool(f))
    assert props["documented"]["description"] == "Has docs."
    assert "description" not in props["undocumented"]


def test_description_ends_at_a_section_header_without_a_blank_line() -> None:
    def f(a: int) -> None:
        """Do a thing.
        Args:
            a: The a.
        """

    t = Tool(f)
    assert t.description == "Do a thing."
    assert _params(t)["a"]["description"] == "The a."


def test_description_ending_with_a_colon_is_still_the_description() -> None:
    def f(a: int) -> None:
        """Weather lookup:"""

    assert Tool(f).description == "Weather lookup:"


def test_a_description_line_ending_with_a_colon_is_text() -> None:
    def f(unit: str) -> None:
        """Convert a temperature. Supported units:
        celsius and fahrenheit.

        Args:
            unit: The unit.
        """

    t = Tool(f)
    assert t.description == "Convert a temperature. Supported units: celsius and fahrenheit."
    assert _params(t)["unit"]["description"] == "The unit."


def test_parameter_types_come_from_the_type_hints() -> None:
    props = _params(Tool(get_weather))
    assert props["city"]["type"] == "string"
    assert props["days"]["type"] == "integer"
    assert {"type": "null"} in props["units"]["anyOf"]
    assert _params(Tool(mode_switch))["mode"]["enum"] == ["fast", "slow"]


def test_unannotated_parameter_accepts_anything() -> None:
    def f(x, y: int = 1):  # type: ignore[no-untyped-def]
        return x

    t = Tool(f)
    assert "type" not in _params(t)["x"]
    assert t.validate({"x": [1, "a"]}) == {"x": [1, "a"], "y": 1}


# -- the schema ---------------------------------------------------------------------------------


def test_signature_is_in_the_openai_function_format() -> None:
    t = Tool(add)
    assert t.signature() == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "a": {"description": "The first addend.", "title": "A", "type": "integer"},
                    "b": {"description": "The second addend.", "title": "B", "type": "integer"},
                },
                "required": ["a", "b"],
            },
        },
    }


def test_schema_has_no_title_and_forbids_additional_properties() -> None:
    params = Tool(get_weather).parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert "title" not in params


def test_required_versus_defaulted_parameters() -> None:
    params = Tool(get_weather).parameters
    assert params["required"] == ["city"]
    assert params["properties"]["days"]["default"] == 3
    assert params["properties"]["units"]["default"] is None


def test_signature_uses_overridden_name_and_description() -> None:
    t = Tool(add, name="plus", description="Sum.")
    assert t.signature()["function"]["name"] == "plus"
    assert t.signature()["function"]["description"] == "Sum."
    assert t.signature()["function"]["parameters"] is t.parameters


def test_empty_description_override_is_kept() -> None:
    assert Tool(add, description="").description == ""


def test_overrides_do_not_leak_to_other_tools_of_the_same_function() -> None:
    first = Tool(add, name="plus", description="Sum.")
    second = Tool(add)
    assert (first.name, first.description) == ("plus", "Sum.")
    assert (second.name, second.description) == ("add", "Add two integers.")
    assert first.parameters == second.parameters


# -- the decorator ------------------------------------------------------------------------------


def test_bare_decorator_makes_a_tool_with_defaults() -> None:
    @tool
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hi {name}"

    assert isinstance(greet, Tool)
    assert greet.name == "greet"
    assert greet.description == "Greet someone."
    assert greet.timeout is None
    assert greet.requires_confirmation is False


def test_decorator_with_options() -> None:
    @tool(name="say-hi", description="Says hi.", timeout=2.5, requires_confirmation=True)
    def greet(name: str) -> str:
        """Ignored docstring."""
        return f"hi {name}"

    assert isinstance(greet, Tool)
    assert greet.name == "say-hi"
    assert greet.description == "Says hi."
    assert greet.timeout == 2.5
    assert greet.requires_confirmation is True


def test_decorator_with_empty_parentheses() -> None:
    @tool()
    def greet(name: str) -> str:
        return name

    assert greet.name == "greet"


def test_calling_a_tool_calls_the_function() -> None:
    @tool
    def multiply(a: int, b: int) -> int:
        return a * b

    assert multiply(3, 4) == 12
    assert multiply(a=2, b=5) == 10
    assert multiply.function(1, 1) == 1


async def test_calling_an_async_tool_returns_the_coroutine() -> None:
    @tool
    async def double(x: int) -> int:
        return x * 2

    assert await double(4) == 8


def test_tool_of() -> None:
    t = Tool(add)
    assert Tool.of(t) is t
    wrapped = Tool.of(add)
    assert isinstance(wrapped, Tool)
    assert wrapped.function is add


def test_repr() -> None:
    assert (
        repr(Tool(get_weather)) == "Tool(name='get_weather', parameters=['city', 'days', 'units'])"
    )
    assert repr(Tool(add, name="plus")) == "Tool(name='plus', parameters=['a', 'b'])"


# -- validate -----------------------------------------------------------------------------------


def test_validate_returns_keyword_arguments_with_defaults() -> None:
    assert Tool(get_weather).validate({"city": "Paris"}) == {
        "city": "Paris",
        "days": 3,
        "units": None,
    }


def test_validate_coerces_compatible_values() -> None:
    assert Tool(add).validate({"a": "3", "b": 4.0}) == {"a": 3, "b": 4}


def test_validate_missing_argument() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        Tool(add).validate({"a": 1})
    err = info.value
    assert err.tool_name == "add"
    assert err.reason == "b: Field required"
    assert err.arguments == '{"a": 1}'
    assert str(err) == "invalid arguments for tool 'add': b: Field required; got '{\"a\": 1}'"


def test_validate_extra_argument() -> None:
    with pytest.raises(ToolArgumentsError, match=r"c: Extra inputs are not permitted") as info:
        Tool(add).validate({"a": 1, "b": 2, "c": 3})
    assert "'add'" in str(info.value)


def test_validate_wrong_type_names_the_argument() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        Tool(add).validate({"a": 1, "b": "two"})
    assert info.value.reason.startswith("b: Input should be a valid integer")
    assert "a:" not in info.value.reason


def test_validate_reports_every_problem() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        Tool(get_weather).validate({"days": "x", "zz": 1})
    reason = info.value.reason
    assert "city: Field required" in reason
    assert "days: Input should be a valid integer" in reason
    assert "zz: Extra inputs are not permitted" in reason
    assert reason.count("; ") == 2


def test_validate_literal() -> None:
    t = Tool(mode_switch)
    assert t.validate({"mode": "slow"}) == {"mode": "slow"}
    with pytest.raises(ToolArgumentsError, match=r"mode: Input should be 'fast' or 'slow'"):
        t.validate({"mode": "medium"})


def test_validate_error_is_a_tool_error_with_the_validation_error_as_cause() -> None:
    with pytest.raises(ToolError) as info:
        Tool(add).validate({})
    assert isinstance(info.value, ToolArgumentsError)
    assert type(info.value.__cause__).__name__ == "ValidationError"


def test_validate_unserialisable_arguments_are_shown_with_repr() -> None:
    marker = object()
    with pytest.raises(ToolArgumentsError) as info:
        Tool(add).validate({"a": marker, "b": 1})
    assert info.value.arguments == repr({"a": marker, "b": 1})


# -- run ----------------------------------------------------------------------------------------


async def test_run_sync_function() -> None:
    assert await Tool(add).run({"a": 2, "b": "3"}) == 5


async def test_run_async_function() -> None:
    async def mul(a: int, b: int) -> int:
        await anyio.lowlevel.checkpoint()
        return a * b

    assert await Tool(mul).run({"a": 2, "b": 3}) == 6


async def test_run_sync_function_returning_an_awaitable() -> None:
    async def later(x: int) -> int:
        return x + 1

    def make(x: int) -> Awaitable[int]:
        return later(x)

    assert await Tool(make).run({"x": 1}) == 2


async def test_run_validates_before_calling() -> None:
    called: list[int] = []

    def f(x: int) -> None:
        called.append(x)

    with pytest.raises(ToolArgumentsError):
        await Tool(f).run({"x": "nope"})
    assert called == []


async def test_run_wraps_an_exception_in_tool_execution_error() -> None:
    def divide(a: int, b: int) -> float:
        return a / b

    with pytest.raises(ToolExecutionError) as info:
        await Tool(divide).run({"a": 1, "b": 0})
    err = info.value
    assert isinstance(err.error, ZeroDivisionError)
    assert err.__cause__ is err.error
    assert err.tool_name == "divide"
    assert str(err) == "tool 'divide' raised ZeroDivisionError: division by zero"


async def test_run_wraps_an_async_exception() -> None:
    async def boom() -> None:
        raise ValueError("bad value")

    with pytest.raises(ToolExecutionError, match=r"^tool 'boom' raised ValueError: bad value$"):
        await Tool(boom).run({})


async def test_run_wraps_an_exception_within_a_timeout() -> None:
    def boom() -> None:
        raise KeyError("k")

    with pytest.raises(ToolExecutionError) as info:
        await Tool(boom, timeout=10).run({})
    assert isinstance(info.value.__cause__, KeyError)


async def test_run_within_the_timeout_returns_the_result() -> None:
    async def quick() -> str:
        await anyio.lowlevel.checkpoint()
        return "done"

    assert await Tool(quick, timeout=10).run({}) == "done"


async def test_run_past_the_timeout_raises_tool_timeout_error() -> None:
    async def forever() -> None:
        await anyio.sleep_forever()

    with pytest.raises(ToolTimeoutError) as info:
        await Tool(forever, timeout=0.01).run({})
    err = info.value
    assert err.tool_name == "forever"
    assert err.timeout == 0.01
    assert str(err) == "tool 'forever' timed out after 0.01 s"


async def test_timeout_applies_to_awaitables_returned_by_sync_functions() -> None:
    def forever() -> Awaitable[None]:
        return anyio.sleep_forever()

    with pytest.raises(ToolTimeoutError):
        await Tool(forever, timeout=0.01).run({})


async def test_a_tool_raising_timeout_error_itself_is_an_execution_error() -> None:
    async def own_timeout() -> None:
        raise TimeoutError("upstream timed out")

    with pytest.raises(ToolExecutionError) as info:
        await Tool(own_timeout, timeout=30).run({})
    assert not isinstance(info.value, ToolTimeoutError)
    assert isinstance(info.value.error, TimeoutError)
    assert str(info.value) == "tool 'own_timeout' raised TimeoutError: upstream timed out"


async def test_cancellation_is_not_wrapped() -> None:
    async def forever() -> None:
        await anyio.sleep_forever()

    t = Tool(forever, timeout=30)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await t.run({})
        pytest.fail("the cancelled run returned")  # pragma: no cover
    assert scope.cancelled_caught


# -- plain functions run in worker threads -----------------------------------------------------


async def test_a_plain_def_runs_in_a_worker_thread_and_an_async_def_on_the_loop() -> None:
    def plain() -> int:
        return threading.get_ident()

    async def coroutine() -> int:
        return threading.get_ident()

    assert await Tool(plain).run({}) != threading.get_ident()
    assert await Tool(coroutine).run({}) == threading.get_ident()


async def test_a_plain_def_tool_sees_its_call_and_reports_output_from_its_thread(
    make_agent: AgentFactory,
) -> None:
    @tool
    def probe() -> str:
        """Report progress through the loop, then answer with the call's id."""
        context = current_tool_context()
        assert context is not None
        anyio.from_thread.run(context.emit, "half way")
        return f"{context.tool_call_id} in a worker thread"

    agent = make_agent([ToolCall(id="c1", name="probe"), "done"], tools=[probe])
    outputs: list[tuple[str, str]] = []

    def observe(ctx: EventContext[Any, Any]) -> None:
        outputs.append((ctx.parameters["tool_call"].id, ctx.parameters["output"]))

    agent.events.on(AgentEvents.TOOL_CALL_OUTPUT, observe)
    await agent.execute("go")
    assert outputs == [("c1", "half way")]
    assert agent.messages[2].content == "c1 in a worker thread"


async def test_a_plain_def_raising_keyboard_interrupt_in_its_thread_is_not_wrapped() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await Tool(interrupted).run({})


class _Blocker:
    """A plain function that blocks its thread until the test releases it.

    Bounded: a test whose code blocked the event loop could never release it.
    """

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.finished = threading.Event()

    def blocks(self) -> str:
        """Block until released."""
        self.entered.set()
        try:
            return "released" if self.released.wait(10) else "never released"
        finally:
            self.finished.set()

    async def wait_until_entered(self) -> None:
        assert await anyio.to_thread.run_sync(self.entered.wait, 10)

    async def release(self) -> None:
        self.released.set()
        assert await anyio.to_thread.run_sync(self.finished.wait, 10)


async def test_a_cancelled_run_does_not_wait_for_its_plain_def_tool(
    make_agent: AgentFactory,
) -> None:
    blocker = _Blocker()
    agent = make_agent([ToolCall(id="b", name="blocks"), "unused"], tools=[Tool(blocker.blocks)])
    async with anyio.create_task_group() as group:

        async def run() -> None:
            await agent.execute("go")

        group.start_soon(run)
        await blocker.wait_until_entered()
        group.cancel_scope.cancel()
    # The run ended, its call answered as cancelled, while the function still blocks.
    assert not blocker.finished.is_set()
    assert agent.messages[-1].content.startswith("Error: the tool call was cancelled")
    await blocker.release()


async def test_a_plain_def_past_its_timeout_times_out_while_its_thread_runs_on() -> None:
    blocker = _Blocker()
    with pytest.raises(ToolTimeoutError):
        await Tool(blocker.blocks, timeout=0.05).run({})
    assert blocker.entered.is_set()
    assert not blocker.finished.is_set()
    await blocker.release()


async def test_plain_def_tools_wait_for_a_token_of_the_event_loops_sync_tool_limiter() -> None:
    limiter = sync_tool_limiter()
    assert sync_tool_limiter() is limiter
    assert limiter.total_tokens == SYNC_TOOL_THREADS
    ran = threading.Event()

    def mark() -> str:
        ran.set()
        return "ran"

    results: list[str] = []

    async def call() -> None:
        results.append(await Tool(mark).run({}))

    limiter.total_tokens = 1
    try:
        async with anyio.create_task_group() as group:
            await limiter.acquire()  # the only token: the tool's call waits for it
            group.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert limiter.statistics().tasks_waiting == 1
            assert not ran.is_set()
            limiter.release()
    finally:
        limiter.total_tokens = SYNC_TOOL_THREADS
    assert results == ["ran"]


def test_the_sync_tool_limiter_belongs_to_a_running_event_loop() -> None:
    with pytest.raises(RuntimeError):
        sync_tool_limiter()


# -- definition errors --------------------------------------------------------------------------


def test_var_positional_is_rejected() -> None:
    def f(*args: int) -> None:
        pass

    with pytest.raises(ToolDefinitionError) as info:
        Tool(f)
    assert info.value.tool_name == "f"
    assert str(info.value) == (
        "cannot define tool 'f': parameter 'args' is *args or **kwargs; name each argument"
    )


def test_var_keyword_is_rejected() -> None:
    def f(a: int, **options: int) -> None:
        pass

    with pytest.raises(ToolDefinitionError, match=r"parameter 'options' is \*args or \*\*kwargs"):
        Tool(f)


def test_positional_only_is_rejected() -> None:
    def f(a: int, /, b: int) -> None:
        pass

    with pytest.raises(
        ToolDefinitionError, match=r"parameter 'a' is positional-only; tools take keywords"
    ):
        Tool(f)


def test_unresolvable_annotation_is_a_definition_error() -> None:
    def f(x: int) -> None:
        pass

    f.__annotations__["x"] = "NoSuchType"
    with pytest.raises(ToolDefinitionError) as info:
        Tool(f)
    assert str(info.value).startswith("cannot define tool 'f': cannot read its signature (")
    assert "NoSuchType" in str(info.value)
    assert isinstance(info.value.__cause__, NameError)


def test_definition_error_is_a_type_error() -> None:
    def f(*args: int) -> None:
        pass

    with pytest.raises(TypeError):
        Tool(f)


@pytest.mark.parametrize("bad", ["has space", "x" * 65, "dot.name", "slash/name", "é"])
def test_bad_names_are_rejected(bad: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Tool(add, name=bad)
    assert info.value.tool_name == bad
    assert "a tool name has 1 to 64 letters, digits, '_' or '-'" in str(info.value)


@pytest.mark.parametrize("good", ["x" * 64, "a", "get-weather_2", "ABC"])
def test_good_names_are_accepted(good: str) -> None:
    assert Tool(add, name=good).name == good


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ToolDefinitionError, match=r"'<lambda>'"):
        Tool(lambda: 1)
    assert Tool(lambda: 1, name="one").name == "one"


def test_callable_without_a_name_is_rejected() -> None:
    class NoName:
        def __call__(self) -> int:
            return 1

    with pytest.raises(ToolDefinitionError, match=r"it has no __name__; pass name=\.\.\."):
        Tool(NoName())


@pytest.mark.parametrize("bad", [0, -1, -0.5, True, False, "1", float("-inf")])
def test_bad_timeouts_are_rejected(bad: Any) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Tool(add, timeout=bad)
    assert str(info.value) == (
        f"cannot define tool 'add': timeout must be a positive number, got {bad!r}"
    )


@pytest.mark.parametrize("good", [1, 0.001, 30.5, None])
def test_good_timeouts_are_accepted(good: float | None) -> None:
    assert Tool(add, timeout=good).timeout == good


@pytest.mark.parametrize("bad", [3, "add", None])
def test_non_callable_is_a_type_error(bad: Any) -> None:
    with pytest.raises(TypeError, match=rf"^a tool wraps a function, got {type(bad).__name__}$"):
        Tool(bad)
