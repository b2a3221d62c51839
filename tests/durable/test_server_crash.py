"""``agentrt serve`` on a durable store survives ``kill -9``: real server processes, real HTTP.

A server is killed in the middle of a run and started again on the same store with the
same executor id: the run completes, a completed tool call is not executed again, and a
client that resumes with ``after=`` (or ``Last-Event-ID``) gets exactly the events it has
not seen, in one numbering, as one valid stream.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import httpx
import pytest

from agentrt.server._runlog import ABANDONED
from agentrt.stream.codec import SequencedEvent
from agentrt.stream.events import AgentChoiceEvent, ErrorEvent, ToolCallEvent
from agentrt.stream.validate import validate

from .conftest import ServerProcess, Servers, read_events

pytestmark = pytest.mark.durable

TIMEOUT = httpx.Timeout(60.0)
SERVED = "tests.durable.server_app:make"


def _types(events: list[SequencedEvent]) -> list[str]:
    return [event.type for _, event in events]


def _is_call_of(name: str) -> Callable[[SequencedEvent], bool]:
    def check(item: SequencedEvent) -> bool:
        event = item.event
        return isinstance(event, ToolCallEvent) and event.tool_call.function.name == name

    return check


def _answer(events: list[SequencedEvent]) -> str:
    return "".join(e.content for _, e in events if isinstance(e, AgentChoiceEvent))


def _check_one_numbering(seen: list[SequencedEvent], rest: list[SequencedEvent]) -> None:
    events = seen + rest
    assert [sequence for sequence, _ in events] == list(range(1, len(events) + 1))
    assert validate([event for _, event in events]) == []


def _run_until(
    servers: Servers,
    message: str,
    until: Callable[[SequencedEvent], bool],
    *,
    block: bool = False,
    app_version: str | None = None,
    target: str = SERVED,
) -> tuple[ServerProcess, str, list[SequencedEvent]]:
    """A server ``exec-a`` (serving ``target``) running ``message`` in a new session: the
    server, the session's id, and the events its client read up to the first ``until``
    accepts."""
    first = servers.start("exec-a", block=block, app_version=app_version, target=target)
    with httpx.Client(base_url=first.url, timeout=TIMEOUT) as client:
        session = client.post("/sessions").json()["id"]
        seen = read_events(
            client, "POST", f"/sessions/{session}/messages", json={"message": message}, until=until
        )
    return first, session, seen


def _in_the_slow_tool(
    servers: Servers,
    *,
    message: str = "tools",
    app_version: str | None = None,
    target: str = SERVED,
) -> tuple[ServerProcess, str, list[SequencedEvent]]:
    """A server ``exec-a`` (serving ``target``) whose run of ``message`` is held in the
    slow tool: the server, the session's id, and the events its client read up to that
    call."""
    found = _run_until(
        servers, message, _is_call_of("slow"), block=True, app_version=app_version, target=target
    )
    servers.wait_for("slow.started")
    return found


def _killed_in_the_slow_tool(
    servers: Servers, *, app_version: str | None = None
) -> tuple[str, list[SequencedEvent]]:
    """A server ``exec-a`` killed while its run is in the slow tool: the session's id,
    and the events its client read up to that call."""
    first, session, seen = _in_the_slow_tool(servers, app_version=app_version)
    servers.kill(first)
    return session, seen


def _killed_asking_to_confirm(
    servers: Servers, *, message: str = "confirm", target: str = SERVED
) -> tuple[str, list[SequencedEvent]]:
    """A server ``exec-a`` (serving ``target``) killed while its run of ``message`` waits
    for a confirmation: the session's id, and the events its client read up to it."""
    first, session, seen = _run_until(
        servers, message, lambda item: item.event.type == "tool_call_confirmation", target=target
    )
    servers.kill(first)
    return session, seen


def test_a_server_killed_in_a_slow_tool_finishes_the_run_after_restart(
    sqlite_servers: Servers,
) -> None:
    servers = sqlite_servers
    session, seen = _killed_in_the_slow_tool(servers)

    second = servers.start("exec-a")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        rest = read_events(client, "GET", f"/sessions/{session}/events?after={seen[-1][0]}")
        whole = read_events(client, "GET", f"/sessions/{session}/events?after=0")
        messages = client.get(f"/sessions/{session}/messages").json()["messages"]

    _check_one_numbering(seen, rest)
    assert whole == seen + rest  # what the first client read is what the store keeps
    assert _types(seen) == [
        "user_message",
        "stream_started",
        "partial_tool_call",
        "token_usage",
        "tool_call",
        "tool_call_response",
        "partial_tool_call",
        "token_usage",
        "tool_call",
    ]
    assert _types(rest) == [
        "tool_call_response",
        *["agent_choice"] * 6,
        "token_usage",
        "stream_stopped",
    ]
    assert _answer(rest) == "all done: first done (1); slow done (3)"
    # The completed tool call is never executed again; the interrupted one runs again
    # with the same tool-call id.
    assert servers.lines("first.count") == ["1"]
    assert servers.lines("slow.started") == ["call-slow-1", "call-slow-1"]
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_a_recovered_run_keeps_every_field_of_its_messages_as_an_uninterrupted_one(
    sqlite_servers: Servers,
) -> None:
    servers = sqlite_servers
    first, crashed, _ = _in_the_slow_tool(servers, message="reasoned")
    servers.kill(first)

    second = servers.start("exec-a")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        read_events(client, "GET", f"/sessions/{crashed}/events?after=0")
        recovered = client.get(f"/sessions/{crashed}/messages").json()["messages"]
        # The same run, never interrupted (this process's slow tool does not block).
        whole = client.post("/sessions").json()["id"]
        read_events(client, "POST", f"/sessions/{whole}/messages", json={"message": "reasoned"})
        uninterrupted = client.get(f"/sessions/{whole}/messages").json()["messages"]

    assert recovered == uninterrupted
    # The answers streamed before the crash (replayed from the store) kept their reasoning.
    assert [m["reasoning"] for m in recovered if m["role"] == "assistant"] == [
        "after 0 tool results, the plan says what comes next",
        "after 1 tool results, the plan says what comes next",
        "after 2 tool results, the plan says what comes next",
    ]


def test_ctrl_c_stops_a_durable_server_with_one_line_of_ours_and_the_next_start_recovers(
    sqlite_servers: Servers,
) -> None:
    servers = sqlite_servers
    first, session, seen = _in_the_slow_tool(servers)
    first.process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    assert first.process.wait(timeout=60) == 0
    log = first.log_text()
    shutdown = log[log.index("Waiting for application shutdown.") :].splitlines()[1:]
    assert shutdown == [
        "stopped: 1 run in flight stays in the store; the next start with executor id "
        "'exec-a' (--executor-id exec-a) recovers it",
        "INFO:     Application shutdown complete.",
        f"INFO:     Finished server process [{first.process.pid}]",
    ]
    assert "dbos" not in log

    second = servers.start("exec-a")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        rest = read_events(client, "GET", f"/sessions/{session}/events?after={seen[-1][0]}")
    _check_one_numbering(seen, rest)
    assert _answer(rest) == "all done: first done (1); slow done (3)"


def test_a_run_waiting_for_a_confirmation_survives_a_restart_and_the_tool_runs_once(
    sqlite_servers: Servers,
) -> None:
    servers = sqlite_servers
    session, seen = _killed_asking_to_confirm(servers)

    second = servers.start("exec-a")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        answered = client.post(
            f"/sessions/{session}/confirmations/call-delete-1", json={"decision": "approve"}
        )
        again = client.post(
            f"/sessions/{session}/confirmations/call-delete-1", json={"decision": "reject"}
        )
        rest = read_events(
            client,
            "GET",
            f"/sessions/{session}/events",
            headers={"Last-Event-ID": str(seen[-1][0])},
        )

    assert answered.status_code == 200
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_answered"
    _check_one_numbering(seen, rest)
    assert _types(seen)[-1] == "tool_call_confirmation"
    assert _types(rest) == [
        "tool_call",
        "tool_call_response",
        *["agent_choice"] * 4,
        "token_usage",
        "stream_stopped",
    ]
    assert _answer(rest) == "all done: deleted notes.txt"
    assert servers.lines("delete.count") == ["notes.txt"]


def test_a_cancelled_server_run_is_not_recovered_after_a_restart(
    sqlite_servers: Servers,
) -> None:
    servers = sqlite_servers
    first = servers.start("exec-a", block=True)
    with httpx.Client(base_url=first.url, timeout=TIMEOUT) as client:
        session = client.post("/sessions").json()["id"]
        seen = read_events(
            client,
            "POST",
            f"/sessions/{session}/messages",
            json={"message": "tools"},
            until=_is_call_of("slow"),
        )
        servers.wait_for("slow.started")
        assert client.delete(f"/sessions/{session}/run").status_code == 202
        ended = read_events(client, "GET", f"/sessions/{session}/events?after={seen[-1][0]}")
    servers.kill(first)

    second = servers.start("exec-a")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        whole = read_events(client, "GET", f"/sessions/{session}/events?after=0")
        # The session takes its next message: nothing is left running.
        next_run = read_events(
            client, "POST", f"/sessions/{session}/messages", json={"message": "long 3"}
        )

    _check_one_numbering(seen, ended)
    assert _types(ended) == ["tool_call_response", "error", "stream_stopped"]
    error = ended[-2].event
    assert isinstance(error, ErrorEvent)
    assert error.error.startswith("cancelled: DELETE /sessions/{id}/run")
    assert whole == seen + ended
    assert servers.lines("slow.started") == ["call-slow-1"]
    assert _types(next_run)[-1] == "stream_stopped"
    assert next_run[0][0] == whole[-1][0] + 1


def test_a_run_of_code_that_has_changed_since_is_closed_with_an_error_that_says_so(
    sqlite_servers: Servers,
) -> None:
    # DBOS recovers a workflow only with the code that started it: a run cut off by a
    # crash, then a deployment of other code, must end rather than wait for ever.
    servers = sqlite_servers
    session, seen = _killed_in_the_slow_tool(servers, app_version="v1")

    second = servers.start("exec-a", app_version="v2")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        rest = read_events(client, "GET", f"/sessions/{session}/events?after={seen[-1][0]}")
        next_run = read_events(
            client, "POST", f"/sessions/{session}/messages", json={"message": "long 3"}
        )

    _check_one_numbering(seen, rest)
    assert _types(rest) == ["error", "stream_stopped"]
    error = rest[0].event
    assert isinstance(error, ErrorEvent)
    assert error.error == (
        "the server stopped before this run could finish, and its code has changed "
        "since: the run is not recovered"
    )
    # The slow tool never ran again, and the session takes its next message.
    assert servers.lines("slow.started") == ["call-slow-1"]
    assert _types(next_run)[-1] == "stream_stopped"
    assert next_run[0][0] == rest[-1][0] + 1


def test_an_answer_cut_off_mid_stream_is_made_again_after_an_error_that_says_so(
    sqlite_servers: Servers,
) -> None:
    servers = sqlite_servers
    first = servers.start("exec-a", block=True)
    with httpx.Client(base_url=first.url, timeout=TIMEOUT) as client:
        session = client.post("/sessions").json()["id"]
        seen = read_events(
            client,
            "POST",
            f"/sessions/{session}/messages",
            json={"message": "long 40"},
            until=lambda item: item.event.type == "agent_choice",
        )
    servers.wait_for("stream.started")
    servers.kill(first)

    second = servers.start("exec-a")
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        rest = read_events(client, "GET", f"/sessions/{session}/events?after={seen[-1][0]}")

    _check_one_numbering(seen, rest)
    events = seen + rest
    errors = [n for n, (_, event) in enumerate(events) if isinstance(event, ErrorEvent)]
    assert len(errors) == 1
    notice = events[errors[0]].event
    assert isinstance(notice, ErrorEvent)
    assert notice.error == ABANDONED
    answer = "".join(f"d{index} " for index in range(40))
    # The cut-off call's deltas stay where they were, marked abandoned; the new call's
    # deltas follow, whole: the two are never mixed into one answer.
    abandoned = _answer(events[: errors[0]])
    assert abandoned
    assert answer.startswith(abandoned)
    assert _answer(events[errors[0] :]) == answer
    assert _types(events[errors[0] :])[-2:] == ["token_usage", "stream_stopped"]
    assert servers.lines("stream.started") == ["20"]
