""":class:`TypedEventHandlersMixin`: the old typed methods on the agent, deprecated.

Before ``agent.hooks`` existed, an agent class mixed this in to get its ``on_*``
methods. It still works: every method of :class:`~agentrt.hooks.HooksAccessor` is
here too and registers on the agent's own bus (``self.events``), plus the short
names the first releases used (``on_message_append`` for ``message:append:after``,
...). A class that mixes it in warns once, when the class is made.
"""

from __future__ import annotations

import warnings
from typing import Any

from agentrt.bus import EventBus
from agentrt.hooks._generated import EventHooks

__all__ = ("TypedEventHandlersMixin",)

_MESSAGE = (
    "TypedEventHandlersMixin is deprecated: register typed handlers through agent.hooks "
    "(a HooksAccessor), e.g. @agent.hooks.on_tool_call_before"
)


class TypedEventHandlersMixin(EventHooks):
    """Deprecated: use ``agent.hooks`` (:class:`~agentrt.hooks.HooksAccessor`) instead.

    Mix it into :class:`~agentrt.Agent` (``class MyAgent(TypedEventHandlersMixin,
    Agent)``) and each ``agent.on_<event>(...)`` is ``agent.hooks.on_<event>(...)``:
    same forms, same options, plain or async handlers. Making such a class issues
    one :class:`DeprecationWarning` (so does instantiating the mixin on its own).
    """

    __slots__ = ()

    # The names of the first releases, each the same as the hooks method it names.
    on_message_create = EventHooks.on_message_create_before
    on_message_append = EventHooks.on_message_append_after
    on_message_replace = EventHooks.on_message_replace_after
    on_message_set_system = EventHooks.on_message_set_system_after
    on_message_render = EventHooks.on_message_render_after
    on_llm_complete = EventHooks.on_llm_complete_after
    on_llm_stream = EventHooks.on_llm_stream_after
    on_llm_extract = EventHooks.on_llm_extract_after
    on_execute_iteration = EventHooks.on_execute_iteration_before
    on_context_provider = EventHooks.on_context_provider_after

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # stacklevel 2: the class statement that mixes the mixin in.
        warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=2)
        super().__init_subclass__(**kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if type(self) is TypedEventHandlersMixin:
            # stacklevel 2: the code that instantiates the mixin itself.
            warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=2)
        super().__init__(*args, **kwargs)

    def _hooks_bus(self) -> EventBus:
        bus = getattr(self, "events", None)
        if not isinstance(bus, EventBus):
            raise TypeError(
                f"{type(self).__name__} mixes in TypedEventHandlersMixin but has no "
                "EventBus at .events: mix it into Agent (or use agent.hooks)"
            )
        return bus
