"""Values a handler returns to steer the execute loop.

* From ``execute:iteration:before``: :data:`SKIP_ITERATION` skips the model turn;
  a ``str``, :class:`~agentrt.AssistantMessage` or :class:`~agentrt.ModelResponse`
  is used as the model's answer without calling the model.
* From ``execute:error``: :data:`RETRY` runs the failed turn again (bounded by
  ``Agent(max_retries=...)``); a ``str`` or :class:`~agentrt.AssistantMessage`
  becomes the run's final answer. No output lets the exception propagate.
* From ``tool:call:before``: :data:`DEFER` leaves the call open, neither run nor
  answered; the run ends waiting on it (see :mod:`agentrt.deferred`).
"""

from typing import Final, TypeAlias, final

from agentrt.messages import AssistantMessage
from agentrt.models.base import ModelResponse

__all__ = (
    "DEFER",
    "RETRY",
    "SKIP_ITERATION",
    "Defer",
    "IterationOverride",
    "Recovery",
    "Retry",
    "SkipIteration",
)


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


@final
class Defer:
    """Type of :data:`DEFER`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFER"


SKIP_ITERATION: Final = SkipIteration()
"""Returned from ``execute:iteration:before``: skip this turn's model call."""
RETRY: Final = Retry()
"""Returned from ``execute:error``: run the failed turn again."""
DEFER: Final = Defer()
"""Set as the output of ``tool:call:before``: leave this call open for a later run.

The tool does not run and the call gets no answer; the turn's other calls go on, then
the run ends waiting with the call in ``result.pending_tool_calls``. A later run
answers it (``execute(tool_results=...)``, see :mod:`agentrt.deferred`). A call the
caller approved in that later run is not deferred again: it runs.
"""

IterationOverride: TypeAlias = SkipIteration | AssistantMessage | ModelResponse | str
"""What an ``execute:iteration:before`` handler may output."""
Recovery: TypeAlias = Retry | AssistantMessage | str
"""What an ``execute:error`` handler may output."""
