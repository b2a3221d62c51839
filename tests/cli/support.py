"""What the command-line tests share: ``main(argv)`` run in-process, and a file of agents."""

import io
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import agentrt
from agentrt.cli import main
from agentrt.stream import (
    StreamEvent,
    parse_event,
)

REPO = Path(agentrt.__file__).resolve().parents[1]


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def events(self) -> list[StreamEvent]:
        return [parse_event(line, strict=True) for line in self.out.splitlines()]


def cli(capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None) -> Result:
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    code = main(list(argv))
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def in_order(text: str, *parts: str) -> None:
    """Each part occurs in ``text``, after the one before."""
    position = 0
    for part in parts:
        found = text.find(part, position)
        assert found >= 0, f"{part!r} not found after position {position} in:\n{text}"
        position = found + len(part)


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


AGENT_FILE = """
    from agentrt import Agent, ScriptedModel, ToolCall, tool


    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b


    @tool(requires_confirmation=True)
    def launch(target: str) -> str:
        \"\"\"Launch something (asks first).\"\"\"
        return f"launched {target}"


    def script():
        return ScriptedModel(
            [ToolCall(name="add", arguments={"a": 2, "b": 3}), "The sum is 5."]
        )


    agent = Agent(model=script(), tools=[add], name="adder")


    def make_agent():
        return Agent(model=script(), tools=[add], name="made")


    async def make_agent_async():
        return Agent(model=script(), tools=[add], name="made-async")


    rocket = Agent(
        model=ScriptedModel([ToolCall(name="launch", arguments={"target": "moon"}), "Done."]),
        tools=[launch],
        name="rocket",
    )
    broken = Agent(model=ScriptedModel([RuntimeError("the model\\nexploded")]), name="broken")
    not_an_agent = 42


    def make_nothing():
        return "an agent, honest"


    def make_failing():
        raise ValueError("no\\nconfiguration")


    async def make_failing_async():
        raise LookupError("nothing to find")


    class Holder:
        inner = Agent(model=ScriptedModel(["nested answer"]), name="nested")
"""


def assert_usage_error(result: Result, *fragments: str) -> None:
    assert result.code == 2
    assert result.out == ""
    assert result.err.endswith("\n")
    assert result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in result.err
