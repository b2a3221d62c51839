"""Tools from an MCP server next to a function tool, offline: mcp-server-time over stdio.

The agent starts the server as a process when it starts, offers its tools (names,
descriptions and schemas as the server lists them) with its own function tool,
and stops the process when it closes. The scripted model calls both kinds of tool
in one turn, then a server tool with a time zone that does not exist: the
server's error reaches the model as the tool's answer, and the run goes on. The
stream shows the server's annotations in each call's ``tool_definition``.

Needs ``pip install 'agentrt[mcp]' mcp-server-time``.
Run: ``python examples/mcp_tools.py``
"""

import json
import sys

import anyio

from agentrt.agent import Agent
from agentrt.mcp import MCPServerStdio
from agentrt.messages import ToolCall
from agentrt.models.scripted import ScriptedModel
from agentrt.stream.events import ToolCallEvent, ToolCallResponseEvent
from agentrt.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


model = ScriptedModel(
    [
        [
            ToolCall(name="get_current_time", arguments={"timezone": "Asia/Tokyo"}),
            ToolCall(name="add", arguments={"a": 9, "b": 8}),
        ],
        ToolCall(name="get_current_time", arguments={"timezone": "Mars/Olympus_Mons"}),
        "It is evening in Tokyo, 9 + 8 = 17, and Mars has no time zone.",
    ]
)


async def main() -> None:
    # The server's own log lines go to stderr; its tools come over stdin and stdout.
    time_server = MCPServerStdio(sys.executable, ["-m", "mcp_server_time"], name="time")
    agent = Agent(model=model, tools=[add, time_server], name="clock")
    async with agent:
        info = time_server.server_info
        print(f"server started: {info.name if info else '?'}")
        print(f"tools offered: {', '.join(t.name for t in agent.tools)}")
        async with agent.stream("What time is it in Tokyo, what is 9 + 8, and on Mars?") as events:
            async for event in events:
                if isinstance(event, ToolCallEvent):
                    definition = event.tool_definition
                    hints = definition["annotations"] if definition else {}
                    print(
                        f"tool_call {event.tool_call.function.name} "
                        f"readOnlyHint={hints.get('readOnlyHint')}"
                    )
                elif isinstance(event, ToolCallResponseEvent):
                    name, text = event.tool_call.function.name, event.response
                    if name == "get_current_time" and not text.startswith("Error"):
                        text = f"timezone {json.loads(text)['timezone']}"
                    print(f"  {name} -> {text}")
        print(f"answer: {events.result.output if events.result else '?'}")
    print(f"agent closed, and the server with it: {agent.closed}")


if __name__ == "__main__":
    anyio.run(main)
