"""The ``agentrt`` command line: demo, run, model specs, targets, rendering, confirmations.

Commands run in-process through ``main(argv)`` (it returns the exit code), with stdout
and stderr captured; standard input is replaced per test. One test runs the real
entry point in a subprocess.
"""

import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest

import agentrt
from agentrt import Agent, ModelUnavailableError, OpenAIChatModel, ScriptedModel
from agentrt.cli import app, demo, main
from agentrt.cli.demo import (
    DEMO_NOTE,
    DEMO_QUESTION,
    DemoModel,
    calculate,
    demo_directory,
    demo_tools,
    get_weather,
    pick_demo_model,
    scripted_demo_model,
)
from agentrt.cli.prompt import (
    NO_TERMINAL_REASON,
    Asker,
    LineReader,
    is_terminal,
    parse_answer,
)
from agentrt.cli.render import (
    PlainRenderer,
    RichRenderer,
    format_arguments,
    format_usage,
    make_renderer,
)
from agentrt.cli.specs import ModelSpec, ModelSpecError, echo_model, parse_model_spec
from agentrt.cli.targets import TargetError, one_line, parse_target
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
    parse_event,
    validate,
)
from agentrt.stream.events import LastMessageUsage

REPO = Path(agentrt.__file__).resolve().parents[1]


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def events(self) -> list[StreamEvent]:
        return [parse_event(line, strict=True) for line in self.out.splitlines()]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No model or key from the environment, no local model, notes in tmp_path."""
    for name in ("OPENAI_BASE_URL", "AGENTRT_MODEL", "OPENAI_API_KEY", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    notes = tmp_path / "notes"
    monkeypatch.setenv("AGENTRT_DEMO_DIR", str(notes))

    def no_local_model() -> Any:
        raise ModelUnavailableError("llama-cpp-python", "not here", install="pip install x")

    # Where llama-cpp-python is installed the demo would load the real model.
    monkeypatch.setattr(demo, "_local_model", no_local_model)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    modules = set(sys.modules)
    yield notes
    for name in set(sys.modules) - modules:
        if name.startswith(("_agentrt_target_", "clitarget_")):
            del sys.modules[name]


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


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    return write(tmp_path / "app" / "bot.py", AGENT_FILE)


# -- demo -------------------------------------------------------------------------------


def test_demo_scripted_renders_text_reasoning_tool_calls_results_and_usage(
    capsys: pytest.CaptureFixture[str], isolated: Path
) -> None:
    result = cli(capsys, "demo", "--model", "scripted", "--yes")

    assert result.code == 0
    assert result.err == ""
    assert "\x1b[" not in result.out  # plain text when piped
    in_order(
        result.out,
        "== agentrt demo ==",
        "model: scripted (deterministic, offline)",
        f"you: {DEMO_QUESTION}",
        "thinking: The question needs arithmetic (6 * 7) and the weather in Paris.",
        "tokens: ",
        '-> calculate(expression="6 * 7")',
        '-> get_weather(city="Paris")',  # both calls before any result: parallel
        "<- calculate: 42",
        "<- get_weather: sunny, 21 C",
        "?? write_note(",
        "needs your approval",
        "approved (--yes)",
        "<- write_note: wrote ",
        "demo: 6 * 7 = 42, and the weather in Paris is sunny, 21 C. I saved both in",
        "tokens: ",
    )
    assert (isolated / DEMO_NOTE).read_text() == "6 * 7 = 42\nWeather in Paris: sunny, 21 C\n"


def test_demo_answers_a_question_given_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = cli(capsys, "demo", "What is 12 * (3 + 4) in Rome?", "--model", "scripted", "-y")

    assert result.code == 0
    in_order(
        result.out,
        "you: What is 12 * (3 + 4) in Rome?",
        '-> calculate(expression="12 * (3 + 4)")',
        '-> get_weather(city="Rome")',
        "<- calculate: 84",
        "12 * (3 + 4) = 84, and the weather in Rome is sunny, 27 C.",
    )


@pytest.mark.parametrize(
    ("answers", "shown", "saved"),
    [
        ("y\n", "   approved\n", True),
        ("yes\n", "   approved\n", True),
        ("s\n", "approved for the rest of the session", True),
        ("t\n", "approved, and every later write_note call", True),
        ("n too risky\n", "rejected: too risky", False),
        ("n\n", "   rejected\n", False),
        ("maybe\ny\n", "   approved\n", True),
    ],
)
def test_demo_reads_confirmation_answers_from_piped_stdin(
    capsys: pytest.CaptureFixture[str], isolated: Path, answers: str, shown: str, saved: bool
) -> None:
    result = cli(capsys, "demo", "--model", "scripted", stdin=answers)

    assert result.code == 0
    first = answers.splitlines()[0]
    in_order(
        result.out,
        "?? write_note(",
        f"approve write_note? [y]es [s]ession [t]ool [n]o <reason>: {first}\n",
        shown,
    )
    assert (isolated / DEMO_NOTE).exists() is saved
    if saved:
        assert "I saved both in demo-answers.txt." in result.out
    else:
        assert "<- write_note: rejected by the user" in result.out
        assert "I did not save the note (rejected by the user" in result.out


def test_demo_asks_again_after_an_unclear_answer(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "demo", "--model", "scripted", stdin="maybe\ny\n")

    in_order(
        result.out,
        "<reason>: maybe\n",
        "answer y (approve), s (approve for the session), t (approve this tool) or n [reason]",
        "<reason>: y\n",
        "   approved\n",
    )


@pytest.mark.parametrize("stdin", ["", None], ids=["empty-pipe", "no-stdin"])
def test_demo_without_a_terminal_or_yes_rejects_instead_of_hanging(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    isolated: Path,
    stdin: str | None,
) -> None:
    monkeypatch.setattr(sys, "stdin", None if stdin is None else io.StringIO(stdin))
    result = cli(capsys, "demo", "--model", "scripted")

    assert result.code == 0
    assert "approvals: read from stdin; rejected when it ends" in result.out
    in_order(
        result.out,
        f"<reason>: ({NO_TERMINAL_REASON})\n",
        f"   rejected: {NO_TERMINAL_REASON}",
        f"<- write_note: rejected by the user: {NO_TERMINAL_REASON}",
    )
    assert not (isolated / DEMO_NOTE).exists()


def test_demo_falls_back_to_the_scripted_model_and_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = cli(capsys, "demo", "--yes")

    assert result.code == 0
    assert result.err.count("\n") == 1
    assert "no local model" in result.err
    assert "running the scripted demo model" in result.err
    assert "<- calculate: 42" in result.out


def test_demo_as_json_is_a_valid_stream(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "demo", "--model", "scripted", "--yes", "--json")

    assert result.code == 0
    assert result.err == ""
    events = result.events
    assert validate(events) == []
    types = [event.type for event in events]
    assert types[:2] == ["user_message", "stream_started"]
    assert types[-1] == "stream_stopped"
    for kind in ("agent_choice_reasoning", "agent_choice", "tool_call_confirmation"):
        assert kind in types
    assert types.count("tool_call_response") == 3


def test_demo_as_json_asks_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "demo", "--model", "scripted", "--json", stdin="n not now\n")

    assert result.code == 0
    assert validate(result.events) == []
    assert "approve write_note?" in result.err
    assert "rejected: not now" in result.err
    responses = [e for e in result.events if isinstance(e, ToolCallResponseEvent)]
    assert responses[-1].response == "rejected by the user: not now"


def test_demo_runs_on_another_model_spec(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "demo", "Hello?", "--model", "scripted:Hi there.")

    assert result.code == 0
    assert "model: scripted (a fixed answer, no tools)" in result.out
    assert "demo: Hi there." in result.out


def test_demo_with_an_unavailable_local_model_is_bad_usage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = cli(capsys, "demo", "--model", f"local:{tmp_path / 'missing.gguf'}")

    assert result.code == 2
    assert result.out == ""
    assert result.err.count("\n") == 1
    assert result.err.startswith("agentrt demo: ")
    assert "is not available" in result.err


async def test_pick_demo_model_prefers_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    local = agentrt.LocalModel(loader=lambda: pytest.fail("not loaded"), name="smol")
    monkeypatch.setattr(demo, "_local_model", lambda: local)

    picked = pick_demo_model({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AGENTRT_MODEL": "m"})

    assert picked.model is local
    assert picked.note is None
    assert "smol" in picked.description


async def test_pick_demo_model_uses_the_endpoint_of_the_environment() -> None:
    picked = pick_demo_model(
        {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AGENTRT_MODEL": "llama3", "X": "y"}
    )
    assert isinstance(picked.model, OpenAIChatModel)
    try:
        assert picked.model.base_url == "http://127.0.0.1:1/v1"
        assert picked.model.name == "llama3"
        assert picked.note is None
    finally:
        await picked.model.aclose()


def test_pick_demo_model_needs_both_variables_for_an_endpoint() -> None:
    picked = pick_demo_model({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})

    assert isinstance(picked.model, ScriptedModel)
    assert picked.note is not None
    assert "\n" not in picked.note


def test_demo_tools() -> None:
    assert calculate("6 * 7") == "42"
    assert calculate("2 ^ 10") == "1024"
    assert calculate("7 / 2") == "3.5"
    assert calculate("-(1 + 2) * 3 // 2 % 5") == "0"
    assert calculate("4.0 / 2") == "2"
    for bad, message in [
        ("__import__('os')", "unsupported syntax"),
        ("1 +", "not an arithmetic expression"),
        ("1 / 0", "division by zero"),
        ("2 ** 1000", "too large"),
        ("True + 1", "unsupported syntax"),
    ]:
        with pytest.raises(ValueError, match=message):
            calculate(bad)
    assert get_weather("paris") == get_weather("  Paris ") == "sunny, 21 C"
    assert get_weather("Ulan Bator") == get_weather("ulan bator")  # made up, but stable
    with pytest.raises(ValueError, match="empty"):
        get_weather(" ")


def test_write_note_writes_plain_names_only(tmp_path: Path) -> None:
    write_note = demo_tools(tmp_path / "out")[-1]
    assert write_note.requires_confirmation

    assert write_note("a.txt", "hello") == f"wrote 5 characters to {tmp_path / 'out' / 'a.txt'}"
    assert (tmp_path / "out" / "a.txt").read_text() == "hello\n"
    for bad in ("../escape.txt", "/etc/passwd", ".hidden", "", "a/b.txt"):
        with pytest.raises(ValueError, match="not a plain file name"):
            write_note(bad, "x")


def test_demo_directory_defaults_to_the_temporary_folder() -> None:
    assert demo_directory({"AGENTRT_DEMO_DIR": "/somewhere"}) == Path("/somewhere")
    assert demo_directory({}).name == "agentrt-demo"


async def test_scripted_demo_model_without_a_user_message_uses_the_defaults() -> None:
    response = await scripted_demo_model().complete(ModelRequest(messages=[]))
    assert [call.name for call in response.tool_calls] == ["calculate", "get_weather"]
    assert json.loads(response.tool_calls[1].arguments) == {"city": "Paris"}


# -- run --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attr", "name"),
    [("agent", "adder"), ("make_agent", "made"), ("make_agent_async", "made-async")],
)
def test_run_a_file_target(
    capsys: pytest.CaptureFixture[str], agent_file: Path, attr: str, name: str
) -> None:
    result = cli(capsys, "run", f"{agent_file}:{attr}", "Add 2 and 3")

    assert result.code == 0, result.err
    assert result.err == ""
    in_order(
        result.out, "you: Add 2 and 3", "-> add(a=2, b=3)", "<- add: 5", f"{name}: The sum is 5."
    )


def test_run_a_relative_file_target_whose_file_imports_its_neighbour(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write(tmp_path / "proj" / "clitarget_helpers.py", "ANSWER = 'from the neighbour'\n")
    write(
        tmp_path / "proj" / "main.py",
        """
        from clitarget_helpers import ANSWER

        from agentrt import Agent, ScriptedModel

        agent = Agent(model=ScriptedModel([ANSWER]), name="main")
        """,
    )
    monkeypatch.chdir(tmp_path)

    result = cli(capsys, "run", "proj/main.py:agent", "hi")

    assert result.code == 0, result.err
    assert "main: from the neighbour" in result.out


def test_run_a_module_target_from_the_current_directory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write(tmp_path / "clitarget_pkg" / "__init__.py", "")
    write(tmp_path / "clitarget_pkg" / "agents.py", AGENT_FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])

    result = cli(capsys, "run", "clitarget_pkg.agents:make_agent", "Add")

    assert result.code == 0, result.err
    assert "made: The sum is 5." in result.out
    assert str(tmp_path) in sys.path


def test_run_a_nested_attribute(capsys: pytest.CaptureFixture[str], agent_file: Path) -> None:
    result = cli(capsys, "run", f"{agent_file}:Holder.inner", "hi")

    assert result.code == 0
    assert "nested: nested answer" in result.out


def test_run_json_is_valid_ndjson(capsys: pytest.CaptureFixture[str], agent_file: Path) -> None:
    result = cli(capsys, "run", f"{agent_file}:agent", "Add 2 and 3", "--json")

    assert result.code == 0
    assert result.err == ""
    lines = result.out.splitlines()
    assert all(json.loads(line)["type"] for line in lines)
    events = result.events
    assert validate(events) == []
    assert [e.type for e in events if e.type != "partial_tool_call"] == [
        "user_message",
        "stream_started",
        "token_usage",
        "tool_call",
        "tool_call_response",
        "agent_choice",  # "The sum", " is 5.": streamed in chunks
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]


def test_a_failing_run_exits_1_with_error_and_stream_stopped(
    capsys: pytest.CaptureFixture[str], agent_file: Path
) -> None:
    result = cli(capsys, "run", f"{agent_file}:broken", "hi", "--json")

    assert result.code == 1
    events = result.events
    assert validate(events) == []
    assert [e.type for e in events] == [
        "user_message",
        "stream_started",
        "error",
        "stream_stopped",
    ]
    error = events[2]
    assert isinstance(error, ErrorEvent)
    assert error.error == "RuntimeError: the model\nexploded"
    assert result.err == "agentrt: the run failed: RuntimeError: the model exploded\n"


def test_a_failing_run_shows_the_error(
    capsys: pytest.CaptureFixture[str], agent_file: Path
) -> None:
    result = cli(capsys, "run", f"{agent_file}:broken", "hi")

    assert result.code == 1
    assert "error: RuntimeError: the model\nexploded" in result.out
    assert "Traceback" not in result.out + result.err


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["--yes"], ["rocket: Done."]),
        ([], ["   rejected: no terminal to ask", "<- launch: rejected by the user"]),
    ],
)
def test_run_confirmations(
    capsys: pytest.CaptureFixture[str], agent_file: Path, argv: list[str], shown: list[str]
) -> None:
    result = cli(capsys, "run", f"{agent_file}:rocket", "Go", *argv)

    assert result.code == 0
    in_order(result.out, '?? launch(target="moon") needs your approval', *shown)


def test_run_json_with_yes_approves_quietly(
    capsys: pytest.CaptureFixture[str], agent_file: Path
) -> None:
    result = cli(capsys, "run", f"{agent_file}:rocket", "Go", "--json", "--yes")

    assert result.code == 0
    assert result.err == ""
    events = result.events
    assert validate(events) == []
    responses = [e.response for e in events if isinstance(e, ToolCallResponseEvent)]
    assert responses == ["launched moon"]


@pytest.mark.parametrize(
    ("spec", "answer"),
    [("scripted", "You said: Add 2 and 3"), ("scripted:Fixed answer.", "Fixed answer.")],
)
def test_run_model_overrides_the_agents_model(
    capsys: pytest.CaptureFixture[str], agent_file: Path, spec: str, answer: str
) -> None:
    result = cli(capsys, "run", f"{agent_file}:broken", "Add 2 and 3", "--model", spec)

    assert result.code == 0, result.out
    assert f"broken: {answer}" in result.out


# -- bad usage and unloadable targets ---------------------------------------------------


def assert_usage_error(result: Result, *fragments: str) -> None:
    assert result.code == 2
    assert result.out == ""
    assert result.err.endswith("\n")
    assert result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in result.err


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        ([], ["choose a command: demo, run or serve"]),
        (["frobnicate"], ["invalid choice: 'frobnicate'"]),
        (["run"], ["agentrt run: the following arguments are required: TARGET, PROMPT"]),
        (["run", "x.py:agent"], ["required: PROMPT", "(see agentrt run --help)"]),
        (["demo", "--bogus"], ["unrecognized arguments: --bogus"]),
        (["demo", "--model", "gpt"], ["unknown model 'gpt'"]),
        (["demo", "--model", ""], ["unknown model ''"]),
        (["demo", "--model", "openai:m@localhost:8000"], ["http:// or https:// URL"]),
        (["demo", "--model", "openai:@http://x"], ["names no model"]),
        (["demo", "--model", "scripted:"], ["needs the TEXT"]),
        (["demo", "--model", "local:"], ["needs the path"]),
        (["run", "no_colon_here", "hi"], ["must be module:attr or path/to/file.py:attr"]),
        (["run", "mod:", "hi"], ["must be module:attr"]),
        (["run", "mod:1x", "hi"], ["is not an attribute name"]),
        (["run", "bad-name:agent", "hi"], ["neither a module name nor a .py file"]),
    ],
)
def test_bad_usage_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragments: list[str]
) -> None:
    assert_usage_error(cli(capsys, *argv), *fragments)


@pytest.mark.parametrize(
    ("target", "fragments"),
    [
        ("clitarget_missing_module:agent", ["no module named 'clitarget_missing_module'"]),
        ("{dir}/missing.py:agent", ["missing.py' does not exist"]),
        ("{dir}:agent", ["is not a file"]),
        ("{dir}/bot.py:nope", ["has no attribute 'nope'"]),
        ("{dir}/bot.py:Holder.nope", ["has no attribute 'Holder.nope'"]),
        ("{dir}/bot.py:not_an_agent", ["is a int, not an Agent or a function returning one"]),
        ("{dir}/bot.py:make_nothing", ["returned a str, not an Agent"]),
        ("{dir}/bot.py:make_failing", ["make_failing failed: ValueError: no configuration"]),
        ("{dir}/bot.py:make_failing_async", ["LookupError: nothing to find"]),
        ("{dir}/syntax.py:agent", ["importing", "failed: SyntaxError"]),
        ("{dir}/raising.py:agent", ["importing", "failed: ZeroDivisionError"]),
        ("{dir}/needs.py:agent", ["failed: ModuleNotFoundError: No module named 'clitarget_x'"]),
    ],
)
def test_unloadable_targets_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], agent_file: Path, target: str, fragments: list[str]
) -> None:
    folder = agent_file.parent
    write(folder / "syntax.py", "def broken(:\n")
    write(folder / "raising.py", "agent = 1 / 0\n")
    write(folder / "needs.py", "import clitarget_x\n")

    result = cli(capsys, "run", target.format(dir=folder), "hi")

    assert_usage_error(result, "agentrt run: ", *fragments)


def test_a_module_that_imports_something_missing_is_reported_as_such(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write(tmp_path / "clitarget_needy.py", "import clitarget_absent\n")
    monkeypatch.chdir(tmp_path)

    result = cli(capsys, "run", "clitarget_needy:agent", "hi")

    assert_usage_error(
        result, "importing 'clitarget_needy' failed", "No module named 'clitarget_absent'"
    )


def test_run_with_an_unusable_model_is_bad_usage(
    capsys: pytest.CaptureFixture[str], agent_file: Path, tmp_path: Path
) -> None:
    result = cli(capsys, "run", f"{agent_file}:agent", "hi", "--model", "openai")

    assert_usage_error(result, "needs a model name")


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "--help")
    assert result.code == 0
    assert "usage: agentrt" in result.out
    assert "openai:MODEL@BASE_URL" in result.out

    result = cli(capsys, "run", "--help")
    assert result.code == 0
    assert "TARGET" in result.out

    result = cli(capsys, "--version")
    assert result.code == 0
    assert result.out == f"agentrt {agentrt.__version__}\n"


def test_interrupted_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def interrupted(options: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(app, "_command", interrupted)

    result = cli(capsys, "demo")

    assert result.code == 130
    assert result.err == "agentrt: interrupted\n"


def test_a_closed_stdout_ends_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_pipe(options: object) -> int:
        raise BrokenPipeError

    monkeypatch.setattr(app, "_command", broken_pipe)

    result = cli(capsys, "demo")

    assert result.code == 1
    assert result.err == ""


def test_the_entry_point_runs_in_a_subprocess(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "AGENTRT_DEMO_DIR": str(tmp_path),
        "NO_COLOR": "1",
    }
    completed = subprocess.run(
        [sys.executable, "-m", "agentrt", "demo", "--model", "scripted", "--yes"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert "<- calculate: 42" in completed.stdout
    assert "Traceback" not in completed.stderr
    assert (tmp_path / DEMO_NOTE).exists()


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


def test_demo_model_describes_itself() -> None:
    model = ScriptedModel(["x"])
    assert DemoModel(model, "d").note is None


def test_agent_type_is_what_run_loads(agent_file: Path) -> None:
    import anyio

    from agentrt.cli.targets import load_agent

    loaded = anyio.run(load_agent, f"{agent_file}:agent")
    assert isinstance(loaded, Agent)


class ClosedPipe(io.StringIO):
    """A stdout whose reader left after the first line."""

    def write(self, text: str) -> int:
        if self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_reader_that_leaves_mid_stream_ends_the_command_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdout = ClosedPipe()
    monkeypatch.setattr(sys, "stdout", stdout)

    code = main(["demo", "--model", "scripted", "--yes", "--json"])

    assert code == 1
    assert stdout.getvalue().count("\n") == 1
    assert capsys.readouterr().err == ""


async def test_guide_small_model_offers_one_tool_per_turn_then_none(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            agentrt.ToolCall(name="calculate", arguments={"expression": "1 + 1"}),
            agentrt.ToolCall(name="get_weather", arguments={"city": "Oslo"}),
            agentrt.ToolCall(name="write_note", arguments={"filename": "n.txt", "text": "x"}),
            "Done.",
        ]
    )
    agent = Agent(model=model, tools=demo_tools(tmp_path))
    demo.guide_small_model(agent)
    async with agent:
        await agent.execute("Go", stream=True)

    choices = [request.settings["tool_choice"] for request in model.requests]
    assert choices == [
        {"type": "function", "function": {"name": "calculate"}},
        {"type": "function", "function": {"name": "get_weather"}},
        {"type": "function", "function": {"name": "write_note"}},
        "none",
    ]
    assert model.requests[-1].settings["max_tokens"] == 96


async def test_demo_model_descriptions(tmp_path: Path) -> None:
    remote = app._demo_model(parse_model_spec("openai:llama3@http://127.0.0.1:1/v1"))
    assert remote.description == "llama3 at http://127.0.0.1:1/v1"
    assert isinstance(remote.model, OpenAIChatModel)
    await remote.model.aclose()
    assert app._demo_model(None).note is not None
    assert app._demo_model(parse_model_spec("scripted")).model.name == "scripted-demo"


def test_the_demo_agent_is_guided_on_a_local_model_only(tmp_path: Path) -> None:
    local = agentrt.LocalModel(loader=lambda: pytest.fail("not loaded"))
    guided = demo.build_demo_agent(local, directory=tmp_path)
    free = demo.build_demo_agent(scripted_demo_model(), directory=tmp_path)

    assert guided.events.has_handlers(agentrt.AgentEvents.LLM_STREAM_BEFORE)
    assert not free.events.has_handlers(agentrt.AgentEvents.LLM_STREAM_BEFORE)
    assert [t.name for t in guided.tools] == ["calculate", "get_weather", "write_note"]


def test_a_failure_outside_the_run_is_reported_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_event(self: PlainRenderer, event: StreamEvent) -> None:
        if event.type == "tool_call":
            raise RuntimeError("cannot draw\nthis")

    monkeypatch.setattr(PlainRenderer, "event", broken_event)

    result = cli(capsys, "demo", "--model", "scripted", "--yes")

    assert result.code == 1
    assert result.err == "agentrt: the run failed: RuntimeError: cannot draw this\n"


# -- agentrt serve --------------------------------------------------------------------------


def test_serve_rejects_one_agent_instead_of_a_factory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = write(
        tmp_path / "one_agent.py",
        """
        from agentrt import Agent, ScriptedModel
        agent = Agent(model=ScriptedModel(["hi"]))
        """,
    )
    result = cli(capsys, "serve", f"{target}:agent")
    assert result.code == 2
    assert "serving needs a function returning a new Agent per session" in result.err
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "no_such_module_xyz:make"], "no module named 'no_such_module_xyz'"),
        (["serve", "json:dumps", "--port", "70000"], "--port must be 0 to 65535"),
        (["serve"], "the following arguments are required: TARGET"),
    ],
)
def test_serve_bad_usage_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    result = cli(capsys, *argv)
    assert result.code == 2
    assert message in result.err
    assert "Traceback" not in result.err


def test_serve_answers_http_until_stopped(tmp_path: Path) -> None:
    import socket
    import time
    import urllib.request

    target = write(
        tmp_path / "factory.py",
        """
        from agentrt import Agent, ScriptedModel
        def make() -> Agent:
            return Agent(model=ScriptedModel(["hi"]))
        """,
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "agentrt", "serve", f"{target}:make", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        body = b""
        while time.monotonic() < deadline:  # bounded wait for the server to start
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                    body = page.read()
                break
            except OSError:
                time.sleep(0.1)
        assert b"<html" in body.lower()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/sessions", method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, data=b"{}", timeout=5) as created:
            assert created.status == 201
            assert json.loads(created.read())["id"]
    finally:
        process.terminate()
        process.wait(timeout=30)
