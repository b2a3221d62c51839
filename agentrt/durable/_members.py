"""The agents of a durable run: the top agent's and every team member's calls made steps.

A team's run (see :mod:`agentrt.team`) is one workflow: the model and tool calls of
each sub-agent it delegates to, and of each agent a hand-off gives the conversation
to, at any depth, are steps of that workflow like the top agent's own. The calls that
start those runs (``transfer_task``, ``handoff``, an agent used as a tool) are not
steps themselves: they run again when a run is recovered, and the member runs they
start replay their own recorded steps.

DBOS numbers a workflow's steps in the order they start, and a recovered run must
meet them in that order. The model and tool calls of two sub-agents running at once
would interleave as their timing has it, which a recovery does not repeat: so in a
durable run, the member runs one agent delegates take turns, in the order their calls
reach them (the order of the model's calls), one after another. Each member's own
parallel tool calls still run at once, as the top agent's do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from dbos import DBOS

from agentrt._runs import RunGate
from agentrt.team import delegates
from agentrt.tools import Tool

from ._steps import DurableModel, durable_tool

if TYPE_CHECKING:
    from agentrt.agent import Agent

__all__ = ("DurableTeam", "make_steps")

# Runs last, after every other tools:provide handler: the tools it makes durable are the
# ones the model is offered, whoever added them.
_LAST = -(10**9)


def make_steps(agent: Agent, prefix: str, *, unrecorded: Collection[str] = ()) -> None:
    """Make ``agent``'s model calls and tool calls DBOS steps named ``{prefix}.model`` and
    ``{prefix}.tool.{name}`` inside a workflow (outside one, they call straight through).

    Its model is wrapped in place, and a ``tools:provide`` handler makes the offered
    tools durable, but those named in ``unrecorded`` and a team's own (their members'
    calls are the steps). Each member of its team, at any depth, is made so as it is
    made (:class:`DurableTeam`), its steps named ``{prefix}.{member name}...``.
    """
    model = agent.model
    if isinstance(model, DurableModel):
        # A sub-agent that is another durable agent's too: its calls are this run's steps.
        model = model.wrapped
    agent.model = DurableModel(model, f"{prefix}.model")
    wrapped: dict[int, tuple[Tool[Any, Any], Tool[Any, Any]]] = {}
    skipped = frozenset(unrecorded)

    def make_durable(ctx: Any) -> None:
        tools: list[Tool[Any, Any]] = []
        for tool in ctx.output:
            if tool.name in skipped or delegates(tool):
                tools.append(tool)
                continue
            # Cached: the loop offers the same tools on every turn.
            entry = wrapped.get(id(tool))
            if entry is None or entry[0] is not tool:
                if len(wrapped) >= 1024:
                    # Tools made afresh on every turn by a handler: bounded.
                    wrapped.clear()
                entry = wrapped[id(tool)] = (tool, durable_tool(tool, prefix))
            tools.append(entry[1])
        ctx.output = tools

    agent.events.on("tools:provide", make_durable, priority=_LAST)
    agent._member_setup = DurableTeam(prefix, skipped)


class DurableTeam:
    """The :class:`~agentrt.team.MemberSetup` of an agent of a durable run (see the module).

    Args:
        prefix: The names of the agent's steps start with it.
        unrecorded: Names of tools whose calls are not steps, for every member too.
    """

    def __init__(self, prefix: str, unrecorded: frozenset[str]) -> None:
        self.prefix = prefix
        self.unrecorded = unrecorded
        self._turns = RunGate()

    def setup(self, member: Agent) -> None:
        """Make ``member``'s calls steps named after it, and its members' in turn."""
        make_steps(member, f"{self.prefix}.{member.name}", unrecorded=self.unrecorded)

    @asynccontextmanager
    async def delegation(self) -> AsyncIterator[None]:
        """In a durable run, one member run of this agent at a time, first come first."""
        if DBOS.workflow_id is None:
            yield
            return
        await self._turns.enter()
        try:
            yield
        finally:
            self._turns.leave()
