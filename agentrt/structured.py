"""Structured output: a run whose answer must validate as a given type.

Two ways to ask a model for it, chosen per model:

* ``"native"``: the request carries the type's JSON schema
  (:attr:`ModelRequest.output_schema`, sent as ``response_format`` by providers
  that support it) and the answer's text must be JSON of that shape.
* ``"tool"``: an extra tool, :data:`OUTPUT_TOOL_NAME`, is offered whose arguments
  are the value; the run ends when the model calls it. For models without native
  support (or when asked with ``output_mode="tool"``).

An answer that does not validate is sent back to the model with the validation
error, a bounded number of times; then the run fails with
:class:`~agentrt.OutputValidationError` holding the last error.
"""

from typing import Any, Final, Generic, Literal, TypeAlias, TypeVar

from pydantic import TypeAdapter, ValidationError

from agentrt.exceptions import OutputValidationError
from agentrt.messages import ToolCall
from agentrt.tools import validation_problems

__all__ = ("OUTPUT_TOOL_NAME", "OutputMode", "OutputSpec")

T = TypeVar("T")

OutputMode: TypeAlias = Literal["native", "tool"]
"""How a structured output is asked for (see the module docstring)."""

OUTPUT_TOOL_NAME: Final = "final_output"
"""The name of the tool that carries a structured output in ``"tool"`` mode."""


class OutputSpec(Generic[T]):
    """The output type of one run, its schema, and how to read it from an answer.

    Args:
        output_type: Any type pydantic validates (a model, a dataclass, ``list[int]``).
        mode: ``"native"`` or ``"tool"``.

    Raises:
        TypeError: pydantic cannot build a schema for ``output_type``.
        ValueError: ``mode`` is neither ``"native"`` nor ``"tool"``.
    """

    __slots__ = ("_adapter", "_wrapped", "mode", "output_type", "schema")

    def __init__(self, output_type: type[T], mode: OutputMode) -> None:
        if mode not in ("native", "tool"):
            raise ValueError(f"output_mode must be 'native' or 'tool', got {mode!r}")
        try:
            self._adapter: TypeAdapter[T] = TypeAdapter(output_type)
            schema = self._adapter.json_schema()
        except Exception as exc:  # pydantic raises several kinds for unusable types
            raise TypeError(f"cannot use {output_type!r} as an output type: {exc}") from exc
        self.output_type = output_type
        self.mode = mode
        self.schema: dict[str, Any] = schema
        # Tool arguments are a JSON object: other shapes travel inside {"value": ...}.
        self._wrapped = schema.get("type") != "object"

    def tool_signature(self) -> dict[str, Any]:
        """The output tool, in the OpenAI function-tool format."""
        parameters = self.schema
        if self._wrapped:
            parameters = {
                "type": "object",
                "properties": {"value": self.schema},
                "required": ["value"],
                "additionalProperties": False,
            }
        return {
            "type": "function",
            "function": {
                "name": OUTPUT_TOOL_NAME,
                "description": "Give the final answer, in exactly this structure.",
                "parameters": parameters,
            },
        }

    def output_call(self, calls: tuple[ToolCall, ...]) -> ToolCall | None:
        """The call of the output tool among ``calls``, if any (tool mode only)."""
        if self.mode != "tool":
            return None
        for call in calls:
            if call.name == OUTPUT_TOOL_NAME:
                return call
        return None

    def parse_text(self, text: str) -> T:
        """Validate an answer's text as JSON of the output type.

        Raises:
            OutputValidationError: It is not valid JSON of that shape.
        """
        try:
            return self._adapter.validate_json(text)
        except ValidationError as exc:
            raise OutputValidationError(self.output_type, text, validation_problems(exc)) from exc

    def parse_call(self, call: ToolCall) -> T:
        """Validate the arguments of an output-tool call.

        Raises:
            OutputValidationError: They do not validate.
        """
        if not self._wrapped:
            return self.parse_text(call.arguments)
        try:
            arguments = call.parse_arguments()
            return self._adapter.validate_python(arguments["value"])
        except (ValidationError, KeyError, ValueError) as exc:
            problems = (
                validation_problems(exc)
                if isinstance(exc, ValidationError)
                else f"the arguments must be an object with a 'value' key ({exc})"
            )
            raise OutputValidationError(self.output_type, call.arguments, problems) from exc

    def retry_prompt(self, error: OutputValidationError) -> str:
        """What the model is told after an invalid answer."""
        how = (
            f"Call the {OUTPUT_TOOL_NAME} tool again with valid arguments."
            if self.mode == "tool"
            else "Answer again with only JSON matching the requested schema."
        )
        return f"Your output did not validate: {error.problems}. {how}"
