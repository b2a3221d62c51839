"""Helpers for testing code built on agentrt.

:class:`EventRecorder` records every dispatch it is registered for, with the
semantics it was dispatched with and its parameters; :func:`contract_violations`
checks a recording against :data:`~agentrt.EVENT_SEMANTICS` and
:data:`~agentrt.EVENT_PARAMS`. :class:`~agentrt.ScriptedModel` is the model to
script runs with.

::

    recorder = EventRecorder()
    agent.events.on("*", recorder, priority=10_000)
    await agent.execute("hi")
    assert recorder.names()[:2] == ["agent:state:change", "execute:before"]
    assert contract_violations(recorder) == []

:func:`cancellation_violations` cancels a run at every event boundary in turn and
checks the cancellation contract each time.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from agentrt.bus import EventContext
from agentrt.events.names import AgentEvents
from agentrt.events.registry import EVENT_PARAMS, EVENT_SEMANTICS, EventSemantics
from agentrt.models.scripted import ScriptedModel

if TYPE_CHECKING:
    from agentrt.agent import Agent

__all__ = (
    "EventRecorder",
    "RecordedEvent",
    "ScriptedModel",
    "cancellation_violations",
    "contract_violations",
)


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One dispatch as a handler saw it."""

    event: AgentEvents | str
    semantics: EventSemantics
    parameters: MappingProxyType[str, Any]


class EventRecorder:
    """A handler that records every dispatch it receives; register it on ``"*"``."""

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    def __call__(self, ctx: EventContext[Any, Any]) -> None:
        self.events.append(
            RecordedEvent(ctx.event, ctx.semantics, MappingProxyType(dict(ctx.parameters)))
        )

    def names(self) -> list[str]:
        """The recorded event names, in dispatch order."""
        return [str(recorded.event) for recorded in self.events]

    def of(self, event: AgentEvents | str) -> list[RecordedEvent]:
        """The recorded dispatches of one event."""
        return [recorded for recorded in self.events if recorded.event == event]

    def clear(self) -> None:
        """Forget what was recorded."""
        self.events.clear()


def contract_violations(recorder: EventRecorder) -> list[str]:
    """Check each recorded dispatch of a core event against the registries.

    Returns:
        One line per violation: an event dispatched with the other semantics than
        :data:`EVENT_SEMANTICS` declares, or whose parameters are not exactly the
        keys of its :data:`EVENT_PARAMS` type (every required key, no unknown key).
        Empty when the recording keeps the contract.
    """
    problems: list[str] = []
    for n, recorded in enumerate(recorder.events):
        event = recorded.event
        if not isinstance(event, AgentEvents):
            continue
        declared = EVENT_SEMANTICS[event]
        if recorded.semantics is not declared:
            problems.append(
                f"#{n} {event}: dispatched as {recorded.semantics.name}, declared {declared.name}"
            )
        params_type = EVENT_PARAMS.get(event)
        if params_type is None:
            problems.append(f"#{n} {event}: an extension point was dispatched by core")
            continue
        keys = set(recorded.parameters)
        missing = params_type.__required_keys__ - keys
        unknown = keys - params_type.__required_keys__ - params_type.__optional_keys__
        if missing or unknown:
            problems.append(
                f"#{n} {event}: missing keys {sorted(missing)}, unknown keys {sorted(unknown)}"
            )
    return problems


class _CancelAt:
    """A ``"*"`` handler that cancels ``scope`` at the k-th dispatch it sees."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.count = 0
        self.scope: anyio.CancelScope | None = None
        self.event: str | None = None

    async def __call__(self, ctx: EventContext[Any, Any]) -> None:
        if self.scope is None:
            return
        self.count += 1
        if self.count == self.k:
            self.event = str(ctx.event)
            self.scope.cancel()
            # Delivered inside this very dispatch, whatever kind of event it is.
            await anyio.lowlevel.checkpoint()


class _ListSink:
    def __init__(self, events: list[Any]) -> None:
        self.events = events

    async def __call__(self, event: Any) -> None:
        self.events.append(event)


def _unanswered(agent: "Agent") -> list[str]:
    called: list[str] = []
    answered: set[str] = set()
    for message in agent.messages:
        if message.role == "assistant":
            called.extend(call.id for call in message.tool_calls)
        elif message.role == "tool":
            answered.add(message.tool_call_id)
    return [call_id for call_id in called if call_id not in answered]


async def cancellation_violations(
    make_agent: Callable[[], "Agent"], prompt: str, *, stream: bool = False
) -> list[str]:
    """Cancel a run at every event boundary in turn; return every broken promise.

    ``make_agent()`` must build a fresh agent (and model) each time: the run is
    repeated once to count its dispatches, then once per boundary. At the k-th
    dispatch the caller's cancel scope is cancelled, and the cancellation contract is
    checked: the run never reports success, every assistant tool call has a tool
    message, the agent is back to idle, and — with ``stream=True``, through a
    :class:`~agentrt.stream.StreamAdapter` — the events validate and end with exactly
    one ``stream_stopped``.

    Returns:
        One line per violation (empty when the contract holds at every boundary).
    """
    from agentrt.state import AgentState
    from agentrt.stream import StreamAdapter, validate

    counter = _CancelAt(0)
    agent = make_agent()
    agent.events.on("*", counter, priority=sys.maxsize)
    counter.scope = anyio.CancelScope()  # armed, but k=0 never fires
    await agent.execute(prompt)
    await agent.close()
    total = counter.count
    problems: list[str] = []
    for k in range(1, total + 1):
        agent = make_agent()
        cancel = _CancelAt(k)
        agent.events.on("*", cancel, priority=sys.maxsize)
        events: list[Any] = []
        sink = _ListSink(events)
        succeeded = False
        with anyio.CancelScope() as scope:
            cancel.scope = scope
            if stream:
                await StreamAdapter(agent, sink).run(prompt)
            else:
                await agent.execute(prompt)
            succeeded = True
        cancel.scope = None
        where = f"cancelled at dispatch {k}/{total} ({cancel.event})"
        if succeeded and scope.cancel_called:
            problems.append(f"{where}: the run reported success")
        missing = _unanswered(agent)
        if missing:
            problems.append(f"{where}: tool calls without an answer: {missing}")
        if agent.state is not AgentState.IDLE:
            problems.append(f"{where}: the agent is {agent.state}, not idle")
        if stream:
            stops = [e for e in events if e.type == "stream_stopped"]
            if len(stops) != 1 or events[-1].type != "stream_stopped":
                problems.append(f"{where}: the stream did not end with one stream_stopped")
            problems.extend(f"{where}: {violation.message}" for violation in validate(events))
        with anyio.CancelScope(shield=True):
            await agent.close()
    return problems
