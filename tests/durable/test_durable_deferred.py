"""DurableAgent and deferred calls: a waiting run is a finished workflow, its answer a new one.

The continuation in a fresh process (after ``kill -9``) and in another process on
Postgres is tested with real processes in test_deferred_recovery.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dbos import DBOS

from agentrt import DEFER, Agent, Approval, ExternalTool, NotPendingError, ScriptedModel, ToolCall
from agentrt.bus import EventContext
from agentrt.durable import DurableAgent, RunNotFoundError, result

from .conftest import in_process_store

LOCATE = ExternalTool("locate", "Where the browser is.", {"type": "object", "properties": {}})
WHERE = ToolCall(id="call-where", name="locate", arguments={})
CHARGE = ToolCall(id="call-charge", name="charge", arguments={"amount": 10})

CHARGED: list[int] = []


def charge(amount: int) -> str:
    """Charge the customer."""
    CHARGED.append(amount)
    return f"charged {amount}"


def hold_charges(ctx: EventContext[Any, Any]) -> None:
    """Every charge waits for a person's approval, outside the run."""
    if ctx.parameters["tool_name"] == "charge":
        ctx.output = DEFER


def _durable(name: str, script: list[Any]) -> DurableAgent:
    agent = Agent(model=ScriptedModel(script), tools=[LOCATE, charge])
    agent.events.on("tool:call:before", hold_charges)
    return DurableAgent(agent, name=name)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with in_process_store(tmp_path_factory, "deferred") as url:
        yield url


@pytest.fixture(autouse=True)
def _no_charges() -> None:
    CHARGED.clear()


async def _steps(run_id: str) -> list[str]:
    return [step["function_name"] for step in await DBOS.list_workflow_steps_async(run_id)]


async def test_a_waiting_run_is_a_finished_workflow_whose_result_records_the_open_calls(
    store: str,
) -> None:
    durable = _durable("waits", [[WHERE, CHARGE]])
    waiting = await durable.execute("Where am I? Charge 10.", run_id="waits-1")
    assert waiting.pending_tool_calls == (WHERE, CHARGE)
    status = await DBOS.get_workflow_status_async("waits-1")
    assert status is not None
    assert status.status == "SUCCESS"
    # Read back from the store, as another process would.
    recorded = await result("waits-1")
    assert recorded.pending_tool_calls == (WHERE, CHARGE)
    assert recorded.output == waiting.output
    # The model call is a step; neither open call ran, so neither is one.
    assert await _steps("waits-1") == ["agentrt.waits.model"]
    assert CHARGED == []


async def test_tool_results_continue_the_run_as_a_new_workflow(store: str) -> None:
    durable = _durable("answers", [[WHERE, CHARGE], "You are in Lyon; charged 10."])
    await durable.execute("Where am I? Charge 10.", run_id="answers-1")
    done = await durable.execute(
        tool_results={WHERE.id: "Lyon", CHARGE.id: Approval("approve")}, run_id="answers-2"
    )
    assert done.output == "You are in Lyon; charged 10."
    assert done.pending_tool_calls == ()
    assert CHARGED == [10]
    # The approved call ran as a step of the new workflow.
    assert await _steps("answers-2") == ["agentrt.answers.tool.charge"]
    # Its answers are the new workflow's input: a recovery gets them again.
    (status,) = await DBOS.list_workflows_async(workflow_ids=["answers-2"])
    assert status.input is not None
    assert status.input["args"][4] == {
        WHERE.id: {"content": "Lyon", "is_error": False},
        CHARGE.id: {"decision": "approve", "reason": None},
    }


async def test_after_continues_the_conversation_the_store_recorded(store: str) -> None:
    durable = _durable("after", [[WHERE, CHARGE], "Rejected, but you are in Lyon."])
    await durable.execute("Where am I? Charge 10.", run_id="after-1")
    # This process forgets the conversation, as a fresh one has none.
    await durable.agent.reset()
    done = await durable.execute(
        tool_results={WHERE.id: "Lyon", CHARGE.id: Approval("reject", "not today")},
        after="after-1",
        run_id="after-2",
    )
    assert done.output == "Rejected, but you are in Lyon."
    assert CHARGED == []
    assert [(m.role, m.content) for m in durable.agent.messages] == [
        ("user", "Where am I? Charge 10."),
        ("assistant", ""),
        ("tool", "Lyon"),
        ("tool", "rejected by the user: not today"),
        ("assistant", "Rejected, but you are in Lyon."),
    ]


async def test_a_bad_answer_is_refused_before_a_workflow_is_recorded(store: str) -> None:
    durable = _durable("refuses", [[WHERE]])
    await durable.execute("Where am I?", run_id="refuses-1")
    with pytest.raises(NotPendingError):
        await durable.execute(tool_results={"call-nope": "x"}, run_id="refuses-2")
    assert await DBOS.get_workflow_status_async("refuses-2") is None


async def test_after_names_a_run_of_this_agent(store: str) -> None:
    durable = _durable("names", [[WHERE]])
    other = _durable("other", [[WHERE]])
    await other.execute("Where am I?", run_id="other-1")
    with pytest.raises(RunNotFoundError, match="no durable run has the id 'nope'"):
        await durable.execute(tool_results={WHERE.id: "x"}, after="nope")
    with pytest.raises(RunNotFoundError, match="not a run of durable agent 'names'"):
        await durable.execute(tool_results={WHERE.id: "x"}, after="other-1")
    with pytest.raises(TypeError, match="after must be a non-empty run id"):
        await durable.execute(after="")


async def test_an_external_tool_a_handler_offers_is_answered_with_its_result(store: str) -> None:
    """A client's tool (an AG-UI frontend tool) is offered per run, not owned by the agent."""
    agent = Agent(model=ScriptedModel([[WHERE], "You are in Lyon."]))

    def offer_the_clients_tools(ctx: EventContext[Any, Any]) -> None:
        ctx.output = [*ctx.parameters["tools"], LOCATE]

    agent.events.on("tools:provide", offer_the_clients_tools)
    durable = DurableAgent(agent, name="offered")
    waiting = await durable.execute("Where am I?", run_id="offered-1")
    assert waiting.pending_tool_calls == (WHERE,)
    done = await durable.execute(tool_results={WHERE.id: "Lyon"}, run_id="offered-2")
    assert done.output == "You are in Lyon."
