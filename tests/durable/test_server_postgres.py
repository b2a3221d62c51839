"""Two ``agentrt serve`` processes on one Postgres database serve the same sessions.

A session created through process A is streamed, confirmed, resumed, read and cancelled
through process B, in one event numbering; A is killed mid-run and started again with
its executor id: it recovers the run, which finishes, and B's stream shows it.
"""

from __future__ import annotations

import httpx
import pytest

from agentrt.stream.codec import SequencedEvent
from agentrt.stream.events import ErrorEvent, ToolCallEvent
from agentrt.stream.validate import validate

from .conftest import Servers, read_events

pytestmark = pytest.mark.durable

TIMEOUT = httpx.Timeout(60.0)


def _types(events: list[SequencedEvent]) -> list[str]:
    return [event.type for _, event in events]


def _slow_called(item: SequencedEvent) -> bool:
    event = item.event
    return isinstance(event, ToolCallEvent) and event.tool_call.function.name == "slow"


def test_two_servers_on_postgres_serve_one_session_and_a_killed_one_recovers_its_run(
    postgres_servers: Servers,
) -> None:
    servers = postgres_servers
    a = servers.start("exec-a", block=True)
    b = servers.start("exec-b")
    with httpx.Client(base_url=b.url, timeout=TIMEOUT) as on_b:
        with httpx.Client(base_url=a.url, timeout=TIMEOUT) as on_a:
            session = on_a.post("/sessions").json()["id"]
            # The run starts on A (A runs it); its client leaves at once.
            started = read_events(
                on_a,
                "POST",
                f"/sessions/{session}/messages",
                json={"message": "all"},
                until=lambda item: item.event.type == "stream_started",
            )
        # B streams A's run, and answers its confirmation.
        seen = read_events(
            on_b,
            "GET",
            f"/sessions/{session}/events",
            until=lambda item: item.event.type == "tool_call_confirmation",
        )
        answered = on_b.post(
            f"/sessions/{session}/confirmations/call-delete-1", json={"decision": "approve"}
        )
        # B resumes with Last-Event-ID up to the slow tool, which A runs and hangs in.
        seen += read_events(
            on_b,
            "GET",
            f"/sessions/{session}/events",
            headers={"Last-Event-ID": str(seen[-1][0])},
            until=_slow_called,
        )
        servers.wait_for("slow.started")
        servers.kill(a)
        servers.start("exec-a")  # A again: it recovers its run
        rest = read_events(
            on_b,
            "GET",
            f"/sessions/{session}/events",
            headers={"Last-Event-ID": str(seen[-1][0])},
        )
        messages = on_b.get(f"/sessions/{session}/messages").json()["messages"]

        # A second run, started on B this time, waits for its confirmation; B cancels it.
        waiting = read_events(
            on_b,
            "POST",
            f"/sessions/{session}/messages",
            json={"message": "confirm"},
            until=lambda item: item.event.type == "tool_call_confirmation",
        )
        cancelled = on_b.delete(f"/sessions/{session}/run")
        ended = read_events(on_b, "GET", f"/sessions/{session}/events?after={waiting[-1][0]}")

    assert started == seen[: len(started)]
    assert answered.status_code == 200
    events = seen + rest
    assert [sequence for sequence, _ in events] == list(range(1, len(events) + 1))
    assert validate([event for _, event in events]) == []
    assert _types(rest) == [
        "tool_call_response",
        *["agent_choice"] * 9,
        "token_usage",
        "stream_stopped",
    ]
    assert servers.lines("first.count") == ["1"]
    assert servers.lines("delete.count") == ["notes.txt"]
    assert servers.lines("slow.started") == ["call-slow-1", "call-slow-1"]
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]

    assert waiting[0][0] == events[-1][0] + 1  # one numbering across the runs
    assert cancelled.status_code == 202
    # The call that waited is answered as cancelled, and the tool never ran.
    assert _types(ended) == ["tool_call", "tool_call_response", "error", "stream_stopped"]
    error = ended[2].event
    assert isinstance(error, ErrorEvent)
    assert error.error.startswith("cancelled: DELETE /sessions/{id}/run")
    assert servers.lines("delete.count") == ["notes.txt"]
