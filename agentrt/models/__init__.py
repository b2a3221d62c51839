"""Models: the :class:`Model` protocol, its requests, responses and chunks, and the models.

- :mod:`agentrt.models.base`: the seam, :class:`Model` (``complete`` and ``stream``),
  :class:`ModelRequest`, :class:`ModelResponse` and the :data:`StreamChunk` pieces of a
  streamed answer (:class:`TextDelta`, :class:`ReasoningDelta`, :class:`ToolCallDelta`,
  :class:`UsageChunk`).
- :mod:`agentrt.models.scripted`: :class:`ScriptedModel`, deterministic answers for tests
  and offline runs.
- :mod:`agentrt.models.openai`: :class:`OpenAIChatModel`, any server of the OpenAI
  chat-completions API (httpx).
- :mod:`agentrt.models.local`: :class:`LocalModel`, llama.cpp in this process
  (``agentrt[local]``).

Importing the package loads none of them: each name is read from its module on first use,
so that ``from agentrt.models import ScriptedModel`` loads neither httpx nor llama.cpp.
"""

import typing as _typing

from agentrt import _lazy

if _typing.TYPE_CHECKING:
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
    from agentrt.models.scripted import ScriptItem as ScriptItem

# Where each name lives, read on first use (module-level __getattr__, PEP 562).
_LAZY = {
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
    "ScriptItem": "agentrt.models.scripted",
}

__getattr__, __dir__ = _lazy.attach(__name__, _LAZY, globals())

__all__ = (
    "LocalModel",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "ReasoningDelta",
    "ScriptItem",
    "ScriptedModel",
    "StreamChunk",
    "TextDelta",
    "ToolCallDelta",
    "UsageChunk",
)
