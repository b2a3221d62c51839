"""agentrt: an asyncio-native agent runtime.

Run an agent with ``await agent.execute(...)`` (or stream it with ``agent.stream()``),
watch or change every step through ``agent.hooks`` (or the raw :class:`EventBus` at
``agent.events``). A run may end waiting on tool calls its caller answers in a later
run (:class:`ExternalTool`, :mod:`agentrt.deferred`). The package exports the few
names a program starts with; the rest live in their submodules: :mod:`agentrt.events`
(params types, the catalogue), :mod:`agentrt.exceptions`, :mod:`agentrt.control`,
:mod:`agentrt.models`, :mod:`agentrt.stream` (codecs, the validator, clocks, pricing),
:mod:`agentrt.tools`, :mod:`agentrt.testing`. Every name the package exported before
is still importable from it (``from agentrt import ToolTimeoutError``).

Importing the package loads none of them: each name is read from its module on first use
(``from agentrt import Agent`` loads the agent, its messages and pydantic). A program
that imports agentrt and runs no agent (``agentrt --help``, a client that only decodes a
stream with :mod:`agentrt.stream.codec`, a module imported for its types) pays for what
it uses only.
"""

import typing as _typing

from agentrt import _lazy

if _typing.TYPE_CHECKING:
    from agentrt._state import RunResult as RunResult
    from agentrt.agent import Agent as Agent
    from agentrt.agent import AgentState as AgentState
    from agentrt.agent import ContextProvider as ContextProvider
    from agentrt.bus import DEFAULT_PRIORITY as DEFAULT_PRIORITY
    from agentrt.bus import EventBus as EventBus
    from agentrt.bus import EventContext as EventContext
    from agentrt.bus import Handler as Handler
    from agentrt.bus import Predicate as Predicate
    from agentrt.control import DEFER as DEFER
    from agentrt.control import RETRY as RETRY
    from agentrt.control import SKIP_ITERATION as SKIP_ITERATION
    from agentrt.control import IterationOverride as IterationOverride
    from agentrt.control import Recovery as Recovery
    from agentrt.deferred import Approval as Approval
    from agentrt.deferred import ExternalTool as ExternalTool
    from agentrt.deferred import ToolResult as ToolResult
    from agentrt.events import EVENT_PARAMS as EVENT_PARAMS
    from agentrt.events import EVENT_SEMANTICS as EVENT_SEMANTICS
    from agentrt.events import EXTENSION_POINTS as EXTENSION_POINTS
    from agentrt.events import AgentEvents as AgentEvents
    from agentrt.events import EventSemantics as EventSemantics
    from agentrt.events import get_event_semantics as get_event_semantics
    from agentrt.events import get_params_type as get_params_type
    from agentrt.exceptions import AgentClosedError as AgentClosedError
    from agentrt.exceptions import AgentError as AgentError
    from agentrt.exceptions import AgentrtError as AgentrtError
    from agentrt.exceptions import HandlerTimeoutError as HandlerTimeoutError
    from agentrt.exceptions import HookOutputError as HookOutputError
    from agentrt.exceptions import InvalidEventNameError as InvalidEventNameError
    from agentrt.exceptions import MaxIterationsExceededError as MaxIterationsExceededError
    from agentrt.exceptions import ModelConnectionError as ModelConnectionError
    from agentrt.exceptions import ModelError as ModelError
    from agentrt.exceptions import ModelHTTPError as ModelHTTPError
    from agentrt.exceptions import ModelResponseError as ModelResponseError
    from agentrt.exceptions import ModelTimeoutError as ModelTimeoutError
    from agentrt.exceptions import ModelUnavailableError as ModelUnavailableError
    from agentrt.exceptions import NotPendingError as NotPendingError
    from agentrt.exceptions import OutputValidationError as OutputValidationError
    from agentrt.exceptions import RunTimeoutError as RunTimeoutError
    from agentrt.exceptions import ScriptExhaustedError as ScriptExhaustedError
    from agentrt.exceptions import StreamProtocolError as StreamProtocolError
    from agentrt.exceptions import TemplateError as TemplateError
    from agentrt.exceptions import ToolArgumentsError as ToolArgumentsError
    from agentrt.exceptions import ToolDefinitionError as ToolDefinitionError
    from agentrt.exceptions import ToolError as ToolError
    from agentrt.exceptions import ToolExecutionError as ToolExecutionError
    from agentrt.exceptions import ToolNotFoundError as ToolNotFoundError
    from agentrt.exceptions import ToolResultError as ToolResultError
    from agentrt.exceptions import ToolTimeoutError as ToolTimeoutError
    from agentrt.hooks import HooksAccessor as HooksAccessor
    from agentrt.hooks import TypedEventHandlersMixin as TypedEventHandlersMixin
    from agentrt.messages import AssistantMessage as AssistantMessage
    from agentrt.messages import Message as Message
    from agentrt.messages import SystemMessage as SystemMessage
    from agentrt.messages import ToolCall as ToolCall
    from agentrt.messages import ToolMessage as ToolMessage
    from agentrt.messages import ToolResponse as ToolResponse
    from agentrt.messages import Usage as Usage
    from agentrt.messages import UserMessage as UserMessage
    from agentrt.models.base import Model as Model
    from agentrt.models.base import ModelRequest as ModelRequest
    from agentrt.models.base import ModelResponse as ModelResponse
    from agentrt.models.base import ReasoningDelta as ReasoningDelta
    from agentrt.models.base import StreamChunk as StreamChunk
    from agentrt.models.base import TextDelta as TextDelta
    from agentrt.models.base import ToolCallDelta as ToolCallDelta
    from agentrt.models.base import UsageChunk as UsageChunk
    from agentrt.models.local import LocalModel as LocalModel
    from agentrt.models.openai import OpenAIChatModel as OpenAIChatModel
    from agentrt.models.scripted import ScriptedModel as ScriptedModel
    from agentrt.shell import shell_tool as shell_tool
    from agentrt.stream import Compactor as Compactor
    from agentrt.stream import EventStream as EventStream
    from agentrt.stream import ModelPrices as ModelPrices
    from agentrt.stream import StreamAdapter as StreamAdapter
    from agentrt.stream import StreamEvent as StreamEvent
    from agentrt.structured import OutputMode as OutputMode
    from agentrt.tools import Tool as Tool
    from agentrt.tools import tool as tool

__version__ = "0.1.0"

# Where each name lives, read on first use (module-level __getattr__, PEP 562).
_LAZY = {
    "Agent": "agentrt.agent",
    "AgentState": "agentrt.agent",
    "ContextProvider": "agentrt.agent",
    "DEFAULT_PRIORITY": "agentrt.bus",
    "EventBus": "agentrt.bus",
    "EventContext": "agentrt.bus",
    "Handler": "agentrt.bus",
    "Predicate": "agentrt.bus",
    "DEFER": "agentrt.control",
    "IterationOverride": "agentrt.control",
    "Recovery": "agentrt.control",
    "RETRY": "agentrt.control",
    "SKIP_ITERATION": "agentrt.control",
    "Approval": "agentrt.deferred",
    "ExternalTool": "agentrt.deferred",
    "ToolResult": "agentrt.deferred",
    "AgentEvents": "agentrt.events",
    "EVENT_PARAMS": "agentrt.events",
    "EVENT_SEMANTICS": "agentrt.events",
    "EventSemantics": "agentrt.events",
    "EXTENSION_POINTS": "agentrt.events",
    "get_event_semantics": "agentrt.events",
    "get_params_type": "agentrt.events",
    "AgentClosedError": "agentrt.exceptions",
    "AgentError": "agentrt.exceptions",
    "AgentrtError": "agentrt.exceptions",
    "HandlerTimeoutError": "agentrt.exceptions",
    "HookOutputError": "agentrt.exceptions",
    "InvalidEventNameError": "agentrt.exceptions",
    "MaxIterationsExceededError": "agentrt.exceptions",
    "ModelConnectionError": "agentrt.exceptions",
    "ModelError": "agentrt.exceptions",
    "ModelHTTPError": "agentrt.exceptions",
    "ModelResponseError": "agentrt.exceptions",
    "ModelTimeoutError": "agentrt.exceptions",
    "ModelUnavailableError": "agentrt.exceptions",
    "NotPendingError": "agentrt.exceptions",
    "OutputValidationError": "agentrt.exceptions",
    "RunTimeoutError": "agentrt.exceptions",
    "ScriptExhaustedError": "agentrt.exceptions",
    "StreamProtocolError": "agentrt.exceptions",
    "TemplateError": "agentrt.exceptions",
    "ToolArgumentsError": "agentrt.exceptions",
    "ToolDefinitionError": "agentrt.exceptions",
    "ToolError": "agentrt.exceptions",
    "ToolExecutionError": "agentrt.exceptions",
    "ToolNotFoundError": "agentrt.exceptions",
    "ToolResultError": "agentrt.exceptions",
    "ToolTimeoutError": "agentrt.exceptions",
    "HooksAccessor": "agentrt.hooks",
    "TypedEventHandlersMixin": "agentrt.hooks",
    "AssistantMessage": "agentrt.messages",
    "Message": "agentrt.messages",
    "SystemMessage": "agentrt.messages",
    "ToolCall": "agentrt.messages",
    "ToolMessage": "agentrt.messages",
    "ToolResponse": "agentrt.messages",
    "Usage": "agentrt.messages",
    "UserMessage": "agentrt.messages",
    "Model": "agentrt.models.base",
    "ModelRequest": "agentrt.models.base",
    "ModelResponse": "agentrt.models.base",
    "ReasoningDelta": "agentrt.models.base",
    "StreamChunk": "agentrt.models.base",
    "TextDelta": "agentrt.models.base",
    "ToolCallDelta": "agentrt.models.base",
    "UsageChunk": "agentrt.models.base",
    "LocalModel": "agentrt.models.local",
    "OpenAIChatModel": "agentrt.models.openai",
    "ScriptedModel": "agentrt.models.scripted",
    "shell_tool": "agentrt.shell",
    "RunResult": "agentrt._state",
    "Compactor": "agentrt.stream",
    "EventStream": "agentrt.stream",
    "ModelPrices": "agentrt.stream",
    "StreamAdapter": "agentrt.stream",
    "StreamEvent": "agentrt.stream",
    "OutputMode": "agentrt.structured",
    "Tool": "agentrt.tools",
    "tool": "agentrt.tools",
}


__getattr__, __dir__ = _lazy.attach(__name__, _LAZY, globals())

__all__ = (
    "EVENT_PARAMS",
    "EVENT_SEMANTICS",
    "RETRY",
    "SKIP_ITERATION",
    "Agent",
    "AgentEvents",
    "AgentState",
    "AgentrtError",
    "Approval",
    "AssistantMessage",
    "EventBus",
    "EventContext",
    "EventSemantics",
    "EventStream",
    "ExternalTool",
    "HookOutputError",
    "HooksAccessor",
    "LocalModel",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "RunResult",
    "ScriptedModel",
    "StreamEvent",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolMessage",
    "ToolResponse",
    "TypedEventHandlersMixin",
    "Usage",
    "UserMessage",
    "__version__",
    "get_event_semantics",
    "get_params_type",
    "tool",
)
