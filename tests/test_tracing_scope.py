"""What instrument() covers: one agent, every agent, until uninstrument(); 1,000 runs at once.

Also that agentrt without instrument() never imports OpenTelemetry.
"""

import gc
import subprocess
import sys
import textwrap
import weakref
from collections import defaultdict
from typing import Any, Literal

import anyio
import anyio.lowlevel
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agentrt import Agent, EventBus, ModelRequest, ScriptedModel, ToolCall
from agentrt.testing import cancellation_violations
from agentrt.tracing import instrument
from tests.tracing_support import Traces, attrs, parent_of, span_id, trace_id, traces_fixture

__all__ = ("traces_fixture",)  # used by name: the traces fixture


def add_then_answer(request: ModelRequest) -> ToolCall | str:
    """Each run: a call to add, then the answer."""
    if request.messages[-1].role == "user":
        return ToolCall(name="add", arguments={"a": 1, "b": 2})
    return "3"


def scripted_agent(name: str = "agent", **options: Any) -> Agent:
    return Agent(model=ScriptedModel(add_then_answer), tools=[add], name=name, **options)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# -- one agent, every agent ------------------------------------------------------------------


async def test_instrument_one_agent_traces_that_agent_only(traces: Traces) -> None:
    traced, other = scripted_agent("traced"), scripted_agent("other")
    handle = instrument(traced, tracer_provider=traces.provider)

    await traced.execute("go")
    await other.execute("go")
    handle.uninstrument()

    assert traces.names()[-1] == "invoke_agent traced"
    assert len(traces.spans) == 4


async def test_instrument_is_idempotent_and_uninstrument_removes_every_handler(
    traces: Traces,
) -> None:
    agent = scripted_agent()
    handlers = agent.events.handler_count()

    first = instrument(agent, tracer_provider=traces.provider)
    again = instrument(agent, tracer_provider=traces.provider)
    registered = agent.events.handler_count()
    first.uninstrument()
    first.uninstrument()
    await agent.execute("go")

    assert again is first
    assert registered > handlers
    assert agent.events.handler_count() == handlers
    assert not first.active
    assert traces.spans == ()


async def test_instrument_with_other_settings_replaces_the_previous_ones(traces: Traces) -> None:
    agent = scripted_agent()
    plain = instrument(agent, tracer_provider=traces.provider)
    with instrument(agent, tracer_provider=traces.provider, capture_content=True) as content:
        await agent.execute("go")

    assert content is not plain
    assert not plain.active
    assert "gen_ai.input.messages" in attrs(traces.one("invoke_agent agent"))
    assert agent.events.handler_count() == 0


async def test_instrument_every_agent_covers_agents_made_before_and_after(traces: Traces) -> None:
    before = scripted_agent("before")
    with instrument(tracer_provider=traces.provider) as everyone:
        after = scripted_agent("after")
        await before.execute("go")
        await after.execute("go")
        assert instrument(tracer_provider=traces.provider) is everyone
    untraced = scripted_agent("untraced")
    await untraced.execute("go")
    await before.execute("go")

    assert [span.name for span in traces.spans if span.parent is None] == [
        "invoke_agent before",
        "invoke_agent after",
    ]
    assert before.events.handler_count() == after.events.handler_count() == 0


async def test_an_agent_instrumented_on_its_own_keeps_its_settings_under_every_agent(
    traces: Traces,
) -> None:
    agent = scripted_agent()
    with (
        instrument(tracer_provider=traces.provider),
        instrument(agent, tracer_provider=traces.provider, capture_content=True),
    ):
        await agent.execute("go")

    assert "gen_ai.input.messages" in attrs(traces.one("invoke_agent agent"))


async def test_agents_sharing_a_bus_are_traced_each_in_its_own_trace(traces: Traces) -> None:
    bus = EventBus()
    first, second = scripted_agent("first", events=bus), scripted_agent("second", events=bus)
    instrument(first, tracer_provider=traces.provider)
    with instrument(second, tracer_provider=traces.provider) as second_handle:
        async with anyio.create_task_group() as group:
            group.start_soon(first.execute, "go")
            group.start_soon(second.execute, "go")
        second_handle.uninstrument()
        await second.execute("untraced")

    runs = {span.name: span for span in traces.spans if span.parent is None}
    assert sorted(runs) == ["invoke_agent first", "invoke_agent second"]
    by_trace = defaultdict(list)
    for span in traces.spans:
        by_trace[trace_id(span)].append(span.name)
    assert sorted(map(sorted, by_trace.values())) == [
        ["chat scripted", "chat scripted", "execute_tool add", f"invoke_agent {name}"]
        for name in ("first", "second")
    ]


def test_bad_arguments_are_type_errors_saying_what_was_wrong() -> None:
    with pytest.raises(TypeError, match="takes an Agent or None, got str"):
        instrument("agent")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="capture_content must be a bool, got str"):
        instrument(capture_content="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be an OpenTelemetry TracerProvider, got object"):
        instrument(tracer_provider=object())  # type: ignore[arg-type]


# -- concurrency -------------------------------------------------------------------------------


async def _slow_script(request: ModelRequest) -> ToolCall | str:
    await anyio.lowlevel.checkpoint()  # the runs interleave at every model call
    if len(request.messages) == 1:
        number = int(request.messages[0].content)
        return ToolCall(name="slow_add", arguments={"a": number, "b": number})
    return str(request.messages[-1].content)


async def slow_add(a: int, b: int) -> int:
    """Add, letting the other runs go on meanwhile."""
    await anyio.lowlevel.checkpoint()
    return a + b


def _by_trace(spans: tuple[ReadableSpan, ...]) -> dict[int, list[ReadableSpan]]:
    grouped: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        grouped[trace_id(span)].append(span)
    return grouped


async def test_1000_concurrent_runs_are_1000_traces_each_holding_only_its_own_spans(
    traces: Traces,
) -> None:
    agents = [
        Agent(model=ScriptedModel(_slow_script), tools=[slow_add], name=f"run-{i}")
        for i in range(1000)
    ]
    with instrument(tracer_provider=traces.provider, capture_content=True):
        async with anyio.create_task_group() as group:
            for i, agent in enumerate(agents):
                group.start_soon(agent.execute, str(i))

    grouped = _by_trace(traces.spans)
    assert len(grouped) == 1000
    for spans in grouped.values():
        names = sorted(span.name for span in spans)
        (run,) = [span for span in spans if span.parent is None]
        number = int(run.name.removeprefix("invoke_agent run-"))
        assert names == ["chat scripted", "chat scripted", "execute_tool slow_add", run.name]
        assert all(parent_of(span) == span_id(run) for span in spans if span is not run)
        (tool,) = [span for span in spans if span.name == "execute_tool slow_add"]
        assert attrs(tool)["gen_ai.tool.call.result"] == str(2 * number)
    assert traces.watch.open == set()


async def test_1000_runs_cancelled_mid_tool_leave_no_span_open(traces: Traces) -> None:
    in_tool = 0
    all_in = anyio.Event()

    async def block(a: int, b: int) -> int:
        """Wait until cancelled."""
        nonlocal in_tool
        in_tool += 1
        if in_tool == 1000:
            all_in.set()
        await anyio.sleep_forever()
        return a + b

    agents = [
        Agent(
            model=ScriptedModel([ToolCall(name="block", arguments={"a": 1, "b": 1}), "never"]),
            tools=[block],
        )
        for _ in range(1000)
    ]
    with instrument(tracer_provider=traces.provider):
        async with anyio.create_task_group() as group:
            for agent in agents:
                group.start_soon(agent.execute, "go")
            await all_in.wait()
            assert len(traces.watch.open) == 2000  # each run and its tool call
            group.cancel_scope.cancel()

    assert traces.watch.open == set()
    grouped = _by_trace(traces.spans)
    assert len(grouped) == 1000
    for spans in grouped.values():
        assert sorted(span.name for span in spans) == [
            "chat scripted",
            "execute_tool block",
            "invoke_agent agent",
        ]
        errors = [span.name for span in spans if span.status.status_code is StatusCode.ERROR]
        assert sorted(errors) == ["execute_tool block", "invoke_agent agent"]


# -- off means off -------------------------------------------------------------------------------


def test_without_instrument_agentrt_never_imports_opentelemetry() -> None:
    code = textwrap.dedent(
        """
        import sys
        import anyio
        import agentrt
        from agentrt import Agent, ScriptedModel, ToolCall

        def add(a: int, b: int) -> int:
            return a + b

        async def main() -> None:
            agent = Agent(
                model=ScriptedModel([ToolCall(name="add", arguments={"a": 1, "b": 2}), "3"] * 2),
                tools=[add],
            )
            result = await agent.execute("go", stream=True)
            assert result.output == "3", result.output
            async with agent.stream("again") as events:
                async for _ in events:
                    pass

        runs_module = sys.modules["agentrt._runs"]
        assert runs_module.RUN_OBSERVERS == []
        anyio.run(main)
        loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
        print(loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_importing_agentrt_tracing_imports_opentelemetry_api_only() -> None:
    code = (
        "import sys, agentrt.tracing; "
        "print(sorted({n.split('.')[1] for n in sys.modules if n.startswith('opentelemetry.')}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "sdk" not in done.stdout


# -- cancelled at every event boundary -------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True, "consumer"])
async def test_a_run_cancelled_at_any_event_leaves_no_span_open(
    traces: Traces, stream: bool | Literal["consumer"]
) -> None:
    def make() -> Agent:
        calls = [ToolCall(name="slow_add", arguments={"a": i, "b": i}) for i in range(3)]
        return Agent(model=ScriptedModel([calls, "done", "again"]), tools=[slow_add])

    with instrument(tracer_provider=traces.provider):
        violations = await cancellation_violations(make, "go", stream=stream)

    assert violations == []
    assert traces.watch.started > 100  # a run cancelled at each of its boundaries
    assert traces.watch.open == set()
    assert trace.get_current_span() is trace.INVALID_SPAN


# -- memory ------------------------------------------------------------------------------------


@pytest.mark.parametrize("every_agent", [False, True])
async def test_a_traced_agent_is_freed_without_the_cyclic_garbage_collector(
    traces: Traces, every_agent: bool
) -> None:
    agent = scripted_agent()
    handle = instrument(None if every_agent else agent, tracer_provider=traces.provider)
    await agent.execute("go")
    gone = weakref.ref(agent)
    gc.disable()
    try:
        del agent
        assert gone() is None
    finally:
        gc.enable()
        handle.uninstrument()
    assert len(traces.spans) == 4
