"""A durable store that goes away during a run: the run ends, and says so, once it is back.

A real ``agentrt serve`` on a Postgres server of the test's own, which the test stops in
the middle of a streamed answer and starts again. The server logs that the store failed
and how many events wait; the run stops; once the store is back its events are written,
ending with an ``error`` that says why and ``stream_stopped``, in the session's one
numbering; and the server takes the next message as usual.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentrt.stream.events import ErrorEvent
from agentrt.stream.validate import validate

from .conftest import STARTUP_LIMIT, Servers, read_events
from .postgres import PrivatePostgres

pytestmark = pytest.mark.durable

TIMEOUT = httpx.Timeout(60.0)


@pytest.fixture
def own_postgres() -> Iterator[PrivatePostgres]:
    try:
        server = PrivatePostgres()
    except FileNotFoundError as missing:
        if os.environ.get("AGENTRT_REQUIRE_POSTGRES") == "1":
            pytest.fail(str(missing))
        pytest.skip(str(missing))
    server.start()
    yield server
    server.remove()


def _wait_for_log(path: Path, text: str) -> None:
    deadline = time.monotonic() + STARTUP_LIMIT
    while text not in path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not logged:\n{path.read_text(errors='replace')}")
        time.sleep(0.05)


def test_a_store_gone_mid_run_ends_the_run_with_an_error_once_it_is_back(
    tmp_path: Path, own_postgres: PrivatePostgres
) -> None:
    servers = Servers(tmp_path, f"{own_postgres.url}/agentrt_gone")
    try:
        server = servers.start("exec-a")
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
            session = client.post("/sessions").json()["id"]
            seen = read_events(
                client,
                "POST",
                f"/sessions/{session}/messages",
                json={"message": "paced 400"},
                until=lambda item: item.event.type == "agent_choice",
            )
            own_postgres.stop()
            _wait_for_log(server.log, "the durable store failed")
            own_postgres.start()
            rest = read_events(
                client,
                "GET",
                f"/sessions/{session}/events",
                headers={"Last-Event-ID": str(seen[-1][0])},
            )
            after = read_events(
                client, "POST", f"/sessions/{session}/messages", json={"message": "long 3"}
            )
        assert server.process.poll() is None
    finally:
        for process in servers.processes:
            process.kill()
            process.wait()

    events = seen + rest
    assert [sequence for sequence, _ in events] == list(range(1, len(events) + 1))
    assert validate([event for _, event in events]) == []
    assert [event.type for _, event in rest][-2:] == ["error", "stream_stopped"]
    error = rest[-2].event
    assert isinstance(error, ErrorEvent)
    assert error.error.startswith("cancelled: the durable store failed")
    assert "events wait to be written" in server.log_text()
    assert [event.type for _, event in after][-1] == "stream_stopped"
    assert after[0][0] == events[-1][0] + 1
