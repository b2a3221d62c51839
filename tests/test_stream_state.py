"""The stream layer's state and roles: what its streams share lives in one object the agent
owns, and what changes a run is an interceptable handler of its owner, never the adapter."""

import re
import sys
from pathlib import Path
from typing import Any

import agentrt
from agentrt import (
    EVENT_SEMANTICS,
    AgentEvents,
    EventContext,
    EventSemantics,
    ScriptedModel,
    ToolCall,
)
from agentrt.messages import Usage
from agentrt.stream.events import TokenUsageEvent
from agentrt.stream.session import Compactor, session_state
from agentrt.stream.state import Approvals, SessionState, StreamState
from tests.conftest import AgentFactory
from tests.test_stream_adapter import delete_file, run_with_answers
from tests.test_stream_session import big, collect


def test_no_module_keeps_per_agent_state_in_a_side_table() -> None:
    package = Path(agentrt.__file__).parent
    offenders = [
        f"{path.relative_to(package)}: {line.strip()}"
        for path in package.rglob("*.py")
        for line in path.read_text().splitlines()
        if re.search(r"WeakKeyDictionary\[\s*[\"']?Agent\b", line)
    ]
    assert offenders == []


async def test_one_state_per_agent_made_on_first_use(make_agent: AgentFactory) -> None:
    first, second = make_agent([]), make_agent([])
    state = first.stream_state
    assert isinstance(state, StreamState)
    assert first.stream_state is state
    assert second.stream_state is not state
    assert state == StreamState(usage=Usage(), approvals=Approvals(), session=SessionState())
    assert session_state(first) is state.session


async def test_the_session_usage_and_approvals_live_in_the_agents_state(
    make_agent: AgentFactory,
) -> None:
    calls = [ToolCall(id=f"d{n}", name="delete_file", arguments={"path": str(n)}) for n in (1, 2)]
    agent = make_agent([calls[0], "one", calls[1], "two"], tools=[delete_file])
    events = await run_with_answers(agent, {"d1": ("approve-tool", None)})
    state = agent.stream_state
    assert state.approvals == Approvals(everything=False, tools={"delete_file"})
    # token_usage is cumulative for the session: its last figure is the state's total.
    last = [e for e in events if isinstance(e, TokenUsageEvent)][-1]
    first_total = state.usage
    assert first_total.input_tokens == last.usage.input_tokens > 0
    # The next stream asks nothing and adds to the same total.
    events = await run_with_answers(agent, {})
    assert "tool_call_confirmation" not in [e.type for e in events]
    assert state.usage.input_tokens > first_total.input_tokens


# -- observers observe ---------------------------------------------------------------------


async def test_the_adapter_changes_no_output_and_only_the_gate_rejects(
    make_agent: AgentFactory,
) -> None:
    """Every interceptable dispatch leaves the adapter with the output it came with.

    A handler just before the adapter's (between them and the confirmation gate, an
    interceptable handler owned by ``Confirmations``) snapshots each output, and one
    after them compares: nothing changes there, though the gate rejected a call.
    """
    calls = [
        ToolCall(id="ok", name="delete_file", arguments={"path": "a"}),
        ToolCall(id="no", name="delete_file", arguments={"path": "b"}),
    ]
    agent = make_agent([calls[0], calls[1], "done"], tools=[delete_file])
    before: dict[int, object] = {}
    changed: list[tuple[str, object, object]] = []

    def snapshot(ctx: EventContext[Any, Any]) -> None:
        before[id(ctx)] = ctx.output

    def compare(ctx: EventContext[Any, Any]) -> None:
        if ctx.output is not before.pop(id(ctx)):
            changed.append((ctx.event, ctx.parameters.get("tool_call"), ctx.output))

    for event in AgentEvents:
        if EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE:
            agent.events.on(event, snapshot, priority=-sys.maxsize + 1)
            agent.events.on(event, compare, priority=-sys.maxsize - 1)
    events = await run_with_answers(agent, {"ok": ("approve", None), "no": ("reject", "no")})
    assert changed == []
    assert [e.type for e in events].count("tool_call_confirmation") == 2
    answers = [m.content for m in agent.messages if m.role == "tool"]
    assert answers == ["deleted a", "rejected by the user: no"]


async def test_compaction_is_the_compactors_interceptable_handler_not_the_adapters(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([big("first answer"), "the summary", "answer 2"])
    agent = make_agent(model, instructions="Be brief.", name="keeper")
    compactor = Compactor(context_limit=1000, threshold=0.8, keep_recent=2)
    await collect(agent, "first question", compaction=compactor)
    versions: dict[int, int] = {}
    changed: list[int] = []

    def snapshot(ctx: EventContext[Any, Any]) -> None:
        versions[id(ctx)] = agent.version

    def compare(ctx: EventContext[Any, Any]) -> None:
        if agent.version != versions.pop(id(ctx)):
            changed.append(ctx.parameters["iteration"])

    # Between the compactor (a gate, before) and after the adapter's own handlers.
    iteration = AgentEvents.EXECUTE_ITERATION_BEFORE
    agent.events.on(iteration, snapshot, priority=-sys.maxsize + 1)
    agent.events.on(iteration, compare, priority=-sys.maxsize - 1)
    events = await collect(agent, "second question", compaction=compactor)
    assert "session_summary" in [e.type for e in events]  # it did compact
    assert changed == []  # ... before the adapter's handlers, which only read
