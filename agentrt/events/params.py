"""The params ``TypedDict`` of every dispatched event.

``ctx.parameters`` of a handler holds exactly the keys of its event's params type
(required keys are always present). Annotate a handler's context as
``EventContext[ToolCallBeforeParams, dict[str, Any] | ToolResponse]`` and a type
checker knows what ``ctx.parameters["tool_name"]`` is.

This module must not use ``from __future__ import annotations``: on Python 3.11 a
stringified ``NotRequired[...]`` is invisible to ``TypedDict`` and the key would
become required at runtime (``__optional_keys__`` would be wrong). Forward
references are therefore quoted one by one.
"""

from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from agentrt._state import AgentState, RunResult

# Imported for real (they import nothing of the event system), so that
# typing.get_type_hints() resolves these names at runtime; Agent and Tool import the
# event system themselves and are bound once the agent module is loaded (_bind_late_names).
from agentrt.messages import Message, ToolCall, ToolResponse
from agentrt.models.base import ModelRequest, ModelResponse, StreamChunk

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.tools import Tool

__all__ = (
    "AgentCloseParams",
    "AgentInitAfterParams",
    "AgentStateChangeParams",
    "AgentVersionChangeParams",
    "ContextProviderAfterParams",
    "ContextProviderBeforeParams",
    "ExecuteAfterParams",
    "ExecuteBeforeParams",
    "ExecuteErrorParams",
    "ExecuteIterationAfterParams",
    "ExecuteIterationBeforeParams",
    "LLMCallAfterParams",
    "LLMCallBeforeParams",
    "LLMCallErrorParams",
    "LLMErrorParams",
    "LLMExtractAfterParams",
    "LLMExtractBeforeParams",
    "LLMStreamChunkParams",
    "MessageAppendAfterParams",
    "MessageAppendBeforeParams",
    "MessageCreateAfterParams",
    "MessageCreateBeforeParams",
    "MessageRenderAfterParams",
    "MessageRenderBeforeParams",
    "MessageReplaceAfterParams",
    "MessageReplaceBeforeParams",
    "MessageSetSystemAfterParams",
    "MessageSetSystemBeforeParams",
    "ModeParams",
    "ToolCallAfterParams",
    "ToolCallBeforeParams",
    "ToolCallErrorParams",
    "ToolCallOutputParams",
    "ToolsGenerateSignatureParams",
    "ToolsProvideParams",
)


# -- messages -------------------------------------------------------------------------


class MessageCreateBeforeParams(TypedDict):
    """``message:create:before``: output is the :data:`~agentrt.Message` to create."""

    agent: "Agent"
    message: "Message"


class MessageCreateAfterParams(TypedDict):
    """``message:create:after``: the message that was created."""

    agent: "Agent"
    message: "Message"


class MessageAppendBeforeParams(TypedDict):
    """``message:append:before``: output is the :data:`~agentrt.Message` to store."""

    message: "Message"
    agent: "Agent"


class MessageAppendAfterParams(TypedDict):
    """``message:append:after``: the stored message and its position."""

    agent: "Agent"
    message: "Message"
    index: int


class MessageReplaceBeforeParams(TypedDict):
    """``message:replace:before``: output is the :data:`~agentrt.Message` to store."""

    agent: "Agent"
    index: int
    old_message: "Message"
    message: "Message"


class MessageReplaceAfterParams(TypedDict):
    """``message:replace:after``: the message now at ``index`` and the one it replaced."""

    agent: "Agent"
    index: int
    old_message: "Message"
    message: "Message"


class MessageSetSystemBeforeParams(TypedDict):
    """``message:set_system:before``: output is the system message to store."""

    agent: "Agent"
    message: "Message"


class MessageSetSystemAfterParams(TypedDict):
    """``message:set_system:after``: the system message now in force."""

    agent: "Agent"
    message: "Message"


class MessageRenderBeforeParams(TypedDict):
    """``message:render:before``: output is the list of messages sent to the model."""

    agent: "Agent"
    messages: "list[Message]"


class MessageRenderAfterParams(TypedDict):
    """``message:render:after``: the messages that will be sent to the model."""

    agent: "Agent"
    messages: "list[Message]"


# -- tools ------------------------------------------------------------------------------


class ToolsProvideParams(TypedDict):
    """``tools:provide``: output is the list of tools offered to this model call."""

    agent: "Agent"
    tools: "list[Tool[Any, Any]]"


class ToolsGenerateSignatureParams(TypedDict):
    """``tools:generate_signature``: output is the JSON schema sent for ``tool``."""

    agent: "Agent"
    tool: "Tool[Any, Any]"
    signature: dict[str, Any]


class ToolCallBeforeParams(TypedDict):
    """``tool:call:before``: output is the arguments dict, a ToolResponse or DEFER."""

    agent: "Agent"
    tool_name: str
    tool_call: "ToolCall"
    arguments: dict[str, Any]


class ToolCallAfterParams(TypedDict):
    """``tool:call:after``: the tool ran with ``arguments`` and answered ``response``."""

    agent: "Agent"
    tool_name: str
    tool_call: "ToolCall"
    arguments: dict[str, Any]
    response: "ToolResponse"


class ToolCallErrorParams(TypedDict):
    """``tool:call:error``: output is a fallback ToolResponse; none records the error."""

    agent: "Agent"
    tool_name: str
    tool_call: "ToolCall"
    error: Exception


class ToolCallOutputParams(TypedDict):
    """``tool:call:output``: a piece of output a running tool reported (``ToolContext.emit``)."""

    agent: "Agent"
    tool_name: str
    tool_call: "ToolCall"
    output: str


# -- model calls --------------------------------------------------------------------------


class LLMCallBeforeParams(TypedDict):
    """``llm:complete:before`` / ``llm:stream:before``: output is the request to send."""

    agent: "Agent"
    request: "ModelRequest"


class LLMCallAfterParams(TypedDict):
    """``llm:complete:after`` / ``llm:stream:after``: the request and the model's response."""

    agent: "Agent"
    request: "ModelRequest"
    response: "ModelResponse"


class LLMCallErrorParams(TypedDict):
    """``llm:complete:error`` / ``llm:stream:error`` / ``llm:extract:error``."""

    agent: "Agent"
    request: "ModelRequest"
    error: Exception


class LLMStreamChunkParams(TypedDict):
    """``llm:stream:chunk``: one chunk of a streaming model call, in arrival order."""

    agent: "Agent"
    request: "ModelRequest"
    chunk: "StreamChunk"


class LLMExtractBeforeParams(TypedDict):
    """``llm:extract:before``: output is the request to send for structured output."""

    agent: "Agent"
    request: "ModelRequest"
    output_type: Any


class LLMExtractAfterParams(TypedDict):
    """``llm:extract:after``: the validated value and the response it came from."""

    agent: "Agent"
    request: "ModelRequest"
    response: "ModelResponse"
    output: Any


class LLMErrorParams(TypedDict):
    """``llm:error``: any model call failed; ``operation`` says which kind."""

    agent: "Agent"
    request: "ModelRequest"
    error: Exception
    operation: Literal["complete", "stream", "extract"]


# -- the execute loop ---------------------------------------------------------------------


class ExecuteBeforeParams(TypedDict):
    """``execute:before``: output is the int max_iterations for this run."""

    agent: "Agent"
    prompt: str | None
    max_iterations: int


class ExecuteAfterParams(TypedDict):
    """``execute:after``: the run's result."""

    agent: "Agent"
    result: "RunResult[Any]"


class ExecuteErrorParams(TypedDict):
    """``execute:error``: output is a :data:`~agentrt.control.Recovery`; none re-raises."""

    agent: "Agent"
    error: Exception
    iteration: int


class ExecuteIterationBeforeParams(TypedDict):
    """``execute:iteration:before``: output may skip the turn or supply the response."""

    agent: "Agent"
    iteration: int


class ExecuteIterationAfterParams(TypedDict):
    """``execute:iteration:after``: the turn number and the messages it added."""

    agent: "Agent"
    iteration: int
    messages: "list[Message]"


class ContextProviderBeforeParams(TypedDict):
    """``context:provider:before``: output is the value; one skips the provider."""

    agent: "Agent"
    name: str


class ContextProviderAfterParams(TypedDict):
    """``context:provider:after``: the value the provider (or a handler) gave."""

    agent: "Agent"
    name: str
    value: Any


# -- agent lifecycle ------------------------------------------------------------------------


class AgentInitAfterParams(TypedDict):
    """``agent:init:after``: the agent that finished construction."""

    agent: "Agent"


class AgentCloseParams(TypedDict):
    """``agent:close:before`` / ``agent:close:after``; ``reason`` only when one was given."""

    agent: "Agent"
    reason: NotRequired[str]


class AgentStateChangeParams(TypedDict):
    """``agent:state:change``: the state left and the state entered."""

    agent: "Agent"
    previous: "AgentState"
    state: "AgentState"


class AgentVersionChangeParams(TypedDict):
    """``agent:version:change``: the conversation's version before and after."""

    agent: "Agent"
    previous: int
    version: int


class ModeParams(TypedDict):
    """``mode:entering`` / ``mode:entered`` / ``mode:exiting`` / ``mode:exited``."""

    agent: "Agent"
    mode: str
    stack: tuple[str, ...]


def _bind_late_names() -> None:
    """Bind ``Agent`` and ``Tool`` here for ``typing.get_type_hints``.

    They cannot be imported when this module loads: both import the event system.
    :mod:`agentrt.agent` calls this once it has defined ``Agent`` (and imported
    ``Tool``); :func:`~agentrt.events.get_params_type` makes sure it happened.
    """
    from agentrt.agent import Agent
    from agentrt.tools import Tool

    globals().update(Agent=Agent, Tool=Tool)
