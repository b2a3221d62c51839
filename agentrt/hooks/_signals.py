"""The typed registration methods of the signal events.

Handlers of these events are dispatched with :meth:`EventBus.do
<agentrt.EventBus.do>`: they observe only, ``ctx.output`` is ignored, and an
exception a handler raises is logged on the ``agentrt`` logger and counted in
:attr:`EventBus.handler_errors <agentrt.EventBus.handler_errors>` instead of
breaking the run (``EventBus(strict=True)`` raises it).

Each method's handler type variable is bound to ``Callable[[EventContext[P, Any]],
Any]`` for the event's params ``TypedDict`` ``P``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar, overload

from typing_extensions import Unpack

from agentrt.bus import EventContext
from agentrt.events.names import AgentEvents
from agentrt.events.params import (
    AgentCloseParams,
    AgentInitAfterParams,
    AgentStateChangeParams,
    AgentVersionChangeParams,
    ContextProviderAfterParams,
    ExecuteAfterParams,
    ExecuteIterationAfterParams,
    LLMCallAfterParams,
    LLMCallErrorParams,
    LLMErrorParams,
    LLMExtractAfterParams,
    LLMStreamChunkParams,
    MessageAppendAfterParams,
    MessageCreateAfterParams,
    MessageRenderAfterParams,
    MessageReplaceAfterParams,
    MessageSetSystemAfterParams,
    ModeParams,
    ToolCallAfterParams,
    ToolCallOutputParams,
)
from agentrt.hooks._base import HookOptions, _HooksBase

__all__ = ("SIGNAL_HOOKS", "SignalHooks")

_MessageCreateAfterH = TypeVar(
    "_MessageCreateAfterH", bound=Callable[[EventContext[MessageCreateAfterParams, Any]], Any]
)
_MessageAppendAfterH = TypeVar(
    "_MessageAppendAfterH", bound=Callable[[EventContext[MessageAppendAfterParams, Any]], Any]
)
_MessageReplaceAfterH = TypeVar(
    "_MessageReplaceAfterH", bound=Callable[[EventContext[MessageReplaceAfterParams, Any]], Any]
)
_MessageSetSystemAfterH = TypeVar(
    "_MessageSetSystemAfterH",
    bound=Callable[[EventContext[MessageSetSystemAfterParams, Any]], Any],
)
_MessageRenderAfterH = TypeVar(
    "_MessageRenderAfterH", bound=Callable[[EventContext[MessageRenderAfterParams, Any]], Any]
)
_ToolCallAfterH = TypeVar(
    "_ToolCallAfterH", bound=Callable[[EventContext[ToolCallAfterParams, Any]], Any]
)
_ToolCallOutputH = TypeVar(
    "_ToolCallOutputH", bound=Callable[[EventContext[ToolCallOutputParams, Any]], Any]
)
_LLMCompleteAfterH = TypeVar(
    "_LLMCompleteAfterH", bound=Callable[[EventContext[LLMCallAfterParams, Any]], Any]
)
_LLMCompleteErrorH = TypeVar(
    "_LLMCompleteErrorH", bound=Callable[[EventContext[LLMCallErrorParams, Any]], Any]
)
_LLMStreamChunkH = TypeVar(
    "_LLMStreamChunkH", bound=Callable[[EventContext[LLMStreamChunkParams, Any]], Any]
)
_LLMStreamAfterH = TypeVar(
    "_LLMStreamAfterH", bound=Callable[[EventContext[LLMCallAfterParams, Any]], Any]
)
_LLMStreamErrorH = TypeVar(
    "_LLMStreamErrorH", bound=Callable[[EventContext[LLMCallErrorParams, Any]], Any]
)
_LLMExtractAfterH = TypeVar(
    "_LLMExtractAfterH", bound=Callable[[EventContext[LLMExtractAfterParams, Any]], Any]
)
_LLMExtractErrorH = TypeVar(
    "_LLMExtractErrorH", bound=Callable[[EventContext[LLMCallErrorParams, Any]], Any]
)
_LLMErrorH = TypeVar("_LLMErrorH", bound=Callable[[EventContext[LLMErrorParams, Any]], Any])
_ExecuteAfterH = TypeVar(
    "_ExecuteAfterH", bound=Callable[[EventContext[ExecuteAfterParams, Any]], Any]
)
_ExecuteIterationAfterH = TypeVar(
    "_ExecuteIterationAfterH",
    bound=Callable[[EventContext[ExecuteIterationAfterParams, Any]], Any],
)
_ContextProviderAfterH = TypeVar(
    "_ContextProviderAfterH", bound=Callable[[EventContext[ContextProviderAfterParams, Any]], Any]
)
_AgentInitAfterH = TypeVar(
    "_AgentInitAfterH", bound=Callable[[EventContext[AgentInitAfterParams, Any]], Any]
)
_AgentCloseAfterH = TypeVar(
    "_AgentCloseAfterH", bound=Callable[[EventContext[AgentCloseParams, Any]], Any]
)
_AgentStateChangeH = TypeVar(
    "_AgentStateChangeH", bound=Callable[[EventContext[AgentStateChangeParams, Any]], Any]
)
_AgentVersionChangeH = TypeVar(
    "_AgentVersionChangeH", bound=Callable[[EventContext[AgentVersionChangeParams, Any]], Any]
)
_ModeEnteringH = TypeVar("_ModeEnteringH", bound=Callable[[EventContext[ModeParams, Any]], Any])
_ModeEnteredH = TypeVar("_ModeEnteredH", bound=Callable[[EventContext[ModeParams, Any]], Any])
_ModeExitingH = TypeVar("_ModeExitingH", bound=Callable[[EventContext[ModeParams, Any]], Any])
_ModeExitedH = TypeVar("_ModeExitedH", bound=Callable[[EventContext[ModeParams, Any]], Any])


class SignalHooks(_HooksBase):
    """Mixin: one ``on_*`` method per signal event (see :class:`HooksAccessor`)."""

    __slots__ = ()

    @overload
    def on_message_create_after(
        self, handler: _MessageCreateAfterH, /, **options: Unpack[HookOptions]
    ) -> _MessageCreateAfterH: ...
    @overload
    def on_message_create_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageCreateAfterH], _MessageCreateAfterH]: ...
    def on_message_create_after(
        self, handler: _MessageCreateAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageCreateAfterH | Callable[[_MessageCreateAfterH], _MessageCreateAfterH]:
        """Signal (ctx.output is ignored): a message was created.

        ``ctx.parameters``: ``agent``, ``message``.
        """
        return self._on(AgentEvents.MESSAGE_CREATE_AFTER, handler, options)

    @overload
    def on_message_append_after(
        self, handler: _MessageAppendAfterH, /, **options: Unpack[HookOptions]
    ) -> _MessageAppendAfterH: ...
    @overload
    def on_message_append_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageAppendAfterH], _MessageAppendAfterH]: ...
    def on_message_append_after(
        self, handler: _MessageAppendAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageAppendAfterH | Callable[[_MessageAppendAfterH], _MessageAppendAfterH]:
        """Signal (ctx.output is ignored): a message was appended to the conversation.

        ``ctx.parameters``: ``agent``, ``message``, ``index``.
        """
        return self._on(AgentEvents.MESSAGE_APPEND_AFTER, handler, options)

    @overload
    def on_message_replace_after(
        self, handler: _MessageReplaceAfterH, /, **options: Unpack[HookOptions]
    ) -> _MessageReplaceAfterH: ...
    @overload
    def on_message_replace_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageReplaceAfterH], _MessageReplaceAfterH]: ...
    def on_message_replace_after(
        self, handler: _MessageReplaceAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageReplaceAfterH | Callable[[_MessageReplaceAfterH], _MessageReplaceAfterH]:
        """Signal (ctx.output is ignored): a message of the conversation was replaced.

        ``ctx.parameters``: ``agent``, ``index``, ``old_message``, ``message``.
        """
        return self._on(AgentEvents.MESSAGE_REPLACE_AFTER, handler, options)

    @overload
    def on_message_set_system_after(
        self, handler: _MessageSetSystemAfterH, /, **options: Unpack[HookOptions]
    ) -> _MessageSetSystemAfterH: ...
    @overload
    def on_message_set_system_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageSetSystemAfterH], _MessageSetSystemAfterH]: ...
    def on_message_set_system_after(
        self, handler: _MessageSetSystemAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageSetSystemAfterH | Callable[[_MessageSetSystemAfterH], _MessageSetSystemAfterH]:
        """Signal (ctx.output is ignored): the system message was set.

        ``ctx.parameters``: ``agent``, ``message``.
        """
        return self._on(AgentEvents.MESSAGE_SET_SYSTEM_AFTER, handler, options)

    @overload
    def on_message_render_after(
        self, handler: _MessageRenderAfterH, /, **options: Unpack[HookOptions]
    ) -> _MessageRenderAfterH: ...
    @overload
    def on_message_render_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageRenderAfterH], _MessageRenderAfterH]: ...
    def on_message_render_after(
        self, handler: _MessageRenderAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageRenderAfterH | Callable[[_MessageRenderAfterH], _MessageRenderAfterH]:
        """Signal (ctx.output is ignored): the conversation was rendered for a model call.

        ``ctx.parameters``: ``agent``, ``messages``.
        """
        return self._on(AgentEvents.MESSAGE_RENDER_AFTER, handler, options)

    @overload
    def on_tool_call_after(
        self, handler: _ToolCallAfterH, /, **options: Unpack[HookOptions]
    ) -> _ToolCallAfterH: ...
    @overload
    def on_tool_call_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ToolCallAfterH], _ToolCallAfterH]: ...
    def on_tool_call_after(
        self, handler: _ToolCallAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ToolCallAfterH | Callable[[_ToolCallAfterH], _ToolCallAfterH]:
        """Signal (ctx.output is ignored): a tool ran and produced its response.

        ``ctx.parameters``: ``agent``, ``tool_name``, ``tool_call``, ``arguments``, ``response``.
        """
        return self._on(AgentEvents.TOOL_CALL_AFTER, handler, options)

    @overload
    def on_tool_call_output(
        self, handler: _ToolCallOutputH, /, **options: Unpack[HookOptions]
    ) -> _ToolCallOutputH: ...
    @overload
    def on_tool_call_output(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ToolCallOutputH], _ToolCallOutputH]: ...
    def on_tool_call_output(
        self, handler: _ToolCallOutputH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ToolCallOutputH | Callable[[_ToolCallOutputH], _ToolCallOutputH]:
        """Signal (ctx.output is ignored): a running tool reported a piece of its output.

        ``ctx.parameters``: ``agent``, ``tool_name``, ``tool_call``, ``output``.
        """
        return self._on(AgentEvents.TOOL_CALL_OUTPUT, handler, options)

    @overload
    def on_llm_complete_after(
        self, handler: _LLMCompleteAfterH, /, **options: Unpack[HookOptions]
    ) -> _LLMCompleteAfterH: ...
    @overload
    def on_llm_complete_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMCompleteAfterH], _LLMCompleteAfterH]: ...
    def on_llm_complete_after(
        self, handler: _LLMCompleteAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMCompleteAfterH | Callable[[_LLMCompleteAfterH], _LLMCompleteAfterH]:
        """Signal (ctx.output is ignored): a non-streaming model call returned.

        ``ctx.parameters``: ``agent``, ``request``, ``response``.
        """
        return self._on(AgentEvents.LLM_COMPLETE_AFTER, handler, options)

    @overload
    def on_llm_complete_error(
        self, handler: _LLMCompleteErrorH, /, **options: Unpack[HookOptions]
    ) -> _LLMCompleteErrorH: ...
    @overload
    def on_llm_complete_error(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMCompleteErrorH], _LLMCompleteErrorH]: ...
    def on_llm_complete_error(
        self, handler: _LLMCompleteErrorH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMCompleteErrorH | Callable[[_LLMCompleteErrorH], _LLMCompleteErrorH]:
        """Signal (ctx.output is ignored): a non-streaming model call failed.

        ``ctx.parameters``: ``agent``, ``request``, ``error``.
        """
        return self._on(AgentEvents.LLM_COMPLETE_ERROR, handler, options)

    @overload
    def on_llm_stream_chunk(
        self, handler: _LLMStreamChunkH, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamChunkH: ...
    @overload
    def on_llm_stream_chunk(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMStreamChunkH], _LLMStreamChunkH]: ...
    def on_llm_stream_chunk(
        self, handler: _LLMStreamChunkH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamChunkH | Callable[[_LLMStreamChunkH], _LLMStreamChunkH]:
        """Signal (ctx.output is ignored): a streaming model call produced one chunk.

        ``ctx.parameters``: ``agent``, ``request``, ``chunk``.
        """
        return self._on(AgentEvents.LLM_STREAM_CHUNK, handler, options)

    @overload
    def on_llm_stream_after(
        self, handler: _LLMStreamAfterH, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamAfterH: ...
    @overload
    def on_llm_stream_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMStreamAfterH], _LLMStreamAfterH]: ...
    def on_llm_stream_after(
        self, handler: _LLMStreamAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamAfterH | Callable[[_LLMStreamAfterH], _LLMStreamAfterH]:
        """Signal (ctx.output is ignored): a streaming model call finished.

        ``ctx.parameters``: ``agent``, ``request``, ``response``.
        """
        return self._on(AgentEvents.LLM_STREAM_AFTER, handler, options)

    @overload
    def on_llm_stream_error(
        self, handler: _LLMStreamErrorH, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamErrorH: ...
    @overload
    def on_llm_stream_error(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMStreamErrorH], _LLMStreamErrorH]: ...
    def on_llm_stream_error(
        self, handler: _LLMStreamErrorH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamErrorH | Callable[[_LLMStreamErrorH], _LLMStreamErrorH]:
        """Signal (ctx.output is ignored): a streaming model call failed.

        ``ctx.parameters``: ``agent``, ``request``, ``error``.
        """
        return self._on(AgentEvents.LLM_STREAM_ERROR, handler, options)

    @overload
    def on_llm_extract_after(
        self, handler: _LLMExtractAfterH, /, **options: Unpack[HookOptions]
    ) -> _LLMExtractAfterH: ...
    @overload
    def on_llm_extract_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMExtractAfterH], _LLMExtractAfterH]: ...
    def on_llm_extract_after(
        self, handler: _LLMExtractAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMExtractAfterH | Callable[[_LLMExtractAfterH], _LLMExtractAfterH]:
        """Signal (ctx.output is ignored): a structured-output call returned a validated value.

        ``ctx.parameters``: ``agent``, ``request``, ``response``, ``output``.
        """
        return self._on(AgentEvents.LLM_EXTRACT_AFTER, handler, options)

    @overload
    def on_llm_extract_error(
        self, handler: _LLMExtractErrorH, /, **options: Unpack[HookOptions]
    ) -> _LLMExtractErrorH: ...
    @overload
    def on_llm_extract_error(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMExtractErrorH], _LLMExtractErrorH]: ...
    def on_llm_extract_error(
        self, handler: _LLMExtractErrorH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMExtractErrorH | Callable[[_LLMExtractErrorH], _LLMExtractErrorH]:
        """Signal (ctx.output is ignored): a structured-output model call failed.

        ``ctx.parameters``: ``agent``, ``request``, ``error``.
        """
        return self._on(AgentEvents.LLM_EXTRACT_ERROR, handler, options)

    @overload
    def on_llm_error(
        self, handler: _LLMErrorH, /, **options: Unpack[HookOptions]
    ) -> _LLMErrorH: ...
    @overload
    def on_llm_error(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMErrorH], _LLMErrorH]: ...
    def on_llm_error(
        self, handler: _LLMErrorH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMErrorH | Callable[[_LLMErrorH], _LLMErrorH]:
        """Signal (ctx.output is ignored): any model call failed (after its specific error event).

        ``ctx.parameters``: ``agent``, ``request``, ``error``, ``operation``.
        """
        return self._on(AgentEvents.LLM_ERROR, handler, options)

    @overload
    def on_execute_after(
        self, handler: _ExecuteAfterH, /, **options: Unpack[HookOptions]
    ) -> _ExecuteAfterH: ...
    @overload
    def on_execute_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ExecuteAfterH], _ExecuteAfterH]: ...
    def on_execute_after(
        self, handler: _ExecuteAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ExecuteAfterH | Callable[[_ExecuteAfterH], _ExecuteAfterH]:
        """Signal (ctx.output is ignored): a run returned its result.

        ``ctx.parameters``: ``agent``, ``result``.
        """
        return self._on(AgentEvents.EXECUTE_AFTER, handler, options)

    @overload
    def on_execute_iteration_after(
        self, handler: _ExecuteIterationAfterH, /, **options: Unpack[HookOptions]
    ) -> _ExecuteIterationAfterH: ...
    @overload
    def on_execute_iteration_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ExecuteIterationAfterH], _ExecuteIterationAfterH]: ...
    def on_execute_iteration_after(
        self, handler: _ExecuteIterationAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ExecuteIterationAfterH | Callable[[_ExecuteIterationAfterH], _ExecuteIterationAfterH]:
        """Signal (ctx.output is ignored): a model turn and its tool calls completed.

        ``ctx.parameters``: ``agent``, ``iteration``, ``messages``.
        """
        return self._on(AgentEvents.EXECUTE_ITERATION_AFTER, handler, options)

    @overload
    def on_context_provider_after(
        self, handler: _ContextProviderAfterH, /, **options: Unpack[HookOptions]
    ) -> _ContextProviderAfterH: ...
    @overload
    def on_context_provider_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ContextProviderAfterH], _ContextProviderAfterH]: ...
    def on_context_provider_after(
        self, handler: _ContextProviderAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ContextProviderAfterH | Callable[[_ContextProviderAfterH], _ContextProviderAfterH]:
        """Signal (ctx.output is ignored): a template context provider returned its value.

        ``ctx.parameters``: ``agent``, ``name``, ``value``.
        """
        return self._on(AgentEvents.CONTEXT_PROVIDER_AFTER, handler, options)

    @overload
    def on_agent_init_after(
        self, handler: _AgentInitAfterH, /, **options: Unpack[HookOptions]
    ) -> _AgentInitAfterH: ...
    @overload
    def on_agent_init_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_AgentInitAfterH], _AgentInitAfterH]: ...
    def on_agent_init_after(
        self, handler: _AgentInitAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _AgentInitAfterH | Callable[[_AgentInitAfterH], _AgentInitAfterH]:
        """Signal (ctx.output is ignored): an agent finished its construction.

        ``ctx.parameters``: ``agent``.
        """
        return self._on(AgentEvents.AGENT_INIT_AFTER, handler, options)

    @overload
    def on_agent_close_after(
        self, handler: _AgentCloseAfterH, /, **options: Unpack[HookOptions]
    ) -> _AgentCloseAfterH: ...
    @overload
    def on_agent_close_after(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_AgentCloseAfterH], _AgentCloseAfterH]: ...
    def on_agent_close_after(
        self, handler: _AgentCloseAfterH | None = None, /, **options: Unpack[HookOptions]
    ) -> _AgentCloseAfterH | Callable[[_AgentCloseAfterH], _AgentCloseAfterH]:
        """Signal (ctx.output is ignored): an agent closed.

        ``ctx.parameters``: ``agent``, ``reason`` (optional).
        """
        return self._on(AgentEvents.AGENT_CLOSE_AFTER, handler, options)

    @overload
    def on_agent_state_change(
        self, handler: _AgentStateChangeH, /, **options: Unpack[HookOptions]
    ) -> _AgentStateChangeH: ...
    @overload
    def on_agent_state_change(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_AgentStateChangeH], _AgentStateChangeH]: ...
    def on_agent_state_change(
        self, handler: _AgentStateChangeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _AgentStateChangeH | Callable[[_AgentStateChangeH], _AgentStateChangeH]:
        """Signal (ctx.output is ignored): an agent moved to another state.

        ``ctx.parameters``: ``agent``, ``previous``, ``state``.
        """
        return self._on(AgentEvents.AGENT_STATE_CHANGE, handler, options)

    @overload
    def on_agent_version_change(
        self, handler: _AgentVersionChangeH, /, **options: Unpack[HookOptions]
    ) -> _AgentVersionChangeH: ...
    @overload
    def on_agent_version_change(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_AgentVersionChangeH], _AgentVersionChangeH]: ...
    def on_agent_version_change(
        self, handler: _AgentVersionChangeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _AgentVersionChangeH | Callable[[_AgentVersionChangeH], _AgentVersionChangeH]:
        """Signal (ctx.output is ignored): the conversation changed and got a new version number.

        ``ctx.parameters``: ``agent``, ``previous``, ``version``.
        """
        return self._on(AgentEvents.AGENT_VERSION_CHANGE, handler, options)

    @overload
    def on_mode_entering(
        self, handler: _ModeEnteringH, /, **options: Unpack[HookOptions]
    ) -> _ModeEnteringH: ...
    @overload
    def on_mode_entering(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ModeEnteringH], _ModeEnteringH]: ...
    def on_mode_entering(
        self, handler: _ModeEnteringH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ModeEnteringH | Callable[[_ModeEnteringH], _ModeEnteringH]:
        """Signal (ctx.output is ignored): a mode is about to become active.

        ``ctx.parameters``: ``agent``, ``mode``, ``stack``.
        """
        return self._on(AgentEvents.MODE_ENTERING, handler, options)

    @overload
    def on_mode_entered(
        self, handler: _ModeEnteredH, /, **options: Unpack[HookOptions]
    ) -> _ModeEnteredH: ...
    @overload
    def on_mode_entered(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ModeEnteredH], _ModeEnteredH]: ...
    def on_mode_entered(
        self, handler: _ModeEnteredH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ModeEnteredH | Callable[[_ModeEnteredH], _ModeEnteredH]:
        """Signal (ctx.output is ignored): a mode became active.

        ``ctx.parameters``: ``agent``, ``mode``, ``stack``.
        """
        return self._on(AgentEvents.MODE_ENTERED, handler, options)

    @overload
    def on_mode_exiting(
        self, handler: _ModeExitingH, /, **options: Unpack[HookOptions]
    ) -> _ModeExitingH: ...
    @overload
    def on_mode_exiting(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ModeExitingH], _ModeExitingH]: ...
    def on_mode_exiting(
        self, handler: _ModeExitingH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ModeExitingH | Callable[[_ModeExitingH], _ModeExitingH]:
        """Signal (ctx.output is ignored): a mode is about to end.

        ``ctx.parameters``: ``agent``, ``mode``, ``stack``.
        """
        return self._on(AgentEvents.MODE_EXITING, handler, options)

    @overload
    def on_mode_exited(
        self, handler: _ModeExitedH, /, **options: Unpack[HookOptions]
    ) -> _ModeExitedH: ...
    @overload
    def on_mode_exited(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ModeExitedH], _ModeExitedH]: ...
    def on_mode_exited(
        self, handler: _ModeExitedH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ModeExitedH | Callable[[_ModeExitedH], _ModeExitedH]:
        """Signal (ctx.output is ignored): a mode ended.

        ``ctx.parameters``: ``agent``, ``mode``, ``stack``.
        """
        return self._on(AgentEvents.MODE_EXITED, handler, options)


SIGNAL_HOOKS: Final[Mapping[str, AgentEvents]] = MappingProxyType(
    {
        "on_message_create_after": AgentEvents.MESSAGE_CREATE_AFTER,
        "on_message_append_after": AgentEvents.MESSAGE_APPEND_AFTER,
        "on_message_replace_after": AgentEvents.MESSAGE_REPLACE_AFTER,
        "on_message_set_system_after": AgentEvents.MESSAGE_SET_SYSTEM_AFTER,
        "on_message_render_after": AgentEvents.MESSAGE_RENDER_AFTER,
        "on_tool_call_after": AgentEvents.TOOL_CALL_AFTER,
        "on_tool_call_output": AgentEvents.TOOL_CALL_OUTPUT,
        "on_llm_complete_after": AgentEvents.LLM_COMPLETE_AFTER,
        "on_llm_complete_error": AgentEvents.LLM_COMPLETE_ERROR,
        "on_llm_stream_chunk": AgentEvents.LLM_STREAM_CHUNK,
        "on_llm_stream_after": AgentEvents.LLM_STREAM_AFTER,
        "on_llm_stream_error": AgentEvents.LLM_STREAM_ERROR,
        "on_llm_extract_after": AgentEvents.LLM_EXTRACT_AFTER,
        "on_llm_extract_error": AgentEvents.LLM_EXTRACT_ERROR,
        "on_llm_error": AgentEvents.LLM_ERROR,
        "on_execute_after": AgentEvents.EXECUTE_AFTER,
        "on_execute_iteration_after": AgentEvents.EXECUTE_ITERATION_AFTER,
        "on_context_provider_after": AgentEvents.CONTEXT_PROVIDER_AFTER,
        "on_agent_init_after": AgentEvents.AGENT_INIT_AFTER,
        "on_agent_close_after": AgentEvents.AGENT_CLOSE_AFTER,
        "on_agent_state_change": AgentEvents.AGENT_STATE_CHANGE,
        "on_agent_version_change": AgentEvents.AGENT_VERSION_CHANGE,
        "on_mode_entering": AgentEvents.MODE_ENTERING,
        "on_mode_entered": AgentEvents.MODE_ENTERED,
        "on_mode_exiting": AgentEvents.MODE_EXITING,
        "on_mode_exited": AgentEvents.MODE_EXITED,
    }
)
"""Each method of :class:`SignalHooks` mapped to the event it registers for."""
