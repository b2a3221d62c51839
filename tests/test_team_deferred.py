"""Calls left open at any depth of a team: a sub-agent's external tool, its deferred
confirmations. The call that delegated waits with them; answering them by their ids
(``tool_results``) resumes the sub-agent, then its parent.
"""

from typing import Any

from agentrt import Agent, ScriptedModel, ToolCall, ToolMessage
from agentrt.deferred import Approval, ExternalTool
from agentrt.stream import validate
from agentrt.stream.events import StreamEvent, StreamStoppedEvent
from tests.test_team_stream import member as agent
from tests.test_team_stream import publishing_team, shape, transfer

LOCATE = ExternalTool(
    "locate", "Where the user is.", {"type": "object", "properties": {}, "required": []}
)


def team() -> Agent:
    """lead → planner → locator, whose external tool the caller runs."""
    locator = agent(
        "locator", [ToolCall(id="x1", name="locate", arguments={}), "In Lyon."], tools=[LOCATE]
    )
    planner = agent(
        "planner", [transfer("t2", "locator", "Where?"), "Plan for Lyon."], sub_agents=[locator]
    )
    return agent("lead", [transfer("t1", "planner", "Plan."), "Here is the plan."],
                 sub_agents=[planner])  # fmt: skip


async def test_an_external_call_two_levels_down_leaves_the_run_waiting_on_it() -> None:
    lead = team()
    result = await lead.execute("Plan my day.")
    assert [call.id for call in result.pending_tool_calls] == ["x1"]
    assert [c.id for c in lead.conversation.pending_calls()] == ["t1"]  # waits on it
    result = await lead.execute(tool_results={"x1": {"city": "Lyon"}})
    assert result.output == "Here is the plan."
    assert result.pending_tool_calls == ()
    answers = [(m.tool_call_id, m.content) for m in lead.messages if isinstance(m, ToolMessage)]
    assert answers == [("t1", "Plan for Lyon.")]
    planner_requests = lead.sub_agents[0].model.requests  # type: ignore[attr-defined]
    assert planner_requests[-1].messages[-1] == ToolMessage(
        content="In Lyon.", tool_call_id="t2", name="transfer_task"
    )


async def test_a_new_user_message_abandons_the_waiting_members() -> None:
    lead = team()
    lead.model = ScriptedModel([transfer("t1", "planner", "Plan."), "Never mind then."])
    await lead.execute("Plan my day.")
    result = await lead.execute("Forget it.")
    assert result.output == "Never mind then."
    assert result.pending_tool_calls == ()
    assert lead._waiting is None


async def test_a_deferred_confirmation_two_levels_down_is_decided_by_id_in_a_later_stream() -> (
    None
):
    published: list[str] = []
    lead = publishing_team(published)

    async def stream(prompt: str | None, **options: Any) -> list[StreamEvent]:
        async with lead.stream(prompt, strict=True, defer_confirmations=True, **options) as items:
            events = [event async for event in items]
        assert validate(events) == []
        return events

    first = await stream("Go")
    assert [shape(e) for e in first][-3:] == [
        ("token_usage", "checker", "t2"),
        ("tool_call_confirmation", "checker", "t2", "p1"),
        ("stream_stopped",),
    ]
    stopped = first[-1]
    assert isinstance(stopped, StreamStoppedEvent)
    assert stopped.pending_tool_call_ids == ("p1",)
    assert published == []
    second = await stream(None, tool_results={"p1": Approval("approve")})
    assert published == ["Paris"]
    assert [shape(e) for e in second] == [
        ("stream_started",),
        ("team_info", ("lead", "researcher", "checker")),
        ("tool_call", "lead", None, "t1"),
        ("tool_call", "researcher", "t1", "t2"),
        ("tool_call", "checker", "t2", "p1"),
        ("tool_call_response", "checker", "t2", "p1", "published"),
        ("agent_choice", "checker", "t2", "Done."),
        ("token_usage", "checker", "t2"),
        ("tool_call_response", "researcher", "t1", "t2", "Done."),
        ("agent_choice", "researcher", "t1", "Ok."),
        ("token_usage", "researcher", "t1"),
        ("tool_call_response", "lead", None, "t1", "Ok."),
        ("agent_choice", "lead", None, "Published."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]


def asking_lead() -> Agent:
    """lead, whose only delegation is the locator agent as its tool ``locate_user``."""
    locator = agent(
        "locator", [ToolCall(id="x1", name="locate", arguments={}), "In Lyon."], tools=[LOCATE]
    )
    ask = ToolCall(id="r1", name="locate_user", arguments={"task": "Where?"})
    return agent("lead", [ask, "Lyon it is."], tools=[locator.as_tool(name="locate_user")])


async def test_an_agent_used_as_a_tool_leaves_the_first_run_waiting_on_its_call() -> None:
    lead = asking_lead()
    result = await lead.execute("Where am I?")
    # The agent's own call, not the one that asked it: the call the caller answers.
    assert [call.id for call in result.pending_tool_calls] == ["x1"]
    assert [c.id for c in lead.conversation.pending_calls()] == ["r1"]  # waits on it
    assert set(result.agent_usage or {}) == {"lead", "locator"}
    result = await lead.execute(tool_results={"x1": {"city": "Lyon"}})
    assert result.output == "Lyon it is."
    assert result.pending_tool_calls == ()
    answers = [(m.tool_call_id, m.content) for m in lead.messages if isinstance(m, ToolMessage)]
    assert answers == [("r1", "In Lyon.")]


async def test_an_agent_used_as_a_tool_leaves_the_first_stream_waiting_on_its_call() -> None:
    lead = asking_lead()

    async def stream(prompt: str | None, **options: Any) -> list[StreamEvent]:
        async with lead.stream(prompt, strict=True, **options) as items:
            events = [event async for event in items]
        assert validate(events) == []
        return events

    first = await stream("Where am I?")
    assert [shape(e) for e in first][-4:] == [
        ("partial_tool_call", "locator", "r1", "x1"),
        ("token_usage", "locator", "r1"),
        ("tool_call", "locator", "r1", "x1"),
        ("stream_stopped",),
    ]
    stopped = first[-1]
    assert isinstance(stopped, StreamStoppedEvent)
    assert stopped.pending_tool_call_ids == ("x1",)
    second = await stream(None, tool_results={"x1": {"city": "Lyon"}})
    assert [shape(e) for e in second] == [
        ("stream_started",),
        ("tool_call", "lead", None, "r1"),
        ("tool_call", "locator", "r1", "x1"),
        ("tool_call_response", "locator", "r1", "x1", '{"city":"Lyon"}'),
        ("agent_choice", "locator", "r1", "In Lyon."),
        ("token_usage", "locator", "r1"),
        ("tool_call_response", "lead", None, "r1", "In Lyon."),
        ("agent_choice", "lead", None, "Lyon it is."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]
