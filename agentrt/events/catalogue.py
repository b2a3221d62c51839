"""The one declaration of every event: :data:`CATALOGUE`.

Each :class:`EventDecl` says, once, everything the runtime knows of an event: its
enum member and wire name, how it is dispatched, its params ``TypedDict``, what an
interceptable handler may leave in ``ctx.output`` (:class:`Accepts`) and a one-line
doc. Everything else is made from it:

- at runtime, :data:`~agentrt.events.EVENT_SEMANTICS`, :data:`~agentrt.events.EVENT_PARAMS`
  and :func:`~agentrt.events.check_output` (the one check of a handler's output);
- by ``python -m agentrt.events.generate``, the source of :class:`~agentrt.AgentEvents`
  (``agentrt/events/names.py``), of the typed ``agent.hooks.on_*`` methods
  (``agentrt/hooks/_generated.py``) and the reference ``docs/events.md``. A test
  regenerates all three and fails when a file differs.

To add an event: declare it here, run the generator, dispatch it.

This module refers to names only by their strings and imports nothing of the event
system, so that the generator can run while the generated files are stale.
"""

from collections.abc import Callable
from dataclasses import dataclass
from enum import Flag, auto
from typing import Any, Final

from agentrt.control import DEFER, RETRY, SKIP_ITERATION
from agentrt.events import params as p
from agentrt.messages import AssistantMessage, ToolResponse, is_message
from agentrt.models.base import ModelRequest, ModelResponse

__all__ = ("CATALOGUE", "Accepts", "EventDecl", "EventSemantics")


class EventSemantics(Flag):
    """How an event is dispatched."""

    INTERCEPTABLE = auto()
    """Dispatched with ``apply()``: handlers may change the outcome via ``ctx.output``."""
    SIGNAL = auto()
    """Dispatched with ``do()``: fire-and-forget, ``ctx.output`` is ignored."""


@dataclass(frozen=True, slots=True)
class Accepts:
    """What an interceptable event accepts as ``ctx.output`` once its handlers ran.

    Attributes:
        what: The accepted values in words, as a :class:`~agentrt.HookOutputError`
            names them ("a ModelRequest").
        test: Whether a value is accepted.
    """

    what: str
    test: Callable[[object], bool]


@dataclass(frozen=True, slots=True)
class EventDecl:
    """One event, declared once.

    Attributes:
        member: The :class:`~agentrt.AgentEvents` member name (``TOOL_CALL_BEFORE``).
        name: The wire name (``tool:call:before``).
        semantics: How it is dispatched.
        params: Its params ``TypedDict``; ``None`` for an extension point, whose
            payload the extension defines.
        doc: One line: what the event announces.
        accepts: For an interceptable event, what ``ctx.output`` may hold.
        output: For an interceptable event, what ``ctx.output`` means.
        extension: A name reserved for extensions, never dispatched by core.
    """

    member: str
    name: str
    semantics: EventSemantics
    params: type[Any] | None
    doc: str
    accepts: Accepts | None = None
    output: str = ""
    extension: bool = False

    @property
    def hook(self) -> str | None:
        """The name of the typed ``agent.hooks`` method, ``None`` for an extension point."""
        return None if self.extension else "on_" + self.member.lower()


def _interceptable(
    member: str, name: str, params: type[Any], doc: str, accepts: Accepts, output: str
) -> EventDecl:
    return EventDecl(member, name, EventSemantics.INTERCEPTABLE, params, doc, accepts, output)


def _signal(member: str, name: str, params: type[Any], doc: str) -> EventDecl:
    return EventDecl(member, name, EventSemantics.SIGNAL, params, doc)


def _extension(member: str, name: str, doc: str) -> EventDecl:
    # The extension dispatches it; a ``:before`` phase is interceptable, as in core.
    semantics = EventSemantics.INTERCEPTABLE if name.endswith(":before") else EventSemantics.SIGNAL
    return EventDecl(member, name, semantics, None, doc, extension=True)


def _tools(value: object) -> bool:
    # Imported here: agentrt.tools imports the event names, which import this module.
    from agentrt.tools import Tool

    return isinstance(value, list) and all(isinstance(tool, Tool) for tool in value)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _any(value: object) -> bool:
    return True


_MESSAGE = Accepts("a Message (System/User/Assistant/ToolMessage)", is_message)
_REQUEST = Accepts("a ModelRequest", lambda value: isinstance(value, ModelRequest))
_ANY = Accepts("any value", _any)

CATALOGUE: Final[tuple[EventDecl, ...]] = (
    # -- messages ---------------------------------------------------------------------
    _interceptable(
        "MESSAGE_CREATE_BEFORE",
        "message:create:before",
        p.MessageCreateBeforeParams,
        "A message is about to be created from raw input.",
        _MESSAGE,
        "the ``Message`` to create; set it (or return one) to create another.",
    ),
    _signal(
        "MESSAGE_CREATE_AFTER",
        "message:create:after",
        p.MessageCreateAfterParams,
        "A message was created.",
    ),
    _interceptable(
        "MESSAGE_APPEND_BEFORE",
        "message:append:before",
        p.MessageAppendBeforeParams,
        "A message is about to be appended to the conversation.",
        _MESSAGE,
        "the ``Message`` stored; set it (or return a new one) to store that message "
        "instead; leave it unset to store the original.",
    ),
    _signal(
        "MESSAGE_APPEND_AFTER",
        "message:append:after",
        p.MessageAppendAfterParams,
        "A message was appended to the conversation.",
    ),
    _interceptable(
        "MESSAGE_REPLACE_BEFORE",
        "message:replace:before",
        p.MessageReplaceBeforeParams,
        "A message of the conversation is about to be replaced.",
        _MESSAGE,
        "the ``Message`` stored at ``index``; set it to store another one.",
    ),
    _signal(
        "MESSAGE_REPLACE_AFTER",
        "message:replace:after",
        p.MessageReplaceAfterParams,
        "A message of the conversation was replaced.",
    ),
    _interceptable(
        "MESSAGE_SET_SYSTEM_BEFORE",
        "message:set_system:before",
        p.MessageSetSystemBeforeParams,
        "The system message is about to be set.",
        _MESSAGE,
        "the system ``Message`` to store; set it to store another one.",
    ),
    _signal(
        "MESSAGE_SET_SYSTEM_AFTER",
        "message:set_system:after",
        p.MessageSetSystemAfterParams,
        "The system message was set.",
    ),
    _interceptable(
        "MESSAGE_RENDER_BEFORE",
        "message:render:before",
        p.MessageRenderBeforeParams,
        "The conversation is about to be rendered for a model call.",
        # Each item too: the model would fail on a non-message with an untyped error.
        Accepts(
            "a list of messages",
            lambda value: isinstance(value, list) and all(map(is_message, value)),
        ),
        "the ``list[Message]`` sent to the model; the conversation is unchanged.",
    ),
    _signal(
        "MESSAGE_RENDER_AFTER",
        "message:render:after",
        p.MessageRenderAfterParams,
        "The conversation was rendered for a model call.",
    ),
    # -- tools ------------------------------------------------------------------------
    _interceptable(
        "TOOLS_PROVIDE",
        "tools:provide",
        p.ToolsProvideParams,
        "The tools offered to the next model call are chosen.",
        Accepts("a list of Tool", _tools),
        "the ``list[Tool]`` offered to this call; filter or replace it.",
    ),
    _interceptable(
        "TOOLS_GENERATE_SIGNATURE",
        "tools:generate_signature",
        p.ToolsGenerateSignatureParams,
        "The JSON schema of one tool is generated for a model call.",
        Accepts("a dict (JSON schema)", lambda value: isinstance(value, dict)),
        "the schema ``dict[str, Any]`` sent for ``tool``.",
    ),
    _interceptable(
        "TOOL_CALL_BEFORE",
        "tool:call:before",
        p.ToolCallBeforeParams,
        "A tool is about to run.",
        Accepts(
            "a dict of arguments, a ToolResponse or DEFER",
            lambda value: isinstance(value, (dict, ToolResponse)) or value is DEFER,
        ),
        "the arguments ``dict[str, Any]`` the tool runs with, a ``ToolResponse`` to "
        "answer without running the tool, or ``DEFER`` to leave the call open for a later "
        "run (the run ends waiting on it).",
    ),
    _signal(
        "TOOL_CALL_AFTER",
        "tool:call:after",
        p.ToolCallAfterParams,
        "A tool ran and produced its response.",
    ),
    _signal(
        "TOOL_CALL_OUTPUT",
        "tool:call:output",
        p.ToolCallOutputParams,
        "A running tool reported a piece of its output.",
    ),
    _interceptable(
        "TOOL_CALL_ERROR",
        "tool:call:error",
        p.ToolCallErrorParams,
        "A tool call failed.",
        Accepts(
            "a ToolResponse",
            lambda value: value is None or isinstance(value, ToolResponse),
        ),
        "a fallback ``ToolResponse``; none records the error as the tool's response.",
    ),
    # -- model calls ------------------------------------------------------------------
    _interceptable(
        "LLM_COMPLETE_BEFORE",
        "llm:complete:before",
        p.LLMCallBeforeParams,
        "A non-streaming model call is about to be made.",
        _REQUEST,
        "the ``ModelRequest`` sent to the model.",
    ),
    _signal(
        "LLM_COMPLETE_AFTER",
        "llm:complete:after",
        p.LLMCallAfterParams,
        "A non-streaming model call returned.",
    ),
    _signal(
        "LLM_COMPLETE_ERROR",
        "llm:complete:error",
        p.LLMCallErrorParams,
        "A non-streaming model call failed.",
    ),
    _interceptable(
        "LLM_STREAM_BEFORE",
        "llm:stream:before",
        p.LLMCallBeforeParams,
        "A streaming model call is about to be made.",
        _REQUEST,
        "the ``ModelRequest`` sent to the model.",
    ),
    _signal(
        "LLM_STREAM_CHUNK",
        "llm:stream:chunk",
        p.LLMStreamChunkParams,
        "A streaming model call produced one chunk.",
    ),
    _signal(
        "LLM_STREAM_AFTER",
        "llm:stream:after",
        p.LLMCallAfterParams,
        "A streaming model call finished.",
    ),
    _signal(
        "LLM_STREAM_ERROR",
        "llm:stream:error",
        p.LLMCallErrorParams,
        "A streaming model call failed.",
    ),
    _interceptable(
        "LLM_EXTRACT_BEFORE",
        "llm:extract:before",
        p.LLMExtractBeforeParams,
        "A structured-output model call is about to be made.",
        _REQUEST,
        "the ``ModelRequest`` sent to the model.",
    ),
    _signal(
        "LLM_EXTRACT_AFTER",
        "llm:extract:after",
        p.LLMExtractAfterParams,
        "A structured-output model call returned a validated value.",
    ),
    _signal(
        "LLM_EXTRACT_ERROR",
        "llm:extract:error",
        p.LLMCallErrorParams,
        "A structured-output model call failed.",
    ),
    _signal(
        "LLM_ERROR",
        "llm:error",
        p.LLMErrorParams,
        "Any model call failed; follows the operation-specific error event.",
    ),
    # -- the execute loop ---------------------------------------------------------------
    _interceptable(
        "EXECUTE_BEFORE",
        "execute:before",
        p.ExecuteBeforeParams,
        "A run is about to start.",
        Accepts("a positive int (max_iterations)", _positive_int),
        "the ``int`` max_iterations of this run.",
    ),
    _signal(
        "EXECUTE_AFTER",
        "execute:after",
        p.ExecuteAfterParams,
        "A run returned its result.",
    ),
    _interceptable(
        "EXECUTE_ERROR",
        "execute:error",
        p.ExecuteErrorParams,
        "A run raised.",
        Accepts(
            "RETRY, a str or an AssistantMessage",
            lambda value: (
                value is None or value is RETRY or isinstance(value, (str, AssistantMessage))
            ),
        ),
        "a ``Recovery``: ``RETRY`` runs the turn again, a ``str`` or ``AssistantMessage`` "
        "is the final answer; none lets the exception propagate.",
    ),
    _interceptable(
        "EXECUTE_ITERATION_BEFORE",
        "execute:iteration:before",
        p.ExecuteIterationBeforeParams,
        "A model turn is about to start.",
        Accepts(
            "SKIP_ITERATION, a str, an AssistantMessage or a ModelResponse",
            lambda value: (
                value is None
                or value is SKIP_ITERATION
                or isinstance(value, (str, AssistantMessage, ModelResponse))
            ),
        ),
        "an ``IterationOverride``: ``SKIP_ITERATION`` skips the turn, a ``str``, "
        "``AssistantMessage`` or ``ModelResponse`` is used instead of calling the model.",
    ),
    _signal(
        "EXECUTE_ITERATION_AFTER",
        "execute:iteration:after",
        p.ExecuteIterationAfterParams,
        "A model turn and its tool calls completed.",
    ),
    # -- template context ---------------------------------------------------------------
    _interceptable(
        "CONTEXT_PROVIDER_BEFORE",
        "context:provider:before",
        p.ContextProviderBeforeParams,
        "A template context provider is about to be called.",
        _ANY,
        "any value; one short-circuits the provider (it is not called).",
    ),
    _signal(
        "CONTEXT_PROVIDER_AFTER",
        "context:provider:after",
        p.ContextProviderAfterParams,
        "A template context provider returned its value.",
    ),
    # -- the agent ----------------------------------------------------------------------
    _signal(
        "AGENT_INIT_AFTER",
        "agent:init:after",
        p.AgentInitAfterParams,
        "An agent finished its construction.",
    ),
    _interceptable(
        "AGENT_CLOSE_BEFORE",
        "agent:close:before",
        p.AgentCloseParams,
        "An agent is about to close.",
        _ANY,
        "ignored: do pre-cleanup work here, while the agent is still usable.",
    ),
    _signal("AGENT_CLOSE_AFTER", "agent:close:after", p.AgentCloseParams, "An agent closed."),
    _signal(
        "AGENT_STATE_CHANGE",
        "agent:state:change",
        p.AgentStateChangeParams,
        "An agent moved to another state.",
    ),
    _signal(
        "AGENT_VERSION_CHANGE",
        "agent:version:change",
        p.AgentVersionChangeParams,
        "An agent's conversation changed and got a new version number.",
    ),
    # -- modes ------------------------------------------------------------------------------
    _signal("MODE_ENTERING", "mode:entering", p.ModeParams, "A mode is about to become active."),
    _signal("MODE_ENTERED", "mode:entered", p.ModeParams, "A mode became active."),
    _signal("MODE_EXITING", "mode:exiting", p.ModeParams, "A mode is about to end."),
    _signal("MODE_EXITED", "mode:exited", p.ModeParams, "A mode ended."),
    # -- extension points: reserved names, never dispatched by core ------------------------
    _extension(
        "STORAGE_SAVE_BEFORE", "storage:save:before", "A conversation is about to be saved."
    ),
    _extension("STORAGE_SAVE_AFTER", "storage:save:after", "A conversation was saved."),
    _extension(
        "STORAGE_LOAD_BEFORE", "storage:load:before", "A conversation is about to be loaded."
    ),
    _extension("STORAGE_LOAD_AFTER", "storage:load:after", "A conversation was loaded."),
    _extension("STORAGE_ERROR", "storage:error", "A storage operation failed."),
    _extension("CACHE_HIT", "cache:hit", "A cached model response was found."),
    _extension("CACHE_MISS", "cache:miss", "No cached model response was found."),
    _extension("CACHE_SET", "cache:set", "A model response was stored in a cache."),
    _extension("VALIDATION_BEFORE", "validation:before", "A value is about to be validated."),
    _extension("VALIDATION_AFTER", "validation:after", "A value was validated."),
    _extension("VALIDATION_ERROR", "validation:error", "A value failed validation."),
    _extension(
        "SUMMARY_GENERATE_BEFORE", "summary:generate:before", "A summary is about to be generated."
    ),
    _extension("SUMMARY_GENERATE_AFTER", "summary:generate:after", "A summary was generated."),
)
"""Every event, in the order of :class:`~agentrt.AgentEvents`."""
