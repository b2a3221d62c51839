"""The execute loop's tool calls (docs/events.md) and the rest of the loop, on ScriptedModel."""

from typing import Any

import anyio
import pytest

from agentrt import (
    Agent,
    AgentEvents,
    AgentState,
    EventContext,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolResponse,
    UserMessage,
)
from agentrt.events import (
    ToolCallErrorParams,
)
from agentrt.testing import EventRecorder
from tests.conftest import AgentFactory, add

E = AgentEvents
ADD = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})


# -- Requirement: TOOL_CALL_ERROR Interceptable ---------------------------------------------


async def test_tool_error_with_fallback(make_agent: AgentFactory) -> None:
    zero = ToolCall(id="call_z", name="divide", arguments={"a": 1, "b": 0})
    agent = make_agent([zero, "handled"])
    errors: list[str] = []

    @agent.hooks.on_tool_call_error
    def fallback(ctx: EventContext[ToolCallErrorParams, ToolResponse]) -> ToolResponse:
        errors.append(str(ctx.parameters["error"]))
        return ToolResponse("infinity")

    await agent.execute("1/0")
    assert errors == ["tool 'divide' raised ZeroDivisionError: float division by zero"]
    assert agent.messages[2] == ToolMessage(
        content="infinity", tool_call_id="call_z", name="divide"
    )


async def test_tool_error_propagates(make_agent: AgentFactory) -> None:
    zero = ToolCall(id="call_z", name="divide", arguments={"a": 1, "b": 0})
    agent = make_agent([zero, "handled"])
    result = await agent.execute("1/0")
    assert agent.messages[2] == ToolMessage(
        content="Error: tool 'divide' raised ZeroDivisionError: float division by zero",
        tool_call_id="call_z",
        name="divide",
        is_error=True,
    )
    # The model saw the error and the run went on.
    assert result.output == "handled"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            ToolCall(id="c", name="add", arguments='{"a": 1, "b": '),
            "Error: invalid arguments for tool 'add': not valid JSON",
        ),
        (
            ToolCall(id="c", name="add", arguments="[1, 2]"),
            "Error: invalid arguments for tool 'add': a JSON list, not an object",
        ),
        (
            ToolCall(id="c", name="add", arguments={"a": "one", "b": 2}),
            "Error: invalid arguments for tool 'add': a: Input should be a valid integer",
        ),
        (
            ToolCall(id="c", name="add", arguments={"a": 1}),
            "Error: invalid arguments for tool 'add': b: Field required",
        ),
        (
            ToolCall(id="c", name="add", arguments={"a": 1, "b": 2, "c": 3}),
            "Error: invalid arguments for tool 'add': c: Extra inputs are not permitted",
        ),
        (
            ToolCall(id="c", name="subtract", arguments={}),
            "Error: unknown tool 'subtract'; the tools offered are: 'add', 'divide'",
        ),
    ],
)
async def test_bad_tool_calls_become_tool_messages(
    make_agent: AgentFactory, call: ToolCall, expected: str
) -> None:
    agent = make_agent([call, "recovered"])
    errors: list[str] = []
    agent.hooks.on_tool_call_error(
        lambda ctx: errors.append(type(ctx.parameters["error"]).__name__)
    )
    result = await agent.execute("go")
    message = agent.messages[2]
    assert isinstance(message, ToolMessage)
    assert message.content.startswith(expected), message.content
    assert message.is_error
    assert result.output == "recovered"
    assert len(errors) == 1


async def test_tool_timeout_becomes_a_tool_message(make_agent: AgentFactory) -> None:
    from agentrt import tool

    @tool(timeout=0.01)
    async def slow() -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    agent = make_agent([ToolCall(id="s", name="slow"), "ok"], tools=[slow])
    await agent.execute("go")
    assert agent.messages[2].content == "Error: tool 'slow' timed out after 0.01 s"


async def test_tool_call_before_can_answer_without_running(make_agent: AgentFactory) -> None:
    ran: list[str] = []

    def side_effect() -> str:
        ran.append("ran")  # pragma: no cover
        return "ran"  # pragma: no cover

    agent = make_agent([ToolCall(id="x", name="side_effect"), "ok"], tools=[side_effect])
    agent.hooks.on_tool_call_before(lambda ctx: ToolResponse("denied by policy", is_error=True))
    await agent.execute("go")
    assert ran == []
    assert agent.messages[2] == ToolMessage(
        content="denied by policy", tool_call_id="x", name="side_effect", is_error=True
    )


async def test_parallel_tool_calls_run_concurrently_and_append_in_model_order(
    make_agent: AgentFactory,
) -> None:
    order: list[str] = []
    first_started = anyio.Event()
    second_done = anyio.Event()

    async def slow_first() -> str:
        order.append("first started")
        first_started.set()
        await second_done.wait()  # finishes only once the second call has run
        order.append("first done")
        return "first"

    async def second() -> str:
        await first_started.wait()
        order.append("second done")
        second_done.set()
        return "second"

    calls = [ToolCall(id="1", name="slow_first"), ToolCall(id="2", name="second")]
    agent = make_agent([calls, "both"], tools=[slow_first, second])
    await agent.execute("go")
    assert order == ["first started", "second done", "first done"]
    assert [(m.content, getattr(m, "tool_call_id", None)) for m in agent.messages[2:4]] == [
        ("first", "1"),
        ("second", "2"),
    ]


async def test_tool_return_values_become_text(make_agent: AgentFactory) -> None:
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int
        y: int

    def as_dict() -> dict[str, int]:
        return {"a": 1}

    def as_list() -> list[int]:
        return [1, 2]

    def as_model() -> Point:
        return Point(x=1, y=2)

    def as_float() -> float:
        return 1.5

    calls = [ToolCall(id=n, name=n) for n in ("as_dict", "as_list", "as_model", "as_float")]
    agent = make_agent([calls, "ok"], tools=[as_dict, as_list, as_model, as_float])
    await agent.execute("go")
    assert [m.content for m in agent.messages[2:6]] == ['{"a":1}', "[1,2]", '{"x":1,"y":2}', "1.5"]


# -- the rest of the loop -------------------------------------------------------------------


async def test_run_result(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "The answer is 3."], instructions="You add numbers.")
    result = await agent.execute("What is 1 + 2?")
    assert result.output == "The answer is 3."
    assert result.iterations == 2
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.usage.requests == 2
    assert result.usage.input_tokens > 0
    assert agent.messages[0] == SystemMessage(content="You add numbers.")
    assert agent.messages[1:] == tuple(result.messages)


async def test_execute_without_prompt_continues_the_conversation(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(["continued"])
    await agent.append(UserMessage(content="already here"))
    result = await agent.execute()
    assert [m.content for m in result.messages] == ["continued"]


async def test_concurrent_executes_are_serialized(make_agent: AgentFactory) -> None:
    gate = anyio.Event()
    entered: list[str] = []

    async def respond(request: ModelRequest) -> str:
        prompt = request.messages[-1].content
        entered.append(f"model {prompt}")
        if prompt == "first":
            await gate.wait()
        return f"answer {prompt}"

    agent = make_agent(ScriptedModel(respond))
    results: dict[str, str] = {}

    async def run(prompt: str) -> None:
        results[prompt] = (await agent.execute(prompt)).output

    async with anyio.create_task_group() as group:
        group.start_soon(run, "first")
        await anyio.wait_all_tasks_blocked()
        group.start_soon(run, "second")
        await anyio.wait_all_tasks_blocked()
        assert entered == ["model first"]  # the second run waits for the first
        gate.set()
    assert entered == ["model first", "model second"]
    assert results == {"first": "answer first", "second": "answer second"}
    assert [m.content for m in agent.messages] == [
        "first",
        "answer first",
        "second",
        "answer second",
    ]


async def test_state_changes_are_announced(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "done"])
    states: list[tuple[str, str]] = []
    agent.hooks.on_agent_state_change(
        lambda ctx: states.append((ctx.parameters["previous"], ctx.parameters["state"]))
    )
    await agent.execute("go")
    assert states == [
        ("idle", "running"),
        ("running", "calling_model"),
        ("calling_model", "running_tools"),
        ("running_tools", "calling_model"),
        ("calling_model", "idle"),
    ]


async def test_agent_init_after_is_dispatched_once(make_agent: AgentFactory) -> None:
    agent = make_agent(["a", "b"])
    count: list[int] = []
    agent.hooks.on_agent_init_after(lambda ctx: count.append(1))
    await agent.execute("one")
    await agent.execute("two")
    assert count == [1]


async def test_modes_change_instructions_and_tools(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    def review() -> str:
        return "looks good"

    model = ScriptedModel([ToolCall(id="r", name="review"), "reviewed", "plain"])
    agent = make_agent(model, instructions="Base.", tools=[add])
    agent.events.on("mode:*", recorder)
    async with agent.mode("review", instructions="Review carefully.", tools=[review]):
        assert agent.modes == ("review",)
        assert [t.name for t in agent.tools] == ["add", "review"]
        await agent.execute("check")
    assert list(agent.modes) == []
    await agent.execute("after")
    assert model.requests[0].messages[0].content == "Base.\n\nReview carefully."
    assert [t["function"]["name"] for t in model.requests[0].tools] == ["add", "review"]
    assert model.requests[2].messages[0].content == "Base."
    assert [t["function"]["name"] for t in model.requests[2].tools] == ["add"]
    assert [(r.event, r.parameters["stack"]) for r in recorder.events] == [
        (E.MODE_ENTERING, ()),
        (E.MODE_ENTERED, ("review",)),
        (E.MODE_EXITING, ("review",)),
        (E.MODE_EXITED, ()),
    ]


async def test_tools_provide_filters_the_offered_tools(make_agent: AgentFactory) -> None:
    model = ScriptedModel([ToolCall(id="d", name="divide", arguments={"a": 1, "b": 1}), "ok"])
    agent = make_agent(model)
    agent.hooks.on_tools_provide(lambda ctx: [t for t in ctx.output if t.name == "add"])
    signatures: list[str] = []

    @agent.hooks.on_tools_generate_signature
    def describe(ctx: EventContext[Any, dict[str, Any]]) -> dict[str, Any]:
        signatures.append(ctx.parameters["tool"].name)
        assert ctx.output is not None
        schema = dict(ctx.output)
        schema["function"] = {**schema["function"], "description": "Adds."}
        return schema

    await agent.execute("go")
    assert signatures == ["add", "add"]
    assert model.requests[0].tools[0]["function"]["description"] == "Adds."
    # A tool withheld from the model is unknown when the model calls it anyway.
    assert agent.messages[2].content.startswith("Error: unknown tool 'divide'")


async def test_message_render_before_changes_what_the_model_sees(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(["ok"])
    agent = make_agent(model, instructions="Secret.")
    agent.hooks.on_message_render_before(lambda ctx: ctx.output[1:])
    await agent.execute("hi")
    assert [m.role for m in model.requests[0].messages] == ["user"]
    assert agent.messages[0].role == "system"


def test_agent_can_be_built_outside_a_running_loop() -> None:
    agent = Agent(model=ScriptedModel(["built outside"]))

    async def main() -> str:
        result = await agent.execute("hi")
        await agent.close()
        return result.output

    assert anyio.run(main) == "built outside"


async def test_reset_keeps_the_system_message(make_agent: AgentFactory) -> None:
    agent = make_agent(["a", "b"], instructions="Sys.")
    await agent.execute("one")
    await agent.reset()
    assert agent.messages == (SystemMessage(content="Sys."),)
    result = await agent.execute("two")
    assert [m.content for m in agent.messages] == ["Sys.", "two", "b"]
    assert result.output == "b"


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"model": object()}, TypeError, "model must provide complete"),
        ({"name": ""}, ValueError, "non-empty string"),
        ({"max_iterations": 0}, ValueError, "max_iterations must be at least 1"),
        ({"max_iterations": 2.5}, TypeError, "max_iterations must be an int"),
        ({"max_retries": -1}, ValueError, "max_retries must be at least 0"),
        ({"instructions": 3}, TypeError, "instructions must be a string"),
        ({"tools": "add"}, TypeError, "tools must be a list"),
        ({"context_providers": {"not valid": str}}, ValueError, "identifier"),
        ({"context_providers": {"x": "value"}}, TypeError, "must be callable"),
    ],
)
def test_agent_rejects_bad_arguments(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    options.setdefault("model", ScriptedModel([]))
    with pytest.raises(error, match=match):
        Agent(**options)


async def test_execute_rejects_bad_arguments(make_agent: AgentFactory) -> None:
    agent = make_agent(["x"])
    with pytest.raises(TypeError, match="prompt must be a string"):
        await agent.execute(42)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="max_iterations must be at least 1"):
        await agent.execute("x", max_iterations=0)
    assert agent.messages == ()


def test_repr_names_the_agent() -> None:
    agent = Agent(model=ScriptedModel([]), name="bob")
    assert repr(agent) == "<Agent 'bob' model='scripted' tools=0 messages=0 state=idle>"


async def test_cancelled_tool_calls_still_get_their_tool_messages(
    make_agent: AgentFactory,
) -> None:
    started = anyio.Event()

    async def hangs() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    calls = [
        ToolCall(id="a", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="h", name="hangs"),
    ]
    # One call at a time: `add` (a plain def, in a worker thread) has answered when
    # `hangs` starts.
    agent = make_agent([calls, "unused"], tools=[add, hangs], max_concurrent_tools=1)
    async with anyio.create_task_group() as group:

        async def run() -> None:
            await agent.execute("go")

        group.start_soon(run)
        await started.wait()
        group.cancel_scope.cancel()
    # Every tool call of the assistant message has its answer: nothing dangles.
    assert [(m.role, getattr(m, "tool_call_id", None)) for m in agent.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "a"),
        ("tool", "h"),
    ]
    assert agent.messages[2].content == "3"
    assert agent.messages[3].content.startswith("Error: the tool call was cancelled")
    assert agent.state is AgentState.IDLE


async def test_a_failed_stream_is_closed_at_once(make_agent: AgentFactory) -> None:
    from collections.abc import AsyncIterator

    from agentrt import ModelRequest, StreamChunk, TextDelta, ToolCallDelta

    closed: list[str] = []

    class BrokenStream:
        name = "broken"

        async def complete(self, request: ModelRequest) -> ModelResponse:
            raise NotImplementedError  # pragma: no cover

        async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
            try:
                yield TextDelta("partial")
                yield ToolCallDelta(index=3, arguments="{}")  # never opened: protocol error
                yield TextDelta("never")  # pragma: no cover
            finally:
                closed.append("closed")

    agent = Agent(model=BrokenStream(), strict=True)
    from agentrt import StreamProtocolError

    with pytest.raises(StreamProtocolError, match="index 3"):
        await agent.execute("go", stream=True)
    assert closed == ["closed"]
    assert [m.content for m in agent.messages] == ["go"]
    await agent.close()
