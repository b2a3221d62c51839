""":class:`TypedEventHandlersMixin`, kept only to point its users at ``agent.hooks``."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ("TypedEventHandlersMixin",)

_MESSAGE = (
    "TypedEventHandlersMixin is deprecated and does nothing: register typed handlers "
    "through agent.hooks (a HooksAccessor), e.g. @agent.hooks.on_tool_call_before"
)


class TypedEventHandlersMixin:
    """Deprecated: use ``agent.hooks`` (:class:`~agentrt.hooks.HooksAccessor`) instead.

    Subclassing this class, or instantiating it or a subclass, issues a
    :class:`DeprecationWarning`. It has no other behaviour.
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # stacklevel 2: the class statement that subclasses the mixin.
        warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=2)
        super().__init_subclass__(**kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # stacklevel 2: the code that instantiates (or a subclass's __init__).
        warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=2)
        super().__init__(*args, **kwargs)
