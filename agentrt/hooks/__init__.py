"""Typed handler registration: :class:`HooksAccessor` (``agent.hooks``).

``HooksAccessor`` fronts an :class:`~agentrt.EventBus` with one ``on_*`` method per
dispatched event, each typed by the event's params ``TypedDict``; the methods are
generated from the event catalogue. :class:`TypedEventHandlersMixin` is deprecated in
its favour.
"""

from agentrt.hooks._accessor import HooksAccessor as HooksAccessor
from agentrt.hooks._base import HookOptions as HookOptions
from agentrt.hooks._deprecated import TypedEventHandlersMixin as TypedEventHandlersMixin

__all__ = ("HookOptions", "HooksAccessor", "TypedEventHandlersMixin")
