"""agentrt: an asyncio-native agent runtime.

Run an agent with ``await agent.execute(...)`` (or stream it with ``agent.stream()``),
watch or change every step through ``agent.hooks`` (or the raw :class:`EventBus` at
``agent.events``). The package exports the few names a program starts with; the rest
live in their submodules: :mod:`agentrt.events` (params types, the catalogue),
:mod:`agentrt.exceptions`, :mod:`agentrt.control`, :mod:`agentrt.models`,
:mod:`agentrt.stream` (codecs, the validator, clocks, pricing), :mod:`agentrt.tools`,
:mod:`agentrt.testing`. Every name the package exported before is still importable
from it (``from agentrt import ToolTimeoutError``), on first use.
"""

import importlib as _importlib
import typing as _typing

from agentrt.agent import Agent as Agent
from agentrt.agent import AgentState as AgentState
from agentrt.bus import EventBus as EventBus
from agentrt.bus import EventContext as EventContext
from agentrt.control import RETRY as RETRY
from agentrt.control import SKIP_ITERATION as SKIP_ITERATION
from agentrt.events import EVENT_PARAMS as EVENT_PARAMS
from agentrt.events import EVENT_SEMANTICS as EVENT_SEMANTICS
from agentrt.events import AgentEvents as AgentEvents
from agentrt.events import EventSemantics as EventSemantics
from agentrt.events import get_event_semantics as get_event_semantics
from agentrt.events import get_params_type as get_params_type
from agentrt.exceptions import AgentrtError as AgentrtError
from agentrt.exceptions import HookOutputError as HookOutputError
from agentrt.exceptions import ModelError as ModelError
from agentrt.exceptions import ToolError as ToolError
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
from agentrt.models.scripted import ScriptedModel as ScriptedModel
from agentrt.state import RunResult as RunResult
from agentrt.tools import Tool as Tool
from agentrt.tools import tool as tool

if _typing.TYPE_CHECKING:
    from agentrt.agent import ContextProvider as ContextProvider
    from agentrt.bus import DEFAULT_PRIORITY as DEFAULT_PRIORITY
    from agentrt.bus import Handler as Handler
    from agentrt.bus import Predicate as Predicate
    from agentrt.control import IterationOverride as IterationOverride
    from agentrt.control import Recovery as Recovery
    from agentrt.events import EXTENSION_POINTS as EXTENSION_POINTS
    from agentrt.exceptions import AgentClosedError as AgentClosedError
    from agentrt.exceptions import AgentError as AgentError
    from agentrt.exceptions import HandlerTimeoutError as HandlerTimeoutError
    from agentrt.exceptions import InvalidEventNameError as InvalidEventNameError
    from agentrt.exceptions import MaxIterationsExceededError as MaxIterationsExceededError
    from agentrt.exceptions import ModelConnectionError as ModelConnectionError
    from agentrt.exceptions import ModelHTTPError as ModelHTTPError
    from agentrt.exceptions import ModelResponseError as ModelResponseError
    from agentrt.exceptions import ModelTimeoutError as ModelTimeoutError
    from agentrt.exceptions import ModelUnavailableError as ModelUnavailableError
    from agentrt.exceptions import OutputValidationError as OutputValidationError
    from agentrt.exceptions import RunTimeoutError as RunTimeoutError
    from agentrt.exceptions import ScriptExhaustedError as ScriptExhaustedError
    from agentrt.exceptions import StreamProtocolError as StreamProtocolError
    from agentrt.exceptions import TemplateError as TemplateError
    from agentrt.exceptions import ToolArgumentsError as ToolArgumentsError
    from agentrt.exceptions import ToolDefinitionError as ToolDefinitionError
    from agentrt.exceptions import ToolExecutionError as ToolExecutionError
    from agentrt.exceptions import ToolNotFoundError as ToolNotFoundError
    from agentrt.exceptions import ToolTimeoutError as ToolTimeoutError
    from agentrt.hooks import HooksAccessor as HooksAccessor
    from agentrt.hooks import TypedEventHandlersMixin as TypedEventHandlersMixin
    from agentrt.models.base import ReasoningDelta as ReasoningDelta
    from agentrt.models.base import StreamChunk as StreamChunk
    from agentrt.models.base import TextDelta as TextDelta
    from agentrt.models.base import ToolCallDelta as ToolCallDelta
    from agentrt.models.base import UsageChunk as UsageChunk
    from agentrt.models.local import LocalModel as LocalModel
    from agentrt.models.openai import OpenAIChatModel as OpenAIChatModel
    from agentrt.shell import shell_tool as shell_tool
    from agentrt.stream import Compactor as Compactor
    from agentrt.stream import EventStream as EventStream
    from agentrt.stream import ModelPrices as ModelPrices
    from agentrt.stream import StreamAdapter as StreamAdapter
    from agentrt.stream import StreamEvent as StreamEvent
    from agentrt.structured import OutputMode as OutputMode

__version__ = "0.1.0"

# The params types name Agent and Tool, which import the event system: bound now that
# both are loaded, so that typing.get_type_hints() resolves every params type.
_importlib.import_module("agentrt.events.params")._bind_late_names()

# Read on first use. Two kinds: the names a program rarely needs from the package
# itself (they live in their submodules and stay importable from here, as they always
# were), and the heavy ones: httpx (with rich and click, which httpx imports when they
# are installed), the stream-event models, LocalModel's importlib.metadata and the shell
# tool's subprocess machinery were two thirds of `import agentrt`'s time, and a program
# that runs agents with execute() needs none of them; nor the ninety generated hook
# methods, until agent.hooks is first read.
_LAZY = {
    "HooksAccessor": "agentrt.hooks",
    "TypedEventHandlersMixin": "agentrt.hooks",
    "AgentClosedError": "agentrt.exceptions",
    "AgentError": "agentrt.exceptions",
    "Compactor": "agentrt.stream",
    "ContextProvider": "agentrt.agent",
    "DEFAULT_PRIORITY": "agentrt.bus",
    "EXTENSION_POINTS": "agentrt.events",
    "EventStream": "agentrt.stream",
    "Handler": "agentrt.bus",
    "HandlerTimeoutError": "agentrt.exceptions",
    "InvalidEventNameError": "agentrt.exceptions",
    "IterationOverride": "agentrt.control",
    "LocalModel": "agentrt.models.local",
    "MaxIterationsExceededError": "agentrt.exceptions",
    "ModelConnectionError": "agentrt.exceptions",
    "ModelHTTPError": "agentrt.exceptions",
    "ModelPrices": "agentrt.stream",
    "ModelResponseError": "agentrt.exceptions",
    "ModelTimeoutError": "agentrt.exceptions",
    "ModelUnavailableError": "agentrt.exceptions",
    "OpenAIChatModel": "agentrt.models.openai",
    "OutputMode": "agentrt.structured",
    "OutputValidationError": "agentrt.exceptions",
    "Predicate": "agentrt.bus",
    "ReasoningDelta": "agentrt.models.base",
    "Recovery": "agentrt.control",
    "RunTimeoutError": "agentrt.exceptions",
    "ScriptExhaustedError": "agentrt.exceptions",
    "StreamAdapter": "agentrt.stream",
    "StreamChunk": "agentrt.models.base",
    "StreamEvent": "agentrt.stream",
    "StreamProtocolError": "agentrt.exceptions",
    "TemplateError": "agentrt.exceptions",
    "TextDelta": "agentrt.models.base",
    "ToolArgumentsError": "agentrt.exceptions",
    "ToolCallDelta": "agentrt.models.base",
    "ToolDefinitionError": "agentrt.exceptions",
    "ToolExecutionError": "agentrt.exceptions",
    "ToolNotFoundError": "agentrt.exceptions",
    "ToolTimeoutError": "agentrt.exceptions",
    "UsageChunk": "agentrt.models.base",
    "shell_tool": "agentrt.shell",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentrt' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = (
    "EVENT_PARAMS",
    "EVENT_SEMANTICS",
    "RETRY",
    "SKIP_ITERATION",
    "Agent",
    "AgentEvents",
    "AgentState",
    "AgentrtError",
    "AssistantMessage",
    "EventBus",
    "EventContext",
    "EventSemantics",
    "EventStream",
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
