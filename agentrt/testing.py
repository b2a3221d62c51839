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
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from agentrt.bus import EventContext
from agentrt.events.names import AgentEvents
from agentrt.events.registry import EVENT_PARAMS, EVENT_SEMANTICS, EventSemantics
from agentrt.models.scripted import ScriptedModel

__all__ = ("EventRecorder", "RecordedEvent", "ScriptedModel", "contract_violations")


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
