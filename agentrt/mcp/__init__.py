"""Tools from MCP servers (``pip install 'agentrt[mcp]'``: the official ``mcp`` SDK).

An MCP server is a toolset an agent takes next to its function tools::

    from agentrt.agent import Agent
    from agentrt.mcp import MCPServerHTTP, MCPServerStdio

    agent = Agent(
        model=model,
        tools=[
            add,
            MCPServerStdio("python", ["-m", "mcp_server_time"]),
            MCPServerHTTP("http://127.0.0.1:3001/mcp", headers={"Authorization": token}),
        ],
    )
    async with agent:  # the servers start here (or on the first run) ...
        result = await agent.execute("What time is it in Tokyo?")
    # ... and stop here: no process is left behind.

* The server's tool names, descriptions and input schemas reach the model
  unchanged (``prefix=`` puts ``prefix_`` before the names to avoid clashes, which
  are otherwise a :class:`~agentrt.toolsets.ToolNameConflictError` when the agent
  starts). The list is kept, and listed again when the server announces a change.
* A call is a tool call like any other (``tool:call:before`` / ``after`` /
  ``error``, confirmations, the stream's ``tool_call`` and ``tool_call_response``).
  Its arguments are checked against the input schema before they are sent; the
  result's text, its structured content (as JSON) and a description of anything
  else (``[image: image/png, 1234 bytes]``) become the tool message, and a result
  the server marks ``isError`` an error message (:class:`MCPToolError`).
* The tools' MCP annotations are :attr:`Tool.annotations
  <agentrt.tools.Tool.annotations>` (the stream shows them in ``tool_definition``),
  and a tool marked ``destructiveHint: true`` asks for confirmation unless
  ``requires_confirmation=`` says otherwise.
* A server whose process dies during a call turns that call into an error naming
  the server; the run goes on, and the next call starts the server again.

Importing :mod:`agentrt` does not import this module (nor the SDK).
"""

from agentrt.mcp._errors import MCPServerError, MCPToolError
from agentrt.mcp._servers import MCPServerHTTP, MCPServerInProcess, MCPServerStdio, MCPToolset
from agentrt.mcp._tool import ConfirmationOption, MCPTool

__all__ = (
    "ConfirmationOption",
    "MCPServerError",
    "MCPServerHTTP",
    "MCPServerInProcess",
    "MCPServerStdio",
    "MCPTool",
    "MCPToolError",
    "MCPToolset",
)
