"""The MCP server of bench_mcp.py: one tool, ``add(a, b)``, written with the SDK's MCPServer.

``python benches/mcp_add_server.py`` serves it on stdio; bench_mcp.py also runs it
in-process.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
