"""``agentrt demo --team`` on the real SmolLM2-135M: the team works as a person sees it.

The command runs in this process as a person runs it (``--json`` to read its events).
Each specialist's tool call is its own (its ``agent_name``) and sits under the lead's
``transfer_task`` call that gave it the task (``parent_tool_call_id``); the scribe, handed
the conversation, asks to write the note; the final answer comes from the agent that
speaks last and states what the tools returned, in words.
"""

import json

import pytest

from agentrt.cli import main
from agentrt.stream import StreamEvent, parse_event, validate
from agentrt.stream.events import parent_tool_call_id
from tests.live.test_demo_live import assert_words

pytestmark = [pytest.mark.live, pytest.mark.usefixtures("demo_folder")]


def run_team(capsys: pytest.CaptureFixture[str], *arguments: str) -> list[StreamEvent]:
    assert main(["demo", "--team", *arguments, "--json"]) == 0
    events = [parse_event(line, strict=True) for line in capsys.readouterr().out.splitlines()]
    assert validate(events) == []
    return events


def delegations(events: list[StreamEvent]) -> dict[str, str]:
    """The lead's transfer_task calls: call id -> the agent it named."""
    return {
        event.tool_call.id: json.loads(event.tool_call.function.arguments)["agent"]
        for event in events
        if event.type == "tool_call"
        and event.tool_call.function.name == "transfer_task"
        and event.agent_name == "lead"
        and parent_tool_call_id(event) is None
    }


def runs_of_tools(events: list[StreamEvent]) -> dict[str, tuple[str | None, str | None, str]]:
    """Each tool that ran: (its agent, the agent the call above it delegated to, result)."""
    delegated = delegations(events)
    ran: dict[str, tuple[str | None, str | None, str]] = {}
    for event in events:
        if event.type == "tool_call_response" and event.tool_call.function.name in (
            "calculate",
            "get_weather",
            "write_note",
        ):
            parent = parent_tool_call_id(event)
            under = delegated.get(parent) if parent else None
            ran[event.tool_call.function.name] = (event.agent_name, under, event.response)
    return ran


def final_answer(events: list[StreamEvent]) -> tuple[set[str | None], str]:
    """Who said the text after the last tool result, and that text."""
    last = max(i for i, event in enumerate(events) if event.type == "tool_call_response")
    said = [event for event in events[last:] if event.type == "agent_choice"]
    assert all(parent_tool_call_id(event) is None for event in said)
    return {event.agent_name for event in said}, "".join(e.content for e in said).strip()


def test_the_default_question_is_delegated_handed_off_and_answered_by_the_scribe(
    capsys: pytest.CaptureFixture[str],
) -> None:
    events = run_team(capsys, "--yes")

    assert sorted(delegations(events).values()) == ["forecaster", "mathematician"]
    ran = runs_of_tools(events)
    assert ran["calculate"] == ("mathematician", "mathematician", "42")
    assert ran["get_weather"] == ("forecaster", "forecaster", "sunny, 21 C")
    agent, under, written = ran["write_note"]
    assert (agent, under) == ("scribe", None)
    assert written.startswith("wrote")
    switches = [(e.from_agent, e.to_agent) for e in events if e.type == "agent_switching"]
    assert switches == [("lead", "scribe")]
    asked = [e.agent_name for e in events if e.type == "tool_call_confirmation"]
    assert asked == ["scribe"]
    speakers, answer = final_answer(events)
    assert speakers == {"scribe"}
    assert_words(answer)
    assert "42" in answer
    assert "sunny" in answer


@pytest.mark.parametrize(
    ("question", "tool", "specialist", "result", "stated"),
    [
        ("What is 12 * 12?", "calculate", "mathematician", "144", "144"),
        ("How is the weather in Tokyo?", "get_weather", "forecaster", "cloudy, 18 C", "cloudy"),
    ],
)
def test_the_lead_answers_with_what_its_specialist_found(
    capsys: pytest.CaptureFixture[str],
    question: str,
    tool: str,
    specialist: str,
    result: str,
    stated: str,
) -> None:
    events = run_team(capsys, question, "--yes")

    assert list(delegations(events).values()) == [specialist]
    assert runs_of_tools(events) == {tool: (specialist, specialist, result)}
    assert [e for e in events if e.type == "agent_switching"] == []
    speakers, answer = final_answer(events)
    assert speakers == {"lead"}
    assert_words(answer)
    assert stated in answer
