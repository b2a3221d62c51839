"""A team's stream: its members' runs shown in the stream of the agent at its top.

A :class:`~agentrt.stream.StreamAdapter` is the :class:`~agentrt.team.MemberRunner`
of its run (:meth:`~agentrt.stream.StreamAdapter.run_member`): each delegated task
under it (a ``transfer_task`` call, an agent used as a tool, at any depth) runs with
a *member stream*, an adapter of its own that follows the member's bus and sends the
events into the same sink, in order with the others::

    tool_call (transfer_task, the delegating agent's)
      the member's events: agent_choice, partial_tool_call, tool_call,
      tool_call_response, token_usage, ... each with the member's agent_name and
      parent_tool_call_id = the transfer_task call's id
      error (the member's, when its run fails)
    tool_call_response (transfer_task: the member's answer, or its failure)

A member stream shares the top stream's confirmations (a sub-agent's call that needs
approval is asked in the stream and answered by its id like any other) and the
session's cumulative usage (each ``token_usage`` adds to one total for the team);
it makes no ``user_message``, ``stream_started`` or ``stream_stopped``: the
transfer_task call's own events open and close it.

A team's stream (that of an agent with sub-agents or hand-offs) says who is in it
right after ``stream_started``: a ``team_info`` event (cagent's shape) lists every
agent reachable from the top one, and which of them answers now.

A hand-off (see :mod:`agentrt.team`) shows as the ``handoff`` call's events, then
``agent_switching`` (``from_agent``, ``to_agent``), then the events of the agent
handed to, with its name: it is the stream's runner's
:meth:`~agentrt.stream.StreamAdapter.run_speaker`, a stream of the speaker's own that
also reports the conversation's messages while it speaks. A hand-off inside a
delegated task keeps that task's ``parent_tool_call_id``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentrt.stream.events import TeamAgent, TeamInfoEvent
from agentrt.team import team_of

if TYPE_CHECKING:
    from agentrt.agent import Agent

__all__ = ("team_info",)


def team_info(agent: Agent, session_id: str) -> TeamInfoEvent:
    """The ``team_info`` event of a stream whose agent is ``agent``."""
    return TeamInfoEvent(
        session_id=session_id,
        available_agents=tuple(
            TeamAgent(
                name=member.name,
                description=member.description or "",
                model=str(getattr(member.model, "name", "") or ""),
            )
            for member in team_of(agent)
        ),
        current_agent=agent.speaker.name,
        agent_name=agent.speaker.name,
    )
