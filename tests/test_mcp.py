"""agentrt.mcp without processes: results as tool messages, tools as listed, sessions in-process.

The sessions here run tests/mcp/hostile_server.py's server in this process
(MCPServerInProcess: the SDK's client and server over memory streams). The same
server as a process, mcp-server-time and @modelcontextprotocol/server-everything
(stdio and streamable HTTP) are tested by tests/mcp/ (nox -s mcp).
"""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.lowlevel import Server

from agentrt.agent import Agent
from agentrt.exceptions import ToolArgumentsError
from agentrt.mcp import (
    MCPServerError,
    MCPServerHTTP,
    MCPServerInProcess,
    MCPServerStdio,
    MCPToolError,
)
from agentrt.mcp._content import describe_block, result_text, truncate
from agentrt.mcp._tool import RejectedTool, build_tool
from agentrt.messages import ToolCall
from agentrt.models.scripted import ScriptedModel
from agentrt.stream.events import (
    StreamEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
)
from agentrt.testing import EventRecorder
from agentrt.toolsets import ToolNameConflictError
from tests.mcp.hostile_server import LATE, PNG, build

OBJECT = {"type": "object", "properties": {}}
SERVER = MCPServerStdio("mcp-server-nowhere")  # never started: it owns the tools built here
USABLE = [
    *("echo", "pid", "add_tool", "lies", "hang", "crash", "huge", "wipe", "fails", "mixed"),
    "header",
]


def definition(**fields: Any) -> types.Tool:
    fields.setdefault("name", "probe")
    fields.setdefault("input_schema", OBJECT)
    return types.Tool(**fields)


def offered(model: ScriptedModel, request: int) -> list[str]:
    return [signature["function"]["name"] for signature in model.requests[request].tools]


# -- what the model reads of a result ----------------------------------------------------------


def test_text_is_read_as_is_and_every_other_kind_of_content_is_described() -> None:
    blocks: list[object] = [
        types.TextContent(type="text", text="plain"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
        types.ResourceLink(
            type="resource_link",
            name="report",
            uri="file:///r.pdf",
            mime_type="application/pdf",
            size=2048,
            description="the report",
        ),
        types.ResourceLink(type="resource_link", name="bare", uri="file:///b"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="memo://1", mime_type="text/plain", text="hi"),
        ),
        types.EmbeddedResource(
            type="resource", resource=types.BlobResourceContents(uri="blob://1", blob="AAAAAA==")
        ),
    ]
    assert [describe_block(block) for block in blocks] == [
        "plain",
        "[image: image/png, 1234 bytes]",
        "[audio: audio/wav, 4 bytes]",
        "[resource link: report <file:///r.pdf> (application/pdf, 2048 bytes, the report)]",
        "[resource link: bare <file:///b>]",
        "[resource: memo://1, text/plain]\nhi",
        "[resource: blob://1, 4 bytes]",
    ]


def test_structured_content_is_added_as_json_unless_a_text_block_already_holds_it() -> None:
    value = {"temperature": 21, "sky": "clear"}
    as_text = types.TextContent(type="text", text=json.dumps(value, indent=2))
    other = types.TextContent(type="text", text="the weather")
    assert result_text([as_text], value) == as_text.text
    assert result_text([other], value) == 'the weather\n{"temperature": 21, "sky": "clear"}'
    assert result_text([], value) == '{"temperature": 21, "sky": "clear"}'
    assert result_text([], None) == ""
    # The SDKs' wrapping of a value that is not an object: the text already says it.
    three = types.TextContent(type="text", text="3")
    assert result_text([three], {"result": 3}) == "3"
    hello = types.TextContent(type="text", text="hello")
    assert result_text([hello], {"result": "hello"}) == "hello"
    assert result_text([hello], {"result": "bye"}) == 'hello\n{"result": "bye"}'


def test_a_long_result_is_cut_and_says_how_much_is_not_shown() -> None:
    assert truncate("abcdef", 4) == "abcd\n[... 2 more characters not shown]"
    assert truncate("abcd", 4) == "abcd"
    assert truncate("abcdef", None) == "abcdef"


# -- the tools as offered --------------------------------------------------------------------


def test_a_tool_reaches_the_model_with_the_servers_name_description_and_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "Where."}},
        "required": ["city"],
        "additionalProperties": False,
    }
    listed = definition(name="get-weather", description="The weather.", input_schema=schema)
    made = build_tool(SERVER, listed, prefix=None, requires_confirmation=None, timeout=None)
    assert made.signature() == {
        "type": "function",
        "function": {"name": "get-weather", "description": "The weather.", "parameters": schema},
    }
    assert (made.remote_name, made.annotations, made.requires_confirmation) == (
        "get-weather",
        None,
        False,
    )


def test_a_prefix_goes_before_the_name_and_the_server_still_gets_its_own() -> None:
    made = build_tool(SERVER, definition(), prefix="time", requires_confirmation=None, timeout=5)
    assert (made.name, made.remote_name, made.timeout) == ("time_probe", "probe", 5)


def test_a_tool_marked_destructive_asks_for_confirmation_unless_told_otherwise() -> None:
    def confirms(hints: types.ToolAnnotations | None, option: Any = None) -> bool:
        made = build_tool(
            SERVER,
            definition(annotations=hints),
            prefix=None,
            requires_confirmation=option,
            timeout=None,
        )
        return made.requires_confirmation

    destructive = types.ToolAnnotations(read_only_hint=False, destructive_hint=True)
    assert confirms(destructive)
    assert made_annotations(destructive) == {"readOnlyHint": False, "destructiveHint": True}
    assert not confirms(types.ToolAnnotations(read_only_hint=True, destructive_hint=True))
    assert not confirms(types.ToolAnnotations(destructive_hint=False))
    assert not confirms(None)  # no hints: MCP says "may be destructive"; we do not ask
    assert not confirms(destructive, False)
    assert confirms(None, True)
    assert confirms(None, ["probe"])
    assert not confirms(destructive, {"other"})


def made_annotations(hints: types.ToolAnnotations) -> Any:
    made = build_tool(
        SERVER, definition(annotations=hints), prefix=None, requires_confirmation=None, timeout=1
    )
    return made.annotations


@pytest.mark.parametrize(
    ("listed", "reason"),
    [
        (definition(name="a.b"), "its name 'a.b' is not 1 to 64 letters, digits, '_' or '-'"),
        (
            definition(name="x" * 65),
            f"its name {'x' * 65!r} is not 1 to 64 letters, digits, '_' or '-'",
        ),
        (
            definition(input_schema={"type": "object", "properties": {"n": {"type": "int"}}}),
            "its input schema is invalid: 'int' is not valid under any of the given schemas",
        ),
    ],
)
def test_a_tool_no_model_could_use_is_rejected(listed: types.Tool, reason: str) -> None:
    with pytest.raises(RejectedTool) as caught:
        build_tool(SERVER, listed, prefix=None, requires_confirmation=None, timeout=None)
    assert str(caught.value) == reason


def test_arguments_are_checked_against_the_input_schema_and_every_problem_is_named() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    }
    made = build_tool(
        SERVER,
        definition(name="forecast", input_schema=schema),
        prefix=None,
        requires_confirmation=None,
        timeout=None,
    )
    assert made.validate({"city": "Paris", "days": 2}) == {"city": "Paris", "days": 2}
    with pytest.raises(ToolArgumentsError) as caught:
        made.validate({"days": 0, "extra": True})
    assert str(caught.value) == (
        "invalid arguments for tool 'forecast': "
        "(value): 'city' is a required property; "
        "(value): Additional properties are not allowed ('extra' was unexpected); "
        "days: 0 is less than the minimum of 1; "
        """got '{"days": 0, "extra": true}'"""
    )


def test_bad_server_options_are_typed_errors() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        MCPServerStdio("x", timeout=0)
    with pytest.raises(ValueError, match="prefix must be letters"):
        MCPServerStdio("x", prefix="a b")
    with pytest.raises(TypeError, match="requires_confirmation is None, a bool or a collection"):
        MCPServerStdio("x", requires_confirmation="wipe")
    with pytest.raises(TypeError, match="args must be a list of strings"):
        MCPServerStdio("x", "-m server")
    with pytest.raises(ValueError, match="url must be an http"):
        MCPServerHTTP("ftp://example")
    with pytest.raises(TypeError, match="server must be an mcp Server"):
        MCPServerInProcess("not a server")  # type: ignore[arg-type]


# -- sessions with the hostile server, in-process ----------------------------------------------


@asynccontextmanager
async def hostile_agent(
    script: Any, *servers: MCPServerInProcess, **options: Any
) -> AsyncIterator[tuple[Agent, ScriptedModel]]:
    model = script if isinstance(script, ScriptedModel) else ScriptedModel(script)
    agent = Agent(model=model, tools=list(servers or [MCPServerInProcess(build())]), **options)
    async with agent:
        yield agent, model


async def test_tools_the_hostile_server_lists_wrongly_are_left_out_with_their_reasons() -> None:
    server = MCPServerInProcess(build())
    async with hostile_agent(["ok"], server) as (agent, model):
        await agent.execute("hi")
    assert offered(model, 0) == USABLE
    assert server.rejected_tools == {
        "bad_schema": "its input schema is invalid: '0' is not of type 'number'",
        "bad_type": (
            "its input schema is invalid: 'whole number' is not valid under any of the given "
            "schemas"
        ),
        "bad.name": "its name 'bad.name' is not 1 to 64 letters, digits, '_' or '-'",
        "echo": "the server lists this name twice",
    }
    assert server.server_info is not None
    assert server.server_info.name == "hostile"


async def test_a_run_reads_what_each_call_of_the_hostile_server_gave() -> None:
    calls = [
        ToolCall(id="echo", name="echo", arguments={"text": "hello"}),
        ToolCall(id="mixed", name="mixed", arguments={}),
        ToolCall(id="fails", name="fails", arguments={}),
        ToolCall(id="lies", name="lies", arguments={}),
        ToolCall(id="huge", name="huge", arguments={}),
        ToolCall(id="bad", name="echo", arguments={"text": 3}),
    ]
    server = MCPServerInProcess(build(), max_output_chars=10)
    async with hostile_agent([calls, "read them"], server) as (agent, _):
        result = await agent.execute("call everything")
    answers = {
        m.tool_call_id: (m.content, m.is_error) for m in result.messages if m.role == "tool"
    }
    assert answers == {
        "echo": ("hello", False),
        "mixed": ("here it is\n[... 183 more characters not shown]", False),
        "fails": ("Error: the disk i\n[... 6 more characters not shown]", True),
        "lies": (
            "Error: MCP server 'hostile', tool 'lies': RuntimeError: Invalid structured "
            "content returned by tool lies: 'not a number' is not of type 'integer'",
            True,
        ),
        "huge": ("xxxxxxxxxx\n[... 1999990 more characters not shown]", False),
        "bad": (
            "Error: invalid arguments for tool 'echo': text: 3 is not of type 'string'; "
            """got '{"text": 3}'""",
            True,
        ),
    }
    assert result.output == "read them"


async def test_every_kind_of_content_reaches_the_tool_message() -> None:
    call = ToolCall(id="mixed", name="mixed", arguments={})
    async with hostile_agent([call, "seen"]) as (agent, _):
        result = await agent.execute("show me")
    assert result.messages[2].content == (
        "here it is\n"
        "[image: image/png, 1234 bytes]\n"
        "[audio: audio/wav, 3 bytes]\n"
        "[resource link: report <file:///tmp/report.pdf> (application/pdf)]\n"
        "[resource: memo://1, text/plain]\nthe memo\n"
        '{"answer": 42}'
    )


async def test_mcp_calls_go_through_the_tool_events(recorder: EventRecorder) -> None:
    script = [
        ToolCall(id="c1", name="echo", arguments={"text": "hi"}),
        ToolCall(id="c2", name="fails", arguments={}),
        "done",
    ]
    async with hostile_agent(script) as (agent, _):
        agent.events.on("tool:*", recorder)
        await agent.execute("go")
    assert [(r.event, r.parameters["tool_call"].id) for r in recorder.events] == [
        ("tool:call:before", "c1"),
        ("tool:call:after", "c1"),
        ("tool:call:before", "c2"),
        ("tool:call:error", "c2"),
    ]
    error = recorder.of("tool:call:error")[0].parameters["error"]
    assert isinstance(error, MCPToolError)
    assert (error.server, error.tool_name, error.reason, error.is_result) == (
        "hostile",
        "fails",
        "the disk is full",
        True,
    )


async def stream_events(agent: Agent, decide: Any, **options: Any) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with agent.stream("wipe it", **options) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolCallConfirmationEvent):
                await stream.confirm(event.tool_call.id, *decide)
    return events


async def test_a_destructive_tool_asks_first_and_the_question_shows_its_annotations() -> None:
    script = [ToolCall(id="w1", name="wipe", arguments={}), "as you wish"]
    async with hostile_agent(script) as (agent, _):
        events = await stream_events(agent, ("reject", "keep my files"))
    tool_events = [
        e
        for e in events
        if isinstance(e, ToolCallConfirmationEvent | ToolCallEvent | ToolCallResponseEvent)
    ]
    assert [e.type for e in tool_events] == [
        "tool_call_confirmation",
        "tool_call",
        "tool_call_response",
    ]
    definition = tool_events[0].tool_definition
    assert definition == {
        "name": "wipe",
        "description": "Deletes everything.",
        "parameters": {"type": "object", "properties": {}},
        "annotations": {"title": "Wipe", "readOnlyHint": False, "destructiveHint": True},
    }
    assert all(e.tool_definition == definition for e in tool_events)
    response = tool_events[2]
    assert isinstance(response, ToolCallResponseEvent)
    assert response.response == "rejected by the user: keep my files"


async def test_told_otherwise_a_destructive_tool_runs_without_asking() -> None:
    script = [ToolCall(id="w1", name="wipe", arguments={}), "wiped"]
    server = MCPServerInProcess(build(), requires_confirmation=False)
    async with hostile_agent(script, server) as (agent, _):
        events = await stream_events(agent, ("approve",))
    assert [e.type for e in events if e.type.startswith("tool_call")] == [
        "tool_call",
        "tool_call_response",
    ]
    assert [e.response for e in events if isinstance(e, ToolCallResponseEvent)] == ["wiped"]


async def test_the_tools_are_listed_again_when_the_server_announces_a_change() -> None:
    server = MCPServerInProcess(build())
    script = [ToolCall(id="a1", name="add_tool", arguments={}), "added", "now late"]
    async with hostile_agent(script, server) as (agent, model):
        version = server.version
        await agent.execute("add one")
        with anyio.fail_after(10):
            await server.tools_changed(version)
        await agent.execute("and now?")
    assert offered(model, 0) == USABLE
    assert offered(model, 2) == [*USABLE, "late"]
    assert agent.closed
    late = server.tools[-1]
    assert (late.name, late.description) == ("late", LATE.description)


async def test_two_servers_offering_one_name_clash_unless_one_has_a_prefix() -> None:
    first, second = MCPServerInProcess(build()), MCPServerInProcess(build(), name="second")
    agent = Agent(model=ScriptedModel(["x"]), tools=[first, second])
    with pytest.raises(ToolNameConflictError) as caught:
        await agent.execute("hi")
    assert caught.value.sources == ("toolset 'hostile'", "toolset 'second'")
    await agent.close()
    prefixed = MCPServerInProcess(build(), prefix="h2")
    script = [ToolCall(id="c1", name="h2_echo", arguments={"text": "via prefix"}), "ok"]
    async with hostile_agent(script, MCPServerInProcess(build()), prefixed) as (agent, model):
        result = await agent.execute("hi")
    assert offered(model, 0) == [*USABLE, *(f"h2_{name}" for name in USABLE)]
    assert result.messages[2].content == "via prefix"


async def test_a_server_object_belongs_to_one_agent_unless_shared() -> None:
    server = MCPServerInProcess(build())
    async with hostile_agent(["one"], server):
        other = Agent(model=ScriptedModel(["two"]), tools=[server])
        with pytest.raises(MCPServerError, match="another agent has it open; pass shared=True"):
            await other.execute("hi")
        await other.close()


async def test_a_shared_server_keeps_its_session_until_the_last_agent_closes() -> None:
    server = MCPServerInProcess(build(), shared=True)
    call = ToolCall(id="c1", name="echo", arguments={"text": "still here"})
    first = Agent(model=ScriptedModel(["a"]), tools=[server])
    second = Agent(model=ScriptedModel([call, "b"]), tools=[server])
    async with first:
        async with second:
            await first.execute("hi")
        # first still has it open: second's close left the session standing.
        echo = server.tools[0]
        assert await echo.run({"text": "still here"}) == "still here"
    with pytest.raises(MCPToolError, match="closed: no agent has it open"):
        await echo.run({"text": "gone"})


async def test_a_server_that_fails_at_start_is_an_error_naming_it() -> None:
    @asynccontextmanager
    async def broken(server: Server[Any]) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield

    server = MCPServerInProcess(Server("broken", lifespan=broken))
    agent = Agent(model=ScriptedModel(["x"]), tools=[server])
    with pytest.raises(MCPServerError) as caught:
        await agent.execute("hi")
    assert str(caught.value) == (
        "MCP server 'broken': could not be started: RuntimeError: no database"
    )
    await agent.close()


async def test_a_server_that_never_answers_is_an_error_after_the_startup_timeout() -> None:
    @asynccontextmanager
    async def stuck(server: Server[Any]) -> AsyncIterator[None]:
        await anyio.sleep_forever()
        yield

    server = MCPServerInProcess(Server("stuck", lifespan=stuck), startup_timeout=0.2)
    agent = Agent(model=ScriptedModel(["x"]), tools=[server])
    with pytest.raises(MCPServerError, match=r"did not answer within 0\.2 s of being started"):
        await agent.execute("hi")
    await agent.close()
