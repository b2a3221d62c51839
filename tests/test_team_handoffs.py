"""Hand-offs: the ``handoff`` tool passes the conversation to another agent, which answers.

Delegation is tests/test_team.py's; a team's stream, tests/test_team_stream.py's.
"""

from typing import Any

import pytest

from agentrt import (
    Agent,
    MaxIterationsExceededError,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentrt.models.scripted import ScriptItem
from agentrt.stream import validate
from agentrt.stream.events import StreamEvent
from tests.test_team_stream import shape


def handoff(call_id: str, agent: str) -> ToolCall:
    return ToolCall(id=call_id, name="handoff", arguments={"agent": agent})


def agent(name: str, script: list[ScriptItem], **options: Any) -> Agent:
    model = ScriptedModel(script, chunk_size=1000)
    return Agent(model=model, name=name, instructions=f"You are {name}.", **options)


def desk_and_billing(desk_script: list[ScriptItem], billing_script: list[ScriptItem]) -> tuple[
    Agent, Agent
]:  # fmt: skip
    """A front desk and billing that hand off to each other (a cycle, made after the agents)."""
    desk = agent("desk", desk_script, description="Greets and routes.")
    billing = agent("billing", billing_script, description="Refunds.", handoffs=[desk])
    desk.handoffs.append(billing)
    return desk, billing


async def test_an_agent_with_handoffs_offers_the_handoff_tool_listing_them() -> None:
    desk, _ = desk_and_billing(["Hello."], [])
    await desk.execute("hi")
    (signature,) = desk.model.requests[0].tools  # type: ignore[attr-defined]
    function = signature["function"]
    assert function["name"] == "handoff"
    assert function["description"].endswith("Agents:\n- billing: Refunds.")
    assert function["parameters"]["required"] == ["agent"]


async def test_the_agent_handed_to_answers_on_one_conversation_with_its_own_instructions() -> None:
    desk, billing = desk_and_billing([handoff("h1", "billing")], ["Refunded."])
    result = await desk.execute("A refund, please.")
    assert result.output == "Refunded."
    assert desk.speaker is billing
    (request,) = billing.model.requests  # type: ignore[attr-defined]
    assert request.messages[0] == SystemMessage(content="You are billing.")
    assert request.messages[1] == UserMessage(content="A refund, please.")
    assert request.messages[-1] == ToolMessage(
        content="billing answers from here on.", tool_call_id="h1", name="handoff"
    )
    assert [t["function"]["name"] for t in request.tools] == ["handoff"]
    # One conversation, the desk's: everything is in it, the result tells all of it.
    assert [m.role for m in desk.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.messages == list(desk.messages[1:])
    assert result.iterations == 2
    assert result.usage.requests == 2
    assert billing.messages == ()  # the billing object itself never ran


async def test_the_next_user_message_goes_to_the_agent_that_speaks_and_it_may_hand_back() -> None:
    desk, billing = desk_and_billing(
        [handoff("h1", "billing"), "Anything else?"], ["Refunded.", handoff("h2", "desk")]
    )
    await desk.execute("A refund, please.")
    result = await desk.execute("Thanks, that is all.")
    assert result.output == "Anything else?"
    assert desk.speaker is desk
    second = billing.model.requests[1]  # type: ignore[attr-defined]
    assert second.messages[-1] == UserMessage(content="Thanks, that is all.")
    last = desk.model.requests[-1]  # type: ignore[attr-defined]
    assert last.messages[0] == SystemMessage(content="You are desk.")


async def test_agents_may_hand_off_in_a_cycle_within_one_run() -> None:
    desk, _ = desk_and_billing(
        [handoff("h1", "billing"), "Back at the desk."], [handoff("h2", "desk")]
    )
    result = await desk.execute("Route me.")
    assert result.output == "Back at the desk."
    assert result.iterations == 3
    assert desk.speaker is desk


async def test_a_handoff_to_an_agent_not_in_the_list_fails_the_call_and_the_agent_goes_on() -> (
    None
):
    desk, _ = desk_and_billing([handoff("h1", "support"), "I cannot route you."], [])
    result = await desk.execute("Support, please.")
    assert result.output == "I cannot route you."
    assert desk.speaker is desk
    (answer,) = [m for m in desk.messages if isinstance(m, ToolMessage)]
    assert answer.content == "Error: 'desk' cannot hand off to 'support'; it hands off to: billing"
    assert answer.is_error


async def test_hand_offs_that_never_end_fail_the_run() -> None:
    desk, _ = desk_and_billing(
        [handoff(f"d{i}", "billing") for i in range(5)],
        [handoff(f"b{i}", "desk") for i in range(5)],
    )
    with pytest.raises(MaxIterationsExceededError):
        await desk.execute("Loop.", max_iterations=3)


def test_handoffs_must_be_agents() -> None:
    with pytest.raises(TypeError, match="handoffs must hold agents, got str"):
        Agent(model=ScriptedModel([]), handoffs=["billing"])  # type: ignore[list-item]


# -- in a stream ----------------------------------------------------------------------------------


async def stream(desk: Agent, prompt: str) -> list[tuple[Any, ...]]:
    events: list[StreamEvent] = []
    async with desk.stream(prompt, strict=True) as items:
        events += [event async for event in items]
    assert validate(events) == []
    return [shape(event) for event in events]


async def test_a_handoff_and_back_in_two_streams() -> None:
    desk, _ = desk_and_billing(
        [handoff("h1", "billing"), "Anything else?"], ["Refunded.", handoff("h2", "desk")]
    )
    assert await stream(desk, "A refund, please.") == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("desk", "billing")),
        ("partial_tool_call", "desk", None, "h1"),
        ("token_usage", "desk", None),
        ("tool_call", "desk", None, "h1"),
        ("tool_call_response", "desk", None, "h1", "billing answers from here on."),
        ("agent_switching",),
        ("agent_choice", "billing", None, "Refunded."),
        ("token_usage", "billing", None),
        ("stream_stopped",),
    ]
    assert await stream(desk, "Thanks.") == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("desk", "billing")),
        ("partial_tool_call", "billing", None, "h2"),
        ("token_usage", "billing", None),
        ("tool_call", "billing", None, "h2"),
        ("tool_call_response", "billing", None, "h2", "desk answers from here on."),
        ("agent_switching",),
        ("agent_choice", "desk", None, "Anything else?"),
        ("token_usage", "desk", None),
        ("stream_stopped",),
    ]


async def test_the_stream_says_who_answers_now_and_who_handed_over() -> None:
    desk, _ = desk_and_billing([handoff("h1", "billing")], ["Refunded.", "Welcome."])
    async with desk.stream("A refund, please.") as items:
        events = [event async for event in items]
    (switch,) = [e for e in events if e.type == "agent_switching"]
    assert switch.model_dump(include={"switching", "from_agent", "to_agent", "agent_name"}) == {
        "switching": True,
        "from_agent": "desk",
        "to_agent": "billing",
        "agent_name": "billing",
    }
    async with desk.stream("Thanks.") as items:
        team = [e async for e in items if e.type == "team_info"]
    assert team[0].model_dump(include={"current_agent"}) == {"current_agent": "billing"}


async def test_a_handoff_inside_a_delegated_task_stays_under_its_call() -> None:
    desk, _ = desk_and_billing([handoff("h1", "billing")], ["Refunded."])
    lead = agent(
        "lead",
        [ToolCall(id="t1", name="transfer_task", arguments={"agent": "desk", "task": "Refund."}),
         "Done."],
        sub_agents=[desk],
    )  # fmt: skip
    shapes = await stream(lead, "Go")
    assert shapes[5:13] == [
        ("tool_call", "lead", None, "t1"),
        ("partial_tool_call", "desk", "t1", "h1"),
        ("token_usage", "desk", "t1"),
        ("tool_call", "desk", "t1", "h1"),
        ("tool_call_response", "desk", "t1", "h1", "billing answers from here on."),
        ("agent_switching",),
        ("agent_choice", "billing", "t1", "Refunded."),
        ("token_usage", "billing", "t1"),
    ]
    assert shapes[13] == ("tool_call_response", "lead", None, "t1", "Refunded.")


async def test_a_handed_off_runs_result_gives_each_agent_its_share() -> None:
    desk, _ = desk_and_billing([handoff("h1", "billing")], ["Refunded."])
    result = await desk.execute("A refund, please.")
    assert {name: u.requests for name, u in result.agent_usage.items()} == {
        "desk": 1,
        "billing": 1,
    }
    assert result.usage.requests == 2
