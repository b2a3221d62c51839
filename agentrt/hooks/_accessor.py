""":class:`HooksAccessor`: the typed front of an :class:`~agentrt.EventBus`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final

from agentrt.bus import EventBus, Handler
from agentrt.events.catalogue import CATALOGUE
from agentrt.events.names import AgentEvents
from agentrt.hooks._generated import EventHooks

__all__ = ("HooksAccessor",)

_EVENTS: Final[Mapping[str, AgentEvents]] = MappingProxyType(
    {decl.hook: AgentEvents(decl.name) for decl in CATALOGUE if decl.hook is not None}
)


class HooksAccessor(EventHooks):
    """Typed registration of event handlers: one ``on_*`` method per dispatched event.

    ``agent.hooks`` is one of these over ``agent.events``. Each method registers on
    the bus exactly like :meth:`EventBus.on <agentrt.EventBus.on>` and returns the
    handler unchanged, in three forms::

        hooks.on_tool_call_before(handler)
        @hooks.on_tool_call_before
        @hooks.on_tool_call_before(priority=200, predicate=lambda ctx: ...)

    The handler's type is checked against the event's params ``TypedDict``, so a
    handler annotated for another event is a type error. Each method's docstring
    says whether the event is interceptable or a signal, which ``ctx.parameters``
    keys it carries, and what ``ctx.output`` must hold. The methods are generated
    from the event catalogue (:mod:`agentrt.events.catalogue`).

    Args:
        bus: The bus handlers are registered on.

    Raises:
        TypeError: ``bus`` is not an :class:`~agentrt.EventBus`.
    """

    __slots__ = ("_bus",)

    EVENTS: ClassVar[Mapping[str, AgentEvents]] = _EVENTS
    """Each ``on_*`` method name mapped to the event it registers for."""

    def __init__(self, bus: EventBus) -> None:
        if not isinstance(bus, EventBus):
            raise TypeError(f"HooksAccessor needs an EventBus, got {type(bus).__name__}")
        self._bus = bus

    def _hooks_bus(self) -> EventBus:
        return self._bus

    @property
    def bus(self) -> EventBus:
        """The bus handlers are registered on."""
        return self._bus

    def off(self, event: AgentEvents | str, handler: Handler) -> bool:
        """Remove ``handler`` from ``event``; see :meth:`EventBus.off <agentrt.EventBus.off>`.

        Returns:
            Whether a registration was removed.
        """
        return self._bus.off(event, handler)

    def __repr__(self) -> str:
        return f"<HooksAccessor bus={self._bus!r}>"
