"""Human approval of tool calls: decisions, the per-session memory of them, waiting.

A tool that requires confirmation (``@tool(requires_confirmation=True)``, or a
policy callable) does not run until someone answers its call by id:

* ``"approve"``: this call runs;
* ``"approve-session"``: this call runs and no call is asked about again for the
  rest of the agent's session;
* ``"approve-tool"``: this call runs and calls of the same tool are not asked about
  again in the session;
* ``"reject"``: the call does not run; its response is ``"rejected by the user:
  <reason>"`` and the run goes on.

An answer may arrive before the question is asked (the client saw the call in the
model's streamed output): it is kept. A second answer for the same id is ignored.
An answer for an id the model never produced is a :class:`UnknownToolCallError`.

By default the run waits for the answer, inside the run. With ``defer=True``
(``agent.stream(..., defer_confirmations=True)``) it does not: the question is put,
the call is left open (:data:`~agentrt.control.DEFER`), and the run ends waiting on
it; a later run gets the decision as an :class:`~agentrt.deferred.Approval` in
``tool_results`` (see :mod:`agentrt.deferred`).
"""

import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from agentrt.control import DEFER
from agentrt.deferred import DECISIONS, REJECTED_PREFIX, Approval, Decision, rejection
from agentrt.events.names import AgentEvents
from agentrt.exceptions import AgentrtError
from agentrt.messages import ToolCall, ToolResponse
from agentrt.tools import Tool

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.bus import EventContext

__all__ = (
    "DECISIONS",
    "REJECTED_PREFIX",
    "ConfirmCallback",
    "ConfirmationPolicy",
    "Confirmations",
    "Decision",
    "InvalidDecisionError",
    "UnknownToolCallError",
    "confirm_with",
    "rejection",
)

# Last on tool:call:before, so arguments and outputs are as every other handler left them.
_LAST = -sys.maxsize


ConfirmationPolicy: TypeAlias = Callable[[Tool[Any, Any], ToolCall], bool]
"""Decides whether a call needs a person's approval (default: the tool's own flag)."""


class UnknownToolCallError(AgentrtError, LookupError):
    """A confirmation answer names a tool call the model never made.

    Attributes:
        tool_call_id: The id given.
    """

    def __init__(self, tool_call_id: str) -> None:
        self.tool_call_id = tool_call_id
        super().__init__(
            f"no tool call {tool_call_id!r} in this session: answer only ids the model produced"
        )


class InvalidDecisionError(AgentrtError, ValueError):
    """A confirmation answer is not one of :data:`DECISIONS`.

    Attributes:
        decision: What was given.
    """

    def __init__(self, decision: object) -> None:
        self.decision = decision
        allowed = ", ".join(repr(d) for d in DECISIONS)
        super().__init__(f"invalid decision {decision!r}; use one of {allowed}")


def _default_policy(tool: Tool[Any, Any], call: ToolCall) -> bool:
    return tool.requires_confirmation


class Confirmations:
    """The open questions and answers of one stream.

    Args:
        agent: Whose session's approvals apply.
        auto_approve: Never ask; every call runs.
        policy: Whether a call needs approval (default: ``tool.requires_confirmation``).
        defer: Do not wait in the run for an answer: leave the call open, for a
            later run to answer (see the module docstring).
    """

    def __init__(
        self,
        agent: "Agent",
        *,
        auto_approve: bool = False,
        policy: ConfirmationPolicy | None = None,
        defer: bool = False,
    ) -> None:
        self._agent = agent
        # Session-wide approvals outlive one stream: the agent's stream state keeps them.
        self._approvals = agent.stream_state.approvals
        self.auto_approve = auto_approve
        self.defer = defer
        self._policy = policy or _default_policy
        self._seen: set[str] = set()
        self._answers: dict[str, tuple[Decision, str | None]] = {}
        self._waiting: dict[str, anyio.Event] = {}
        # Answers whose question an earlier run asked: not asked again.
        self._asked_before: set[str] = set()

    def decided(self, answers: Mapping[str, object]) -> None:
        """Record the decisions a later run was given for calls an earlier run deferred.

        The calls' questions were asked by that earlier run: they are not asked again.
        Values that are not an :class:`~agentrt.deferred.Approval` (an external tool's
        results) are not decisions and are left alone.
        """
        for call_id, answer in answers.items():
            if isinstance(answer, Approval):
                self._seen.add(call_id)
                self._asked_before.add(call_id)
                self._answers.setdefault(call_id, (answer.decision, answer.reason))

    def saw(self, tool_call_id: str) -> None:
        """Record that the model produced a call with this id."""
        self._seen.add(tool_call_id)

    def needs_approval(self, tool: Tool[Any, Any] | None, call: ToolCall) -> bool:
        """Whether ``call`` must wait for an answer before it runs."""
        if tool is None or self.auto_approve:
            return False
        approvals = self._approvals
        if approvals.everything or tool.name in approvals.tools:
            return False
        return bool(self._policy(tool, call))

    def answer(self, tool_call_id: str, decision: str, reason: str | None = None) -> bool:
        """Record an answer; returns False when the id was already answered (ignored).

        Raises:
            InvalidDecisionError: ``decision`` is not one of :data:`DECISIONS`.
            UnknownToolCallError: The model produced no call with this id.
        """
        if decision not in DECISIONS:
            raise InvalidDecisionError(decision)
        if reason is not None and not isinstance(reason, str):
            raise TypeError(f"reason must be a string, got {type(reason).__name__}")
        if tool_call_id not in self._seen:
            raise UnknownToolCallError(tool_call_id)
        if tool_call_id in self._answers:
            return False
        self._answers[tool_call_id] = (decision, reason)
        waiting = self._waiting.get(tool_call_id)
        if waiting is not None:
            waiting.set()
        return True

    async def wait(self, call: ToolCall) -> tuple[Decision, str | None]:
        """Wait for the answer to ``call`` and apply its session-wide effect."""
        if call.id not in self._answers:
            event = self._waiting.setdefault(call.id, anyio.Event())
            await event.wait()
        decision, reason = self._answers[call.id]
        self._approvals.record(decision, call.name)
        return decision, reason

    async def settle(
        self, ctx: "EventContext[Any, Any]", ask: Callable[[ToolCall], Awaitable[None]]
    ) -> None:
        """Hold a ``tool:call:before`` dispatch until its call is approved or rejected.

        Does nothing when a handler already answered the call or it needs no
        approval. Otherwise awaits ``ask(call)`` (put the question: emit an event,
        call a person), then the answer; a rejection becomes the dispatch's output.
        When deferring and no answer is known yet, the output becomes
        :data:`~agentrt.control.DEFER` instead of waiting: the run ends waiting.
        """
        if isinstance(ctx.output, ToolResponse) or ctx.output is DEFER:
            return
        call: ToolCall = ctx.parameters["tool_call"]
        self.saw(call.id)
        tool = next((t for t in self._agent.tools if t.name == call.name), None)
        if not self.needs_approval(tool, call):
            return
        if call.id not in self._asked_before:
            await ask(call)
        if self.defer and call.id not in self._answers:
            ctx.output = DEFER
            return
        decision, reason = await self.wait(call)
        if decision == "reject":
            ctx.output = rejection(reason)

    def gate(
        self, ask: Callable[["EventContext[Any, Any]"], Awaitable[None]]
    ) -> Callable[["EventContext[Any, Any]"], Awaitable[None]]:
        """The interceptable ``tool:call:before`` handler that holds calls for approval.

        It changes the run: a call that needs approval waits for its answer, and a
        rejected call's ``ctx.output`` becomes the rejection, so the tool does not run
        (see :meth:`settle`). ``ask(ctx)`` puts the question (a stream emits its
        ``tool_call_confirmation`` event). Register it on ``tool:call:before``; the
        stream registers it beside its adapter, which only reads.
        """

        async def confirm(ctx: "EventContext[Any, Any]") -> None:
            await self.settle(ctx, lambda call: ask(ctx))

        return confirm

    @property
    def pending(self) -> tuple[str, ...]:
        """Ids whose question was asked and not yet answered."""
        return tuple(i for i in self._waiting if i not in self._answers)


ConfirmCallback = Callable[
    [ToolCall],
    Decision | tuple[Decision, str | None] | Awaitable[Decision | tuple[Decision, str | None]],
]
"""Answers a confirmation without a stream: ``decision`` or ``(decision, reason)``."""


def confirm_with(
    agent: "Agent", callback: ConfirmCallback, *, policy: ConfirmationPolicy | None = None
) -> Callable[[], bool]:
    """Ask ``callback`` before each tool call that needs approval — no stream needed.

    ``callback(call)`` (sync or async) returns a decision, or ``(decision, reason)``.
    Session-wide answers (``"approve-session"``, ``"approve-tool"``) are shared with
    the agent's streams.

    Returns:
        A function that removes the confirmation again (True if it was in place).

    Raises:
        TypeError: ``callback`` is not callable.
    """
    if not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    confirmations = Confirmations(agent, policy=policy)

    async def ask(call: ToolCall) -> None:
        answer = callback(call)
        if inspect.isawaitable(answer):
            answer = await answer
        decision, reason = (answer, None) if isinstance(answer, str) else answer
        confirmations.answer(call.id, decision, reason)

    async def before(ctx: "EventContext[Any, Any]") -> None:
        await confirmations.settle(ctx, ask)

    agent.events.on(AgentEvents.TOOL_CALL_BEFORE, before, priority=_LAST)
    return functools.partial(agent.events.off, AgentEvents.TOOL_CALL_BEFORE, before)
