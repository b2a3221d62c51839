"""Teams of agents: delegation (``transfer_task``), agents as tools, hand-offs (``handoff``).

An agent given sub-agents offers its model one more tool, ``transfer_task``
(cagent's name and arguments: ``agent``, ``task``, ``expected_output``), whose
description lists the sub-agents by name with their descriptions::

    researcher = Agent(model=model, name="researcher", description="Finds facts.")
    lead = Agent(model=model, name="lead", sub_agents=[researcher])

A call runs the named sub-agent on a conversation of its own: a *member* of the
team, a fresh :class:`~agentrt.Agent` with the sub-agent's model, instructions,
tools, limits and sub-agents, whose user message is the task. Its final answer is
the call's result. Each call gets its own member, so two calls in one turn (they
run concurrently, like any parallel tool calls) never share a conversation, and
a sub-agent object can serve any number of runs at once. A member's event bus is
a copy of the sub-agent's (:meth:`EventBus.copy <agentrt.EventBus.copy>`), so
the sub-agent's own hooks see its members' runs, observed by the delegating agent's
bus: the parent's handlers (its parent's, which its bus holds, and so on up) run on
the member's *signals* (``tool:call:after``, ``llm:complete:after``, ...), never on
its interceptable events, which stay the sub-agent's to decide. In a handler,
``ctx.parameters["agent"]`` says whose event it is: a member, whose ``name`` is the
sub-agent's and whose :attr:`~agentrt.Agent.team_parent` says which call started it,
or the agent the handler was registered on. A handler registered on both runs once.

A sub-agent that fails fails its ``transfer_task`` call with a message naming it
(the model reads it; the parent goes on). Cancelling the parent's run cancels the
member's (it runs inside the parent's tool call).

:meth:`Agent.as_tool <agentrt.Agent.as_tool>` gives the same delegation to one
agent as a plain tool of any agent. Delegations nest up to :data:`MAX_DEPTH` deep.

A member that ends waiting (an :class:`~agentrt.deferred.ExternalTool`'s call, a
deferred confirmation) leaves the delegating call open too: the run waits on the
member's calls (``result.pending_tool_calls`` names them, at any depth), and a later
run given ``tool_results`` for them resumes the member, whose answer then answers the
delegating call (:func:`route_answers`). A run's result counts what every agent of
the team spent (``usage``) and gives each agent's share (``agent_usage``), that of a
sub-agent whose run failed included: its model calls were made.

An agent given hand-offs (``Agent(..., handoffs=[billing])``) offers a ``handoff``
tool (argument ``agent``). After the turn that calls it, the run goes on with the
agent handed to: a member like it that speaks on the *same* conversation, with its
own instructions (the conversation's system message while it speaks) and tools,
until it answers or hands off again (:func:`continue_handoffs`). The agent that
answered is the conversation's :attr:`~agentrt.Agent.speaker`: the next user message
(``execute``, ``stream``, a server session's next message) goes to it. Agents may
hand off in a cycle; a run fails after more hand-offs than its ``max_iterations``.
Give every agent of a hand-off group instructions: one without keeps the system
message of the agent that spoke before it.
The conversation's changes are announced on its owner's bus (``agent=`` the owner);
the speaker's own steps (model calls, tool calls) on a copy of its own bus, observed
by the owner's like a sub-agent's by its parent's.

Who watches a member's run (a stream, which shows its events attributed to the
sub-agent) is told through :data:`MEMBER_RUNNER`: see :class:`MemberRunner`. Tool call
ids stay unique across the team's conversations (:meth:`Agent.tool_call_ids
<agentrt.Agent.tool_call_ids>`): one stream shows them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentrt._state import RunResult
from agentrt.control import DEFER, Defer
from agentrt.deferred import Answer, Approval
from agentrt.exceptions import MaxIterationsExceededError, ToolError, ToolExecutionError
from agentrt.messages import ToolCall, Usage
from agentrt.models.base import NO_USAGE
from agentrt.tools import RUNNING_CALL, Tool

if TYPE_CHECKING:
    from agentrt._loop import Run
    from agentrt.agent import Agent

__all__ = (
    "HANDOFF",
    "MAX_DEPTH",
    "MEMBER_RUNNER",
    "TRANSFER_TASK",
    "MemberRunner",
    "MemberSetup",
    "SubAgentError",
    "TeamParent",
    "TeamTools",
    "agent_tool",
    "continue_handoffs",
    "delegates",
    "introduce",
    "leaf_calls",
    "member_for",
    "run_in_team",
    "route_answers",
    "settled",
    "team_of",
    "transfer_prompt",
)

MAX_DEPTH = 16
"""How deep delegations may nest: a model that delegates for ever fails its call there."""
TRANSFER_TASK = "transfer_task"
"""The name of the delegation tool (cagent's)."""
HANDOFF = "handoff"
"""The name of the hand-off tool (cagent's)."""


class SubAgentError(ToolError):
    """A delegated task failed: the sub-agent is unknown, or its run raised.

    The message is what the delegating model reads as the call's result.

    Attributes:
        agent_name: The sub-agent named by the call.
    """

    def __init__(self, agent_name: str, message: str) -> None:
        self.agent_name = agent_name
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class TeamParent:
    """Where a member's run comes from: the delegating agent and its tool call.

    Attributes:
        agent: The agent (itself maybe a member) whose tool call started the run.
        tool_call: That call (``transfer_task``, or an agent-as-tool's).
    """

    agent: Agent
    tool_call: ToolCall


class MemberRunner(Protocol):
    """Runs the members of a team: delegated tasks and hand-offs; a stream is one.

    :data:`MEMBER_RUNNER` holds the runner of the running task (``None``: members
    just run, ``await member.execute(prompt)``). A stream sets itself there while
    its run goes on, so that every member run under it, at any depth, is shown in it.
    """

    async def run_member(
        self, member: Agent, prompt: str | None, tool_results: Mapping[str, Answer] | None
    ) -> RunResult[Any]:
        """Run ``member`` (its ``team_parent`` is set) on ``prompt``; its result.

        ``prompt`` is ``None`` and ``tool_results`` the answers to the calls it left
        open when the member goes on after it waited.
        """
        ...

    async def switched(self, from_agent: str, to_agent: str) -> None:
        """Announce that ``to_agent`` answers the conversation from now on (a hand-off)."""
        ...

    async def run_speaker(self, speaker: Agent, run: Run) -> RunResult[Any]:
        """Run ``run``, whose agent ``speaker`` speaks on another's conversation."""
        ...


MEMBER_RUNNER: ContextVar[MemberRunner | None] = ContextVar("agentrt_member_runner", default=None)
"""The :class:`MemberRunner` of the running task, or ``None``."""


class MemberSetup(Protocol):
    """What an agent's members are made into, at any depth: a durable run's steps.

    An agent whose ``_member_setup`` is set (see :mod:`agentrt.durable`) passes it to
    each member it makes (a delegated task's, a hand-off's speaker), which passes it on.
    """

    def setup(self, member: Agent) -> None:
        """Prepare ``member`` as it is made: it sets the member's ``_member_setup``."""
        ...

    def delegation(self) -> AbstractAsyncContextManager[None]:
        """Held around each member run the agent delegates (a durable run takes turns)."""
        ...


def transfer_prompt(task: str, expected_output: str = "") -> str:
    """The user message a sub-agent receives for a delegated task."""
    if not expected_output:
        return task
    return f"{task}\n\nExpected output: {expected_output}"


async def run_member(sub: Agent, prompt: str | None) -> str | Defer:
    """Run ``sub`` for the tool call running in this task; its final answer.

    :data:`~agentrt.control.DEFER` when it waits on calls left open: the call
    running in this task is left open too, until they are answered (see
    :func:`route_answers`).

    Raises:
        SubAgentError: The sub-agent's run failed (the message names it).
    """
    running = RUNNING_CALL.get()
    if running is None:
        raise RuntimeError("a team member runs for a tool call: call it from a tool")
    parent, call = running
    setup = parent._member_setup
    if setup is None:
        return await _run_member(sub, prompt, parent, call)
    async with setup.delegation():
        return await _run_member(sub, prompt, parent, call)


async def _run_member(
    sub: Agent, prompt: str | None, parent: Agent, call: ToolCall
) -> str | Defer:
    waiting = parent._waiting
    member = None if waiting is None else waiting.pop(call.id, None)
    answers: dict[str, Answer] | None = None
    if member is None:
        depth, above = 1, parent.team_parent
        while above is not None:
            depth, above = depth + 1, above.agent.team_parent
        if depth > MAX_DEPTH:
            raise SubAgentError(
                sub.name,
                f"cannot delegate to {sub.name!r}: delegations nest {MAX_DEPTH} deep already",
            )
        member = await _member_of(sub, TeamParent(parent, call))
    else:
        # The member waited on calls left open; their answers came: it goes on, in
        # this run's team.
        prompt, answers, member._resume = None, member._resume, None
        member._team_call_ids = _call_ids_of(parent)
    runner = MEMBER_RUNNER.get()
    try:
        if runner is None:
            result = await member.execute(prompt, tool_results=answers)
        else:
            result = await runner.run_member(member, prompt, answers)
    except BaseException as error:
        # Tokens a failed (or cancelled) member spent are spent: the parent counts them.
        spent, member._spent = member._spent, None
        if spent:
            _add_shares(_shares_of(parent), spent)
        if not isinstance(error, Exception):
            raise
        raise SubAgentError(
            sub.name, f"sub-agent {sub.name!r} failed: {type(error).__name__}: {error}"
        ) from error
    _add_shares(_shares_of(parent), result.agent_usage or {sub.name: result.usage})
    if result.pending_tool_calls:
        # The member waits (an external tool's call, a deferred confirmation): so does
        # the call that delegated to it; answering the member's calls resumes both.
        if parent._waiting is None:
            parent._waiting = {}
        parent._waiting[call.id] = member
        return DEFER
    return result.output


def _shares_of(agent: Agent) -> dict[str, Usage]:
    """What the agents ``agent``'s run delegated to spent, by name (made on first use)."""
    shares = agent._team_usage
    if shares is None:
        shares = agent._team_usage = {}
    return shares


async def _like(agent: Agent, observer: Agent) -> Agent:
    """A fresh agent like ``agent`` (its model, tools, instructions, limits, lists, hooks).

    ``observer``'s handlers observe its signals: the agent that delegated to it, or
    whose conversation it speaks on.
    """
    from agentrt.agent import Agent

    # Opens the agent's toolsets (an MCP server's tools) once; its members share them.
    await agent.initialize()
    member = Agent(
        model=agent.model,
        tools=[tool for tool in agent.tools if not isinstance(tool, _TeamTool)],
        instructions=agent.instructions,
        name=agent.name,
        description=agent.description,
        sub_agents=agent.sub_agents,
        handoffs=agent.handoffs,
        max_iterations=agent.max_iterations,
        max_retries=agent.max_retries,
        max_output_retries=agent.max_output_retries,
        max_concurrent_tools=agent.max_concurrent_tools,
        context_providers=agent._providers,
        model_settings=agent.model_settings,
        # The agent's own handlers, not those a stream attached for one run; the
        # observer's watch its signals (its hooks see the team's runs).
        events=agent.events.copy(observed_by=observer.events),
    )
    # The same lists: an agent added later is the members' too.
    member.sub_agents = agent.sub_agents
    member.handoffs = agent.handoffs
    # agent:init:after was the agent's to announce: a member is not a new agent.
    member._initialized = True
    await member._open_toolsets()
    return member


async def _member_of(sub: Agent, parent: TeamParent) -> Agent:
    """A fresh agent like ``sub``, on a conversation of its own, for one delegated task."""
    member = await _like(sub, parent.agent)
    member.team_parent = parent
    member._team_call_ids = _call_ids_of(parent.agent)
    _set_up(member, parent.agent)
    return member


def _set_up(member: Agent, by: Agent) -> None:
    setup = by._member_setup
    if setup is not None:
        setup.setup(member)


def _call_ids_of(agent: Agent) -> set[str]:
    """The tool call ids of ``agent``'s team, shared from now on (made on first use)."""
    ids = agent._team_call_ids
    if ids is None:
        # An agent used as a tool that came in a run (a mode entered in a tool, a
        # toolset's new tools): a team's agent from its next run on.
        ids = agent._team_call_ids = set()
    return ids


async def _speaker_of(agent: Agent, owner: Agent) -> Agent:
    """A fresh agent like ``agent`` that speaks on ``owner``'s conversation."""
    member = await _like(agent, owner)
    member.conversation = owner.conversation
    member._team_call_ids = _call_ids_of(owner)
    _set_up(member, owner)
    return member


async def introduce(agent: Agent) -> None:
    """Have every agent of ``agent``'s team settle its name and description (see
    :meth:`~agentrt._team_member.TeamMember._introduce`: a remote agent reads its card)."""
    for member in team_of(agent):
        await member._introduce()


def team_of(agent: Agent) -> list[Agent]:
    """``agent`` and every agent it may delegate or hand off to, at any depth, each once."""
    team: list[Agent] = [agent]
    seen = {id(agent)}
    for member in team:  # grows as it is read: breadth first
        for other in (*member.sub_agents, *member.handoffs):
            if id(other) not in seen:
                seen.add(id(other))
                team.append(other)
    return team


# -- the tools ------------------------------------------------------------------------------


def delegates(tool: Tool[Any, Any]) -> bool:
    """Whether ``tool`` is a team's (``transfer_task``, ``handoff``, an agent as a tool).

    Such a call is not one step of a durable run: the member runs it starts make steps
    of their own (see :mod:`agentrt.durable`).
    """
    return isinstance(tool, _DelegationTool)


class _DelegationTool(Tool[Any, Any]):
    """A tool that runs a team member: its failure is the member's, told as it is."""

    # The agent it delegates to, when it is one agent's (an agent as a tool).
    delegate: Agent | None = None

    async def run(self, arguments: dict[str, Any]) -> Any:
        kwargs = self.validate(arguments)
        try:
            return await self.function(**kwargs)
        except ToolError:
            raise  # SubAgentError: its message names the sub-agent already
        except Exception as error:
            raise ToolExecutionError(self.name, error) from error


class _TeamTool(_DelegationTool):
    """A tool a team gives an agent; its description follows the agent's lists."""

    def __init__(self, owner: Agent, function: Any, name: str) -> None:
        self._owner = owner
        super().__init__(function, name=name)

    def _describe(self) -> str:
        raise NotImplementedError

    @property
    def description(self) -> str:
        return self._describe()

    @description.setter
    def description(self, value: str) -> None:
        pass  # Tool.__init__ sets the docstring's: the lists decide instead


class _TransferTask(_TeamTool):
    def __init__(self, owner: Agent) -> None:
        super().__init__(owner, transfer_task, TRANSFER_TASK)

    def _describe(self) -> str:
        lines = [
            "Give a task to one of your sub-agents and get its answer back. The sub-agent",
            "starts from nothing: put everything it needs to know in the task.",
            "Sub-agents:",
        ]
        lines += [_listed(agent) for agent in self._owner.sub_agents]
        return "\n".join(lines)


def _listed(agent: Agent) -> str:
    return f"- {agent.name}: {agent.description}" if agent.description else f"- {agent.name}"


async def transfer_task(agent: str, task: str, expected_output: str = "") -> str | Defer:
    """Give a task to a sub-agent and return its final answer.

    Args:
        agent: The name of the sub-agent that is to do the task.
        task: The task, with everything the sub-agent needs to know.
        expected_output: What the answer should look like, if it matters.
    """
    running = RUNNING_CALL.get()
    assert running is not None  # a tool of the loop
    caller = running[0]
    sub = next((a for a in caller.sub_agents if a.name == agent), None)
    if sub is None:
        names = ", ".join(a.name for a in caller.sub_agents) or "none"
        raise SubAgentError(
            agent, f"{caller.name!r} has no sub-agent named {agent!r}; its sub-agents: {names}"
        )
    return await run_member(sub, transfer_prompt(task, expected_output))


class _Handoff(_TeamTool):
    def __init__(self, owner: Agent) -> None:
        super().__init__(owner, handoff, HANDOFF)

    def _describe(self) -> str:
        lines = [
            "Hand the conversation over to another agent: it answers the user from here on,",
            "with its own instructions and tools, and sees the conversation so far.",
            "Agents:",
        ]
        lines += [_listed(agent) for agent in self._owner.handoffs]
        return "\n".join(lines)


async def handoff(agent: str) -> str:
    """Hand the conversation over to another agent.

    Args:
        agent: The name of the agent that is to answer from now on.
    """
    running = RUNNING_CALL.get()
    assert running is not None  # a tool of the loop
    caller = running[0]
    target = next((a for a in caller.handoffs if a.name == agent), None)
    if target is None:
        names = ", ".join(a.name for a in caller.handoffs) or "none"
        raise SubAgentError(
            agent, f"{caller.name!r} cannot hand off to {agent!r}; it hands off to: {names}"
        )
    chosen = caller._handoff
    if chosen is not None and chosen is not target:
        raise SubAgentError(agent, f"this turn hands off to {chosen.name!r} already")
    caller._handoff = target
    return f"{target.name} answers from here on."


class TeamTools:
    """The tools an agent gets from its team lists (a :class:`~agentrt.toolsets.Toolset`).

    ``transfer_task`` while it has sub-agents, ``handoff`` while it has hand-offs.
    The lists may grow after the agent is made; :attr:`version` follows what is
    offered.
    """

    def __init__(self, owner: Agent) -> None:
        self._owner = owner
        self._transfer = _TransferTask(owner)
        self._handoff = _Handoff(owner)

    @property
    def name(self) -> str:
        return "team"

    @property
    def tools(self) -> Sequence[Tool[Any, Any]]:
        owner = self._owner
        tools: tuple[Tool[Any, Any], ...] = (self._transfer,) if owner.sub_agents else ()
        return (*tools, self._handoff) if owner.handoffs else tools

    @property
    def version(self) -> int:
        owner = self._owner
        return (1 if owner.sub_agents else 0) + (2 if owner.handoffs else 0)

    async def open(self) -> None:
        # The agent opens (before its model's first call): the agents of its lists say
        # who they are (a remote agent reads its card), for the tools' descriptions.
        for agent in (*self._owner.sub_agents, *self._owner.handoffs):
            await agent._introduce()

    async def close(self) -> None:
        return None


def agent_tool(agent: Agent, name: str | None, description: str | None) -> Tool[Any, Any]:
    """The tool of :meth:`Agent.as_tool <agentrt.Agent.as_tool>`."""
    if description is None:
        description = agent.description or f"Ask the agent {agent.name!r} to do a task."

    async def delegate(task: str) -> str | Defer:
        """Run the agent on a task; its final answer.

        Args:
            task: The task, with everything the agent needs to know.
        """
        return await run_member(agent, task)

    made = _DelegationTool(delegate, name=name or agent.name, description=description)
    made.delegate = agent
    return made


async def member_for(parent: Agent, call: ToolCall) -> Agent | None:
    """A fresh member for ``parent``'s delegating call ``call``, or ``None``.

    The member the call would run (``transfer_task``'s sub-agent, an agent used as a
    tool), on an empty conversation of its own: for a durable store that holds a
    waiting member again in another process (it restores the member's conversation).
    ``None`` when no agent of ``parent``'s answers the call.
    """
    if call.name == TRANSFER_TASK:
        name = call.parse_arguments().get("agent")
        sub = next((a for a in parent.sub_agents if a.name == name), None)
    else:
        tool = parent.tool_table().get(call.name)
        sub = tool.delegate if isinstance(tool, _DelegationTool) else None
    return None if sub is None else await _member_of(sub, TeamParent(parent, call))


# -- hand-offs -------------------------------------------------------------------------------


async def run_in_team(agent: Agent, run: Run) -> RunResult[Any]:
    """Run ``run`` of ``agent``, an agent with a team: to its speaker, and as the team left it.

    The conversation goes to the agent that speaks now (a hand-off of an earlier
    run), and on where a hand-off of this one leaves it (:func:`continue_handoffs`);
    the result counts what the team spent and names the calls its members wait on
    (:func:`settled`).
    """
    if agent.team_parent is None:
        # A run at the top of its team: one stream, whose calls' ids it and its members
        # keep apart (those of earlier runs are in the conversation, or gone with
        # their members).
        agent._team_call_ids = set()
    shares: dict[str, Usage] = {}
    try:
        if agent._speaker is not None:
            return await continue_handoffs(agent, run, None, shares)
        try:
            result = await run.execute()
        except BaseException:
            _spent_by(agent, run, shares)
            raise
        if agent._handoff is not None:
            return await continue_handoffs(agent, run, result, shares)
        if agent._team_usage is None and agent._waiting is None:
            return result
        return settled(agent, result)
    except BaseException:
        if agent.team_parent is not None and shares:
            # A member's run failed: what it spent, its delegating call counts
            # (run_member).
            agent._spent = shares
        raise
    finally:
        # A run that failed after a handoff call hands nothing off, nor counts for the
        # next what its sub-agents spent.
        agent._handoff = None
        agent._team_usage = None


async def continue_handoffs(
    owner: Agent,
    run: Run,
    result: RunResult[Any] | None,
    shares: dict[str, Usage] | None = None,
) -> RunResult[Any]:
    """Go on with ``owner``'s conversation where a hand-off leaves it, until an answer.

    ``result`` is the result of ``run`` (``owner``'s own, which handed off), or
    ``None`` when another agent speaks already (a hand-off of an earlier run): then
    that agent answers ``run``'s prompt. Each agent handed to runs (a fresh member
    like it, on ``owner``'s conversation) until it answers or hands off again; the
    agent that answered is the conversation's speaker from then on.

    ``shares`` gathers what each agent spent, by name, as the runs end (a run that
    fails included): the result's ``agent_usage``.

    Returns:
        One result for the whole exchange: the last answer, every message, the
        summed usage and iterations.

    Raises:
        MaxIterationsExceededError: More hand-offs than the run's ``max_iterations``.
    """
    from agentrt._loop import Run

    runner = MEMBER_RUNNER.get()
    conversation = owner.conversation
    results: list[RunResult[Any]] = []
    start = len(conversation)
    prompt, answers = run.prompt, run.answers
    ran = owner
    if result is not None:
        results.append(result)
        start = run.start
        prompt, answers = None, None
    handoffs = 0
    if shares is None:
        shares = {}
    if result is not None:
        _own_and_delegated(owner, result, shares)
    while True:
        if results:
            target = ran._handoff
            if target is None:
                break
            ran._handoff = None
            handoffs += 1
            if handoffs > run.max_iterations:
                raise MaxIterationsExceededError(run.max_iterations)
            owner._speaker = None if target is owner else target
            if runner is not None:
                await runner.switched(ran.name, target.name)
        speaker = owner._speaker
        if speaker is None:
            # Back to the owner: another agent's instructions may be the system message.
            owner._rendered_system = None
            ran = owner
            following = Run(owner, prompt, run.max_iterations, run.stream, run.output,
                            run.settings, answers)  # fmt: skip
        else:
            ran = await _speaker_of(speaker, owner)
            following = Run(ran, prompt, run.max_iterations, run.stream, run.output,
                            dict(ran.model_settings), answers)  # fmt: skip
        try:
            if runner is None or ran is owner:
                results.append(await following.execute())
            else:
                results.append(await runner.run_speaker(ran, following))
        except BaseException:
            _spent_by(ran, following, shares)
            raise
        _own_and_delegated(ran, results[-1], shares)
        prompt, answers = None, None
    last = results[-1]
    return RunResult(
        output=last.output,
        messages=conversation.since(start),
        usage=_total(shares),
        iterations=sum(r.iterations for r in results),
        value=last.value,
        pending_tool_calls=last.pending_tool_calls,
        agent_usage=shares,
    )


def settled(agent: Agent, result: RunResult[Any]) -> RunResult[Any]:
    """``result`` of ``agent``'s run as its team left it.

    It counts what its sub-agents spent (and says who spent what), and the calls it
    waits on are those its waiting members wait on, at any depth: the ones a caller
    answers.
    """
    waiting = agent._waiting
    if waiting is not None:
        still = {call.id for call in agent.conversation.pending_calls()}
        for call_id in [key for key in waiting if key not in still]:
            del waiting[call_id]  # answered otherwise (a new user message): abandoned
        if not waiting:
            agent._waiting = None
        else:
            result = dataclasses.replace(result, pending_tool_calls=tuple(leaf_calls(agent)))
    if agent._team_usage is None:
        return result
    shares = _own_and_delegated(agent, result)
    # Every delegating run's path: made directly, not by dataclasses.replace (a µs more).
    return RunResult(result.output, result.messages, _total(shares), result.iterations,
                     result.value, result.pending_tool_calls, shares)  # fmt: skip


def leaf_calls(agent: Agent) -> list[ToolCall]:
    """The calls ``agent``'s conversation waits on, a waiting member's own in its call's place."""
    waiting = agent._waiting or {}
    calls: list[ToolCall] = []
    for call in agent.conversation.pending_calls():
        member = waiting.get(call.id)
        calls += [call] if member is None else leaf_calls(member)
    return calls


def route_answers(agent: Agent, answers: Mapping[str, Answer]) -> dict[str, Answer]:
    """``answers`` for ``agent``'s run: those to a waiting member's calls go to the member.

    The member keeps its answers for when it goes on, and the call that waits on it
    is approved: the run calls it again, and the member resumes (see
    :func:`run_member`). Other answers are left as they are, for the run to check.
    """
    routed = dict(answers)
    for call_id, member in (agent._waiting or {}).items():
        leaves = {call.id for call in leaf_calls(member)}
        mine = {key: routed.pop(key) for key in list(routed) if key in leaves}
        if mine:
            member._resume = route_answers(member, mine) if member._waiting else mine
            routed[call_id] = Approval("approve")
    return routed


def _own_and_delegated(agent: Agent, result: RunResult[Any], into: dict[str, Usage] | None = None
                       ) -> dict[str, Usage]:  # fmt: skip
    """``agent``'s own usage in ``result`` and its sub-agents', by name, added ``into``."""
    shares = {} if into is None else into
    _add_shares(shares, {agent.name: result.usage})
    delegated, agent._team_usage = agent._team_usage, None
    if delegated:
        _add_shares(shares, delegated)
    return shares


def _total(shares: Mapping[str, Usage]) -> Usage:
    """The sum of ``shares`` (no addition to the first)."""
    total = NO_USAGE
    for usage in shares.values():
        total = usage if total is NO_USAGE else total + usage
    return total


def _spent_by(agent: Agent, run: Run, into: dict[str, Usage]) -> None:
    """What ``run`` of ``agent``, which failed, and the agents it delegated to spent."""
    if run.usage is not NO_USAGE:
        _add_shares(into, {agent.name: run.usage})
    delegated, agent._team_usage = agent._team_usage, None
    if delegated:
        _add_shares(into, delegated)


def _add_shares(shares: dict[str, Usage], more: Mapping[str, Usage]) -> None:
    for name, usage in more.items():
        known = shares.get(name)
        shares[name] = usage if known is None else known + usage
