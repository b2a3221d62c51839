"""The cost of an MCP tool call: against a function tool, and against the SDK alone.

The tool is ``add(a, b)`` in every row: a function tool, or the same function served
by an MCP server written with the SDK's ``MCPServer`` (benches/mcp_add_server.py).
Rows, all measured in the same rounds, in µs per call:

* ``Tool.run`` of the function tool (what a run pays to call it, events aside);
* agentrt's part of an MCP call alone: the argument check against the input schema
  (jsonschema) and the result mapped to text;
* ``MCPTool.run`` on the server in-process (``MCPServerInProcess``: JSON-RPC over
  memory streams) and the SDK's ``Client.call_tool`` on its own connection to the same
  server over the same kind of streams: their difference is agentrt's part (the
  argument check against the input schema, the result mapped to text);
* the same two over stdio, to the server as a process (what a real deployment pays);
* whole runs (prompt -> one tool call -> answer, a zero-latency ScriptedModel, the
  agent reused) with the function tool and with the MCP tool over stdio.

Run with ``nox -s bench`` or ``python benches/bench_mcp.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import mcp_types as types
from _harness import machine, measure_many
from mcp import Client, StdioServerParameters
from mcp_add_server import server as add_server

from agentrt.agent import Agent
from agentrt.mcp import MCPServerInProcess, MCPServerStdio, MCPTool, MCPToolset
from agentrt.mcp._content import result_text
from agentrt.messages import ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptedModel
from agentrt.tools import Tool

SERVER = [str(Path(__file__).with_name("mcp_add_server.py"))]
ARGUMENTS = {"a": 1, "b": 2}
CALL = ToolCall(id="call_1", name="add", arguments=ARGUMENTS)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def respond(request: ModelRequest) -> ToolCall | str:
    return CALL if request.messages[-1].role == "user" else "The answer is 3."


Runner = Callable[[int], Awaitable[None]]


def tool_calls(tool: Tool[..., object]) -> Runner:
    async def run(count: int) -> None:
        for _ in range(count):
            assert await tool.run(ARGUMENTS) in (3, "3")

    return run


def sdk_calls(client: Client) -> Runner:
    async def run(count: int) -> None:
        for _ in range(count):
            result = await client.call_tool("add", ARGUMENTS)
            assert result.structured_content == {"result": 3}

    return run


def agent_runs(agent: Agent) -> Runner:
    async def run(count: int) -> None:
        for _ in range(count):
            await agent.reset()
            result = await agent.execute("What is 1 + 2?")
            assert result.messages[2].content == "3", result.messages[2]

    return run


def mcp_tool(toolset: MCPToolset) -> MCPTool:
    (tool,) = toolset.tools
    return tool


def our_part(tool: MCPTool, result: types.CallToolResult) -> Runner:
    """What agentrt adds to the SDK's call: the argument check and the result's text."""

    async def run(count: int) -> None:
        for _ in range(count):
            tool.validate(ARGUMENTS)
            assert result_text(result.content, result.structured_content) == "3"

    return run


async def figures(n: int, rounds: int) -> dict[str, float]:
    async with AsyncExitStack() as stack:
        in_process = MCPServerInProcess(add_server)
        stdio = MCPServerStdio(sys.executable, SERVER, name="add")
        for toolset in (in_process, stdio):
            await toolset.open()
            stack.push_async_callback(toolset.close)
        # The same memory streams as MCPServerInProcess (Client(add_server) would
        # take the SDK's direct in-process path, without JSON-RPC: not comparable).
        memory = MCPServerInProcess(add_server).transport()
        sdk_in_process = await stack.enter_async_context(Client(memory))
        parameters = StdioServerParameters(command=sys.executable, args=SERVER)
        sdk_stdio = await stack.enter_async_context(Client(parameters))
        function_agent = Agent(model=ScriptedModel(respond, record=False), tools=[add])
        mcp_agent = Agent(
            model=ScriptedModel(respond, record=False),
            tools=[MCPServerStdio(sys.executable, SERVER, name="add")],
        )
        for agent in (function_agent, mcp_agent):
            await stack.enter_async_context(agent)
        answer = await sdk_in_process.call_tool("add", ARGUMENTS)
        return await measure_many(
            {
                "function tool: Tool.run": tool_calls(Tool(add)),
                "agentrt's part alone: argument check + result text": our_part(
                    mcp_tool(in_process), answer
                ),
                "MCP tool in-process: MCPTool.run": tool_calls(mcp_tool(in_process)),
                "MCP in-process, SDK alone: Client.call_tool": sdk_calls(sdk_in_process),
                "MCP tool over stdio: MCPTool.run": tool_calls(mcp_tool(stdio)),
                "MCP over stdio, SDK alone: Client.call_tool": sdk_calls(sdk_stdio),
                "run with the function tool": agent_runs(function_agent),
                "run with the MCP tool over stdio": agent_runs(mcp_agent),
            },
            n=n,
            rounds=rounds,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    n, rounds = (20, 3) if args.quick else (200, 7)
    medians = anyio.run(figures, n, rounds)
    function = medians["function tool: Tool.run"]
    print("### MCP: one call of add(a, b), as a function tool and as an MCP server's tool")
    print()
    print("| case | µs per call | x function tool |")
    print("|---|---:|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:.1f} | {value / function:.0f} |")
    ours = {
        "in-process": medians["MCP tool in-process: MCPTool.run"]
        - medians["MCP in-process, SDK alone: Client.call_tool"],
        "stdio": medians["MCP tool over stdio: MCPTool.run"]
        - medians["MCP over stdio, SDK alone: Client.call_tool"],
    }
    print()
    for transport, value in ours.items():
        print(f"- agentrt's part of an MCP call ({transport}): {value:.1f} µs over the SDK alone")
    run_cost = medians["run with the MCP tool over stdio"] - medians["run with the function tool"]
    print(f"- a run with the MCP tool over stdio costs {run_cost:.0f} µs more")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
