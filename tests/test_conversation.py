"""The Conversation and the runner's interface of the Agent: what the execute loop may use.

The loop drives an agent only through documented methods (``agent.conversation``,
``enter_state``, ``sync_system``, ``tool_table``) and a tool sees its call through
:class:`~agentrt.tools.ToolContext`.
"""

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

import agentrt._loop
from agentrt import Agent, AgentEvents, EventContext, ScriptedModel, ToolCall
from agentrt._state import AgentState
from agentrt.conversation import Conversation
from agentrt.exceptions import AgentClosedError
from agentrt.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from agentrt.models.base import ModelResponse
from agentrt.testing import EventRecorder
from agentrt.tools import ToolContext, current_tool_context, tool
from tests.conftest import AgentFactory


def test_the_loop_touches_no_private_member_of_the_agent() -> None:
    source = Path(agentrt._loop.__file__).read_text()
    assert re.findall(r"agent\._[a-z]", source) == []


async def test_a_conversation_reads_like_a_sequence(make_agent: AgentFactory) -> None:
    agent = make_agent(["hello"], instructions="be brief")
    await agent.execute("hi")
    conversation = agent.conversation
    assert isinstance(conversation, Conversation)
    assert len(conversation) == 3
    assert [m.role for m in conversation] == ["system", "user", "assistant"]
    assert conversation[1] == UserMessage(content="hi")
    assert conversation[-1].content == "hello"
    assert conversation[1:] == conversation.since(1) == list(agent.messages[1:])
    assert conversation.messages == agent.messages
    assert conversation.version == agent.version == 3
    # since() is a copy: changing it changes nothing.
    conversation.since(0).clear()
    assert len(conversation) == 3
    assert repr(conversation) == "<Conversation messages=3 version=3>"


async def test_tool_call_ids_and_unanswered_calls(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    calls = (
        ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'),
        ToolCall(id="c2", name="add", arguments='{"a": 3, "b": 4}'),
    )
    conversation = agent.conversation
    await conversation.append(UserMessage(content="sum"))
    await conversation.append(AssistantMessage(content="", tool_calls=calls))
    await conversation.append(ToolMessage(content="3", tool_call_id="c1", name="add"))
    assert conversation.tool_call_ids() == {"c1", "c2"}
    assert conversation.unanswered_calls() == [calls[1]]
    assert conversation.unanswered_calls(3) == []


async def test_the_agents_methods_are_its_conversations(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent([])
    agent.events.on("*", recorder)
    await agent.append(UserMessage(content="one"))
    await agent.conversation.append(UserMessage(content="two"))
    await agent.set_system("system")
    await agent.replace(1, UserMessage(content="uno"))
    await agent.conversation.compact(3, UserMessage(content="summary"))
    assert [m.content for m in agent.messages] == ["system", "summary"]
    assert recorder.names() == [
        "message:append:before",
        "message:append:after",
        "agent:version:change",
        "message:append:before",
        "message:append:after",
        "agent:version:change",
        "message:set_system:before",
        "message:set_system:after",
        "agent:version:change",
        "message:replace:before",
        "message:replace:after",
        "agent:version:change",
        "message:replace:before",
        "message:replace:after",
        "agent:version:change",
    ]
    assert agent.version == 5
    await agent.reset()
    assert agent.messages == (SystemMessage(content="system"),)


async def test_a_closed_agents_conversation_is_read_only(make_agent: AgentFactory) -> None:
    agent = make_agent(["hi"])
    await agent.execute("hello")
    await agent.close()
    assert len(agent.conversation) == 2
    with pytest.raises(AgentClosedError):
        await agent.conversation.append(UserMessage(content="late"))
    with pytest.raises(AgentClosedError):
        await agent.conversation.set_system("late")


async def test_replace_dispatches_only_to_listeners_and_keeps_its_checks(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    await agent.append(UserMessage(content="one"))
    stored = await agent.replace(0, UserMessage(content="two"))  # nobody listens
    assert stored.content == "two"
    with pytest.raises(TypeError, match="index must be an int"):
        await agent.replace("0", UserMessage(content="x"))  # type: ignore[arg-type]
    with pytest.raises(IndexError, match="no message at index 5"):
        await agent.replace(5, UserMessage(content="x"))


async def test_enter_state_announces_only_a_change_someone_listens_to(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    assert agent.enter_state(AgentState.RUNNING) is None  # nobody listens
    assert agent.state == "running"
    seen: list[tuple[AgentState, AgentState]] = []
    agent.hooks.on_agent_state_change(
        lambda ctx: seen.append((ctx.parameters["previous"], ctx.parameters["state"]))
    )
    assert agent.enter_state(AgentState.RUNNING) is None  # no change
    pending = agent.enter_state(AgentState.IDLE)
    assert pending is not None
    assert agent.state == "idle"  # moved at once; announced when awaited
    assert seen == []
    await pending
    assert seen == [(AgentState.RUNNING, AgentState.IDLE)]


async def test_sync_system_costs_nothing_once_plain_instructions_are_set(
    make_agent: AgentFactory,
) -> None:
    plain = make_agent([], instructions="be brief")
    pending = plain.sync_system()
    assert pending is not None
    await pending
    assert plain.messages == (SystemMessage(content="be brief"),)
    assert plain.sync_system() is None
    assert make_agent([]).sync_system() is None  # no instructions at all
    count = 0

    def counter() -> int:
        nonlocal count
        count += 1
        return count

    templated = make_agent([], instructions="call {{ n }}", context_providers={"n": counter})
    for _ in range(2):
        pending = templated.sync_system()
        assert pending is not None  # a variable may render differently each time
        await pending
    assert templated.messages == (SystemMessage(content="call 2"),)


async def test_tool_table_follows_modes(make_agent: AgentFactory) -> None:
    agent = make_agent([])

    def extra() -> str:
        """An extra tool."""
        return "x"

    assert list(agent.tool_table()) == ["add", "divide"]
    async with agent.mode("more", tools=[extra]):
        assert list(agent.tool_table()) == ["add", "divide", "extra"]
    assert list(agent.tool_table()) == ["add", "divide"]


# -- the tool's view of its call ---------------------------------------------------------------


def _calls(*ids: str) -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id=call_id, name="probe", arguments=f'{{"label": "{call_id}"}}')
            for call_id in ids
        )
    )


async def test_a_tool_sees_its_own_call_even_in_parallel(make_agent: AgentFactory) -> None:
    seen: dict[str, str] = {}
    both_running = anyio.Event()
    running = 0

    @tool
    async def probe(label: str) -> str:
        """Record which call this is."""
        nonlocal running
        context = current_tool_context()
        assert context is not None
        running += 1
        if running == 2:
            both_running.set()
        await both_running.wait()  # both calls are in flight at once
        seen[label] = context.tool_call_id
        assert context.tool_call.name == "probe"
        assert context.agent is agent
        return label

    agent = make_agent([_calls("c1", "c2"), "done"], tools=[probe])
    await agent.execute("go")
    assert seen == {"c1": "c1", "c2": "c2"}
    assert current_tool_context() is None  # nothing leaks out of the run


async def test_emitted_tool_output_is_a_signal_with_the_call(make_agent: AgentFactory) -> None:
    @tool
    async def probe(label: str) -> str:
        """Report progress, then answer."""
        context = current_tool_context()
        assert context is not None
        await context.emit(f"{label}: half")
        await context.emit(f"{label}: done")
        return label

    agent = make_agent([_calls("c1", "c2"), "ok"], tools=[probe])
    outputs: list[tuple[str, str, str]] = []

    def observe(ctx: EventContext[Any, Any]) -> None:
        params = ctx.parameters
        outputs.append((params["tool_call"].id, params["tool_name"], params["output"]))
        assert params["agent"] is agent

    agent.events.on(AgentEvents.TOOL_CALL_OUTPUT, observe)
    await agent.execute("go")
    assert sorted(outputs) == [
        ("c1", "probe", "c1: done"),
        ("c1", "probe", "c1: half"),
        ("c2", "probe", "c2: done"),
        ("c2", "probe", "c2: half"),
    ]


async def test_tool_output_must_be_text(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    context = ToolContext(agent, ToolCall(id="c1", name="add", arguments="{}"))
    with pytest.raises(TypeError, match="tool output is a str, got bytes"):
        await context.emit(b"raw")  # type: ignore[arg-type]
    assert repr(context) == "<ToolContext 'add' id='c1'>"


async def test_a_tool_called_outside_a_run_has_no_context() -> None:
    @tool
    def where() -> str:
        """Say whether a run called this."""
        return "run" if current_tool_context() else "direct"

    assert where() == "direct"
    agent = Agent(model=ScriptedModel([]), tools=[where])
    assert await agent.tool_table()["where"].run({}) == "direct"
