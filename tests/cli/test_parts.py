"""The command line's parts: model specs, targets, confirmation answers, rendering."""

import io
import os
import re
import sys
from pathlib import Path
from typing import Any, TextIO

import pytest

from agentrt import ModelUnavailableError, OpenAIChatModel
from agentrt.cli._prompt import (
    Asker,
    LineReader,
    is_terminal,
    parse_answer,
)
from agentrt.cli._render import (
    PlainRenderer,
    RichRenderer,
    format_arguments,
    format_usage,
    make_renderer,
)
from agentrt.cli._specs import ModelSpec, ModelSpecError, echo_model, parse_model_spec
from agentrt.cli._targets import TargetError, one_line, parse_target
from agentrt.messages import UserMessage
from agentrt.models.base import ModelRequest
from agentrt.stream import (
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    ErrorEvent,
    SessionCompactionEvent,
    SessionSummaryEvent,
    SessionTitleEvent,
    ShellOutputEvent,
    StreamEvent,
    StreamStoppedEvent,
    TokenUsage,
    TokenUsageEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    UserMessageEvent,
    WireFunction,
    WireToolCall,
)
from agentrt.stream.events import LastMessageUsage
from tests.cli.support import in_order

# -- model specs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("scripted", ModelSpec("scripted")),
        ("scripted:Hello: world", ModelSpec("scripted", "Hello: world")),
        ("local", ModelSpec("local")),
        ("local:/models/x.gguf", ModelSpec("local", "/models/x.gguf")),
        ("openai", ModelSpec("openai")),
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini")),
        (
            "openai:llama3@http://127.0.0.1:8000/v1",
            ModelSpec("openai", "llama3", "http://127.0.0.1:8000/v1"),
        ),
        (
            "openai:org/model:tag@https://user@host/v1",
            ModelSpec("openai", "org/model:tag", "https://user@host/v1"),
        ),
        (" scripted ", ModelSpec("scripted")),
    ],
)
def test_parse_model_spec(text: str, spec: ModelSpec) -> None:
    assert parse_model_spec(text) == spec


@pytest.mark.parametrize(
    "text",
    ["", "gpt-4", "Scripted", "scripted:", "local:", "openai:", "openai:m@", "openai:m@ftp://x"],
)
def test_parse_model_spec_errors(text: str) -> None:
    with pytest.raises(ModelSpecError):
        parse_model_spec(text)


async def test_model_spec_build() -> None:
    request = ModelRequest(messages=[UserMessage(content="first"), UserMessage(content="ping")])
    echo = ModelSpec("scripted").build()
    assert (await echo.complete(request)).content == "You said: ping"
    fixed = ModelSpec("scripted", "pong").build()
    assert (await fixed.complete(request)).content == "pong"
    assert (await fixed.complete(request)).content == "pong"  # every turn
    assert (await echo_model().complete(ModelRequest(messages=[]))).content == "You said: "

    remote = ModelSpec("openai", "m", "http://127.0.0.1:1/v1").build({})
    assert isinstance(remote, OpenAIChatModel)
    assert remote.base_url == "http://127.0.0.1:1/v1"
    await remote.aclose()

    from_env = ModelSpec("openai").build(
        {"AGENTRT_MODEL": "env-model", "OPENAI_BASE_URL": "http://127.0.0.1:2/v1"}
    )
    assert isinstance(from_env, OpenAIChatModel)
    assert (from_env.name, from_env.base_url) == ("env-model", "http://127.0.0.1:2/v1")
    await from_env.aclose()

    with pytest.raises(ModelSpecError, match="needs a model name"):
        ModelSpec("openai").build({})
    with pytest.raises(ModelSpecError, match="http"):
        ModelSpec("openai", "m").build({"OPENAI_BASE_URL": "localhost:8000"})
    with pytest.raises(ModelUnavailableError):
        ModelSpec("local", "/nonexistent/model.gguf").build()


# -- targets ----------------------------------------------------------------------------


def test_parse_target() -> None:
    assert parse_target("pkg.mod:agent").is_file is False
    assert parse_target("app.py:make").is_file is True
    target = parse_target("C:/work/app/bot.py:Holder.inner")
    assert (target.location, target.attr, target.is_file) == (
        "C:/work/app/bot.py",
        "Holder.inner",
        True,
    )
    assert str(target) == "C:/work/app/bot.py:Holder.inner"
    with pytest.raises(TargetError):
        parse_target(":agent")


def test_one_line() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("x" * 400) == "x" * 297 + "..."


# -- confirmation answers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("y", ("approve", None)),
        (" YES \n", ("approve", None)),
        ("approve", ("approve", None)),
        ("s", ("approve-session", None)),
        ("t", ("approve-tool", None)),
        ("n", ("reject", None)),
        ("n   too risky  ", ("reject", "too risky")),
        ("reject no way", ("reject", "no way")),
        ("", None),
        ("y please", None),
        ("what", None),
    ],
)
def test_parse_answer(line: str, answer: tuple[str, str | None] | None) -> None:
    assert parse_answer(line) == answer


def pipe_with(data: bytes) -> TextIO:
    """The read end of a pipe holding ``data``, its write end closed."""
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    return open(read_end, encoding="utf-8")


async def test_line_reader_reads_a_pipe_without_blocking_the_loop() -> None:
    with pipe_with("y\nn caf\u00e9 is closed\nlast".encode()) as stream:
        reader = LineReader(stream)
        assert await reader.readline() == "y\n"
        assert await reader.readline() == "n caf\u00e9 is closed\n"
        assert await reader.readline() == "last"
        assert await reader.readline() == ""
        assert await reader.readline() == ""


async def test_line_reader_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "answers.txt"
    path.write_text("s\n")
    with path.open(encoding="utf-8") as stream:
        reader = LineReader(stream)
        assert await reader.readline() == "s\n"
        assert await reader.readline() == ""


async def test_line_reader_of_nothing_or_a_closed_stream() -> None:
    assert await LineReader(None).readline() == ""
    closed = io.StringIO("y\n")
    closed.close()
    assert await LineReader(closed).readline() == ""


def test_is_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    closed = io.StringIO()
    closed.close()
    assert is_terminal(Terminal())
    assert not is_terminal(io.StringIO())
    assert not is_terminal(None)
    assert not is_terminal(closed)


async def test_asker_at_a_terminal_does_not_echo_and_says_no_answer_at_the_end() -> None:
    out = io.StringIO()
    call = WireToolCall(id="c1", function=WireFunction(name="rm", arguments="{}"))
    asker = Asker(LineReader(io.StringIO("")), PlainRenderer(out), interactive=True)

    assert await asker.ask(call) == ("reject", "no answer")
    assert out.getvalue() == "approve rm? [y]es [s]ession [t]ool [n]o <reason>: (no answer)\n"

    out.seek(0)
    out.truncate()
    asker = Asker(LineReader(io.StringIO("y\n")), PlainRenderer(out), interactive=True)
    assert await asker.ask(call) == ("approve", None)
    assert out.getvalue() == "approve rm? [y]es [s]ession [t]ool [n]o <reason>: "


# -- rendering --------------------------------------------------------------------------

CALL = WireToolCall(id="c1", function=WireFunction(name="add", arguments='{"a": 1, "b": 2}'))
USAGE = TokenUsage(
    input_tokens=30,
    output_tokens=12,
    context_length=42,
    context_limit=8192,
    cost=0.00123,
    last_message=LastMessageUsage(input_tokens=10, output_tokens=2, cost=0.0001),
)


def every_kind_of_event() -> list[StreamEvent]:
    base: dict[str, Any] = {"session_id": "s", "agent_name": "bot"}
    return [
        UserMessageEvent(session_id="s", message="hello\nthere"),
        AgentChoiceReasoningEvent(content="Let me ", **base),
        AgentChoiceReasoningEvent(content="think.", **base),
        AgentChoiceEvent(content="Hel", **base),
        AgentChoiceEvent(content="lo.", **base),
        ToolCallConfirmationEvent(tool_call=CALL, **base),
        ToolCallEvent(tool_call=CALL, **base),
        ToolCallEvent(
            tool_call=WireToolCall(id="c2", function=WireFunction(name="raw", arguments="[1]")),
            **base,
        ),
        ToolCallResponseEvent(tool_call=CALL, response="line\n" * 30, **base),
        ToolCallResponseEvent(tool_call=CALL, response="rejected by the user: no", **base),
        TokenUsageEvent(usage=USAGE, **base),
        ShellOutputEvent(session_id="s", output="$ ls\n"),
        SessionTitleEvent(title="Adding", **base),
        SessionSummaryEvent(summary="They added.", **base),
        SessionCompactionEvent(status="completed", **base),
        AgentChoiceEvent(content="Bye", **base),
        ErrorEvent(error="boom", **base),
        AgentChoiceEvent(content="after", **base),
        StreamStoppedEvent(session_id="s"),
    ]


def test_plain_renderer_shows_every_event() -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out)
    for event in every_kind_of_event():
        renderer.event(event)

    text = out.getvalue()
    assert "\x1b[" not in text
    in_order(
        text,
        "you: hello\nthere\n",
        "thinking: Let me think.\n",
        "bot: Hello.\n",
        "?? add(a=1, b=2) needs your approval\n",
        "-> raw([1])\n",  # the confirmed call is not shown twice
        "<- add: line\n   line",
        "   ... (10 more lines)\n",
        "<- add: rejected by the user: no\n",
        "   tokens: 10 in, 2 out; session 30 in, 12 out; context 42/8192; cost $0.0012\n",
        "$ ls\n",
        "title: Adding\n",
        "summary: They added.\n",
        "   compaction completed\n",
        "bot: Bye\n",
        "error: boom\n",
        "bot: after\n",
    )
    assert text.endswith("bot: after\n")
    assert text.count("-> add") == 0


def test_plain_renderer_with_color_uses_ansi_codes() -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out, color=True)
    renderer.event(ErrorEvent(session_id="s", agent_name="bot", error="boom"))
    renderer.decision(CALL, "reject", "no", automatic=False)
    renderer.banner("title", [("k", "v")])
    renderer.note("a note")
    renderer.prompt("ok? ")
    renderer.echo("y")

    text = out.getvalue()
    assert "\x1b[1;31merror: boom\x1b[0m\n" in text
    assert "\x1b[31m   rejected: no\x1b[0m\n" in text
    assert "\x1b[2ma note\x1b[0m" in text


def test_format_helpers() -> None:
    assert format_arguments('{"text": "' + "x" * 200 + '"}').endswith("xx...")
    assert format_arguments("not json") == "not json"
    assert format_arguments("") == ""
    assert format_arguments('{"a": [1, 2]}', limit=None) == "a=[1, 2]"
    bare = TokenUsage(input_tokens=1, output_tokens=2, context_length=3, context_limit=0, cost=0)
    assert format_usage(bare) == "tokens: session 1 in, 2 out; context 3"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_make_renderer_picks_plain_when_piped() -> None:
    assert isinstance(make_renderer(io.StringIO(), environ={}), PlainRenderer)
    renderer = make_renderer(FakeTerminal(), environ={"TERM": "dumb"})
    assert isinstance(renderer, PlainRenderer)
    assert not renderer.color


@pytest.mark.parametrize(("environ", "color"), [({}, True), ({"NO_COLOR": "1"}, False)])
def test_make_renderer_without_rich_colors_a_terminal_unless_no_color(
    environ: dict[str, str], color: bool
) -> None:
    renderer = make_renderer(FakeTerminal(), environ=environ, use_rich=False)
    assert isinstance(renderer, PlainRenderer)
    assert renderer.color is color


def test_make_renderer_without_rich_installed_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails
    renderer = make_renderer(FakeTerminal(), environ={})
    assert isinstance(renderer, PlainRenderer)
    assert renderer.color


@pytest.mark.parametrize("no_color", [False, True])
def test_rich_renderer_draws_panels(no_color: bool) -> None:
    pytest.importorskip("rich")
    out = FakeTerminal()
    renderer = make_renderer(out, environ={"NO_COLOR": "1"} if no_color else {})
    assert isinstance(renderer, RichRenderer)
    renderer.console.width = 80
    renderer.banner("agentrt demo", [("model", "scripted")])
    for event in every_kind_of_event():
        renderer.event(event)
    renderer.decision(CALL, "approve-session", None, automatic=False)
    renderer.note("a note")
    renderer.prompt("approve? ")
    renderer.echo("y")
    renderer.finish()

    raw = out.getvalue()
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    in_order(
        text,
        "agentrt demo",
        "model",
        "you",
        "thinking",
        "Let me think.",
        "Hello.",
        "approval needed: add",
        '"a": 1',
        "tool call: raw",
        "result: add",
        "... (10 more lines)",
        "tokens: 10 in, 2 out",
        "$ ls",
        "title: Adding",
        "summary: They added.",
        "compaction completed",
        "Bye",
        "error",
        "boom",
        "approved for the rest of the session",
        "a note",
        "approve? y",
    )
    assert "tool call: add" not in text
    colored = re.search(r"\x1b\[[0-9;]*3[1-6]m", raw) is not None
    assert colored is not no_color
    assert "\x1b[1m" in raw  # bold stays without color
