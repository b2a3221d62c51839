"""A durable team run survives ``kill -9`` inside a sub-agent: the library's DurableAgent.

A team (tests/durable/team_support.py) runs in a process of its own on SQLite or
Postgres; the process is killed while a sub-agent's tool runs and started again with the
same executor id. The run goes on from there: every model and tool call that completed,
at any depth, is replayed from the store, not made again (each writes a line per real
call to a file), and the call cut off runs again.
"""

from __future__ import annotations

import pytest

from .conftest import Crashable

pytestmark = pytest.mark.durable

APP = "tests.durable.team_app"


def _killed_in_slow(crashable: Crashable, scenario: str) -> None:
    crashable.app = APP
    first = crashable.start("run", block=True, run_id=scenario)
    crashable.wait_for("slow.started", first)
    crashable.kill(first)


def test_a_team_run_killed_in_a_sub_agents_tool_goes_on_and_no_completed_step_runs_again(
    crashable: Crashable,
) -> None:
    _killed_in_slow(crashable, "delegate")

    output = crashable.finish("recover", run_id="delegate")

    assert output == "lead: researcher: first done (1); slow done (3)"
    # The lead's delegating answer and the researcher's two answers were recorded: only
    # the answers after the cut-off call are asked for (the researcher's last, the lead's).
    assert crashable.lines("model.lead.count") == ["0", "1"]
    assert crashable.lines("model.researcher.count") == ["0", "1", "2"]
    # The sub-agent's completed tool call never runs again; the cut-off one does, with
    # the same call id.
    assert crashable.lines("first.count") == ["1"]
    assert crashable.lines("slow.started") == ["call-slow-r", "call-slow-r"]


def test_a_run_killed_two_levels_down_goes_on_and_no_completed_step_at_any_depth_runs_again(
    crashable: Crashable,
) -> None:
    _killed_in_slow(crashable, "deep")

    output = crashable.finish("recover", run_id="deep")

    assert output == "lead: researcher: first done (1); checker: first done (6); slow done (7)"
    assert crashable.lines("model.lead.count") == ["0", "1"]
    assert crashable.lines("model.researcher.count") == ["0", "1", "2"]
    assert crashable.lines("model.checker.count") == ["0", "1", "2"]
    assert crashable.lines("first.count") == ["1", "6"]
    assert crashable.lines("slow.started") == ["call-slow-c", "call-slow-c"]


def test_two_delegations_of_one_turn_replay_in_their_order_after_a_kill_in_the_second(
    crashable: Crashable,
) -> None:
    _killed_in_slow(crashable, "parallel")

    output = crashable.finish("recover", run_id="parallel")

    assert output == ("lead: writer: first done (2); researcher: first done (1); slow done (3)")
    # The writer's whole run was recorded before the researcher's began: none of it
    # runs again.
    assert crashable.lines("model.writer.count") == ["0", "1"]
    assert crashable.lines("model.researcher.count") == ["0", "1", "2"]
    assert crashable.lines("model.lead.count") == ["0", "2"]
    assert sorted(crashable.lines("first.count")) == ["1", "2"]
    assert crashable.lines("slow.started") == ["call-slow-r", "call-slow-r"]


def test_a_hand_off_survives_a_kill_and_the_next_message_goes_to_the_agent_handed_to(
    crashable: Crashable,
) -> None:
    _killed_in_slow(crashable, "billing please")

    output = crashable.finish("recover", run_id="billing please")

    assert output == "billing: slow done (4)"
    assert crashable.lines("model.lead.count") == ["0"]
    assert crashable.lines("model.billing.count") == ["0", "1"]
    assert crashable.lines("slow.started") == ["call-slow-b", "call-slow-b"]
    # Another process continues the conversation the store recorded: billing speaks.
    assert crashable.finish("next", run_id="billing please") == "billing: first done (5)"
    assert crashable.lines("model.lead.count") == ["0"]


def test_a_team_run_waiting_on_a_sub_agents_call_is_answered_by_another_process(
    crashable: Crashable,
) -> None:
    crashable.app = APP
    first = crashable.start("wait", block=True)
    crashable.wait_for("waiting", first)
    crashable.kill(first)

    # A fresh process, under another executor id: the waiting sub-agent is in the store.
    output = crashable.finish("answer", executor="worker-2")

    assert output == "lead: researcher: deleted a.txt"
    # The run waits on the sub-agent's own call, named as it is.
    assert crashable.lines("waiting") == ["call-delete-r"]
    assert crashable.lines("delete.count") == ["a.txt"]
    # Each agent's answer before the wait is not asked for again.
    assert crashable.lines("model.lead.count") == ["0", "1"]
    assert crashable.lines("model.researcher.count") == ["0", "1"]


def test_an_answer_to_a_sub_agents_call_killed_in_that_call_completes_after_restart(
    crashable: Crashable,
) -> None:
    crashable.app = APP
    assert crashable.finish("wait") == "call-delete-r"
    second = crashable.start("answer", executor="worker-2", block_charge=True)
    crashable.wait_for("delete.started", second)
    crashable.kill(second)

    # worker-2 starts again and recovers the continuation, the waiting sub-agent with it.
    output = crashable.finish("recover", executor="worker-2", run_id="run-1.answer")

    assert output == "lead: researcher: deleted a.txt"
    assert crashable.lines("delete.started") == ["a.txt"]
    assert crashable.lines("delete.count") == ["a.txt"]
    assert crashable.lines("model.lead.count") == ["0", "1"]
    assert crashable.lines("model.researcher.count") == ["0", "1"]
