"""Teams in the library: delegation to sub-agents (``transfer_task``) and agents as tools.

What a stream shows of a team is tests/test_team_stream.py's.
"""

from typing import Any

import anyio
import pytest

from agentrt import (
    Agent,
    EventBus,
    EventContext,
    ModelRequest,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentrt.exceptions import ToolDefinitionError
from agentrt.team import TeamParent
from tests.conftest import add
from tests.test_toolsets import ListToolset


def transfer(call_id: str, agent: str, task: str, expected: str | None = None) -> ToolCall:
    arguments = {"agent": agent, "task": task}
    if expected is not None:
        arguments["expected_output"] = expected
    return ToolCall(id=call_id, name="transfer_task", arguments=arguments)


def tool_messages(agent: Agent) -> list[tuple[str, str, bool]]:
    return [
        (m.tool_call_id, m.content, m.is_error)
        for m in agent.messages
        if isinstance(m, ToolMessage)
    ]


def researcher(script: Any = ("Paris.",), **options: Any) -> Agent:
    options.setdefault("description", "Finds facts.")
    options.setdefault("instructions", "You research.")
    return Agent(model=ScriptedModel(list(script)), name="researcher", **options)


# -- the tool -----------------------------------------------------------------------------------


async def test_an_agent_with_sub_agents_offers_transfer_task_listing_them() -> None:
    writer = Agent(model=ScriptedModel([]), name="writer")
    lead = Agent(model=ScriptedModel(["ok"]), name="lead", sub_agents=[researcher(), writer])
    await lead.execute("hi")
    (signature,) = lead.model.requests[0].tools  # type: ignore[attr-defined]
    function = signature["function"]
    assert function["name"] == "transfer_task"
    assert function["description"].endswith("Sub-agents:\n- researcher: Finds facts.\n- writer")
    assert function["parameters"]["required"] == ["agent", "task"]
    assert set(function["parameters"]["properties"]) == {"agent", "task", "expected_output"}


async def test_an_agent_without_sub_agents_offers_no_team_tool() -> None:
    lead = Agent(model=ScriptedModel(["ok"]), name="lead", tools=[add])
    await lead.execute("hi")
    assert [t["function"]["name"] for t in lead.model.requests[0].tools] == ["add"]  # type: ignore[attr-defined]
    assert lead.sub_agents == []


async def test_sub_agents_added_after_the_agent_was_made_are_offered_and_listed() -> None:
    lead = Agent(model=ScriptedModel(["first", "second"]), name="lead")
    await lead.execute("hi")
    lead.sub_agents.append(researcher())
    await lead.execute("again")
    requests = lead.model.requests  # type: ignore[attr-defined]
    assert requests[0].tools == []
    (signature,) = requests[1].tools
    assert signature["function"]["description"].endswith("- researcher: Finds facts.")


# -- a delegated task -----------------------------------------------------------------------------


async def test_a_delegated_task_runs_the_sub_agent_on_a_conversation_of_its_own() -> None:
    sub = researcher(tools=[add])
    lead = Agent(
        model=ScriptedModel(
            [transfer("t1", "researcher", "Capital of France?", "One word."), "It is Paris."]
        ),
        name="lead",
        instructions="You lead.",
        sub_agents=[sub],
    )
    result = await lead.execute("Where is the Louvre?")
    assert result.output == "It is Paris."
    assert tool_messages(lead) == [("t1", "Paris.", False)]
    (request,) = sub.model.requests  # type: ignore[attr-defined]
    assert request.messages == [
        SystemMessage(content="You research."),
        UserMessage(content="Capital of France?\n\nExpected output: One word."),
    ]
    assert [t["function"]["name"] for t in request.tools] == ["add"]
    assert sub.messages == ()  # the sub-agent object itself never ran


async def test_sub_agents_may_have_sub_agents() -> None:
    checker = Agent(model=ScriptedModel(["Checked: true."]), name="checker")
    sub = researcher(
        [transfer("t2", "checker", "Is Paris the capital?"), "Paris (checked)."],
        sub_agents=[checker],
    )
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "Capital?"), "Paris it is."]),
        name="lead",
        sub_agents=[sub],
    )
    result = await lead.execute("Where?")
    assert result.output == "Paris it is."
    assert tool_messages(lead) == [("t1", "Paris (checked).", False)]
    (request,) = checker.model.requests  # type: ignore[attr-defined]
    assert request.messages == [UserMessage(content="Is Paris the capital?")]


async def test_two_delegations_in_one_turn_run_concurrently_each_on_its_own_conversation() -> None:
    arrived: list[str] = []
    both = anyio.Event()

    async def answer(request: ModelRequest) -> str:
        # Each run waits until the other has started: run one after the other, they
        # would wait for ever (and fail_after fails the test).
        task = request.messages[-1].content
        arrived.append(task)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        return f"answer to {task}; I saw {len(request.messages)} message(s)"

    sub = Agent(model=ScriptedModel(answer), name="researcher")
    lead = Agent(
        model=ScriptedModel(
            [[transfer("t1", "researcher", "A"), transfer("t2", "researcher", "B")], "done"]
        ),
        name="lead",
        sub_agents=[sub],
    )
    with anyio.fail_after(5):
        await lead.execute("go")
    assert sorted(arrived) == ["A", "B"]
    assert tool_messages(lead) == [
        ("t1", "answer to A; I saw 1 message(s)", False),
        ("t2", "answer to B; I saw 1 message(s)", False),
    ]


async def test_a_member_knows_who_delegated_to_it() -> None:
    seen: list[TeamParent | None] = []
    sub = researcher()
    sub.hooks.on_execute_before(lambda ctx: seen.append(ctx.parameters["agent"].team_parent))
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "Capital?"), "Paris."]),
        name="lead",
        sub_agents=[sub],
    )
    await lead.execute("Where?")
    (parent,) = seen
    assert parent is not None
    assert parent.agent is lead
    assert parent.tool_call.id == "t1"
    assert lead.team_parent is None


async def test_the_sub_agents_own_hooks_see_each_member_run_by_its_name() -> None:
    names: list[tuple[str, str]] = []

    def on_call(ctx: EventContext[Any, Any]) -> None:
        names.append((ctx.parameters["agent"].name, ctx.parameters["tool_call"].name))

    sub = researcher([ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2}), "3"], tools=[add])
    sub.events.on("tool:call:before", on_call)
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "1+2?"), "3."]),
        name="lead",
        sub_agents=[sub],
    )
    lead.events.on("tool:call:before", on_call)
    await lead.execute("sum")
    assert names == [("lead", "transfer_task"), ("researcher", "add")]


# -- failures -------------------------------------------------------------------------------------


async def test_a_failing_sub_agent_fails_its_call_with_a_message_naming_it() -> None:
    sub = researcher([RuntimeError("the model is down")])
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "Capital?"), "Sorry."]),
        name="lead",
        sub_agents=[sub],
    )
    result = await lead.execute("Where?")
    assert result.output == "Sorry."
    assert tool_messages(lead) == [
        (
            "t1",
            "Error: sub-agent 'researcher' failed: RuntimeError: the model is down",
            True,
        )
    ]


async def test_a_task_for_an_unknown_sub_agent_fails_naming_the_known_ones() -> None:
    lead = Agent(
        model=ScriptedModel([transfer("t1", "writer", "Write."), "Sorry."]),
        name="lead",
        sub_agents=[researcher()],
    )
    await lead.execute("go")
    assert tool_messages(lead) == [
        ("t1", "Error: 'lead' has no sub-agent named 'writer'; its sub-agents: researcher", True)
    ]


def test_bad_team_arguments_are_typed_errors() -> None:
    model = ScriptedModel([])
    with pytest.raises(TypeError, match="sub_agents must hold agents, got str"):
        Agent(model=model, sub_agents=["researcher"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sub_agents must be a list of agents"):
        Agent(model=model, sub_agents="researcher")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description must be a string, got int"):
        Agent(model=model, description=3)  # type: ignore[arg-type]


# -- an agent as a tool ---------------------------------------------------------------------------


async def test_an_agent_as_a_tool_runs_it_on_the_task_and_returns_its_answer() -> None:
    sub = researcher()
    as_tool = sub.as_tool(name="research", description="Ask the researcher.")
    assert as_tool.signature()["function"]["description"] == "Ask the researcher."
    assert as_tool.parameters["required"] == ["task"]
    lead = Agent(
        model=ScriptedModel(
            [ToolCall(id="r1", name="research", arguments={"task": "Capital?"}), "Paris."]
        ),
        name="lead",
        tools=[as_tool],
    )
    await lead.execute("Where?")
    assert tool_messages(lead) == [("r1", "Paris.", False)]
    (request,) = sub.model.requests  # type: ignore[attr-defined]
    assert request.messages[-1] == UserMessage(content="Capital?")


@pytest.mark.parametrize("given_in", ["tools", "a toolset", "a mode"])
async def test_an_agent_used_as_a_tool_makes_its_callers_first_run_a_teams(given_in: str) -> None:
    # Both models name their call c1: one stream shows both calls, their ids must differ.
    sub = researcher([ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}), "3."],
                     tools=[add])  # fmt: skip
    research = sub.as_tool(name="research")
    tools: list[Any] = []
    if given_in == "tools":
        tools = [research]
    elif given_in == "a toolset":
        tools = [ListToolset("team", research)]
    ask = ToolCall(id="c1", name="research", arguments={"task": "1+2?"})
    lead = Agent(model=ScriptedModel([ask, "3."]), name="lead", tools=tools)
    if given_in == "a mode":
        async with lead.mode("asking", tools=[research]):
            result = await lead.execute("Sum?")
    else:
        result = await lead.execute("Sum?")
    shares = result.agent_usage or {}
    assert (set(shares), shares["researcher"].requests) == ({"lead", "researcher"}, 2)
    assert result.usage == shares["lead"] + shares["researcher"]
    answered = sub.model.requests[-1].messages[-1]  # type: ignore[attr-defined]
    assert isinstance(answered, ToolMessage)
    assert answered.content == "3"
    assert answered.tool_call_id != "c1"


def test_an_agent_as_a_tool_defaults_to_its_name_and_description() -> None:
    as_tool = researcher().as_tool()
    assert (as_tool.name, as_tool.description) == ("researcher", "Finds facts.")
    with pytest.raises(ToolDefinitionError, match="a tool name has"):
        Agent(model=ScriptedModel([]), name="my researcher").as_tool()


# -- the bus a member runs on -----------------------------------------------------------------


async def test_a_bus_copy_keeps_the_handlers_but_not_the_transient_ones() -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.on("x", lambda ctx: seen.append("kept"), priority=1)
    bus.on("x", lambda ctx: seen.append("transient"), transient=True)
    copy = bus.copy()
    copy.on("x", lambda ctx: seen.append("only the copy's"), priority=0)
    await copy.do("x")
    assert seen == ["kept", "only the copy's"]
    seen.clear()
    await bus.do("x")
    assert seen == ["transient", "kept"]


# -- usage ----------------------------------------------------------------------------------------


async def test_a_team_runs_result_counts_every_agents_usage_and_gives_each_its_share() -> None:
    checker = Agent(model=ScriptedModel(["true"]), name="checker")
    sub = researcher([transfer("t2", "checker", "Check."), "Paris."], sub_agents=[checker])
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "Capital?"), "Paris it is."]),
        name="lead",
        sub_agents=[sub],
    )
    result = await lead.execute("Where?")
    requests = {name: usage.requests for name, usage in result.agent_usage.items()}
    assert requests == {"lead": 2, "researcher": 2, "checker": 1}
    assert result.usage.requests == 5
    assert result.usage.input_tokens == sum(u.input_tokens for u in result.agent_usage.values())
    # The next run counts only its own.
    lead.model = ScriptedModel(["Still Paris."])
    alone = await lead.execute("Sure?")
    assert alone.usage.requests == 1


async def test_a_run_of_one_agent_alone_has_no_shares() -> None:
    result = await Agent(model=ScriptedModel(["hi"])).execute("hi")
    assert result.agent_usage == {}
    assert result.usage.requests == 1


async def test_an_agent_may_delegate_to_itself_but_not_for_ever() -> None:
    from agentrt.team import MAX_DEPTH

    def answer(request: ModelRequest) -> ToolCall | str:
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            return f"gave up: {last.content}" if last.is_error else last.content
        return transfer("t", "looper", "Again.")

    looper = Agent(model=ScriptedModel(answer), name="looper")
    looper.sub_agents.append(looper)
    result = await looper.execute("Go.")
    assert result.output == (
        f"gave up: Error: cannot delegate to 'looper': delegations nest {MAX_DEPTH} deep already"
    )


async def test_a_failed_sub_agents_usage_and_its_sub_agents_count_in_the_teams_result() -> None:
    checker = Agent(model=ScriptedModel(["true"]), name="checker")
    sub = researcher(
        [transfer("t2", "checker", "Check."), RuntimeError("the model is down")],
        sub_agents=[checker],
    )
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "Capital?"), "Sorry."]),
        name="lead",
        sub_agents=[sub],
    )
    result = await lead.execute("Where?")
    assert tool_messages(lead)[0][2] is True  # the delegation failed; the lead went on
    requests = {name: usage.requests for name, usage in result.agent_usage.items()}
    assert requests == {"lead": 2, "researcher": 1, "checker": 1}
    assert result.usage.requests == 4
    assert result.usage.output_tokens == sum(u.output_tokens for u in result.agent_usage.values())


async def test_a_failed_sub_agent_that_handed_off_counts_every_speakers_usage() -> None:
    billing = Agent(
        model=ScriptedModel(
            [ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2}), RuntimeError("down")]
        ),
        name="billing",
        tools=[add],
    )
    desk = Agent(
        model=ScriptedModel([ToolCall(id="h1", name="handoff", arguments={"agent": "billing"})]),
        name="desk",
        handoffs=[billing],
    )
    lead = Agent(
        model=ScriptedModel([transfer("t1", "desk", "Bill me."), "Sorry."]),
        name="lead",
        sub_agents=[desk],
    )
    result = await lead.execute("Invoice?")
    assert tool_messages(lead) == [
        ("t1", "Error: sub-agent 'desk' failed: RuntimeError: down", True)
    ]
    requests = {name: usage.requests for name, usage in result.agent_usage.items()}
    assert requests == {"lead": 2, "desk": 1, "billing": 1}
    assert result.usage.requests == 4
