"""The official AG-UI TypeScript client against a live ``agentrt serve`` process.

Runs only with ``AGENTRT_AGUI=1`` (``nox -s agui``, which installs
``tests/agui/node`` with ``npm ci``; ``.ci/run`` installs Node and npm from Debian).
``node client.mjs`` drives ``agentrt serve examples/agui_endpoint.py:make_agent``,
started here with a token, through ``@ag-ui/client``'s ``HttpAgent``: a plain answer, a
server-side tool call, a frontend tool round trip, a confirmation answered through an
interrupt, and an error; and, on a durable store, a frontend tool round trip with the
server killed and started again between the call and its result. The client verifies
every stream itself; the script asserts the messages each conversation ends with.
"""

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import token_server

pytestmark = [
    pytest.mark.agui,
    pytest.mark.skipif(
        os.environ.get("AGENTRT_AGUI") != "1",
        reason="AG-UI client test: set AGENTRT_AGUI=1 (nox -s agui) with node and "
        "tests/agui/node installed (npm ci)",
    ),
]

NODE_PROJECT = Path(__file__).resolve().parent / "node"
SCENARIOS = ["plainAnswer", "serverTool", "frontendTool", "confirmation", "error"]


@contextlib.contextmanager
def serving(token: str, *options: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``agentrt serve`` with ``token``: (its AG-UI URL, process)."""
    with token_server.serving(token, *options) as (url, process):
        yield f"{url}/ag-ui", process


@pytest.fixture
def served() -> Iterator[tuple[str, str]]:
    """``agentrt serve`` (memory store) with a token: (its AG-UI URL, token)."""
    token = secrets.token_urlsafe(24)
    # In memory: the default store is a file in the working directory, the repository.
    with serving(token, "--store", "memory") as (url, _):
        yield url, token


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "node is not installed (.ci/run installs it from Debian)"
    assert (NODE_PROJECT / "node_modules" / "@ag-ui" / "client").is_dir(), (
        "run npm ci in tests/agui/node (nox -s agui does)"
    )
    return node


def test_the_official_typescript_client_runs_every_scenario(served: tuple[str, str]) -> None:
    url, token = served
    done = subprocess.run(
        [_node(), "client.mjs"],
        cwd=NODE_PROJECT,
        env={**os.environ, "AGUI_URL": url, "AGENTRT_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.splitlines() == [f"ok {name}" for name in SCENARIOS]


def test_the_client_is_refused_without_the_token(served: tuple[str, str]) -> None:
    url, _ = served
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, "client.mjs"],
        cwd=NODE_PROJECT,
        env={**os.environ, "AGUI_URL": url, "AGENTRT_TOKEN": "not-the-token"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "401" in done.stderr


def test_a_frontend_tool_round_trip_survives_a_restart_between_call_and_result(
    tmp_path: Path,
) -> None:
    # A durable store: the server is killed (SIGKILL) after the frontend tool's call and
    # started again on it; the client then sends only the tool's result.
    token = secrets.token_urlsafe(24)
    store = ["--store", f"sqlite:///{tmp_path / 'runs.sqlite'}", "--executor-id", "agui"]
    with serving(token, *store) as (url, first):
        client = subprocess.Popen(
            [_node(), "client.mjs", "frontendToolAcrossRestart"],
            cwd=NODE_PROJECT,
            env={**os.environ, "AGUI_URL": url, "AGENTRT_TOKEN": token},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # A client that hangs before it asks for the restart fails the test, not the suite.
        watchdog = threading.Timer(120, client.kill)
        watchdog.start()
        try:
            assert client.stdout is not None
            asked = client.stdout.readline()
            assert asked == "restart\n", (
                f"{asked!r}; stderr: {client.stderr and client.stderr.read()}"
            )
            first.send_signal(signal.SIGKILL)
            first.wait()
            with serving(token, *store) as (again, _):
                out, err = client.communicate(f"{again}\n", timeout=120)
        finally:
            watchdog.cancel()
            if client.poll() is None:
                client.kill()
                client.wait()
    assert client.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert out.splitlines() == ["ok frontendToolAcrossRestart"]
