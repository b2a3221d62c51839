"""An MCP server's tool as an agent offers and calls it.

The model sees the server's name (with the toolset's prefix, if any), description
and input schema unchanged. A call's arguments are checked against that schema
(with ``jsonschema``) before they are sent, so the model reads what is wrong
without a round trip; the server's answer becomes the tool message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for
from pydantic import ConfigDict, create_model

from agentrt.exceptions import ToolArgumentsError, ToolTimeoutError
from agentrt.mcp._errors import MCPToolError
from agentrt.tools import Tool

if TYPE_CHECKING:
    from agentrt.mcp._servers import MCPToolset

__all__ = ("ConfirmationOption", "MCPTool", "RejectedTool", "build_tool")

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Tool's pydantic arguments model is not used by MCP tools; a permissive one stands in
# for code that copies a Tool's fields (agentrt.durable does).
_ANY_ARGUMENTS = create_model("mcp_arguments", __config__=ConfigDict(extra="allow"))

ConfirmationOption = bool | Collection[str] | None
"""``requires_confirmation=`` of a server: ``None`` follows the server's
``destructiveHint``, a bool applies to every tool, a collection names the tools
(by the server's names) that ask."""


class RejectedTool(ValueError):
    """A listed tool that cannot be offered (an invalid name or input schema)."""


class MCPTool(Tool[Any, Any]):
    """A tool of an MCP server: calling it calls the server.

    Built by the server's toolset from its ``tools/list`` answer; not made by hand.

    Attributes:
        server: The toolset the tool belongs to.
        remote_name: The tool's name on the server (``name`` may carry a prefix).
        title: The server's display title for the tool, if any.
        output_schema: The JSON schema of its structured content, if declared.
        definition: The server's definition of the tool, as listed.
    """

    __slots__ = ("_validator", "definition", "output_schema", "remote_name", "server", "title")

    def __init__(
        self,
        server: MCPToolset,
        definition: mcp_types.Tool,
        *,
        name: str,
        validator: Validator,
        requires_confirmation: bool,
        timeout: float | None,
    ) -> None:
        # Tool.__init__ reads a function's signature; an MCP tool has a schema instead.
        self.server = server
        self.definition = definition
        self.remote_name = definition.name
        self.name = name
        self.description = definition.description or ""
        self.parameters: dict[str, Any] = definition.input_schema
        self.output_schema = definition.output_schema
        self.title = definition.title
        annotations = definition.annotations
        self.annotations = (
            None
            if annotations is None
            else annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        self.timeout = timeout
        self.requires_confirmation = requires_confirmation
        self.function = self._call
        self._is_async = True
        self._arguments_model = _ANY_ARGUMENTS
        self._fields = tuple(self.parameters.get("properties") or ())
        self._validator = validator

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the tool's input schema; return them unchanged.

        Raises:
            ToolArgumentsError: They break the schema (every problem is named).
            MCPToolError: The schema cannot be applied (a ``$ref`` that does not resolve).
        """
        try:
            errors = list(self._validator.iter_errors(arguments))
        except Exception as error:  # referencing's Unresolvable and the like
            raise MCPToolError(
                self.server.name,
                self.name,
                f"its input schema cannot be checked ({type(error).__name__}: {error})",
            ) from error
        if errors:
            errors.sort(key=lambda e: [str(part) for part in e.absolute_path])
            problems = "; ".join(
                f"{'.'.join(str(part) for part in e.absolute_path) or '(value)'}: {e.message}"
                for e in errors
            )
            raise ToolArgumentsError(self.name, json.dumps(arguments, default=repr), problems)
        return arguments

    async def run(self, arguments: dict[str, Any]) -> Any:
        """Check ``arguments``, call the tool on its server and return the result's text.

        Raises:
            ToolArgumentsError: The arguments break the input schema.
            ToolTimeoutError: The call took longer than the server's ``timeout``.
            MCPToolError: The server answered an error or an ``isError`` result, its
                structured content breaks the output schema, or it died mid-call.
        """
        arguments = self.validate(arguments)
        timeout = self.timeout
        if timeout is None:
            return await self.server.call(self, arguments)
        with anyio.move_on_after(timeout):
            return await self.server.call(self, arguments)
        raise ToolTimeoutError(self.name, timeout)

    async def _call(self, **arguments: Any) -> str:
        return await self.run(arguments)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server.name!r})"


def _confirms(definition: mcp_types.Tool, option: ConfirmationOption) -> bool:
    if option is None:
        hints = definition.annotations
        # Only a tool the server marks destructive asks; MCP's defaults (a tool with
        # no hints might be destructive) would make every unannotated tool ask.
        return bool(hints and hints.destructive_hint is True and hints.read_only_hint is not True)
    if isinstance(option, bool):
        return option
    return definition.name in option


def build_tool(
    server: MCPToolset,
    definition: mcp_types.Tool,
    *,
    prefix: str | None,
    requires_confirmation: ConfirmationOption,
    timeout: float | None,
) -> MCPTool:
    """The :class:`MCPTool` of one listed definition.

    Raises:
        RejectedTool: Its name (with the prefix) is not one a model accepts, or its
            input schema is not a valid JSON schema of an object.
    """
    name = f"{prefix}_{definition.name}" if prefix else definition.name
    if not _NAME.fullmatch(name):
        raise RejectedTool(f"its name {name!r} is not 1 to 64 letters, digits, '_' or '-'")
    schema = definition.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise RejectedTool(f"its input schema is not an object schema: {schema!r:.200}")
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        raise RejectedTool(f"its input schema is invalid: {error.message}") from error
    return MCPTool(
        server,
        definition,
        name=name,
        validator=cls(schema),
        requires_confirmation=_confirms(definition, requires_confirmation),
        timeout=timeout,
    )
