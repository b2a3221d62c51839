"""The model seam: :class:`Model`, :class:`ModelRequest`, :class:`ModelResponse`, chunks.

A model turns a :class:`ModelRequest` (the rendered conversation, the tool schemas,
settings) into a :class:`ModelResponse`, either at once (:meth:`Model.complete`) or
as an async iterator of :data:`StreamChunk` (:meth:`Model.stream`). These are plain
slotted dataclasses rather than pydantic models: they live on the hot path and are
built only by code that already validated its inputs.
"""

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from agentrt.messages import AssistantMessage, Message, ToolCall, Usage

__all__ = (
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "ToolCallDelta",
    "UsageChunk",
)


@dataclass(slots=True)
class ModelRequest:
    """One call to a model.

    Attributes:
        messages: The conversation as rendered for this call.
        tools: One JSON schema per offered tool, in the OpenAI function format
            (``{"type": "function", "function": {"name", "description", "parameters"}}``).
        settings: Provider settings passed through (temperature, max_tokens, ...).
        output_schema: The JSON schema of a structured output, when one is asked for.
    """

    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None


NO_USAGE = Usage()
"""Zero usage; one shared instance (Usage is immutable)."""


@dataclass(slots=True)
class ModelResponse:
    """What a model answered: text, reasoning, tool calls and the tokens it spent."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = NO_USAGE
    finish_reason: str | None = None
    model_name: str | None = None

    def to_message(self) -> AssistantMessage:
        """The assistant message this response becomes in the conversation."""
        return AssistantMessage(
            content=self.content,
            reasoning=self.reasoning,
            tool_calls=self.tool_calls,
            usage=self.usage,
        )


@dataclass(slots=True, frozen=True, init=False)
class TextDelta:
    """A fragment of the answer's text."""

    text: str

    def __init__(self, text: str) -> None:
        _set_text(self, text)


@dataclass(slots=True, frozen=True, init=False)
class ReasoningDelta:
    """A fragment of the model's reasoning."""

    text: str

    def __init__(self, text: str) -> None:
        _set_reasoning(self, text)


# One text chunk is made per streamed delta: the dataclass's frozen __init__ goes
# through object.__setattr__, the slot's own setter costs a third less.
_set_text = TextDelta.__dict__["text"].__set__
_set_reasoning = ReasoningDelta.__dict__["text"].__set__


@dataclass(slots=True, frozen=True)
class ToolCallDelta:
    """A fragment of a tool call, assembled by ``index``.

    ``id`` and ``name`` arrive on the first fragment of a call (``None`` after);
    ``arguments`` carries only the new piece of the JSON text.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True, frozen=True)
class UsageChunk:
    """The tokens the streamed call spent (usually the last chunk)."""

    usage: Usage
    finish_reason: str | None = None


StreamChunk: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | UsageChunk
"""One item of :meth:`Model.stream`."""


@runtime_checkable
class Model(Protocol):
    """What the agent needs of a model."""

    @property
    def name(self) -> str:
        """A name for logs and events (``"scripted"``, ``"gpt-4o-mini"``)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Answer ``request`` as chunks, in generation order."""
        ...
