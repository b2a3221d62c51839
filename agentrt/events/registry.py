"""How each event is dispatched and what it carries.

:data:`EVENT_SEMANTICS` says, for every :class:`AgentEvents` member, whether it is
dispatched with :meth:`EventBus.apply <agentrt.EventBus.apply>` (``INTERCEPTABLE``:
handlers change the outcome through ``ctx.output``) or with
:meth:`EventBus.do <agentrt.EventBus.do>` (``SIGNAL``: handlers only observe).
:data:`EVENT_PARAMS` maps every dispatched event to its params ``TypedDict``.
"""

from enum import Flag, auto
from types import MappingProxyType
from typing import Any, Final, cast

from agentrt.events import params as p
from agentrt.events.names import AgentEvents

__all__ = (
    "EVENT_PARAMS",
    "EVENT_SEMANTICS",
    "EXTENSION_POINTS",
    "EventSemantics",
    "get_event_semantics",
    "get_params_type",
)


class EventSemantics(Flag):
    """How an event is dispatched."""

    INTERCEPTABLE = auto()
    """Dispatched with ``apply()``: handlers may change the outcome via ``ctx.output``."""
    SIGNAL = auto()
    """Dispatched with ``do()``: fire-and-forget, ``ctx.output`` is ignored."""


E = AgentEvents

# Events without a ``:before`` phase whose handlers still decide an outcome.
_INTERCEPTABLE_WITHOUT_BEFORE: Final = frozenset(
    {E.TOOLS_PROVIDE, E.TOOLS_GENERATE_SIGNATURE, E.TOOL_CALL_ERROR, E.EXECUTE_ERROR}
)

EXTENSION_POINTS: Final[frozenset[AgentEvents]] = frozenset(
    e for e in AgentEvents if e.split(":", 1)[0] in {"storage", "cache", "validation", "summary"}
)
"""Events reserved for extensions: declared here, never dispatched by core."""

EVENT_SEMANTICS: Final[MappingProxyType[AgentEvents, EventSemantics]] = MappingProxyType(
    {
        e: (
            EventSemantics.INTERCEPTABLE
            if e.endswith(":before") or e in _INTERCEPTABLE_WITHOUT_BEFORE
            else EventSemantics.SIGNAL
        )
        for e in AgentEvents
    }
)
"""Every :class:`AgentEvents` member mapped to exactly one :class:`EventSemantics`."""

EVENT_PARAMS: Final[MappingProxyType[AgentEvents, type[Any]]] = MappingProxyType(
    {
        E.MESSAGE_CREATE_BEFORE: p.MessageCreateBeforeParams,
        E.MESSAGE_CREATE_AFTER: p.MessageCreateAfterParams,
        E.MESSAGE_APPEND_BEFORE: p.MessageAppendBeforeParams,
        E.MESSAGE_APPEND_AFTER: p.MessageAppendAfterParams,
        E.MESSAGE_REPLACE_BEFORE: p.MessageReplaceBeforeParams,
        E.MESSAGE_REPLACE_AFTER: p.MessageReplaceAfterParams,
        E.MESSAGE_SET_SYSTEM_BEFORE: p.MessageSetSystemBeforeParams,
        E.MESSAGE_SET_SYSTEM_AFTER: p.MessageSetSystemAfterParams,
        E.MESSAGE_RENDER_BEFORE: p.MessageRenderBeforeParams,
        E.MESSAGE_RENDER_AFTER: p.MessageRenderAfterParams,
        E.TOOLS_PROVIDE: p.ToolsProvideParams,
        E.TOOLS_GENERATE_SIGNATURE: p.ToolsGenerateSignatureParams,
        E.TOOL_CALL_BEFORE: p.ToolCallBeforeParams,
        E.TOOL_CALL_AFTER: p.ToolCallAfterParams,
        E.TOOL_CALL_ERROR: p.ToolCallErrorParams,
        E.TOOL_CALL_OUTPUT: p.ToolCallOutputParams,
        E.LLM_COMPLETE_BEFORE: p.LLMCallBeforeParams,
        E.LLM_COMPLETE_AFTER: p.LLMCallAfterParams,
        E.LLM_COMPLETE_ERROR: p.LLMCallErrorParams,
        E.LLM_STREAM_BEFORE: p.LLMCallBeforeParams,
        E.LLM_STREAM_CHUNK: p.LLMStreamChunkParams,
        E.LLM_STREAM_AFTER: p.LLMCallAfterParams,
        E.LLM_STREAM_ERROR: p.LLMCallErrorParams,
        E.LLM_EXTRACT_BEFORE: p.LLMExtractBeforeParams,
        E.LLM_EXTRACT_AFTER: p.LLMExtractAfterParams,
        E.LLM_EXTRACT_ERROR: p.LLMCallErrorParams,
        E.LLM_ERROR: p.LLMErrorParams,
        E.EXECUTE_BEFORE: p.ExecuteBeforeParams,
        E.EXECUTE_AFTER: p.ExecuteAfterParams,
        E.EXECUTE_ERROR: p.ExecuteErrorParams,
        E.EXECUTE_ITERATION_BEFORE: p.ExecuteIterationBeforeParams,
        E.EXECUTE_ITERATION_AFTER: p.ExecuteIterationAfterParams,
        E.CONTEXT_PROVIDER_BEFORE: p.ContextProviderBeforeParams,
        E.CONTEXT_PROVIDER_AFTER: p.ContextProviderAfterParams,
        E.AGENT_INIT_AFTER: p.AgentInitAfterParams,
        E.AGENT_CLOSE_BEFORE: p.AgentCloseParams,
        E.AGENT_CLOSE_AFTER: p.AgentCloseParams,
        E.AGENT_STATE_CHANGE: p.AgentStateChangeParams,
        E.AGENT_VERSION_CHANGE: p.AgentVersionChangeParams,
        E.MODE_ENTERING: p.ModeParams,
        E.MODE_ENTERED: p.ModeParams,
        E.MODE_EXITING: p.ModeParams,
        E.MODE_EXITED: p.ModeParams,
    }
)
"""Every dispatched event mapped to its params ``TypedDict`` (extension points have none)."""


def _check_name(event: object) -> None:
    if not isinstance(event, str):
        raise TypeError(
            f"an event is an AgentEvents member or its string value, got {type(event).__name__}"
        )


def get_event_semantics(event: AgentEvents | str) -> EventSemantics | None:
    """Return how ``event`` is dispatched, or ``None`` for a name not in :class:`AgentEvents`.

    Args:
        event: An :class:`AgentEvents` member or its string value
            (``"tool:call:before"``).

    Raises:
        TypeError: ``event`` is not a string.
    """
    _check_name(event)
    # StrEnum members hash and compare like their values, so a plain string finds them.
    return EVENT_SEMANTICS.get(cast("AgentEvents", event))


def get_params_type(event: AgentEvents | str) -> type[Any] | None:
    """Return the params ``TypedDict`` of ``event``, or ``None`` when it has none.

    ``None`` means the name is unknown (including every removed alias) or names an
    extension point, whose payload the extension defines.

    Args:
        event: An :class:`AgentEvents` member or its string value.

    Raises:
        TypeError: ``event`` is not a string.
    """
    _check_name(event)
    return EVENT_PARAMS.get(cast("AgentEvents", event))
