"""agentrt/toolsets.py: toolsets an agent takes next to its functions (the MCP servers' seam).

The toolset here is a plain implementation of the protocol (a list of function tools
that a test can change); agentrt.mcp's servers are tested in tests/test_mcp.py and,
as real processes, in tests/mcp/.
"""

import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from agentrt.agent import Agent
from agentrt.messages import ToolCall
from agentrt.models.scripted import ScriptedModel
from agentrt.stream.events import StreamEvent, ToolCallEvent, ToolCallResponseEvent
from agentrt.testing import EventRecorder
from agentrt.tools import Tool, tool
from agentrt.toolsets import ToolNameConflictError, Toolset
from tests.conftest import add


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    return a - b


class ListToolset:
    """A toolset of function tools whose list a test can change; it logs its life."""

    def __init__(self, name: str, *functions: Any, fail_opens: int = 0) -> None:
        self._name = name
        self._tools = tuple(Tool.of(function) for function in functions)
        self._version = 0
        self.fail_opens = fail_opens
        self.log: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def tools(self) -> Sequence[Tool[Any, Any]]:
        return self._tools

    @property
    def version(self) -> int:
        return self._version

    def replace(self, *functions: Any) -> None:
        self._tools = tuple(Tool.of(function) for function in functions)
        self._version += 1

    async def open(self) -> None:
        if self.fail_opens:
            self.fail_opens -= 1
            self.log.append("open failed")
            raise OSError(f"{self._name} did not start")
        self.log.append("open")

    async def close(self) -> None:
        self.log.append("close")


def offered(model: ScriptedModel, request: int) -> list[str]:
    return [signature["function"]["name"] for signature in model.requests[request].tools]


def test_a_toolset_is_told_from_a_function_by_the_protocol() -> None:
    assert isinstance(ListToolset("math"), Toolset)
    assert not isinstance(add, Toolset)


async def test_toolsets_open_when_the_agent_starts_and_close_with_it() -> None:
    math = ListToolset("math", multiply)
    model = ScriptedModel(
        [ToolCall(id="c1", name="multiply", arguments={"a": 6, "b": 7}), "42", "still 42"]
    )
    agent = Agent(model=model, tools=[add, math])
    assert [t.name for t in agent.tools] == ["add"]  # before it starts: the functions
    async with agent:
        assert math.log == ["open"]
        assert [t.name for t in agent.tools] == ["add", "multiply"]
        result = await agent.execute("6 x 7?")
        await agent.execute("again")
    assert math.log == ["open", "close"]
    assert offered(model, 0) == ["add", "multiply"]
    assert [m.content for m in result.messages[2:]] == ["42", "42"]


async def test_a_toolset_opens_on_the_first_run_when_the_agent_was_not_entered() -> None:
    math = ListToolset("math", multiply)
    agent = Agent(model=ScriptedModel(["one", "two"]), tools=[math])
    await agent.execute("first")
    await agent.execute("second")
    assert math.log == ["open"]
    await agent.close()
    assert math.log == ["open", "close"]


async def test_closing_an_agent_that_never_ran_opens_no_toolset() -> None:
    math = ListToolset("math", multiply)
    agent = Agent(model=ScriptedModel([]), tools=[math])
    await agent.close()
    assert math.log == []


async def test_a_name_given_by_a_function_and_a_toolset_is_an_error_at_start() -> None:
    clashing = ListToolset("calculator", add)
    agent = Agent(model=ScriptedModel([]), tools=[add, clashing])
    with pytest.raises(ToolNameConflictError) as caught:
        await agent.__aenter__()
    assert caught.value.tool_name == "add"
    assert caught.value.sources == ("the function tools", "toolset 'calculator'")
    assert "give a toolset a prefix" in str(caught.value)
    assert clashing.log == ["open", "close"]  # closed again: nothing is left running
    await agent.close()


async def test_a_name_given_by_two_toolsets_is_an_error_and_both_are_closed_again() -> None:
    first, second = ListToolset("first", multiply), ListToolset("second", multiply)
    agent = Agent(model=ScriptedModel(["x"]), tools=[first, second])
    with pytest.raises(ToolNameConflictError) as caught:
        await agent.execute("hi")
    assert caught.value.sources == ("toolset 'first'", "toolset 'second'")
    assert (first.log, second.log) == (["open", "close"], ["open", "close"])
    await agent.close()


async def test_a_toolset_that_fails_to_open_fails_the_run_and_the_next_run_opens_it() -> None:
    flaky = ListToolset("flaky", multiply, fail_opens=1)
    steady = ListToolset("steady", subtract)
    model = ScriptedModel(["answer"])
    agent = Agent(model=model, tools=[steady, flaky])
    with pytest.raises(OSError, match="flaky did not start"):
        await agent.execute("first")
    assert steady.log == ["open", "close"]
    result = await agent.execute("second")
    assert result.output == "answer"
    assert (steady.log, flaky.log) == (["open", "close", "open"], ["open failed", "open"])
    assert offered(model, 0) == ["subtract", "multiply"]
    await agent.close()


async def test_the_model_is_offered_a_toolsets_new_tools_once_its_version_moves() -> None:
    math = ListToolset("math", multiply)

    def script(request: Any) -> Any:
        if len(model.requests) == 1:
            math.replace(multiply, subtract)  # the toolset changed during the run
            return ToolCall(id="c1", name="multiply", arguments={"a": 2, "b": 3})
        return "done"

    model = ScriptedModel(script)
    async with Agent(model=model, tools=[math]) as agent:
        await agent.execute("go")
        assert agent.tool_table()["subtract"].name == "subtract"
    assert offered(model, 0) == ["multiply"]
    assert offered(model, 1) == ["multiply", "subtract"]


async def test_a_toolsets_tool_call_goes_through_the_tool_events(recorder: EventRecorder) -> None:
    math = ListToolset("math", multiply)
    model = ScriptedModel([ToolCall(id="c1", name="multiply", arguments={"a": 2, "b": 5}), "10"])
    async with Agent(model=model, tools=[math]) as agent:
        agent.events.on("tool:*", recorder)
        await agent.execute("2 x 5?")
    assert recorder.names() == ["tool:call:before", "tool:call:after"]
    assert recorder.of("tool:call:after")[0].parameters["response"].content == "10"


async def test_a_tools_annotations_reach_the_tool_definition_of_its_stream_events() -> None:
    @tool(annotations={"readOnlyHint": True, "title": "Add"})
    def add_numbers(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel(
        [
            [
                ToolCall(id="c1", name="add_numbers", arguments={"a": 1, "b": 2}),
                ToolCall(id="c2", name="multiply", arguments={"a": 1, "b": 2}),
            ],
            "3 and 2",
        ]
    )
    events: list[StreamEvent] = []
    agent = Agent(model=model, tools=[add_numbers, multiply])
    async with agent, agent.stream("sums") as stream:
        events.extend([event async for event in stream])
    tool_events = [e for e in events if isinstance(e, ToolCallEvent | ToolCallResponseEvent)]
    shown = {(e.type, e.tool_call.id): e.tool_definition for e in tool_events}
    definition = shown["tool_call", "c1"]
    assert definition == {
        "name": "add_numbers",
        "description": "Add two numbers.",
        "parameters": add_numbers.parameters,
        "annotations": {"readOnlyHint": True, "title": "Add"},
    }
    assert shown["tool_call_response", "c1"] == definition
    assert shown["tool_call", "c2"] is None
    assert shown["tool_call_response", "c2"] is None
    wire = next(e for e in tool_events if e.tool_call.id == "c2").model_dump_json()
    assert "tool_definition" not in wire


def test_annotations_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="annotations must be a mapping, got list"):
        Tool(multiply, annotations=["readOnlyHint"])  # type: ignore[arg-type]


def test_importing_agentrt_imports_no_mcp_sdk() -> None:
    code = (
        "import sys, agentrt, agentrt.agent, agentrt.toolsets; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "[]"
