"""What an agent is as a member of a team: the mixin of :class:`~agentrt.Agent` for teams.

The team's state (:mod:`agentrt.team`) as class-level defaults, so that an agent
without a team sets none of it and pays nothing for it when made, and the methods a
team reads of an agent: the call ids it keeps apart, the tools its lists offer, who
answers its conversation after a hand-off, and the agent as another's tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.conversation import Conversation
    from agentrt.deferred import Answer
    from agentrt.messages import Usage
    from agentrt.team import MemberSetup, TeamParent, TeamTools
    from agentrt.tools import Tool
    from agentrt.toolsets import AgentToolsets

__all__ = ("TeamMember", "team_list")


class TeamMember:
    """The team side of an :class:`~agentrt.Agent` (see :mod:`agentrt.team`)."""

    # What the agent provides (Agent sets them).
    conversation: Conversation
    sub_agents: list[Agent]
    handoffs: list[Agent]
    _tools: dict[str, Tool[Any, Any]]
    _toolsets: AgentToolsets | None

    # The team's state (agentrt.team), as class-level defaults: an agent without a team
    # sets none of it, and pays nothing for it when made.
    team_parent: TeamParent | None = None
    """For a member of a team running a delegated task: who delegated it (else None)."""
    _team: TeamTools | None = None
    # Hand-offs: the agent a handoff call of the running turn named; the agent that
    # answers this conversation now (None: this one).
    _handoff: Agent | None = None
    _speaker: Agent | None = None
    # What the agents a run delegated to spent, by name (made on first use).
    _team_usage: dict[str, Usage] | None = None
    # What a member's run that failed had spent, by agent: its delegating call counts it.
    _spent: dict[str, Usage] | None = None
    # Members whose run waits on calls it left open, by the id of the call that
    # delegated to them (left open too), and the answers a member resumes with.
    _waiting: dict[str, Agent] | None = None
    _resume: dict[str, Answer] | None = None
    # The tool call ids of the team's current run, shared by its agents and members: one
    # stream shows their calls, which must not share an id.
    _team_call_ids: set[str] | None = None
    # What each member this agent makes is made into (a durable run's steps), if anything.
    _member_setup: MemberSetup | None = None

    def tool_call_ids(self) -> set[str]:
        """The tool call ids a run of this agent must not give a new call; the run adds to it.

        Those of its conversation; for an agent of a team (see :mod:`agentrt.team`),
        those of every agent of the team as well, whose calls one stream shows.
        """
        ids = self.conversation.tool_call_ids()
        team = self._team_call_ids
        if team is None:
            return ids
        team |= ids
        return team

    def _note_delegations(self, tools: Iterable[Tool[Any, Any]]) -> None:
        """Make this agent a team's if one of ``tools`` is another agent (:meth:`as_tool`).

        Its runs are then a team's from the first (see :mod:`agentrt.team`): the calls
        the agent used as a tool waits on are the run's open calls, what it spent counts
        in the result, and its calls' ids are kept apart from the run's. Checked as tools
        come (the agent made, a toolset's tools changed, a mode entered), not by each run.
        """
        if self._team_call_ids is not None:
            return
        for tool in tools:
            # Only an agent as a tool has a delegate (agentrt.team, not imported for this).
            if getattr(tool, "delegate", None) is not None:
                self._team_call_ids = set()
                return

    async def _introduce(self) -> None:
        """Settle what a team's model reads of this agent (name, description) before it reads.

        Nothing to do for an agent of this process; a remote agent reads its card
        (:class:`~agentrt.a2a.remote.RemoteAgent`).
        """
        return

    def _join_team(self) -> None:
        """Offer the tools of the team lists (a toolset that follows the lists)."""
        from agentrt.team import TeamTools
        from agentrt.toolsets import AgentToolsets

        if self._team_call_ids is None:
            self._team_call_ids = set()
        team = self._team = TeamTools(self._as_agent())
        if self._toolsets is None:
            self._toolsets = AgentToolsets(self._tools, [team])
        else:
            self._toolsets.toolsets += (team,)

    def as_tool(
        self, *, name: str | None = None, description: str | None = None
    ) -> Tool[Any, Any]:
        """This agent as a tool of another: a call runs it on the task and returns its answer.

        The delegation of ``transfer_task`` (see :mod:`agentrt.team`) as a plain tool
        with one argument, ``task``: each call runs a fresh member of this agent on a
        conversation of its own, shown in the caller's stream like a sub-agent's run.
        The agent given the tool runs as a team's from its first run: its result counts
        what this agent spent, and names the calls this agent waits on, if any.

        Args:
            name: The tool's name (default: the agent's name, which must then be a
                valid tool name).
            description: What the caller's model reads (default: the agent's
                ``description``).

        Raises:
            ToolDefinitionError: The name is not a valid tool name.
        """
        from agentrt.team import agent_tool

        return agent_tool(self._as_agent(), name, description)

    @property
    def handing_off(self) -> Agent | None:
        """The agent a ``handoff`` call of the running turn hands the conversation to.

        For runners: a run ends after such a turn, and that agent goes on (see
        :mod:`agentrt.team`). ``None`` otherwise.
        """
        return self._handoff

    @property
    def speaker(self) -> Agent:
        """The agent that answers this conversation's next user message.

        This agent, until a ``handoff`` call hands the conversation to another of
        its ``handoffs`` (see :mod:`agentrt.team`): that one then answers, on this
        agent's conversation, until it hands it on (or back). ``execute()`` and
        ``stream()`` on this agent go to the speaker.
        """
        return self._speaker or self._as_agent()

    def _as_agent(self) -> Agent:
        # The mixin's only class: what it is as the Agent it is part of.
        return cast("Agent", self)


def team_list(name: str, agents: Sequence[Agent]) -> list[Agent]:
    """``agents`` as a team list of an agent (``sub_agents``, ``handoffs``), checked.

    Raises:
        TypeError: ``agents`` is not a sequence of agents.
    """
    from agentrt.agent import Agent

    if isinstance(agents, str | bytes) or not isinstance(agents, Sequence):
        raise TypeError(f"{name} must be a list of agents, got {agents!r:.60}")
    for item in agents:
        if not isinstance(item, Agent):
            raise TypeError(f"{name} must hold agents, got {type(item).__name__}")
    return list(agents)
