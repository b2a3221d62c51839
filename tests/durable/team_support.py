"""The team of the durable team crash tests, the same in every process (see team_app.py).

Each agent's model follows a plan of tool calls chosen by the run's user message (for a
sub-agent: its task), one call per turn, and answers with the results once its calls are
answered. It decides from the request alone, so a recovering process asks exactly what
the dead one asked, and writes one line per call it really makes to
``WORKDIR/model.{agent}.count`` (how many of its calls were answered then). The tools
count their calls in files too: ``first`` in ``first.count``, ``slow`` its call ids in
``slow.started`` (with ``AGENTRT_TEST_BLOCK`` set it then waits forever: the test kills
the process there), ``delete_file`` (which asks for confirmation) in ``delete.count``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence

import anyio

from agentrt.agent import Agent
from agentrt.messages import ToolCall, Usage
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.tools import current_tool_context, tool

from .server_app import _log as log


def transfer(call_id: str, agent: str, task: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": task})


class PlanModel:
    """One agent's model: ``plans`` maps a user message to its turns' calls."""

    def __init__(self, agent: str, plans: Mapping[str, Sequence[Sequence[ToolCall]]]) -> None:
        self.agent = agent
        self.name = f"plan-{agent}"
        self.plans = plans

    def _answer(self, request: ModelRequest) -> ModelResponse:
        messages = request.messages
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        plan = self.plans.get(messages[last_user].content, ())
        turn_ids = {call.id for turn in plan for call in turn}
        results = [
            m.content
            for m in messages[last_user:]
            if m.role == "tool" and m.tool_call_id in turn_ids
        ]
        done = len(results)
        log(f"model.{self.agent}.count", str(done))
        usage = Usage(1, 1, requests=1)
        answered = 0
        for turn in plan:
            if answered >= done:
                return ModelResponse(tool_calls=tuple(turn), usage=usage)
            answered += len(turn)
        return ModelResponse(content=f"{self.agent}: " + "; ".join(results), usage=usage)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self._answer(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = self._answer(request)
        if response.content:
            yield TextDelta(response.content)
        for index, call in enumerate(response.tool_calls):
            yield ToolCallDelta(index, call.id, call.name, call.arguments)
        yield UsageChunk(response.usage)


def first(n: int) -> str:
    """The first tool: its side effect must happen exactly once.

    Args:
        n: A number to say back.
    """
    log("first.count", str(n))
    return f"first done ({n})"


async def slow(n: int) -> str:
    """A slow tool: blocks in the first process, until it is killed.

    Args:
        n: A number to say back.
    """
    context = current_tool_context()
    log("slow.started", context.tool_call_id if context else "?")
    if os.environ.get("AGENTRT_TEST_BLOCK"):
        await anyio.sleep_forever()
    return f"slow done ({n})"


@tool(requires_confirmation=True)
async def delete_file(path: str) -> str:
    """Delete a file (a person approves each call); counts its calls in ``delete.count``.

    With ``AGENTRT_TEST_BLOCK_CHARGE`` set it writes ``delete.started`` and waits forever
    first (the test kills the process there).

    Args:
        path: The file.
    """
    if os.environ.get("AGENTRT_TEST_BLOCK_CHARGE"):
        log("delete.started", path)
        await anyio.sleep_forever()
    log("delete.count", path)
    return f"deleted {path}"


def _call(call_id: str, name: str, n: int) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={"n": n})


LEAD_PLANS = {
    # One delegation; the researcher's second tool is where the first process dies.
    "delegate": [[transfer("call-research", "researcher", "research")]],
    # Two delegations in one turn: the writer's run is done before the researcher's starts.
    "parallel": [
        [
            transfer("call-write", "writer", "write"),
            transfer("call-research", "researcher", "research"),
        ]
    ],
    # A delegation two levels deep: the researcher delegates to the checker in turn.
    "deep": [[transfer("call-research", "researcher", "dig")]],
    # A delegation whose sub-agent's call waits for a person's approval.
    "clean up": [[transfer("call-clean", "researcher", "clean up")]],
    # A hand-off to billing, which goes on with the conversation.
    "billing please": [
        [ToolCall(id="call-handoff", name="handoff", arguments={"agent": "billing"})]
    ],
}
RESEARCHER_PLANS = {
    "research": [[_call("call-first-r", "first", 1)], [_call("call-slow-r", "slow", 3)]],
    "clean up": [[ToolCall(id="call-delete-r", name="delete_file", arguments={"path": "a.txt"})]],
    "dig": [[_call("call-first-r", "first", 1)], [transfer("call-check", "checker", "check")]],
}
CHECKER_PLANS = {"check": [[_call("call-first-c", "first", 6)], [_call("call-slow-c", "slow", 7)]]}
WRITER_PLANS = {"write": [[_call("call-first-w", "first", 2)]]}
BILLING_PLANS = {
    "billing please": [[_call("call-slow-b", "slow", 4)]],
    "and now?": [[_call("call-first-b", "first", 5)]],
}


def make_team() -> Agent:
    """The lead of a team: sub-agents ``researcher`` (whose sub-agent is ``checker``) and
    ``writer``, a hand-off to ``billing``."""
    checker = Agent(model=PlanModel("checker", CHECKER_PLANS), name="checker", tools=[first, slow])
    researcher = Agent(
        model=PlanModel("researcher", RESEARCHER_PLANS),
        name="researcher",
        description="Finds facts.",
        tools=[first, slow, delete_file],
        sub_agents=[checker],
    )
    writer = Agent(
        model=PlanModel("writer", WRITER_PLANS),
        name="writer",
        description="Writes.",
        tools=[first],
    )
    billing = Agent(
        model=PlanModel("billing", BILLING_PLANS),
        name="billing",
        instructions="You handle billing.",
        tools=[first, slow],
    )
    return Agent(
        model=PlanModel("lead", LEAD_PLANS),
        name="lead",
        instructions="You lead the team.",
        sub_agents=[researcher, writer],
        handoffs=[billing],
    )
