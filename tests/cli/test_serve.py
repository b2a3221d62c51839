"""``agentrt serve``: what it refuses, its session options, and a real server it starts.

Most tests do not start the server: ``make_server`` is replaced by one that records what
it was given (the server's own behaviour is tests/test_server*.py's). One starts
``python -m agentrt serve`` in a subprocess and talks HTTP to it.
"""

from pathlib import Path
from typing import Any

import httpx
import pytest

import agentrt.server
from agentrt.cli._targets import load_factory
from agentrt.server import create_app
from tests.cli.support import REPO, cli, serving, write
from tests.server_support import decode, in_process, text_of


class Recorded:
    """What ``make_server`` was called with, and a server that serves at once."""

    def __init__(self) -> None:
        self.options: dict[str, Any] = {}
        self.started = True

    def make_server(self, factory: object, **options: Any) -> "Recorded":
        self.options = options
        return self

    async def serve(self) -> None:
        return None


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    server = Recorded()
    monkeypatch.setattr(agentrt.server, "make_server", server.make_server)
    return server


def test_session_ttl_and_max_sessions_reach_the_server(
    capsys: pytest.CaptureFixture[str], recorded: Recorded
) -> None:
    argv = ["serve", "json:dumps", "--store", "memory", "--session-ttl", "90"]
    result = cli(capsys, *argv, "--max-sessions", "5")
    assert result.code == 0, result.err
    assert (recorded.options["session_ttl"], recorded.options["max_sessions"]) == (90.0, 5)
    defaults = cli(capsys, "serve", "json:dumps", "--store", "memory")
    assert defaults.code == 0, defaults.err
    assert (recorded.options["session_ttl"], recorded.options["max_sessions"]) == (3600.0, 1000)


def test_serve_says_where_the_a2a_agent_card_is(
    capsys: pytest.CaptureFixture[str], recorded: Recorded
) -> None:
    result = cli(capsys, "serve", "json:dumps", "--store", "memory", "--port", "8123")
    assert result.code == 0, result.err
    assert (
        "agentrt: A2A: the agent card at http://127.0.0.1:8123/.well-known/agent-card.json\n"
        in result.err
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--session-ttl", "0"], "--session-ttl must be a positive number of seconds, got 0"),
        (["--session-ttl", "-5"], "--session-ttl must be a positive number of seconds, got -5"),
        (["--session-ttl", "inf"], "--session-ttl must be a positive number of seconds, got inf"),
        (["--session-ttl", "soon"], "argument --session-ttl: invalid float value: 'soon'"),
        (["--max-sessions", "0"], "--max-sessions must be a positive int, got 0"),
    ],
)
def test_bad_session_options_are_one_line_usage_errors(
    capsys: pytest.CaptureFixture[str], recorded: Recorded, option: list[str], message: str
) -> None:
    result = cli(capsys, "serve", "json:dumps", "--store", "memory", *option)
    assert result.code == 2
    assert message in result.err
    assert result.err.count("\n") == 1
    assert recorded.options == {}  # no server was made


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
    target = write(
        tmp_path / "factory.py",
        """
        from agentrt import Agent, ScriptedModel
        def make() -> Agent:
            return Agent(model=ScriptedModel(["hi"]))
        """,
    )
    with serving(f"{target}:make") as served, httpx.Client(base_url=served.url) as client:
        page = client.get("/")
        created = client.post("/sessions", json={})
    assert "<html" in page.text.lower()
    assert created.status_code == 201
    assert created.json()["id"]
    assert "Traceback" not in "".join(served.log)


async def test_the_serve_example_answers_any_number_of_messages_in_one_session() -> None:
    factory = load_factory(f"{REPO / 'examples' / 'serve_http.py'}:make_agent")
    questions = [f"What is {n} + {n * 10}?" for n in range(1, 6)] + ["Hello?", "And 7 + -2?"]
    async with in_process(create_app(factory)) as client:
        session = (await client.post("/sessions")).json()["id"]
        answers = []
        for question in questions:
            response = await client.post(
                f"/sessions/{session}/messages", json={"message": question}
            )
            answers.append(text_of(decode(response.content)))
    assert answers == [
        *(f"{n} + {n * 10} = {n * 11}." for n in range(1, 6)),
        "I add two numbers: ask me, for instance, what 2 + 3 is.",
        "7 + -2 = 5.",
    ]
