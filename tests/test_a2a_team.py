"""A team served over A2A: a sub-agent's confirmation two levels down makes the task
``INPUT_REQUIRED`` with the call's id in its data part, and the next message on the task
answers it by that id (``{"decisions": {call id: decision}}``); the task's updates keep
each event's attribution (``agent_name``, ``parent_tool_call_id``).
"""

from typing import Any

import pytest
from a2a.helpers import get_data_parts, new_data_part

from tests.server_support import real_server
from tests.test_a2a_server import (
    BINDINGS,
    a2a_client,
    artifact_text,
    kinds,
    status_data,
    stream,
    the_task,
    user,
)
from tests.test_team_stream import publishing_team


def told(data: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The events the status messages told: type, agent, the run they are of, the call."""
    return [
        (
            d["type"],
            d.get("agent_name"),
            d.get("parent_tool_call_id"),
            d.get("tool_call", {}).get("id"),
            d.get("response", d.get("content")),
        )
        for d in data
        if d["type"] != "team_info"
    ]


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize(
    ("decision", "result", "published"),
    [
        ("approve", "published", ["Paris"]),
        ({"decision": "reject", "reason": "not yet"}, "rejected by the user: not yet", []),
    ],
    ids=["approve", "reject"],
)
async def test_a_confirmation_two_levels_down_is_answered_by_its_call_id_on_the_task(
    binding: str, decision: Any, result: str, published: list[str]
) -> None:
    done: list[str] = []
    async with (
        real_server(lambda: publishing_team(done)) as (server, _),
        a2a_client(server, binding) as a2a,
    ):
        asked = await stream(a2a, user("Publish."))
        assert kinds(asked)[-1] == "status TASK_STATE_INPUT_REQUIRED"
        assert told(status_data(asked)) == [
            ("tool_call", "lead", None, "t1", None),
            ("tool_call", "researcher", "t1", "t2", None),
            # The checker's call is the question itself (below).
            ("tool_call_confirmation", None, None, None, None),
        ]
        question = asked[-1].status_update.status.message
        assert get_data_parts(question.parts)[0]["pending"] == [
            {
                "toolCallId": "p1",
                "name": "publish",
                "arguments": '{"text": "Paris"}',
                "agentName": "checker",
                "parentToolCallId": "t2",
            }
        ]
        assert done == []
        task = the_task(asked)
        answer = user(task=task, parts=[new_data_part({"decisions": {"p1": decision}})])
        rest = await stream(a2a, answer)
    assert kinds(rest)[0] == "task TASK_STATE_WORKING"
    assert kinds(rest)[-1] == "status TASK_STATE_COMPLETED"
    assert told(status_data(rest)) == [
        ("tool_call", "checker", "t2", "p1", None),
        ("tool_call_response", "checker", "t2", "p1", result),
        ("agent_choice", "checker", "t2", None, "Done."),
        ("tool_call_response", "researcher", "t1", "t2", "Done."),
        ("agent_choice", "researcher", "t1", None, "Ok."),
        ("tool_call_response", "lead", None, "t1", "Ok."),
    ]
    # The lead's text is the task's answer; the sub-agents' are status messages.
    artifacts = {
        r.artifact_update.artifact.artifact_id for r in rest if r.HasField("artifact_update")
    }
    assert (artifacts, artifact_text(rest, "text-1")) == ({"text-1"}, "Published.")
    assert done == published  # the tool ran once, or not at all
