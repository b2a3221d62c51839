"""The shell tool: streamed output, timeout, output cap, confirmation; on this machine."""

import shlex
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt import Agent, ModelResponse, ToolCall
from agentrt.shell import current_shell_output, shell_output_to, shell_tool
from agentrt.stream.events import (
    ShellOutputEvent,
    StreamEvent,
    ToolCallConfirmationEvent,
    ToolCallResponseEvent,
)
from agentrt.stream.validate import validate
from agentrt.tools import current_tool_context
from tests.conftest import AgentFactory

PYTHON = shlex.quote(sys.executable)


def run(command: str, call_id: str = "sh1") -> ToolCall:
    return ToolCall(id=call_id, name="shell", arguments={"command": command})


async def collect(agent: Agent, **options: Any) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with agent.stream("go", **options) as stream:
        async for event in stream:
            events.append(event)
    assert validate(events) == [], validate(events)
    return events


def types(events: list[StreamEvent]) -> list[str]:
    return [event.type for event in events]


def shell_text(events: list[StreamEvent]) -> str:
    return "".join(e.output for e in events if isinstance(e, ShellOutputEvent))


def response_of(events: list[StreamEvent]) -> str:
    (response,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    return response.response


async def direct(command: str, **options: Any) -> tuple[str, list[str]]:
    """Run the tool without an agent; its response and the pieces its sink received."""
    pieces: list[str] = []

    async def sink(text: str) -> None:
        pieces.append(text)

    with shell_output_to(sink):
        response = await shell_tool(**options).run({"command": command})
    return response, pieces


# -- streamed output -----------------------------------------------------------------------------


async def test_output_streams_as_shell_events_before_the_response(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(
        [run("echo one; echo two >&2; echo three"), "done"], tools=[shell_tool()], name="ops"
    )
    events = await collect(agent, auto_approve=True)
    kinds = types(events)
    shells = [i for i, kind in enumerate(kinds) if kind == "shell"]
    assert len(shells) == 3  # a line each, as it came
    assert kinds.index("tool_call") < shells[0]
    assert shells[-1] < kinds.index("tool_call_response")
    outputs = [e.output for e in events if isinstance(e, ShellOutputEvent)]
    stdout = [line for line in outputs if line in ("one\n", "three\n")]
    assert stdout == ["one\n", "three\n"]
    assert "two\n" in outputs
    assert {e.agent_name for e in events if isinstance(e, ShellOutputEvent)} == {"ops"}
    # The response is exactly what the stream showed.
    assert response_of(events) == shell_text(events)


async def test_output_reaches_the_stream_while_the_command_still_runs(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    flag = tmp_path / "go-on"
    # The command waits until the consumer has seen its first line: without streaming
    # it would wait until the timeout.
    command = (
        f"echo waiting; while [ ! -e {shlex.quote(str(flag))} ]; do sleep 0.01; done; echo on"
    )
    agent = make_agent([run(command), "done"], tools=[shell_tool(timeout=20)])
    events: list[StreamEvent] = []
    async with agent.stream("go", auto_approve=True) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ShellOutputEvent) and event.output == "waiting\n":
                flag.touch()
    assert validate(events) == []
    assert response_of(events) == "waiting\non\n"


async def test_exit_code_and_no_output_are_said() -> None:
    response, pieces = await direct("echo oops >&2; exit 3")
    assert response == "oops\n[exit code 3]\n"
    assert pieces == ["oops\n", "[exit code 3]\n"]
    assert (await direct("true"))[0] == "[exit code 0, no output]\n"
    assert (await direct("printf 'no newline'"))[0] == "no newline"
    assert (await direct("printf 'x'; exit 1"))[0] == "x\n[exit code 1]\n"


# -- timeout -------------------------------------------------------------------------------------


async def test_timeout_kills_the_process_and_says_so(make_agent: AgentFactory) -> None:
    agent = make_agent(
        [run("echo started; sh -c 'sleep 5'"), "done"], tools=[shell_tool(timeout=0.3)]
    )
    began = time.monotonic()
    events = await collect(agent, auto_approve=True)
    assert time.monotonic() - began < 4
    response = response_of(events)
    assert response == "started\n[timed out after 0.3s: the process was killed]\n"
    assert shell_text(events) == response


async def test_cancelling_the_run_kills_the_process() -> None:
    started = anyio.Event()

    async def sink(text: str) -> None:
        started.set()

    began = time.monotonic()
    async with anyio.create_task_group() as group:

        async def call() -> None:
            with shell_output_to(sink):
                await shell_tool(timeout=60).run({"command": "echo up; sleep 5"})

        group.start_soon(call)
        await started.wait()
        group.cancel_scope.cancel()
    assert time.monotonic() - began < 4


# -- output cap ----------------------------------------------------------------------------------


async def test_output_beyond_the_cap_is_counted_not_kept() -> None:
    response, pieces = await direct(f"{PYTHON} -c \"print('x' * 5000)\"", max_output=100)
    assert response == (
        "x" * 100 + "\n[output truncated: 4901 more bytes not shown (limit 100 bytes)]\n"
    )
    assert "".join(pieces) == response


async def test_a_flood_of_output_is_drained_without_blocking_the_command() -> None:
    command = f'{PYTHON} -c "import sys; [print(i) for i in range(200000)]; sys.exit(4)"'
    response, pieces = await direct(command, max_output=1000)
    assert response.startswith("0\n1\n2\n")
    assert response.endswith("bytes not shown (limit 1000 bytes)]\n[exit code 4]\n")
    assert len(response) < 1200
    assert sum(len(p) for p in pieces) == len(response)


async def test_long_lines_arrive_in_pieces_and_whole() -> None:
    command = f"{PYTHON} -c \"import sys; sys.stdout.write('y' * 50000)\""
    response, pieces = await direct(command, max_output=100_000)
    assert response == "y" * 50000
    assert all(len(piece) <= 65536 for piece in pieces)


# -- confirmation --------------------------------------------------------------------------------


async def test_shell_asks_first_and_a_rejection_runs_nothing(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    agent = make_agent(
        [run(f"touch {shlex.quote(str(marker))}"), "ok, I will not"], tools=[shell_tool()]
    )
    events: list[StreamEvent] = []
    async with agent.stream("go") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolCallConfirmationEvent):
                await stream.confirm(event.tool_call.id, "reject", "not on my machine")
    assert validate(events) == []
    assert response_of(events) == "rejected by the user: not on my machine"
    assert "shell" not in types(events)
    assert not marker.exists()


async def test_an_approved_command_runs_after_its_confirmation(make_agent: AgentFactory) -> None:
    agent = make_agent([run("echo approved"), "done"], tools=[shell_tool()])
    events: list[StreamEvent] = []
    async with agent.stream("go") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolCallConfirmationEvent):
                await stream.confirm(event.tool_call.id, "approve")
    assert validate(events) == []
    kinds = types(events)
    assert kinds.index("tool_call_confirmation") < kinds.index("tool_call") < kinds.index("shell")
    assert response_of(events) == "approved\n"


async def test_auto_approve_and_opting_out_skip_the_confirmation(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([run("echo a"), "done"], tools=[shell_tool()])
    events = await collect(agent, auto_approve=True)
    assert "tool_call_confirmation" not in types(events)
    assert response_of(events) == "a\n"
    agent = make_agent([run("echo b"), "done"], tools=[shell_tool(requires_confirmation=False)])
    events = await collect(agent)
    assert "tool_call_confirmation" not in types(events)
    assert response_of(events) == "b\n"


# -- without a stream, and settings ------------------------------------------------------------


async def test_without_a_stream_output_goes_to_on_output_and_any_installed_sink(
    make_agent: AgentFactory,
) -> None:
    mine: list[str] = []
    installed: list[str] = []

    async def keep(text: str) -> None:
        mine.append(text)

    async def install(text: str) -> None:
        installed.append(text)

    agent = make_agent([run("echo hi"), "done"], tools=[shell_tool(on_output=keep)])
    assert current_shell_output() is None
    with shell_output_to(install):
        assert current_shell_output() is install
        result = await agent.execute("go")
    assert current_shell_output() is None
    assert result.messages[2].content == "hi\n"
    assert mine == installed == ["hi\n"]


async def test_cwd_and_env_are_used(tmp_path: Path) -> None:
    response, _ = await direct("pwd; echo $GREETING", cwd=tmp_path, env={"GREETING": "hello"})
    assert response == f"{await anyio.Path(tmp_path).resolve()}\nhello\n"


def test_the_tool_asks_for_a_command_and_confirmation_by_default() -> None:
    tool = shell_tool()
    assert tool.name == "shell"
    assert tool.requires_confirmation
    assert tool.parameters["required"] == ["command"]
    assert "killed after 30s" in tool.description
    assert shell_tool(name="bash", description="Run bash.").description == "Run bash."


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"timeout": 0}, ValueError),
        ({"timeout": True}, ValueError),
        ({"max_output": 0}, ValueError),
        ({"max_output": 1.5}, ValueError),
        ({"on_output": "print"}, TypeError),
    ],
)
def test_bad_settings_are_clear_errors(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        shell_tool(**options)


# -- output is an event of the call that made it ----------------------------------------------


async def test_each_line_is_a_tool_call_output_signal_of_its_call(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([run("echo one; echo two", "sh7"), "done"], tools=[shell_tool()])
    seen: list[tuple[str, str, str]] = []

    @agent.hooks.on_tool_call_output
    def observe(ctx: Any) -> None:
        params = ctx.parameters
        seen.append((params["tool_call"].id, params["tool_name"], params["output"]))

    events = await collect(agent, auto_approve=True)
    assert seen == [("sh7", "shell", "one\n"), ("sh7", "shell", "two\n")]
    assert [(e.tool_call_id, e.output) for e in events if isinstance(e, ShellOutputEvent)] == [
        ("sh7", "one\n"),
        ("sh7", "two\n"),
    ]


async def test_two_parallel_shell_calls_stay_apart_on_the_stream(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    def wait_for(name: str) -> str:
        return f"while [ ! -e {shlex.quote(str(tmp_path / name))} ]; do sleep 0.01; done"

    def touch(name: str) -> str:
        return f"touch {shlex.quote(str(tmp_path / name))}"

    # Each command waits for the other's first line: their output interleaves for sure.
    first = f"echo a1; {touch('a1')}; {wait_for('b1')}; echo a2"
    second = f"{wait_for('a1')}; echo b1; {touch('b1')}; echo b2"
    both = ModelResponse(tool_calls=(run(first, "call-a"), run(second, "call-b")))
    agent = make_agent([both, "done"], tools=[shell_tool(timeout=20)])
    events = await collect(agent, auto_approve=True)
    shells = [e for e in events if isinstance(e, ShellOutputEvent)]
    order = [e.tool_call_id for e in shells]
    assert order.index("call-b") < len(order) - 1 - order[::-1].index("call-a")  # interleaved
    responses = {
        e.tool_call.id: e.response for e in events if isinstance(e, ToolCallResponseEvent)
    }
    for call_id, expected in (("call-a", "a1\na2\n"), ("call-b", "b1\nb2\n")):
        text = "".join(e.output for e in shells if e.tool_call_id == call_id)
        assert text == expected == responses[call_id]


async def test_any_tool_reports_output_through_its_context(make_agent: AgentFactory) -> None:
    async def progress(steps: int) -> str:
        """Report each step while working."""
        context = current_tool_context()
        assert context is not None
        for step in range(1, steps + 1):
            await context.emit(f"step {step}/{steps}\n")
        return "finished"

    call = ToolCall(id="p1", name="progress", arguments={"steps": 2})
    agent = make_agent([call, "done"], tools=[progress])
    events = await collect(agent)
    assert [(e.tool_call_id, e.output) for e in events if isinstance(e, ShellOutputEvent)] == [
        ("p1", "step 1/2\n"),
        ("p1", "step 2/2\n"),
    ]
    assert response_of(events) == "finished"
