"""A team served over HTTP: its stream attributed, a confirmation two levels down answered
by its call id with ``POST /sessions/{id}/confirmations/{tool_call_id}``, a hand-off
remembered by the session.
"""

from agentrt import Agent, ScriptedModel, ToolCall, tool
from agentrt.stream import validate
from agentrt.stream.events import (
    AgentChoiceEvent,
    ToolCallConfirmationEvent,
    ToolCallResponseEvent,
    parent_tool_call_id,
)
from tests.server_support import SSEReader, known, new_session, real_server, text_of
from tests.test_server_cancellation import send


@tool(requires_confirmation=True)
def publish(text: str) -> str:
    """Publish a text.

    Args:
        text: What to publish.
    """
    return f"published {text}"


def transfer(call_id: str, agent: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": "Go."})


def make_team() -> Agent:
    checker = Agent(
        model=ScriptedModel(
            [ToolCall(id="p1", name="publish", arguments={"text": "Paris"}), "ok"]
        ),
        name="checker",
        tools=[publish],
    )
    researcher = Agent(
        model=ScriptedModel([transfer("t2", "checker"), "checked"]),
        name="researcher",
        sub_agents=[checker],
    )
    return Agent(
        model=ScriptedModel([transfer("t1", "researcher"), "All done."]),
        name="lead",
        sub_agents=[researcher],
    )


async def test_a_confirmation_two_levels_down_is_answered_over_http_by_its_call_id() -> None:
    async with real_server(make_team) as (_, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "go"}
        ) as response:
            reader = SSEReader(response)
            asked = await reader.until("tool_call_confirmation")
            answer = await client.post(
                f"/sessions/{session_id}/confirmations/p1", json={"decision": "approve"}
            )
            events = await reader.rest()
    assert answer.status_code < 300, answer.text
    assert isinstance(asked.event, ToolCallConfirmationEvent)
    assert (asked.event.agent_name, parent_tool_call_id(asked.event)) == ("checker", "t2")
    stream = known(events)
    assert validate(stream) == []
    responses = [
        (e.agent_name, parent_tool_call_id(e), e.response)
        for e in stream
        if isinstance(e, ToolCallResponseEvent)
    ]
    assert responses == [
        ("checker", "t2", "published Paris"),
        ("researcher", "t1", "ok"),
        ("lead", None, "checked"),
    ]
    assert text_of(events).endswith("All done.")


def make_desk() -> Agent:
    desk = Agent(
        model=ScriptedModel([ToolCall(id="h1", name="handoff", arguments={"agent": "billing"})]),
        name="desk",
    )
    billing = Agent(model=ScriptedModel(["Refunded.", "You are welcome."]), name="billing")
    desk.handoffs.append(billing)
    return desk


async def test_the_session_remembers_who_speaks_after_a_handoff() -> None:
    async with real_server(make_desk) as (_, client):
        session_id = await new_session(client)
        first = await send(client, session_id, "A refund, please.")
        second = await send(client, session_id, "Thanks.")
    assert [e.type for e in known(first)].count("agent_switching") == 1
    assert text_of(first) == "Refunded."
    speakers = {e.agent_name for e in known(second) if isinstance(e, AgentChoiceEvent)}
    assert (text_of(second), speakers) == ("You are welcome.", {"billing"})
