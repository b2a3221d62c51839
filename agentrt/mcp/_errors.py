"""The errors of agentrt.mcp: a server that cannot be used, a call that failed."""

from __future__ import annotations

from agentrt.exceptions import ToolError
from agentrt.toolsets import ToolsetError

__all__ = ("MCPServerError", "MCPToolError")


class MCPServerError(ToolsetError):
    """An MCP server could not be started, reached or listed.

    Attributes:
        server: The server's name.
        reason: What went wrong.
    """

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server {server!r}: {reason}")


class MCPToolError(ToolError):
    """A call of an MCP tool failed; the message is what the model reads.

    A result the server marked ``isError`` reads as the server's own text; any
    other failure (an error answer, a result that breaks the tool's output schema,
    a server that died during the call) names the server and the tool.

    Attributes:
        server: The server's name.
        tool_name: The tool as the model named it.
        reason: What went wrong (the server's text for an ``isError`` result).
        is_result: Whether the server answered with an ``isError`` result.
    """

    def __init__(self, server: str, tool_name: str, reason: str, *, is_result: bool = False):
        self.server = server
        self.tool_name = tool_name
        self.reason = reason
        self.is_result = is_result
        super().__init__(
            reason if is_result else f"MCP server {server!r}, tool {tool_name!r}: {reason}"
        )
