"""A team on a DurableAgent, in one process: each member's calls are steps of the team's run.

What a recovery needs (see tests/durable/test_team_recovery.py for the kills): each
model and tool call of a sub-agent is a step of the top run, named after the sub-agent;
the delegating call is none; two delegations of one turn take turns in the run's
records, and only there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from dbos import DBOS

from agentrt import DEFER, Agent, Approval, ScriptedModel, ToolCall
from agentrt.bus import EventContext
from agentrt.durable import DurableAgent, result
from agentrt.models.base import ModelRequest
from agentrt.server.durable import restore_state, state_of

from .conftest import in_process_store

CALLS: list[str] = []


def note(text: str) -> str:
    """Note a text.

    Args:
        text: What to note.
    """
    CALLS.append(text)
    return f"noted {text}"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with in_process_store(tmp_path_factory, "in-process-team") as url:
        yield url


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def _transfer(call_id: str, agent: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": "Go."})


def _noting(name: str, call_id: str) -> Agent:
    """A sub-agent that notes its name with one tool call, then answers."""
    call = ToolCall(id=call_id, name="note", arguments={"text": name})
    return Agent(model=ScriptedModel([call, f"{name} done"]), name=name, tools=[note])


async def _step_names(run_id: str) -> list[str]:
    return [step["function_name"] for step in await DBOS.list_workflow_steps_async(run_id)]


async def test_each_members_model_and_tool_calls_are_steps_of_the_run_named_after_it(
    store: str,
) -> None:
    lead = Agent(
        model=ScriptedModel([[_transfer("t1", "writer"), _transfer("t2", "researcher")], "Done."]),
        name="lead",
        sub_agents=[_noting("researcher", "n-r"), _noting("writer", "n-w")],
    )
    durable = DurableAgent(lead, name="team-steps")

    done = await durable.execute("go", run_id="team-steps-1")

    assert done.output == "Done."
    assert CALLS == ["writer", "researcher"]
    # transfer_task is not a step; the writer's whole run comes before the researcher's,
    # in the order of the calls; each member's last answer is recorded at its place.
    assert await _step_names("team-steps-1") == [
        "agentrt.team-steps.model",
        "agentrt.team-steps.writer.model",
        "agentrt.team-steps.writer.tool.note",
        "agentrt.team-steps.writer.model",
        "agentrt.team-steps.researcher.model",
        "agentrt.team-steps.researcher.tool.note",
        "agentrt.team-steps.researcher.model",
    ]


async def test_a_sub_agent_that_is_another_durable_agents_records_its_calls_in_the_team_run(
    store: str,
) -> None:
    solo = DurableAgent(_noting("helper", "n-h"), name="solo")
    lead = Agent(
        model=ScriptedModel([_transfer("t1", "helper"), "Done."]),
        name="lead",
        sub_agents=[solo.agent],
    )
    durable = DurableAgent(lead, name="team-shared")

    assert (await durable.execute("go", run_id="team-shared-1")).output == "Done."

    assert CALLS == ["helper"]
    assert await _step_names("team-shared-1") == [
        "agentrt.team-shared.model",
        "agentrt.team-shared.helper.model",
        "agentrt.team-shared.helper.tool.note",
        "agentrt.team-shared.helper.model",
    ]


async def test_outside_a_durable_run_two_delegations_of_one_turn_still_run_at_once(
    store: str,
) -> None:
    # Each sub-agent's tool waits for the other's: they finish only if they run at once.
    started = {"left": anyio.Event(), "right": anyio.Event()}

    async def meet(side: str) -> str:
        """Meet the other side.

        Args:
            side: This side.
        """
        started[side].set()
        await started["right" if side == "left" else "left"].wait()
        return f"{side} met"

    def side(name: str) -> Agent:
        call = ToolCall(id=f"m-{name}", name="meet", arguments={"side": name})
        return Agent(model=ScriptedModel([call, f"{name} done"]), name=name, tools=[meet])

    lead = Agent(
        model=ScriptedModel([[_transfer("t1", "left"), _transfer("t2", "right")], "Done."]),
        name="lead",
        sub_agents=[side("left"), side("right")],
    )
    DurableAgent(lead, name="team-plain")

    with anyio.fail_after(10):
        assert (await lead.execute("go")).output == "Done."


async def test_a_durable_sessions_state_names_who_speaks_after_a_hand_off() -> None:
    def make() -> Agent:
        billing = Agent(model=ScriptedModel(["Billing here."]), name="billing")
        handoff = ToolCall(id="h1", name="handoff", arguments={"agent": "billing"})
        return Agent(model=ScriptedModel([handoff]), name="front", handoffs=[billing])

    handed = make()
    await handed.execute("my invoice")
    state = state_of(handed)
    fresh, older = make(), make()

    await restore_state(fresh, state)
    # A state stored before teams existed names nobody: the agent itself answers.
    await restore_state(older, {key: value for key, value in state.items() if key != "speaker"})

    assert state["speaker"] == "billing"
    assert fresh.speaker.name == "billing"
    assert older.speaker is older


def _answers(first: ToolCall, last: str) -> ScriptedModel:
    """A model that asks for ``first``, then answers ``last``: from the request alone, so
    the same in any process (a script would start again)."""

    def decide(request: ModelRequest) -> str | ToolCall:
        return last if any(m.role == "tool" for m in request.messages) else first

    return ScriptedModel(decide)


def _waiting_team(as_tool: bool) -> Agent:
    """A lead whose sub-agent's call waits for approval: by transfer_task, or as a tool."""
    note_it = ToolCall(id="n-c", name="note", arguments={"text": "checker"})
    checker = Agent(model=_answers(note_it, "checked"), name="checker", tools=[note])
    checker.events.on("tool:call:before", _hold_notes)
    if as_tool:
        ask = ToolCall(id="t1", name="check", arguments={"task": "Go."})
        return Agent(
            model=_answers(ask, "All done."),
            name="lead",
            tools=[checker.as_tool(name="check", description="Checks.")],
        )
    return Agent(
        model=_answers(_transfer("t1", "checker"), "All done."),
        name="lead",
        sub_agents=[checker],
    )


@pytest.mark.parametrize("as_tool", [False, True], ids=["transfer_task", "as_tool"])
async def test_a_durable_sessions_state_holds_the_sub_agent_whose_call_waits(
    as_tool: bool,
) -> None:
    waiting = _waiting_team(as_tool)
    await waiting.execute("go")
    state = state_of(waiting)
    # Another process: a fresh agent given the stored state answers the sub-agent's call.
    fresh = _waiting_team(as_tool)
    await restore_state(fresh, state)
    done = await fresh.execute(tool_results={"n-c": Approval("approve")})

    assert CALLS == ["checker"]
    assert done.output == "All done."
    assert done.messages[0].content == "checked"  # the delegating call's answer
    assert done.pending_tool_calls == ()


def _hold_notes(ctx: EventContext[Any, Any]) -> None:
    if ctx.parameters["tool_name"] == "note":
        ctx.output = DEFER


@pytest.mark.parametrize("as_tool", [False, True], ids=["transfer_task", "as_tool"])
async def test_a_durable_run_waits_on_the_sub_agents_call_and_its_answer_goes_on(
    store: str, as_tool: bool
) -> None:
    name = f"team-waits-{'tool' if as_tool else 'transfer'}"
    durable = DurableAgent(_waiting_team(as_tool), name=name)
    waiting = await durable.execute("go", run_id=f"{name}-1")
    # The sub-agent's call, the one a caller answers, in the result and in the store.
    assert [call.id for call in waiting.pending_tool_calls] == ["n-c"]
    assert [call.id for call in (await result(f"{name}-1")).pending_tool_calls] == ["n-c"]
    await durable.agent.reset()  # this process forgets: the store's record goes on

    done = await durable.execute(
        tool_results={"n-c": Approval("approve")}, after=f"{name}-1", run_id=f"{name}-2"
    )

    assert CALLS == ["checker"]
    assert done.output == "All done."
    assert done.pending_tool_calls == ()
