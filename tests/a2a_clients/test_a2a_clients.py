"""The official A2A clients against a live ``agentrt serve`` process.

Runs only with ``AGENTRT_A2A=1`` (``nox -s a2a``, which installs ``tests/a2a_clients/node`` with
``npm ci``; ``.ci/run`` installs Node and npm from Debian). ``agentrt serve
examples/agui_endpoint.py:make_agent`` is started here with a token and driven by
``@a2a-js/sdk`` (``node client.mjs``: the card, a streamed answer, a tool call, an
approval, a cancel and a failure over JSON-RPC and HTTP+JSON) and by ``a2a-sdk``'s Python
client (the same story); then, on a durable store, ``tests.durable.server_app:make`` is
killed (``kill -9``) in the middle of a task and started again, and the JavaScript
client's SubscribeToTask follows the task to its end.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2a.client import A2AClientError, ClientConfig, create_client
from a2a.helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

from tests.token_server import serving

pytestmark = [
    pytest.mark.a2a,
    pytest.mark.skipif(
        os.environ.get("AGENTRT_A2A") != "1",
        reason="A2A client tests: set AGENTRT_A2A=1 (nox -s a2a) with node and "
        "tests/a2a_clients/node installed (npm ci)",
    ),
]

NODE_PROJECT = Path(__file__).resolve().parent / "node"
SCENARIOS = ["card", "streamedAnswer", "toolCall", "approval", "cancel", "error"]
LIMIT = 120.0


@pytest.fixture
def served() -> Iterator[tuple[str, str]]:
    """``agentrt serve`` (memory store) with a token: (its URL, token)."""
    token = secrets.token_urlsafe(24)
    with serving(token, "--store", "memory") as (url, _):
        yield url, token


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "node is not installed (.ci/run installs it from Debian)"
    assert (NODE_PROJECT / "node_modules" / "@a2a-js" / "sdk").is_dir(), (
        "run npm ci in tests/a2a_clients/node (nox -s a2a does)"
    )
    return node


def _run_node(url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_node(), "client.mjs", *args],
        cwd=NODE_PROJECT,
        env={**os.environ, "A2A_URL": url, "AGENTRT_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )


def test_the_official_javascript_client_runs_every_scenario(served: tuple[str, str]) -> None:
    url, token = served
    done = _run_node(url, token)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.splitlines() == [f"ok {name}" for name in SCENARIOS]


def test_the_javascript_client_reads_the_card_but_sends_nothing_without_the_token(
    served: tuple[str, str],
) -> None:
    url, _ = served
    done = _run_node(url, "not-the-token")
    assert done.returncode != 0
    # The card is public: the first scenario passes; the first message is refused.
    assert done.stdout.splitlines() == ["ok card"]
    assert "this server needs Authorization: Bearer <token>" in done.stderr


# -- the Python client ------------------------------------------------------------------------


def _user(text: str, task: Task | None = None, **data: object) -> SendMessageRequest:
    message = Message(message_id=f"py-{text}", role=Role.ROLE_USER)
    message.parts.append(new_data_part(data) if data else new_text_part(text))
    if task is not None:
        message.task_id = task.id
    return SendMessageRequest(message=message)


def _state(response: StreamResponse) -> str:
    status = response.task.status if response.HasField("task") else response.status_update.status
    return TaskState.Name(status.state)


async def test_the_official_python_client_tells_the_same_story(served: tuple[str, str]) -> None:
    url, token = served
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=LIMIT, headers=headers) as http:
        for binding in ("JSONRPC", "HTTP+JSON"):
            config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding])
            async with await create_client(url, config) as client:
                # A streamed answer, then a tool call.
                said = [r async for r in client.send_message(_user("hello"))]
                chunks = [r.artifact_update for r in said if r.HasField("artifact_update")]
                assert "".join(c.artifact.parts[0].text for c in chunks) == "Hello from agentrt."
                assert _state(said[-1]) == "TASK_STATE_COMPLETED"
                added = [r async for r in client.send_message(_user("add 2 and 3"))]
                tools = [
                    (d["type"], d.get("response"))
                    for r in added
                    if r.HasField("status_update")
                    for d in get_data_parts(r.status_update.status.message.parts)
                    if d["type"].startswith("tool_call")
                ]
                assert tools == [("tool_call", None), ("tool_call_response", "5")]
                # An approval round trip, then a cancel of a task that waits.
                asked = [r async for r in client.send_message(_user("delete notes.txt"))]
                assert _state(asked[-1]) == "TASK_STATE_INPUT_REQUIRED"
                [pending] = get_data_parts(asked[-1].status_update.status.message.parts)[0][
                    "pending"
                ]
                task = asked[0].task
                decided = _user("", task, decisions={pending["toolCallId"]: "approve"})
                rest = [r async for r in client.send_message(decided)]
                assert _state(rest[-1]) == "TASK_STATE_COMPLETED"
                again = [r async for r in client.send_message(_user("delete notes.txt"))]
                cancelled = await client.cancel_task(CancelTaskRequest(id=again[0].task.id))
                assert TaskState.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
                read = await client.get_task(GetTaskRequest(id=again[0].task.id))
                assert TaskState.Name(read.status.state) == "TASK_STATE_CANCELED"
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        client = await create_client(url, ClientConfig(httpx_client=http))
        with pytest.raises(A2AClientError, match="401"):
            _ = [r async for r in client.send_message(_user("hello"))]


# -- across a restart ------------------------------------------------------------------------


def _wait_for(path: Path, lines: int) -> None:
    """Wait until a tool wrote ``lines`` lines to ``path`` (a bounded poll of a file)."""
    deadline = time.monotonic() + LIMIT
    while not path.exists() or len(path.read_text().splitlines()) < lines:
        assert time.monotonic() < deadline, f"{path.name} did not reach {lines} lines"
        time.sleep(0.02)


def test_the_javascript_client_follows_a_task_to_its_end_across_a_kill_9_and_restart(
    tmp_path: Path,
) -> None:
    token = secrets.token_urlsafe(24)
    target = "tests.durable.server_app:make"
    store = ["--store", f"sqlite:///{tmp_path / 'runs.sqlite'}", "--executor-id", "a2a"]
    work = {"AGENTRT_TEST_WORKDIR": str(tmp_path)}
    started = tmp_path / "slow.started"
    with serving(token, *store, target=target, env={**work, "AGENTRT_TEST_BLOCK": "1"}) as (
        url,
        first,
    ):
        client = subprocess.Popen(
            [_node(), "client.mjs", "subscribeAcrossRestart"],
            cwd=NODE_PROJECT,
            env={
                **os.environ,
                "A2A_URL": url,
                "AGENTRT_TOKEN": token,
                "A2A_GATE": str(tmp_path / "slow.open"),
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # A client that hangs before it asks for the restart fails the test, not the suite.
        watchdog = threading.Timer(LIMIT, client.kill)
        watchdog.start()
        try:
            assert client.stdout is not None
            asked = client.stdout.readline()
            assert asked.startswith("restart "), (
                f"{asked!r}; stderr: {client.stderr and client.stderr.read()}"
            )
            # The task is in the slow tool: the server dies there.
            _wait_for(started, 1)
            first.send_signal(signal.SIGKILL)
            first.wait()
            with serving(token, *store, target=target, env={**work, "AGENTRT_TEST_GATE": "1"}) as (
                again,
                _,
            ):
                # The recovered run is back in the slow tool, held until the client follows.
                _wait_for(started, 2)
                out, err = client.communicate(f"{again}\n", timeout=LIMIT)
        finally:
            watchdog.cancel()
            if client.poll() is None:
                client.kill()
                client.wait()
    assert client.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert out.splitlines() == ["ok subscribeAcrossRestart"]
    # The first tool had completed before the crash: it ran once.
    assert (tmp_path / "first.count").read_text().splitlines() == ["1"]
