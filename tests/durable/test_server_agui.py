"""AG-UI threads on a durable server, in real processes: kept in the store like any session.

A frontend tool's call ends the agent's run *waiting* (nothing waits in memory), and so
does a call that waits for approval: a server killed with SIGKILL between the call and
the client's answer, and started again, goes on with the answer; on Postgres, the run
that ended waiting on process A is continued by the client's next request through
process B. A sub-agent's call that waits for approval is asked and resumed by its id
across a kill the same way. Each next request carries only the client's new message, as
clients that send what is new do: a thread that was not in the store would be gone.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from agentrt.server.agui import thread_session_id

from .conftest import STREAM_LIMIT, Servers

pytestmark = pytest.mark.durable

COLOR_TOOL = {
    "name": "change_color",
    "description": "Change the page's color.",
    "parameters": {"type": "object", "properties": {"color": {"type": "string"}}},
}


def _run(client: httpx.Client, url: str, thread: str, **body: Any) -> list[dict[str, Any]]:
    """One AG-UI run: the events of its stream, to its end (within STREAM_LIMIT)."""
    payload = {
        "threadId": thread,
        "runId": f"run-{time.monotonic_ns()}",
        "state": {},
        "messages": [],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **body,
    }
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + STREAM_LIMIT
    with client.stream("POST", f"{url}/ag-ui", json=payload) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            assert time.monotonic() < deadline, f"the AG-UI run did not end: {events}"
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def _user(message_id: str, content: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": content}


def test_a_frontend_tool_call_survives_kill_9_before_its_result(
    sqlite_servers: Servers,
) -> None:
    first = sqlite_servers.start("exec-a")
    with httpx.Client(timeout=STREAM_LIMIT) as client:
        asked = _run(
            client, first.url, "thread-1", messages=[_user("u1", "color")], tools=[COLOR_TOOL]
        )
        finished = asked[-1]
        assert finished["type"] == "RUN_FINISHED"
        assert finished["outcome"]["pendingToolCallIds"] == ["call-color-1"]
        sqlite_servers.kill(first)

        second = sqlite_servers.start("exec-a")
        result = {"id": "r1", "role": "tool", "toolCallId": "call-color-1", "content": "teal"}
        answered = _run(client, second.url, "thread-1", messages=[result], tools=[COLOR_TOOL])
        session = thread_session_id("thread-1")
        stored = client.get(f"{second.url}/sessions/{session}/messages").json()["messages"]

    assert [answered[0]["type"], answered[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"]
    assert answered[-1]["outcome"] == {"type": "success"}
    assert _text(answered) == "all done: teal"
    assert [(m["role"], m.get("content")) for m in stored] == [
        ("user", "color"),
        ("assistant", ""),
        ("tool", "teal"),
        ("assistant", "all done: teal"),
    ]


def test_an_ag_ui_thread_waiting_on_one_process_is_continued_through_another(
    postgres_servers: Servers,
) -> None:
    a = postgres_servers.start("exec-a")
    b = postgres_servers.start("exec-b")
    with httpx.Client(timeout=STREAM_LIMIT) as client:
        # A frontend tool: asked through A, answered through B.
        asked = _run(client, a.url, "t", messages=[_user("u1", "color")], tools=[COLOR_TOOL])
        (call_id,) = asked[-1]["outcome"]["pendingToolCallIds"]
        result = {"id": "r1", "role": "tool", "toolCallId": call_id, "content": "teal"}
        answered = _run(client, b.url, "t", messages=[result], tools=[COLOR_TOOL])
        # A confirmation: the interrupt from B, resumed through A; the tool runs once.
        interrupted = _run(client, b.url, "t", messages=[_user("u2", "confirm")])
        (interrupt,) = interrupted[-1]["outcome"]["interrupts"]
        resumed = _run(
            client,
            a.url,
            "t",
            resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": "approve"}],
        )

    assert _text(answered) == "all done: teal"
    assert answered[-1]["outcome"] == {"type": "success"}
    assert interrupt["reason"] == "tool_call_confirmation"
    assert _text(resumed) == "all done: deleted notes.txt"
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert postgres_servers.lines("delete.count") == ["notes.txt"]


def test_a_sub_agents_interrupt_survives_kill_9_and_its_resume_runs_the_tool_once(
    sqlite_servers: Servers,
) -> None:
    team = "tests.durable.team_support:make_team"
    first = sqlite_servers.start("exec-a", target=team)
    with httpx.Client(timeout=STREAM_LIMIT) as client:
        asked = _run(client, first.url, "thread-1", messages=[_user("u1", "clean up")])
        sqlite_servers.kill(first)
        second = sqlite_servers.start("exec-a", target=team)
        resume = [{"interruptId": "call-delete-r", "status": "resolved", "payload": "approve"}]
        answered = _run(client, second.url, "thread-1", resume=resume)

    # Asked about the researcher's call (under the lead's delegation), by its id.
    (interrupt,) = asked[-1]["outcome"]["interrupts"]
    assert (interrupt["id"], interrupt["toolCallId"]) == ("call-delete-r", "call-delete-r")
    assert [
        (e["type"], e.get("subagentRunId"))
        for e in asked
        if e.get("toolCallId") == "call-delete-r"
    ] == [
        ("TOOL_CALL_START", "call-clean"),
        ("TOOL_CALL_ARGS", "call-clean"),
        ("TOOL_CALL_END", "call-clean"),
    ]
    assert [
        (e["toolCallId"], e.get("subagentRunId"), e["content"])
        for e in answered
        if e["type"] == "TOOL_CALL_RESULT"
    ] == [
        ("call-delete-r", "call-clean", "deleted a.txt"),
        ("call-clean", None, "researcher: deleted a.txt"),
    ]
    assert answered[-1]["outcome"] == {"type": "success"}
    assert _text(answered).endswith("lead: researcher: deleted a.txt")
    assert sqlite_servers.lines("delete.count") == ["a.txt"]
