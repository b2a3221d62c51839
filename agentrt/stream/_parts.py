"""The parts of stream events: a wire tool call and token usage (re-exported by
:mod:`agentrt.stream.events`, where they are documented), and the model configuration
and field types every event model shares.
"""

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from agentrt.messages import ToolCall

__all__ = (
    "MODEL_CONFIG",
    "Cost",
    "Count",
    "LastMessageUsage",
    "TokenUsage",
    "WireFunction",
    "WireToolCall",
)

Count = Annotated[int, Field(ge=0)]
# JSON has no NaN or infinity: pydantic would send them as null, which does not parse back.
Cost = Annotated[float, Field(ge=0, allow_inf_nan=False)]

# extra="allow": a field a newer version or another producer adds is kept (and encoded
# again), not an error; parse_event(strict=True) refuses it. defer_build: each model's
# validator and serializer are built when first used, not at import: a producer makes
# its hot events unchecked (agentrt.stream.events) and never validates them, and
# building all of them (with pydantic's plugin lookup, which reads every installed
# package's metadata) was two thirds of `import agentrt.stream`.
MODEL_CONFIG = ConfigDict(frozen=True, extra="allow", defer_build=True)


class WireFunction(BaseModel):
    """The function part of a wire tool call.

    Attributes:
        name: The tool's name.
        arguments: The arguments as JSON text, exactly as the model produced them (a
            partial tool call carries the fragment streamed so far).
    """

    model_config = MODEL_CONFIG

    name: str
    arguments: str


class WireToolCall(BaseModel):
    """A tool call as the stream shows it (the OpenAI shape).

    Attributes:
        id: The tool call id, shared by every event about this call.
        type: Always ``"function"``.
        function: The tool's name and arguments.
    """

    model_config = MODEL_CONFIG

    id: str
    type: Literal["function"] = "function"
    function: WireFunction

    @classmethod
    def from_tool_call(cls, call: ToolCall) -> Self:
        """The wire form of one of the conversation's :class:`~agentrt.ToolCall` values."""
        return cls(id=call.id, function=WireFunction(name=call.name, arguments=call.arguments))


class LastMessageUsage(BaseModel):
    """The figures of the last model call alone (``TokenUsage`` holds the session's).

    Attributes:
        input_tokens: Input tokens of that call.
        output_tokens: Output tokens of that call.
        cost: Its cost (0.0 when unknown).
    """

    model_config = MODEL_CONFIG

    input_tokens: Count
    output_tokens: Count
    cost: Cost


class TokenUsage(BaseModel):
    """Token consumption and cost, cumulative for the session.

    All five numbers are always sent (0 or 0.0 when unknown); ``last_message`` is
    left out of the JSON when absent.

    Attributes:
        input_tokens: Input tokens consumed.
        output_tokens: Output tokens generated.
        context_length: The current context length.
        context_limit: The model's context window (0 when unknown).
        cost: The monetary cost (0.0 when unknown).
        last_message: The last model call's own figures, when known.
    """

    model_config = MODEL_CONFIG

    input_tokens: Count
    output_tokens: Count
    context_length: Count
    context_limit: Count
    cost: Cost
    last_message: LastMessageUsage | None = None

    # No return annotation: pydantic would take it as the serialization JSON schema
    # (``Any`` gives an empty one); without it the schema is the model's own.
    @model_serializer(mode="wrap")
    def _omit_absent_last_message(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict) and "last_message" in data and data["last_message"] is None:
            del data["last_message"]
        return data
