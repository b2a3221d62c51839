"""Values a handler returns to steer the execute loop.

* From ``execute:iteration:before``: :data:`SKIP_ITERATION` skips the model turn;
  a ``str``, :class:`~agentrt.AssistantMessage` or :class:`~agentrt.ModelResponse`
  is used as the model's answer without calling the model.
* From ``execute:error``: :data:`RETRY` runs the failed turn again (bounded by
  ``Agent(max_retries=...)``); a ``str`` or :class:`~agentrt.AssistantMessage`
  becomes the run's final answer. No output lets the exception propagate.
"""

from typing import Final, TypeAlias, final

from agentrt.messages import AssistantMessage
from agentrt.models.base import ModelResponse

__all__ = ("RETRY", "SKIP_ITERATION", "IterationOverride", "Recovery", "Retry", "SkipIteration")


@final
class SkipIteration:
    """Type of :data:`SKIP_ITERATION`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SKIP_ITERATION"


@final
class Retry:
    """Type of :data:`RETRY`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "RETRY"


SKIP_ITERATION: Final = SkipIteration()
"""Returned from ``execute:iteration:before``: skip this turn's model call."""
RETRY: Final = Retry()
"""Returned from ``execute:error``: run the failed turn again."""

IterationOverride: TypeAlias = SkipIteration | AssistantMessage | ModelResponse | str
"""What an ``execute:iteration:before`` handler may output."""
Recovery: TypeAlias = Retry | AssistantMessage | str
"""What an ``execute:error`` handler may output."""
