"""The typed registration methods of the interceptable events.

Handlers of these events are dispatched with :meth:`EventBus.apply
<agentrt.EventBus.apply>`: each sees ``ctx.output`` as the previous one left it and
changes the outcome by assigning ``ctx.output`` or returning a non-``None`` value.
An exception a handler raises propagates to the code that dispatched the event.

Each method's handler type variable is bound to ``Callable[[EventContext[P, Any]],
Any]`` for the event's params ``TypedDict`` ``P``: the output type is ``Any`` in the
bound because :class:`~agentrt.EventContext` is invariant and a handler may annotate
the precise output type (``EventContext[ToolCallBeforeParams, dict[str, Any]]``).
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
    ContextProviderBeforeParams,
    ExecuteBeforeParams,
    ExecuteErrorParams,
    ExecuteIterationBeforeParams,
    LLMCallBeforeParams,
    LLMExtractBeforeParams,
    MessageAppendBeforeParams,
    MessageCreateBeforeParams,
    MessageRenderBeforeParams,
    MessageReplaceBeforeParams,
    MessageSetSystemBeforeParams,
    ToolCallBeforeParams,
    ToolCallErrorParams,
    ToolsGenerateSignatureParams,
    ToolsProvideParams,
)
from agentrt.hooks._base import HookOptions, _HooksBase

__all__ = ("INTERCEPTABLE_HOOKS", "InterceptableHooks")

_MessageCreateBeforeH = TypeVar(
    "_MessageCreateBeforeH", bound=Callable[[EventContext[MessageCreateBeforeParams, Any]], Any]
)
_MessageAppendBeforeH = TypeVar(
    "_MessageAppendBeforeH", bound=Callable[[EventContext[MessageAppendBeforeParams, Any]], Any]
)
_MessageReplaceBeforeH = TypeVar(
    "_MessageReplaceBeforeH", bound=Callable[[EventContext[MessageReplaceBeforeParams, Any]], Any]
)
_MessageSetSystemBeforeH = TypeVar(
    "_MessageSetSystemBeforeH",
    bound=Callable[[EventContext[MessageSetSystemBeforeParams, Any]], Any],
)
_MessageRenderBeforeH = TypeVar(
    "_MessageRenderBeforeH", bound=Callable[[EventContext[MessageRenderBeforeParams, Any]], Any]
)
_ToolsProvideH = TypeVar(
    "_ToolsProvideH", bound=Callable[[EventContext[ToolsProvideParams, Any]], Any]
)
_ToolsGenerateSignatureH = TypeVar(
    "_ToolsGenerateSignatureH",
    bound=Callable[[EventContext[ToolsGenerateSignatureParams, Any]], Any],
)
_ToolCallBeforeH = TypeVar(
    "_ToolCallBeforeH", bound=Callable[[EventContext[ToolCallBeforeParams, Any]], Any]
)
_ToolCallErrorH = TypeVar(
    "_ToolCallErrorH", bound=Callable[[EventContext[ToolCallErrorParams, Any]], Any]
)
_LLMCompleteBeforeH = TypeVar(
    "_LLMCompleteBeforeH", bound=Callable[[EventContext[LLMCallBeforeParams, Any]], Any]
)
_LLMStreamBeforeH = TypeVar(
    "_LLMStreamBeforeH", bound=Callable[[EventContext[LLMCallBeforeParams, Any]], Any]
)
_LLMExtractBeforeH = TypeVar(
    "_LLMExtractBeforeH", bound=Callable[[EventContext[LLMExtractBeforeParams, Any]], Any]
)
_ExecuteBeforeH = TypeVar(
    "_ExecuteBeforeH", bound=Callable[[EventContext[ExecuteBeforeParams, Any]], Any]
)
_ExecuteErrorH = TypeVar(
    "_ExecuteErrorH", bound=Callable[[EventContext[ExecuteErrorParams, Any]], Any]
)
_ExecuteIterationBeforeH = TypeVar(
    "_ExecuteIterationBeforeH",
    bound=Callable[[EventContext[ExecuteIterationBeforeParams, Any]], Any],
)
_ContextProviderBeforeH = TypeVar(
    "_ContextProviderBeforeH",
    bound=Callable[[EventContext[ContextProviderBeforeParams, Any]], Any],
)
_AgentCloseBeforeH = TypeVar(
    "_AgentCloseBeforeH", bound=Callable[[EventContext[AgentCloseParams, Any]], Any]
)


class InterceptableHooks(_HooksBase):
    """Mixin: one ``on_*`` method per interceptable event (see :class:`HooksAccessor`)."""

    __slots__ = ()

    @overload
    def on_message_create_before(
        self, handler: _MessageCreateBeforeH, /, **options: Unpack[HookOptions]
    ) -> _MessageCreateBeforeH: ...
    @overload
    def on_message_create_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageCreateBeforeH], _MessageCreateBeforeH]: ...
    def on_message_create_before(
        self, handler: _MessageCreateBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageCreateBeforeH | Callable[[_MessageCreateBeforeH], _MessageCreateBeforeH]:
        """Interceptable: a message is about to be created from raw input.

        ``ctx.parameters``: ``agent``, ``message``.
        ``ctx.output``: the ``Message`` to create; set it (or return one) to create another.
        """
        return self._on(AgentEvents.MESSAGE_CREATE_BEFORE, handler, options)

    @overload
    def on_message_append_before(
        self, handler: _MessageAppendBeforeH, /, **options: Unpack[HookOptions]
    ) -> _MessageAppendBeforeH: ...
    @overload
    def on_message_append_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageAppendBeforeH], _MessageAppendBeforeH]: ...
    def on_message_append_before(
        self, handler: _MessageAppendBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageAppendBeforeH | Callable[[_MessageAppendBeforeH], _MessageAppendBeforeH]:
        """Interceptable: a message is about to be appended to the conversation.

        ``ctx.parameters``: ``message``, ``agent``.
        ``ctx.output``: the ``Message`` stored; set it (or return a new one) to store that
        message instead; leave it unset to store the original.
        """
        return self._on(AgentEvents.MESSAGE_APPEND_BEFORE, handler, options)

    @overload
    def on_message_replace_before(
        self, handler: _MessageReplaceBeforeH, /, **options: Unpack[HookOptions]
    ) -> _MessageReplaceBeforeH: ...
    @overload
    def on_message_replace_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageReplaceBeforeH], _MessageReplaceBeforeH]: ...
    def on_message_replace_before(
        self, handler: _MessageReplaceBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageReplaceBeforeH | Callable[[_MessageReplaceBeforeH], _MessageReplaceBeforeH]:
        """Interceptable: a message of the conversation is about to be replaced.

        ``ctx.parameters``: ``agent``, ``index``, ``old_message``, ``message``.
        ``ctx.output``: the ``Message`` stored at ``index``; set it to store another one.
        """
        return self._on(AgentEvents.MESSAGE_REPLACE_BEFORE, handler, options)

    @overload
    def on_message_set_system_before(
        self, handler: _MessageSetSystemBeforeH, /, **options: Unpack[HookOptions]
    ) -> _MessageSetSystemBeforeH: ...
    @overload
    def on_message_set_system_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageSetSystemBeforeH], _MessageSetSystemBeforeH]: ...
    def on_message_set_system_before(
        self, handler: _MessageSetSystemBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageSetSystemBeforeH | Callable[[_MessageSetSystemBeforeH], _MessageSetSystemBeforeH]:
        """Interceptable: the system message is about to be set.

        ``ctx.parameters``: ``agent``, ``message``.
        ``ctx.output``: the system ``Message`` to store; set it to store another one.
        """
        return self._on(AgentEvents.MESSAGE_SET_SYSTEM_BEFORE, handler, options)

    @overload
    def on_message_render_before(
        self, handler: _MessageRenderBeforeH, /, **options: Unpack[HookOptions]
    ) -> _MessageRenderBeforeH: ...
    @overload
    def on_message_render_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_MessageRenderBeforeH], _MessageRenderBeforeH]: ...
    def on_message_render_before(
        self, handler: _MessageRenderBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _MessageRenderBeforeH | Callable[[_MessageRenderBeforeH], _MessageRenderBeforeH]:
        """Interceptable: the conversation is about to be rendered for a model call.

        ``ctx.parameters``: ``agent``, ``messages``.
        ``ctx.output``: the ``list[Message]`` sent to the model; the conversation is unchanged.
        """
        return self._on(AgentEvents.MESSAGE_RENDER_BEFORE, handler, options)

    @overload
    def on_tools_provide(
        self, handler: _ToolsProvideH, /, **options: Unpack[HookOptions]
    ) -> _ToolsProvideH: ...
    @overload
    def on_tools_provide(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ToolsProvideH], _ToolsProvideH]: ...
    def on_tools_provide(
        self, handler: _ToolsProvideH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ToolsProvideH | Callable[[_ToolsProvideH], _ToolsProvideH]:
        """Interceptable: the tools offered to the next model call are chosen.

        ``ctx.parameters``: ``agent``, ``tools``.
        ``ctx.output``: the ``list[Tool]`` offered to this call; filter or replace it.
        """
        return self._on(AgentEvents.TOOLS_PROVIDE, handler, options)

    @overload
    def on_tools_generate_signature(
        self, handler: _ToolsGenerateSignatureH, /, **options: Unpack[HookOptions]
    ) -> _ToolsGenerateSignatureH: ...
    @overload
    def on_tools_generate_signature(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ToolsGenerateSignatureH], _ToolsGenerateSignatureH]: ...
    def on_tools_generate_signature(
        self, handler: _ToolsGenerateSignatureH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ToolsGenerateSignatureH | Callable[[_ToolsGenerateSignatureH], _ToolsGenerateSignatureH]:
        """Interceptable: the JSON schema of one tool is generated for a model call.

        ``ctx.parameters``: ``agent``, ``tool``, ``signature``.
        ``ctx.output``: the schema ``dict[str, Any]`` sent for ``tool``.
        """
        return self._on(AgentEvents.TOOLS_GENERATE_SIGNATURE, handler, options)

    @overload
    def on_tool_call_before(
        self, handler: _ToolCallBeforeH, /, **options: Unpack[HookOptions]
    ) -> _ToolCallBeforeH: ...
    @overload
    def on_tool_call_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ToolCallBeforeH], _ToolCallBeforeH]: ...
    def on_tool_call_before(
        self, handler: _ToolCallBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ToolCallBeforeH | Callable[[_ToolCallBeforeH], _ToolCallBeforeH]:
        """Interceptable: a tool is about to run.

        ``ctx.parameters``: ``agent``, ``tool_name``, ``tool_call``, ``arguments``.
        ``ctx.output``: the arguments ``dict[str, Any]`` the tool runs with, or a
        ``ToolResponse`` to answer without running the tool.
        """
        return self._on(AgentEvents.TOOL_CALL_BEFORE, handler, options)

    @overload
    def on_tool_call_error(
        self, handler: _ToolCallErrorH, /, **options: Unpack[HookOptions]
    ) -> _ToolCallErrorH: ...
    @overload
    def on_tool_call_error(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ToolCallErrorH], _ToolCallErrorH]: ...
    def on_tool_call_error(
        self, handler: _ToolCallErrorH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ToolCallErrorH | Callable[[_ToolCallErrorH], _ToolCallErrorH]:
        """Interceptable: a tool call failed.

        ``ctx.parameters``: ``agent``, ``tool_name``, ``tool_call``, ``error``.
        ``ctx.output``: a fallback ``ToolResponse``; none records the error as the tool's response.
        """
        return self._on(AgentEvents.TOOL_CALL_ERROR, handler, options)

    @overload
    def on_llm_complete_before(
        self, handler: _LLMCompleteBeforeH, /, **options: Unpack[HookOptions]
    ) -> _LLMCompleteBeforeH: ...
    @overload
    def on_llm_complete_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMCompleteBeforeH], _LLMCompleteBeforeH]: ...
    def on_llm_complete_before(
        self, handler: _LLMCompleteBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMCompleteBeforeH | Callable[[_LLMCompleteBeforeH], _LLMCompleteBeforeH]:
        """Interceptable: a non-streaming model call is about to be made.

        ``ctx.parameters``: ``agent``, ``request``.
        ``ctx.output``: the ``ModelRequest`` sent to the model.
        """
        return self._on(AgentEvents.LLM_COMPLETE_BEFORE, handler, options)

    @overload
    def on_llm_stream_before(
        self, handler: _LLMStreamBeforeH, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamBeforeH: ...
    @overload
    def on_llm_stream_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMStreamBeforeH], _LLMStreamBeforeH]: ...
    def on_llm_stream_before(
        self, handler: _LLMStreamBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMStreamBeforeH | Callable[[_LLMStreamBeforeH], _LLMStreamBeforeH]:
        """Interceptable: a streaming model call is about to be made.

        ``ctx.parameters``: ``agent``, ``request``.
        ``ctx.output``: the ``ModelRequest`` sent to the model.
        """
        return self._on(AgentEvents.LLM_STREAM_BEFORE, handler, options)

    @overload
    def on_llm_extract_before(
        self, handler: _LLMExtractBeforeH, /, **options: Unpack[HookOptions]
    ) -> _LLMExtractBeforeH: ...
    @overload
    def on_llm_extract_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_LLMExtractBeforeH], _LLMExtractBeforeH]: ...
    def on_llm_extract_before(
        self, handler: _LLMExtractBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _LLMExtractBeforeH | Callable[[_LLMExtractBeforeH], _LLMExtractBeforeH]:
        """Interceptable: a structured-output model call is about to be made.

        ``ctx.parameters``: ``agent``, ``request``, ``output_type``.
        ``ctx.output``: the ``ModelRequest`` sent to the model.
        """
        return self._on(AgentEvents.LLM_EXTRACT_BEFORE, handler, options)

    @overload
    def on_execute_before(
        self, handler: _ExecuteBeforeH, /, **options: Unpack[HookOptions]
    ) -> _ExecuteBeforeH: ...
    @overload
    def on_execute_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ExecuteBeforeH], _ExecuteBeforeH]: ...
    def on_execute_before(
        self, handler: _ExecuteBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ExecuteBeforeH | Callable[[_ExecuteBeforeH], _ExecuteBeforeH]:
        """Interceptable: a run is about to start.

        ``ctx.parameters``: ``agent``, ``prompt``, ``max_iterations``.
        ``ctx.output``: the ``int`` max_iterations of this run.
        """
        return self._on(AgentEvents.EXECUTE_BEFORE, handler, options)

    @overload
    def on_execute_error(
        self, handler: _ExecuteErrorH, /, **options: Unpack[HookOptions]
    ) -> _ExecuteErrorH: ...
    @overload
    def on_execute_error(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ExecuteErrorH], _ExecuteErrorH]: ...
    def on_execute_error(
        self, handler: _ExecuteErrorH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ExecuteErrorH | Callable[[_ExecuteErrorH], _ExecuteErrorH]:
        """Interceptable: a run raised.

        ``ctx.parameters``: ``agent``, ``error``, ``iteration``.
        ``ctx.output``: a ``Recovery``: ``RETRY`` runs the turn again, a ``str`` or
        ``AssistantMessage`` is the final answer; none lets the exception propagate.
        """
        return self._on(AgentEvents.EXECUTE_ERROR, handler, options)

    @overload
    def on_execute_iteration_before(
        self, handler: _ExecuteIterationBeforeH, /, **options: Unpack[HookOptions]
    ) -> _ExecuteIterationBeforeH: ...
    @overload
    def on_execute_iteration_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ExecuteIterationBeforeH], _ExecuteIterationBeforeH]: ...
    def on_execute_iteration_before(
        self, handler: _ExecuteIterationBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ExecuteIterationBeforeH | Callable[[_ExecuteIterationBeforeH], _ExecuteIterationBeforeH]:
        """Interceptable: a model turn is about to start.

        ``ctx.parameters``: ``agent``, ``iteration``.
        ``ctx.output``: an ``IterationOverride``: ``SKIP_ITERATION`` skips the turn, a
        ``str``, ``AssistantMessage`` or ``ModelResponse`` is used instead of calling the model.
        """
        return self._on(AgentEvents.EXECUTE_ITERATION_BEFORE, handler, options)

    @overload
    def on_context_provider_before(
        self, handler: _ContextProviderBeforeH, /, **options: Unpack[HookOptions]
    ) -> _ContextProviderBeforeH: ...
    @overload
    def on_context_provider_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_ContextProviderBeforeH], _ContextProviderBeforeH]: ...
    def on_context_provider_before(
        self, handler: _ContextProviderBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _ContextProviderBeforeH | Callable[[_ContextProviderBeforeH], _ContextProviderBeforeH]:
        """Interceptable: a template context provider is about to be called.

        ``ctx.parameters``: ``agent``, ``name``.
        ``ctx.output``: any value; one short-circuits the provider (it is not called).
        """
        return self._on(AgentEvents.CONTEXT_PROVIDER_BEFORE, handler, options)

    @overload
    def on_agent_close_before(
        self, handler: _AgentCloseBeforeH, /, **options: Unpack[HookOptions]
    ) -> _AgentCloseBeforeH: ...
    @overload
    def on_agent_close_before(
        self, /, **options: Unpack[HookOptions]
    ) -> Callable[[_AgentCloseBeforeH], _AgentCloseBeforeH]: ...
    def on_agent_close_before(
        self, handler: _AgentCloseBeforeH | None = None, /, **options: Unpack[HookOptions]
    ) -> _AgentCloseBeforeH | Callable[[_AgentCloseBeforeH], _AgentCloseBeforeH]:
        """Interceptable: an agent is about to close.

        ``ctx.parameters``: ``agent``, ``reason`` (optional).
        ``ctx.output``: ``None``: do pre-cleanup work here, while the agent is still usable.
        """
        return self._on(AgentEvents.AGENT_CLOSE_BEFORE, handler, options)


INTERCEPTABLE_HOOKS: Final[Mapping[str, AgentEvents]] = MappingProxyType(
    {
        "on_message_create_before": AgentEvents.MESSAGE_CREATE_BEFORE,
        "on_message_append_before": AgentEvents.MESSAGE_APPEND_BEFORE,
        "on_message_replace_before": AgentEvents.MESSAGE_REPLACE_BEFORE,
        "on_message_set_system_before": AgentEvents.MESSAGE_SET_SYSTEM_BEFORE,
        "on_message_render_before": AgentEvents.MESSAGE_RENDER_BEFORE,
        "on_tools_provide": AgentEvents.TOOLS_PROVIDE,
        "on_tools_generate_signature": AgentEvents.TOOLS_GENERATE_SIGNATURE,
        "on_tool_call_before": AgentEvents.TOOL_CALL_BEFORE,
        "on_tool_call_error": AgentEvents.TOOL_CALL_ERROR,
        "on_llm_complete_before": AgentEvents.LLM_COMPLETE_BEFORE,
        "on_llm_stream_before": AgentEvents.LLM_STREAM_BEFORE,
        "on_llm_extract_before": AgentEvents.LLM_EXTRACT_BEFORE,
        "on_execute_before": AgentEvents.EXECUTE_BEFORE,
        "on_execute_error": AgentEvents.EXECUTE_ERROR,
        "on_execute_iteration_before": AgentEvents.EXECUTE_ITERATION_BEFORE,
        "on_context_provider_before": AgentEvents.CONTEXT_PROVIDER_BEFORE,
        "on_agent_close_before": AgentEvents.AGENT_CLOSE_BEFORE,
    }
)
"""Each method of :class:`InterceptableHooks` mapped to the event it registers for."""
