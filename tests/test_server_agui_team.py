"""A team served by ``POST /ag-ui``: a confirmation two levels down is an interrupt
answered by a resume entry with its call id, a sub-agent's external tool leaves the run
waiting for the client's result, and every event of a sub-agent's run keeps its
attribution (TEXT_MESSAGE_START ``name``, ``subagentRunId``).
"""

from typing import Any

import pytest

from agentrt import Agent, ToolCall
from agentrt.deferred import ExternalTool
from agentrt.server.agui import CONFIRMATION_REASON
from tests.test_server_agui import ag_ui, client_of, story_of_ag_ui, user
from tests.test_team_stream import member, publishing_team, transfer

LOCATE = ExternalTool(
    "locate", "Where the user is.", {"type": "object", "properties": {}, "required": []}
)


def sketch(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What an exact sequence compares: type, the sub-agent run it is of, and the gist."""
    out: list[tuple[Any, ...]] = []
    for event in events:
        kind, run = event["type"], event.get("subagentRunId")
        if kind == "TEXT_MESSAGE_START":
            out.append((kind, run, event.get("name")))
        elif kind == "TEXT_MESSAGE_CONTENT":
            out.append((kind, run, event["delta"]))
        elif kind.startswith("TOOL_CALL_") and kind != "TOOL_CALL_RESULT":
            out.append((kind, run, event["toolCallId"]))
        elif kind == "TOOL_CALL_RESULT":
            out.append((kind, run, event["toolCallId"], event["content"]))
        elif kind == "CUSTOM":
            out.append((kind, event["name"], event["value"].get("agent_name")))
        else:
            out.append((kind, run))
    return out


ASKED = [
    ("RUN_STARTED", None),
    ("CUSTOM", "agentrt.team_info", "lead"),
    ("TOOL_CALL_START", None, "t1"),
    ("TOOL_CALL_ARGS", None, "t1"),
    ("CUSTOM", "agentrt.token_usage", "lead"),
    ("TOOL_CALL_END", None, "t1"),
    ("TOOL_CALL_START", "t1", "t2"),
    ("TOOL_CALL_ARGS", "t1", "t2"),
    ("CUSTOM", "agentrt.token_usage", "researcher"),
    ("TOOL_CALL_END", "t1", "t2"),
    ("TOOL_CALL_START", "t2", "p1"),
    ("TOOL_CALL_ARGS", "t2", "p1"),
    ("CUSTOM", "agentrt.token_usage", "checker"),
    ("TOOL_CALL_END", "t2", "p1"),
    ("RUN_FINISHED", None),
]


def answered(result: str) -> list[tuple[Any, ...]]:
    """The run a resume entry for ``p1`` starts, ``result`` its result."""
    return [
        ("RUN_STARTED", None),
        ("CUSTOM", "agentrt.team_info", "lead"),
        ("TOOL_CALL_RESULT", "t2", "p1", result),
        ("TEXT_MESSAGE_START", "t2", "checker"),
        ("TEXT_MESSAGE_CONTENT", "t2", "Done."),
        ("CUSTOM", "agentrt.token_usage", "checker"),
        ("TEXT_MESSAGE_END", "t2"),
        ("TOOL_CALL_RESULT", "t1", "t2", "Done."),
        ("TEXT_MESSAGE_START", "t1", "researcher"),
        ("TEXT_MESSAGE_CONTENT", "t1", "Ok."),
        ("CUSTOM", "agentrt.token_usage", "researcher"),
        ("TEXT_MESSAGE_END", "t1"),
        ("TOOL_CALL_RESULT", None, "t1", "Ok."),
        ("TEXT_MESSAGE_START", None, None),
        ("TEXT_MESSAGE_CONTENT", None, "Published."),
        ("CUSTOM", "agentrt.token_usage", "lead"),
        ("TEXT_MESSAGE_END", None),
        ("RUN_FINISHED", None),
    ]


@pytest.mark.parametrize(
    ("payload", "result", "published"),
    [
        ("approve", "published", ["Paris"]),
        ({"decision": "reject", "reason": "not yet"}, "rejected by the user: not yet", []),
    ],
    ids=["approve", "reject"],
)
async def test_a_confirmation_two_levels_down_is_an_interrupt_answered_by_its_call_id(
    payload: Any, result: str, published: list[str]
) -> None:
    done: list[str] = []
    async with client_of(lambda: publishing_team(done)) as client:
        first = await ag_ui(client, "t", [user("u1", "Publish.")])
        assert sketch(first) == ASKED
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        assert (interrupt["id"], interrupt["toolCallId"], interrupt["reason"]) == (
            "p1",
            "p1",
            CONFIRMATION_REASON,
        )
        assert done == []
        resume = [{"interruptId": "p1", "status": "resolved", "payload": payload}]
        second = await ag_ui(client, "t", [], resume=resume)
        assert sketch(second) == answered(result)
        assert second[-1]["outcome"] == {"type": "success"}
        assert done == published  # the tool ran once, or not at all
        # Nothing waits any more: the same interrupt cannot be answered twice.
        again = await client.post(
            "/ag-ui", json={"threadId": "t", "runId": "r3", "messages": [], "resume": resume}
        )
        assert again.status_code == 422
        assert "no tool call of this thread waits for it" in again.json()["error"]["message"]


async def test_a_thread_asked_again_is_told_the_interrupt_two_levels_down() -> None:
    async with client_of(lambda: publishing_team([])) as client:
        await ag_ui(client, "t", [user("u1", "Publish.")])
        again = await ag_ui(client, "t", [])
    assert [e["type"] for e in again] == ["RUN_STARTED", "RUN_FINISHED"]
    assert [i["id"] for i in again[-1]["outcome"]["interrupts"]] == ["p1"]


def locating_team() -> Agent:
    """lead -> planner -> locator, whose external tool ``locate`` (call ``x1``) the client runs."""
    locator = member(
        "locator", [ToolCall(id="x1", name="locate", arguments={}), "In Lyon."], tools=[LOCATE]
    )
    planner = member(
        "planner", [transfer("t2", "locator", "Where?"), "Plan for Lyon."], sub_agents=[locator]
    )
    return member("lead", [transfer("t1", "planner", "Plan."), "Here is the plan."],
                  sub_agents=[planner])  # fmt: skip


async def test_a_sub_agents_frontend_call_ends_the_run_and_the_clients_result_goes_on() -> None:
    async with client_of(locating_team) as client:
        first = await ag_ui(client, "t", [user("u1", "Plan my day.")])
        assert sketch(first) == [
            ("RUN_STARTED", None),
            ("CUSTOM", "agentrt.team_info", "lead"),
            ("TOOL_CALL_START", None, "t1"),
            ("TOOL_CALL_ARGS", None, "t1"),
            ("CUSTOM", "agentrt.token_usage", "lead"),
            ("TOOL_CALL_END", None, "t1"),
            ("TOOL_CALL_START", "t1", "t2"),
            ("TOOL_CALL_ARGS", "t1", "t2"),
            ("CUSTOM", "agentrt.token_usage", "planner"),
            ("TOOL_CALL_END", "t1", "t2"),
            ("TOOL_CALL_START", "t2", "x1"),
            ("TOOL_CALL_ARGS", "t2", "x1"),
            ("CUSTOM", "agentrt.token_usage", "locator"),
            ("TOOL_CALL_END", "t2", "x1"),
            ("RUN_FINISHED", None),
        ]
        # The call the client runs is the sub-agent's, not the one that delegated.
        assert first[-1]["outcome"]["pendingToolCallIds"] == ["x1"]
        result = {"id": "r1", "role": "tool", "toolCallId": "x1", "content": "Lyon"}
        second = await ag_ui(client, "t", [result])
        # The client holds its own result: no TOOL_CALL_RESULT repeats it.
        assert sketch(second) == [
            ("RUN_STARTED", None),
            ("CUSTOM", "agentrt.team_info", "lead"),
            ("TEXT_MESSAGE_START", "t2", "locator"),
            ("TEXT_MESSAGE_CONTENT", "t2", "In Lyon."),
            ("CUSTOM", "agentrt.token_usage", "locator"),
            ("TEXT_MESSAGE_END", "t2"),
            ("TOOL_CALL_RESULT", "t1", "t2", "In Lyon."),
            ("TEXT_MESSAGE_START", "t1", "planner"),
            ("TEXT_MESSAGE_CONTENT", "t1", "Plan for Lyon."),
            ("CUSTOM", "agentrt.token_usage", "planner"),
            ("TEXT_MESSAGE_END", "t1"),
            ("TOOL_CALL_RESULT", None, "t1", "Plan for Lyon."),
            ("TEXT_MESSAGE_START", None, None),
            ("TEXT_MESSAGE_CONTENT", None, "Here is the plan."),
            ("CUSTOM", "agentrt.token_usage", "lead"),
            ("TEXT_MESSAGE_END", None),
            ("RUN_FINISHED", None),
        ]
        assert second[-1]["outcome"] == {"type": "success"}
        assert story_of_ag_ui(second)[-1] == ("text", "Here is the plan.")
