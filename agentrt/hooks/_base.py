"""What the typed registration methods share: :class:`HookOptions` and :class:`HooksBase`.

This module defines a ``TypedDict``, so it must not use
``from __future__ import annotations`` (see :mod:`agentrt.events.params`).
"""

from collections.abc import Callable
from typing import Any, TypedDict, TypeVar

from agentrt.bus import EventBus, Predicate
from agentrt.events.names import AgentEvents

__all__ = ("HookOptions", "HooksBase")

_H = TypeVar("_H", bound=Callable[..., Any])


class HookOptions(TypedDict, total=False):
    """The keyword options every ``on_*`` method of :class:`~agentrt.hooks.HooksAccessor` takes.

    They are passed unchanged to :meth:`EventBus.on <agentrt.EventBus.on>`, which
    validates them.
    """

    priority: int
    """Higher runs first; equal priorities run in registration order (default 100)."""
    predicate: Predicate | None
    """Called with the context; the handler runs only when it returns true."""


class HooksBase:
    """The one path from every generated ``on_*`` method into a bus.

    A subclass says which bus (:meth:`_hooks_bus`); it has no state of its own, so
    that it can be mixed into a class with ``__slots__`` or without.
    """

    __slots__ = ()

    def _hooks_bus(self) -> EventBus:
        # The template method of this class: HooksAccessor and the deprecated mixin
        # each name their bus; a class that names none cannot register a hook.
        raise NotImplementedError(
            f"{type(self).__name__} derives from HooksBase but does not say which bus its "
            "hooks go to: define _hooks_bus()"
        )

    def _on(
        self, event: AgentEvents, handler: _H | None, options: HookOptions
    ) -> _H | Callable[[_H], _H]:
        # One path into the bus, so that every validation error (non-callable
        # handler, bad priority or predicate, unknown option) is the bus's own.
        bus = self._hooks_bus()
        if handler is None:
            return bus.on(event, **options)
        return bus.on(event, handler, **options)
