"""A team served by ``agentrt serve`` on a durable store survives ``kill -9`` in a sub-agent.

Real server processes on SQLite or Postgres serve the team of
tests/durable/team_support.py; a server is killed while a sub-agent's tool runs and
started again with the same executor id. The run goes on from there: no completed model
or tool call at any depth is made again, and the session's events continue in one
numbering, without a gap or a duplicate, as one valid stream whose sub-agent events are
attributed to the sub-agent and to the call that delegated to it.
"""

from __future__ import annotations

import httpx
import pytest

from agentrt.stream.codec import SequencedEvent
from agentrt.stream.events import AgentChoiceEvent, parent_tool_call_id

from .conftest import ServerProcess, Servers, read_events
from .test_server_crash import _check_one_numbering, _in_the_slow_tool, _killed_asking_to_confirm

pytestmark = pytest.mark.durable

TEAM = "tests.durable.team_support:make_team"
TIMEOUT = httpx.Timeout(60.0)


@pytest.fixture(params=["sqlite", "postgres"])
def servers(request: pytest.FixtureRequest) -> Servers:
    found: Servers = request.getfixturevalue(f"{request.param}_servers")
    return found


def _shown(events: list[SequencedEvent]) -> list[tuple[str, str | None, str | None]]:
    """Each event as (type, agent_name, parent_tool_call_id)."""
    return [
        (event.type, getattr(event, "agent_name", None), parent_tool_call_id(event))
        for _, event in events
    ]


def _answer(events: list[SequencedEvent], agent: str) -> str:
    return "".join(
        e.content for _, e in events if isinstance(e, AgentChoiceEvent) and e.agent_name == agent
    )


def _recovered(
    servers: Servers, message: str
) -> tuple[ServerProcess, str, list[SequencedEvent], list[SequencedEvent]]:
    """A server killed while the run of ``message`` is in the slow tool, then started
    again: the new server, the session's id, the events the first client read up to
    that call, and those a client reads after them from the new server, to the run's
    end (checked to be one valid stream in one numbering)."""
    first, session, seen = _in_the_slow_tool(servers, message=message, target=TEAM)
    servers.kill(first)
    second = servers.start("exec-a", target=TEAM)
    rest = _rest(second, session, seen[-1][0])
    _check_one_numbering(seen, rest)
    return second, session, seen, rest


def _rest(server: ServerProcess, session: str, after: int) -> list[SequencedEvent]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        return read_events(client, "GET", f"/sessions/{session}/events?after={after}")


R = ("researcher", "call-research")
W = ("writer", "call-write")
B = ("billing", None)
C = ("researcher", "call-clean")
K = ("checker", "call-check")
LEAD = ("lead", None)
OPENING = [
    ("user_message", None, None),
    ("stream_started", None, None),
    ("team_info", *LEAD),
    ("partial_tool_call", *LEAD),
    ("token_usage", *LEAD),
    ("tool_call", *LEAD),
]
"""A run of the team whose lead makes one call first."""


def test_a_served_team_killed_in_a_sub_agents_tool_goes_on_in_one_numbering(
    servers: Servers,
) -> None:
    second, session, seen, rest = _recovered(servers, "delegate")

    assert _rest(second, session, 0) == seen + rest  # what the store keeps
    assert _shown(seen) == [
        *OPENING,  # its tool_call: transfer_task to the researcher
        ("partial_tool_call", *R),
        ("token_usage", *R),
        ("tool_call", *R),  # first
        ("tool_call_response", *R),
        ("partial_tool_call", *R),
        ("token_usage", *R),
        ("tool_call", *R),  # slow: the first server dies in it
    ]
    assert _shown(rest) == [
        ("tool_call_response", *R),
        ("agent_choice", *R),
        ("token_usage", *R),
        ("tool_call_response", *LEAD),  # transfer_task: the researcher's answer
        ("agent_choice", *LEAD),
        ("token_usage", *LEAD),
        ("stream_stopped", None, None),
    ]
    assert _answer(rest, "lead") == "lead: researcher: first done (1); slow done (3)"
    # Every completed model and tool call, the sub-agent's too, is replayed, not made
    # again; the cut-off call runs again with its call id.
    assert servers.lines("model.lead.count") == ["0", "1"]
    assert servers.lines("model.researcher.count") == ["0", "1", "2"]
    assert servers.lines("first.count") == ["1"]
    assert servers.lines("slow.started") == ["call-slow-r", "call-slow-r"]


def test_a_served_team_killed_two_levels_down_goes_on_in_one_numbering(
    servers: Servers,
) -> None:
    _, _, seen, rest = _recovered(servers, "deep")

    assert _shown(seen) == [
        *OPENING,  # its tool_call: transfer_task to the researcher
        ("partial_tool_call", *R),
        ("token_usage", *R),
        ("tool_call", *R),  # first
        ("tool_call_response", *R),
        ("partial_tool_call", *R),
        ("token_usage", *R),
        ("tool_call", *R),  # transfer_task to the checker
        ("partial_tool_call", *K),
        ("token_usage", *K),
        ("tool_call", *K),  # first
        ("tool_call_response", *K),
        ("partial_tool_call", *K),
        ("token_usage", *K),
        ("tool_call", *K),  # slow: the first server dies in it
    ]
    assert _shown(rest) == [
        ("tool_call_response", *K),
        ("agent_choice", *K),
        ("token_usage", *K),
        ("tool_call_response", *R),
        ("agent_choice", *R),
        ("token_usage", *R),
        ("tool_call_response", *LEAD),
        ("agent_choice", *LEAD),
        ("token_usage", *LEAD),
        ("stream_stopped", None, None),
    ]
    assert _answer(rest, "lead") == (
        "lead: researcher: first done (1); checker: first done (6); slow done (7)"
    )
    assert servers.lines("model.lead.count") == ["0", "1"]
    assert servers.lines("model.researcher.count") == ["0", "1", "2"]
    assert servers.lines("model.checker.count") == ["0", "1", "2"]
    assert servers.lines("first.count") == ["1", "6"]
    assert servers.lines("slow.started") == ["call-slow-c", "call-slow-c"]


def test_a_served_team_killed_in_the_second_of_two_delegations_goes_on_in_one_numbering(
    servers: Servers,
) -> None:
    _, _, seen, rest = _recovered(servers, "parallel")

    assert _shown(seen) == [
        ("user_message", None, None),
        ("stream_started", None, None),
        ("team_info", *LEAD),
        ("partial_tool_call", *LEAD),
        ("partial_tool_call", *LEAD),
        ("token_usage", *LEAD),
        ("tool_call", *LEAD),  # transfer_task to the writer
        ("partial_tool_call", *W),
        ("tool_call", *LEAD),  # transfer_task to the researcher: it waits its turn
        ("token_usage", *W),
        ("tool_call", *W),
        ("tool_call_response", *W),
        ("agent_choice", *W),
        ("token_usage", *W),
        ("partial_tool_call", *R),
        ("token_usage", *R),
        ("tool_call", *R),
        ("tool_call_response", *R),
        ("partial_tool_call", *R),
        ("token_usage", *R),
        ("tool_call", *R),  # slow: the first server dies in it
    ]
    assert _shown(rest) == [
        ("tool_call_response", *R),
        ("agent_choice", *R),
        ("token_usage", *R),
        ("tool_call_response", *LEAD),
        ("tool_call_response", *LEAD),
        ("agent_choice", *LEAD),
        ("token_usage", *LEAD),
        ("stream_stopped", None, None),
    ]
    assert _answer(rest, "lead") == (
        "lead: writer: first done (2); researcher: first done (1); slow done (3)"
    )
    assert servers.lines("model.lead.count") == ["0", "2"]
    assert servers.lines("model.writer.count") == ["0", "1"]
    assert servers.lines("model.researcher.count") == ["0", "1", "2"]
    assert sorted(servers.lines("first.count")) == ["1", "2"]
    assert servers.lines("slow.started") == ["call-slow-r", "call-slow-r"]


def test_a_served_hand_off_survives_kills_and_the_next_message_goes_to_the_agent_handed_to(
    servers: Servers,
) -> None:
    second, session, seen, rest = _recovered(servers, "billing please")

    assert _shown(seen) == [
        *OPENING,  # its tool_call: handoff
        ("tool_call_response", *LEAD),
        ("agent_switching", *B),
        ("partial_tool_call", *B),
        ("token_usage", *B),
        ("tool_call", *B),  # slow: the first server dies in it
    ]
    assert _shown(rest) == [
        ("tool_call_response", *B),
        ("agent_choice", *B),
        ("token_usage", *B),
        ("stream_stopped", None, None),
    ]
    assert _answer(rest, "billing") == "billing: slow done (4)"
    # A third process, which loads the session from the store, serves the next message.
    servers.kill(second)
    third = servers.start("exec-a", target=TEAM)
    with httpx.Client(base_url=third.url, timeout=TIMEOUT) as client:
        after = read_events(
            client, "POST", f"/sessions/{session}/messages", json={"message": "and now?"}
        )
    assert _shown(after) == [
        ("user_message", None, None),
        ("stream_started", None, None),
        ("team_info", *B),
        ("partial_tool_call", *B),
        ("token_usage", *B),
        ("tool_call", *B),
        ("tool_call_response", *B),
        ("agent_choice", *B),
        ("token_usage", *B),
        ("stream_stopped", None, None),
    ]
    assert _answer(after, "billing") == "billing: first done (5)"
    assert servers.lines("model.lead.count") == ["0"]
    assert servers.lines("model.billing.count") == ["0", "1", "0", "1"]
    assert servers.lines("slow.started") == ["call-slow-b", "call-slow-b"]


def test_a_confirmation_asked_by_a_sub_agent_is_answered_after_a_kill_and_its_tool_runs_once(
    servers: Servers,
) -> None:
    session, seen = _killed_asking_to_confirm(servers, message="clean up", target=TEAM)

    second = servers.start("exec-a", target=TEAM)
    with httpx.Client(base_url=second.url, timeout=TIMEOUT) as client:
        answered = client.post(
            f"/sessions/{session}/confirmations/call-delete-r", json={"decision": "approve"}
        )
        rest = read_events(client, "GET", f"/sessions/{session}/events?after={seen[-1][0]}")

    assert answered.status_code == 200
    _check_one_numbering(seen, rest)
    assert _shown(seen) == [
        *OPENING,  # its tool_call: transfer_task to the researcher
        ("partial_tool_call", *C),
        ("token_usage", *C),
        # Asked in the top stream, attributed to the sub-agent and its delegation.
        ("tool_call_confirmation", *C),
    ]
    assert _shown(rest) == [
        ("tool_call", *C),
        ("tool_call_response", *C),
        ("agent_choice", *C),
        ("token_usage", *C),
        ("tool_call_response", *LEAD),
        ("agent_choice", *LEAD),
        ("token_usage", *LEAD),
        ("stream_stopped", None, None),
    ]
    assert _answer(rest, "lead") == "lead: researcher: deleted a.txt"
    assert servers.lines("delete.count") == ["a.txt"]
    assert servers.lines("model.lead.count") == ["0", "1"]
    assert servers.lines("model.researcher.count") == ["0", "1"]
