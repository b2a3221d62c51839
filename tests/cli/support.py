"""What the command-line tests share: ``main(argv)`` in-process, ``agentrt serve`` in a
process of its own, and a file of agents."""

import io
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
START_LIMIT = 60.0  # seconds an `agentrt serve` may take to listen


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


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a Python subprocess that imports this checkout's agentrt."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, **extra}


@dataclass
class Served:
    """A running ``agentrt serve``: its port, and every line it has written so far."""

    port: int
    log: list[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def serving(
    target: str, *options: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[Served]:
    """``python -m agentrt serve TARGET`` on a free loopback port, once it listens.

    Stopped with Ctrl-C (SIGINT) on exit, after which ``log`` holds all it wrote (uvicorn
    writes its access log to stdout, the rest to stderr: both are read).
    """

    def argv(port: int) -> list[str]:
        return ["-m", "agentrt", "serve", target, "--port", str(port), "--store", "memory",
                *options]  # fmt: skip

    with listening(argv, env=env, cwd=cwd) as served:
        yield served


@contextmanager
def listening(
    argv: Callable[[int], list[str]], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[Served]:
    """``python ARGV`` (made for a free loopback port) until its uvicorn listens there.

    What :func:`serving` does for ``agentrt serve``, for any program that serves with
    uvicorn (logging at level info) on the port it is given.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, *argv(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    assert process.stdout is not None
    served = Served(port, [])
    # A server that neither listens nor exits is killed, which ends the reading below.
    watchdog = threading.Timer(START_LIMIT, process.kill)
    watchdog.start()
    try:
        # uvicorn says when it listens: read its lines until then (no sleeping).
        for line in process.stdout:
            served.log.append(line)
            if "Uvicorn running on" in line:
                break
        else:
            raise AssertionError(f"{argv(port)} did not listen:\n{''.join(served.log)}")
        watchdog.cancel()
        yield served
    finally:
        watchdog.cancel()
        process.send_signal(signal.SIGINT)
        remaining, _ = process.communicate(timeout=30)
        served.log.append(remaining)


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
