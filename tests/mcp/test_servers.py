"""agentrt.mcp against real MCP servers in real processes (nox -s mcp).

mcp-server-time (PyPI) and @modelcontextprotocol/server-everything (npm; stdio and
streamable HTTP) were written by others; the hostile server (tests/mcp/
hostile_server.py) crashes, hangs and never answers. What the SDK's own client
lists and returns is the reference the tool messages are checked against.
"""

import base64
import json
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from agentrt._state import RunResult
from agentrt.agent import Agent
from agentrt.exceptions import RunTimeoutError
from agentrt.mcp import MCPServerError, MCPServerHTTP, MCPServerStdio, MCPToolset
from agentrt.messages import Message, ToolCall, ToolMessage
from agentrt.models.scripted import ScriptedModel, ScriptItem
from agentrt.stream.events import StreamEvent, ToolCallEvent, ToolCallResponseEvent
from tests.mcp.conftest import (
    EVERYTHING_JS,
    HOSTILE,
    PYTHON,
    TAG_VARIABLE,
    node,
    tagged_processes,
)

TIME = ["-m", "mcp_server_time"]


def time_server(tag: str, **options: Any) -> MCPServerStdio:
    return MCPServerStdio(PYTHON, TIME, env={TAG_VARIABLE: tag}, **options)


def hostile(tag: str, *args: str, **options: Any) -> MCPServerStdio:
    return MCPServerStdio(
        PYTHON, [HOSTILE, *args], env={TAG_VARIABLE: tag}, name="hostile", **options
    )


def everything(tag: str) -> MCPServerStdio:
    return MCPServerStdio(
        node(), [EVERYTHING_JS, "stdio"], env={TAG_VARIABLE: tag}, name="everything"
    )


async def listed_by_the_sdk(target: Any) -> list[types.Tool]:
    async with Client(target) as client:
        return list((await client.list_tools()).tools)


def signatures(tools: Sequence[types.Tool]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


def tool_messages(result: RunResult[Any] | Sequence[Message]) -> dict[str, ToolMessage]:
    messages = result.messages if isinstance(result, RunResult) else result
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


# -- mcp-server-time (PyPI, stdio) -------------------------------------------------------------


async def test_the_time_servers_tools_reach_the_model_as_the_server_lists_them(tag: str) -> None:
    reference = await listed_by_the_sdk(StdioServerParameters(command=PYTHON, args=TIME))
    model = ScriptedModel(["no call"])
    async with Agent(model=model, tools=[time_server(tag)]) as agent:
        await agent.execute("what can you do?")
    assert [tool.name for tool in reference] == ["get_current_time", "convert_time"]
    assert model.requests[0].tools == signatures(reference)


async def test_a_run_asks_the_time_server_and_the_stream_shows_its_annotations(tag: str) -> None:
    calls = [
        ToolCall(id="now", name="get_current_time", arguments={"timezone": "Asia/Tokyo"}),
        ToolCall(
            id="convert",
            name="convert_time",
            arguments={
                "source_timezone": "Europe/Paris",
                "time": "12:00",
                "target_timezone": "Asia/Tokyo",
            },
        ),
    ]
    events: list[StreamEvent] = []
    agent = Agent(model=ScriptedModel([calls, "it is late in Tokyo"]), tools=[time_server(tag)])
    async with agent, agent.stream("time in Tokyo?") as stream:
        events.extend([event async for event in stream])
    responses = {e.tool_call.id: e for e in events if isinstance(e, ToolCallResponseEvent)}
    now = json.loads(responses["now"].response)
    assert (now["timezone"], sorted(now)) == (
        "Asia/Tokyo",
        ["datetime", "day_of_week", "is_dst", "timezone"],
    )
    converted = json.loads(responses["convert"].response)
    assert converted["source"]["timezone"] == "Europe/Paris"
    assert converted["target"]["datetime"].endswith("+09:00")
    started = [e for e in events if isinstance(e, ToolCallEvent)]
    definition = started[0].tool_definition
    assert definition is not None
    assert definition["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert tagged_processes(tag) == []


async def test_an_error_result_of_the_time_server_is_an_error_message_and_the_run_goes_on(
    tag: str,
) -> None:
    script: list[ScriptItem] = [
        ToolCall(id="bad", name="get_current_time", arguments={"timezone": "Mars/Olympus"}),
        ToolCall(id="good", name="get_current_time", arguments={"timezone": "UTC"}),
        "UTC it is",
    ]
    async with Agent(model=ScriptedModel(script), tools=[time_server(tag)]) as agent:
        result = await agent.execute("time on Mars?")
    answers = tool_messages(result)
    assert (answers["bad"].is_error, answers["bad"].content) == (
        True,
        "Error: Error executing tool get_current_time: Invalid timezone: "
        "'No time zone found with key Mars/Olympus'",
    )
    assert not answers["good"].is_error
    assert result.output == "UTC it is"


# -- @modelcontextprotocol/server-everything (npm, stdio and streamable HTTP) -----------------


async def test_the_everything_servers_tools_reach_the_model_as_listed(tag: str) -> None:
    reference = await listed_by_the_sdk(
        StdioServerParameters(command=node(), args=[EVERYTHING_JS, "stdio"])
    )
    server = everything(tag)
    model = ScriptedModel(["no call"])
    async with Agent(model=model, tools=[server]) as agent:
        await agent.execute("list")
    by_name = {s["function"]["name"]: s for s in model.requests[0].tools}
    # The server adds some tools only once a client is initialized, and says so; both
    # listings have at least the ones it starts with, each exactly as listed.
    for expected in signatures(reference):
        assert by_name[expected["function"]["name"]] == expected
    assert {"echo", "get-sum", "get-tiny-image", "get-structured-content"} <= set(by_name)
    assert server.server_info is not None
    assert server.server_info.name == "mcp-servers/everything"


async def reference_image_bytes() -> int:
    async with Client(StdioServerParameters(command=node(), args=[EVERYTHING_JS])) as client:
        result = await client.call_tool("get-tiny-image", {})
    image = next(block for block in result.content if isinstance(block, types.ImageContent))
    return len(base64.b64decode(image.data))


async def run_everything(server: MCPToolset) -> dict[str, ToolMessage]:
    calls = [
        ToolCall(id="sum", name="get-sum", arguments={"a": 19, "b": 23}),
        ToolCall(id="image", name="get-tiny-image", arguments={}),
        ToolCall(id="weather", name="get-structured-content", arguments={"location": "Chicago"}),
        ToolCall(id="links", name="get-resource-links", arguments={"count": 1}),
        ToolCall(id="wrong", name="get-sum", arguments={"a": "nineteen", "b": 23}),
    ]
    async with Agent(model=ScriptedModel([calls, "all read"]), tools=[server]) as agent:
        result = await agent.execute("try everything")
    assert result.output == "all read"
    return tool_messages(result)


def check_everything(answers: dict[str, ToolMessage], image_bytes: int) -> None:
    assert answers["sum"].content == "The sum of 19 and 23 is 42."
    assert answers["image"].content == (
        "Here's the image you requested:\n"
        f"[image: image/png, {image_bytes} bytes]\n"
        "The image above is the MCP logo."
    )
    weather = answers["weather"].content
    assert set(json.loads(weather)) == {"temperature", "conditions", "humidity"}
    assert answers["links"].content == (
        "Here are 1 resource links to resources available in this server:\n"
        "[resource link: Blob Resource 1 <demo://resource/dynamic/blob/1> "
        "(text/plain, Resource 1: plaintext resource)]"
    )
    assert answers["wrong"].is_error
    assert answers["wrong"].content == (
        "Error: invalid arguments for tool 'get-sum': a: 'nineteen' is not of type 'number'; "
        """got '{"a": "nineteen", "b": 23}'"""
    )


async def test_the_everything_server_over_stdio_answers_every_kind_of_call(tag: str) -> None:
    check_everything(await run_everything(everything(tag)), await reference_image_bytes())
    assert tagged_processes(tag) == []


async def test_the_everything_server_over_streamable_http_answers_every_kind_of_call(
    everything_http: str,
) -> None:
    server = MCPServerHTTP(everything_http, headers={"X-Agentrt-Test": "yes"}, name="http")
    check_everything(await run_everything(server), await reference_image_bytes())
    assert server.server_info is not None
    assert server.server_info.name == "mcp-servers/everything"


# -- the hostile server, as a process -------------------------------------------------------


async def test_a_server_crashing_mid_call_is_an_error_naming_it_and_the_run_goes_on(
    tag: str,
) -> None:
    script: list[ScriptItem] = [
        ToolCall(id="pid1", name="pid", arguments={}),
        ToolCall(id="crash", name="crash", arguments={}),
        ToolCall(id="pid2", name="pid", arguments={}),
        "survived",
    ]
    async with Agent(model=ScriptedModel(script), tools=[hostile(tag)]) as agent:
        result = await agent.execute("crash it")
        answers = tool_messages(result)
        assert answers["crash"].is_error
        assert answers["crash"].content == (
            "Error: MCP server 'hostile', tool 'crash': the server closed the connection "
            "during the call (it crashed or exited); the next call starts it again"
        )
        first, second = int(answers["pid1"].content), int(answers["pid2"].content)
        assert first != second
        assert tagged_processes(tag) == [second]  # the crashed one was reaped
        assert result.output == "survived"
    assert tagged_processes(tag) == []


async def test_a_run_cancelled_in_a_hung_call_leaves_no_process_behind(tag: str) -> None:
    script: list[ScriptItem] = [
        ToolCall(id="pid", name="pid", arguments={}),
        ToolCall(id="hang", name="hang", arguments={}),
        "never",
    ]
    agent = Agent(model=ScriptedModel(script), tools=[hostile(tag)])
    with pytest.raises(RunTimeoutError):
        await agent.execute("hang", deadline=3)
    hung = int(tool_messages(agent.messages)["pid"].content)
    assert tagged_processes(tag) == [hung]  # it deafened itself to SIGTERM
    with anyio.fail_after(15):  # stdin closed, 2 s, SIGTERM, 2 s, SIGKILL
        await agent.close()
    assert tagged_processes(tag) == []


async def test_a_server_that_never_answers_is_killed_after_the_startup_timeout(tag: str) -> None:
    agent = Agent(
        model=ScriptedModel(["x"]), tools=[hostile(tag, "--hang-at-start", startup_timeout=1)]
    )
    with anyio.fail_after(15), pytest.raises(MCPServerError) as caught:
        await agent.execute("hi")
    assert str(caught.value) == "MCP server 'hostile': did not answer within 1 s of being started"
    assert tagged_processes(tag) == []
    await agent.close()


async def test_a_legacy_servers_change_notification_relists_the_tools(tag: str) -> None:
    server = hostile(tag, "--legacy")
    script: list[ScriptItem] = [
        ToolCall(id="add", name="add_tool", arguments={}),
        "added",
        "late is here",
    ]
    model = ScriptedModel(script)
    async with Agent(model=model, tools=[server]) as agent:
        version = server.version
        await agent.execute("add a tool")
        with anyio.fail_after(10):
            await server.tools_changed(version)
        await agent.execute("what now?")
    assert "late" not in [s["function"]["name"] for s in model.requests[0].tools]
    assert model.requests[2].tools[-1]["function"]["name"] == "late"


async def test_a_shared_server_is_one_process_for_two_agents(tag: str) -> None:
    server = hostile(tag, shared=True)
    first = Agent(
        model=ScriptedModel([ToolCall(id="p", name="pid", arguments={}), "1"]), tools=[server]
    )
    second = Agent(
        model=ScriptedModel([ToolCall(id="p", name="pid", arguments={}), "2"]), tools=[server]
    )
    async with first:
        async with second:
            one = tool_messages(await first.execute("pid?"))["p"].content
            two = tool_messages(await second.execute("pid?"))["p"].content
            assert one == two
        assert tagged_processes(tag) == [int(one)]
    assert tagged_processes(tag) == []


async def test_each_agent_has_a_process_of_its_own_by_default(tag: str) -> None:
    agents = [
        Agent(
            model=ScriptedModel([ToolCall(id="p", name="pid", arguments={}), "ok"]),
            tools=[hostile(tag)],
        )
        for _ in range(2)
    ]
    async with agents[0], agents[1]:
        pids = [tool_messages(await agent.execute("pid?"))["p"].content for agent in agents]
        assert sorted(tagged_processes(tag)) == sorted(int(pid) for pid in pids)
        assert pids[0] != pids[1]
    assert tagged_processes(tag) == []


async def test_the_http_servers_requests_carry_the_headers_given(hostile_http: str) -> None:
    server = MCPServerHTTP(hostile_http, headers={"X-Agentrt-Test": "sent by agentrt"})
    script: list[ScriptItem] = [ToolCall(id="h", name="header", arguments={}), "seen"]
    async with Agent(model=ScriptedModel(script), tools=[server]) as agent:
        result = await agent.execute("which header?")
    assert tool_messages(result)["h"].content == "sent by agentrt"
