"""``agentrt serve``'s session options reach the server, and bad ones are one-line errors.

The server itself is not started: ``make_server`` is replaced by one that records what it
was given (the server's own behaviour is tests/test_server*.py's).
"""

from typing import Any

import pytest

import agentrt.server
from tests.test_cli import cli


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
