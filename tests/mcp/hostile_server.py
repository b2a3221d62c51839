"""A hostile MCP server, written with the official SDK's low-level ``Server``.

``python tests/mcp/hostile_server.py`` serves on stdio. Its tools misbehave the way
servers in the wild do:

* ``echo`` (well behaved), ``pid`` (its process id, so that tests can check the
  process is gone), ``add_tool`` (lists a new tool ``late`` and announces the
  change, on the subscription of 2026 clients and as a plain notification to older
  ones);
* wrong schemas: ``bad_schema`` and ``bad_type`` (input schemas that are not
  valid JSON Schema), ``bad.name`` (a name no model accepts), ``lies`` (its output
  breaks its own output schema), ``echo`` listed a second time;
* ``hang`` (blocks its whole process, deaf to SIGTERM: only SIGKILL ends it),
  ``crash`` (the process exits mid-call), ``huge`` (two million characters),
  ``wipe`` (marked destructive), ``fails`` (an ``isError`` result), ``mixed`` (text,
  an image, audio, a resource link, an embedded resource, structured content).

``--legacy`` makes it speak only the handshake-era protocol (2025-11-25), where a
change of tools is a plain notification; ``--http PORT`` serves the streamable HTTP
transport instead of stdio (``header`` then returns the request's X-Agentrt-Test
header); ``--hang-at-start`` makes a process that never answers at all.
"""

from __future__ import annotations

import base64
import os
import signal
import sys
import time
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

OBJECT = {"type": "object", "properties": {}}
TEXT_ARG = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to echo."}},
    "required": ["text"],
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(1226)).decode()  # 1234 bytes

TOOLS = [
    types.Tool(name="echo", description="Echo the text back.", input_schema=TEXT_ARG),
    types.Tool(name="pid", description="The server's process id.", input_schema=OBJECT),
    types.Tool(name="add_tool", description="Add the tool 'late'.", input_schema=OBJECT),
    types.Tool(
        name="bad_schema",
        description="Its schema is broken.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": "0"}}},
    ),
    types.Tool(
        name="bad_type",
        description="Its argument has a type JSON Schema does not know.",
        input_schema={"type": "object", "properties": {"n": {"type": "whole number"}}},
    ),
    types.Tool(name="bad.name", description="A dotted name.", input_schema=OBJECT),
    types.Tool(
        name="lies",
        description="Promises a number, returns text.",
        input_schema=OBJECT,
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    ),
    types.Tool(name="echo", description="Listed twice.", input_schema=OBJECT),
    types.Tool(name="hang", description="Never returns.", input_schema=OBJECT),
    types.Tool(name="crash", description="Kills the server.", input_schema=OBJECT),
    types.Tool(name="huge", description="Two million characters.", input_schema=OBJECT),
    types.Tool(
        name="wipe",
        description="Deletes everything.",
        input_schema=OBJECT,
        annotations=types.ToolAnnotations(
            title="Wipe", read_only_hint=False, destructive_hint=True
        ),
    ),
    types.Tool(name="fails", description="Reports a failure.", input_schema=OBJECT),
    types.Tool(name="mixed", description="Every kind of content.", input_schema=OBJECT),
    types.Tool(name="header", description="The X-Agentrt-Test header.", input_schema=OBJECT),
]
LATE = types.Tool(name="late", description="Added while running.", input_schema=OBJECT)


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def build() -> Server[Any]:
    """The server (a new one, with the initial tools)."""
    tools = list(TOOLS)
    bus = InMemorySubscriptionBus()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, params.arguments or {}
        if name == "echo":
            return text(str(arguments.get("text")))
        if name == "pid":
            return text(str(os.getpid()))
        if name == "add_tool":
            tools.append(LATE)
            await bus.publish(ToolsListChanged())  # 2026 clients: their subscription
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await ctx.session.send_tool_list_changed()  # older ones: a notification
            return text("added")
        if name == "lies":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="not a number")],
                structured_content={"n": "not a number"},
            )
        if name == "hang":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(3600)  # noqa: ASYNC251 (on purpose: the process hears nothing)
        if name == "crash":
            os._exit(3)
        if name == "huge":
            return text("x" * 2_000_000)
        if name == "wipe":
            return text("wiped")
        if name == "fails":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="the disk is full")], is_error=True
            )
        if name == "mixed":
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text="here it is"),
                    types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                    types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
                    types.ResourceLink(
                        type="resource_link",
                        name="report",
                        uri="file:///tmp/report.pdf",
                        mime_type="application/pdf",
                    ),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="memo://1", mime_type="text/plain", text="the memo"
                        ),
                    ),
                ],
                structured_content={"answer": 42},
            )
        if name == "header":
            request = ctx.request  # the HTTP request, when served over HTTP
            return text(str(request.headers.get("x-agentrt-test") if request else None))
        return text(f"no tool {name}")

    return Server(
        "hostile",
        version="1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


async def main(legacy: bool) -> None:
    server = build()
    options = server.create_initialization_options()
    async with stdio_server() as (read_stream, write_stream):
        if not legacy:
            await server.run(read_stream, write_stream, options)
            return
        # The handshake-only loop: a client's server/discover probe fails, and it
        # falls back to initialize.
        async with server.lifespan(server) as state:
            await serve_loop(
                server, read_stream, write_stream, lifespan_state=state, init_options=options
            )


def serve_http(port: int) -> None:
    app = build().streamable_http_app()
    # uvicorn says "Uvicorn running on ..." on stderr once it listens.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")


if __name__ == "__main__":
    if "--hang-at-start" in sys.argv:
        time.sleep(3600)
    if "--http" in sys.argv:
        serve_http(int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        anyio.run(main, "--legacy" in sys.argv)
