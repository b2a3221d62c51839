"""The conversation's messages, tool calls, tool responses and token usage.

Messages are frozen pydantic models: a handler that wants a different message
returns a new one (``message.model_copy(update=...)``) instead of mutating the
one the conversation holds. :data:`Message` is the discriminated union of the
four roles.
"""

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import from_json, to_json

from agentrt._unicode import LONE_SURROGATE_ESCAPE, NUL_ESCAPE, escape_surrogates
from agentrt.exceptions import ToolArgumentsError

__all__ = (
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "ToolResponse",
    "Usage",
    "UserMessage",
    "is_message",
    "new_tool_call_id",
    "to_text",
)

# defer_build: the validators are built on first use, not at `import agentrt` (which
# would otherwise spend a third of its time building six schemas).
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def new_tool_call_id() -> str:
    """A fresh tool call id (``call_`` and 24 hex digits), for calls the model left unnamed."""
    return f"call_{uuid.uuid4().hex[:24]}"


def to_text(value: Any) -> str:
    """Render a tool's return value as the text the model reads.

    ``str`` is kept as is; other scalars use ``str()``; dicts, lists, tuples,
    pydantic models and dataclasses become JSON.
    """
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, int | float | bool):
        return str(value)
    return to_json(value).decode()


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent by one or more model calls. ``a + b`` adds two of them.

    A plain frozen dataclass rather than a pydantic model: several are made per
    model call, and pydantic still validates it as a field of a message.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Input tokens served from the provider's prompt cache (part of input_tokens)."""
    reasoning_tokens: int = 0
    """Output tokens spent on reasoning (part of output_tokens)."""
    requests: int = 0
    """Number of model calls counted."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
        )


class ToolCall(BaseModel):
    """A model's request to run one tool.

    ``arguments`` is the JSON text the model sent. A dict is accepted and dumped to
    JSON; a string is kept verbatim, even when it is not valid JSON, so that the
    tool-error path can say exactly what the model produced. The one exception is text
    that is not valid Unicode: a lone surrogate in ``name`` or ``arguments`` is stored as
    its ``\\uXXXX`` escape, so that the call can still be encoded (sent back to the model,
    streamed), and :meth:`parse_arguments` refuses it.
    """

    model_config = _FROZEN

    id: str = Field(default_factory=new_tool_call_id)
    name: str
    arguments: str = "{}"

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_json_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            # ensure_ascii (the default) spells a lone surrogate as its escape.
            return json.dumps(dict(value))
        if isinstance(value, str):
            return escape_surrogates(value)
        return value

    @field_validator("name", mode="before")
    @classmethod
    def _name_as_unicode_text(cls, value: Any) -> Any:
        return escape_surrogates(value) if isinstance(value, str) else value

    if TYPE_CHECKING:
        # What type checkers see: arguments may be a mapping too (see the validator).
        def __init__(
            self,
            *,
            name: str,
            arguments: str | Mapping[str, Any] = "{}",
            id: str = ...,
        ) -> None: ...

    def parse_arguments(self) -> dict[str, Any]:
        """The arguments as a dict.

        Raises:
            ToolArgumentsError: The arguments are not JSON, or not a JSON object, or hold
                text that is not valid Unicode (a lone surrogate) or a NUL character.
        """
        text = self.arguments.strip() or "{}"
        if "\\" in text:
            # Escapes JSON allows but no tool should receive: pydantic_core refuses some
            # lone-surrogate escapes with a vague "hex escape" error, and decodes \\u0000
            # into a NUL that paths, C APIs and subprocess arguments choke on.
            surrogate = LONE_SURROGATE_ESCAPE.search(text)
            if surrogate:
                escape = surrogate.group()[-6:]
                raise ToolArgumentsError(
                    self.name,
                    self.arguments,
                    f"not valid Unicode text (a lone surrogate {escape} at "
                    f"position {surrogate.end() - 6})",
                )
            if NUL_ESCAPE.search(text):
                raise ToolArgumentsError(self.name, self.arguments, "a NUL character (\\u0000)")
        try:
            # pydantic_core's parser: several times faster than json.loads here.
            value = from_json(text)
        except ValueError as exc:
            raise ToolArgumentsError(self.name, self.arguments, f"not valid JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                self.name, self.arguments, f"a JSON {type(value).__name__}, not an object"
            )
        return value


class ToolResponse(BaseModel):
    """What a tool call answered: the text the model reads, and whether it is an error.

    ``ToolResponse("text")`` or ``ToolResponse(value)``: any value is rendered with
    :func:`to_text`.
    """

    model_config = _FROZEN

    content: str
    is_error: bool = False

    def __init__(self, content: Any = None, /, *, is_error: bool = False, **data: Any) -> None:
        if "content" in data:
            content = data.pop("content")
        super().__init__(content=to_text(content), is_error=is_error, **data)


class SystemMessage(BaseModel):
    """The instructions that open the conversation."""

    model_config = _FROZEN

    role: Literal["system"] = "system"
    content: str


class UserMessage(BaseModel):
    """A message from the user."""

    model_config = _FROZEN

    role: Literal["user"] = "user"
    content: str


class AssistantMessage(BaseModel):
    """A model's turn: text, optional reasoning, and the tool calls it asked for."""

    model_config = _FROZEN

    role: Literal["assistant"] = "assistant"
    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    """What the model call that produced this message spent, when known."""


class ToolMessage(BaseModel):
    """The answer to one tool call, as the model will read it."""

    model_config = _FROZEN

    role: Literal["tool"] = "tool"
    content: str
    tool_call_id: str
    name: str = ""
    is_error: bool = False


Message: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
"""Any message of the conversation, discriminated by ``role``."""

_MESSAGE_CLASSES = (SystemMessage, UserMessage, AssistantMessage, ToolMessage)
_EXACT_MESSAGE_CLASSES = frozenset(_MESSAGE_CLASSES)


def is_message(value: object) -> TypeGuard[Message]:
    """Whether ``value`` is one of the four message types (or a subclass)."""
    # The exact-type test first: isinstance() against pydantic's ABC-based
    # metaclass costs ten times more, and this check runs on every message.
    return type(value) in _EXACT_MESSAGE_CLASSES or isinstance(value, _MESSAGE_CLASSES)
