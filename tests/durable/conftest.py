"""Crash tests run a durable agent in real processes (tests/durable/app.py) and kill them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrt.durable import launch, shutdown
from agentrt.stream.codec import SequencedEvent, SSEEventDecoder

from .postgres import free_port, private_postgres

ROOT = Path(__file__).resolve().parents[2]
STARTUP_LIMIT = 60.0  # seconds a process may take to reach a marker (a cold start on 2 cores)
# Seconds an event stream may take to end: heartbeats keep a stream that never ends
# (a run nobody recovers) open for ever, and a regression must fail, not hang the suite.
STREAM_LIMIT = 120.0


@dataclass
class Crashable:
    """A durable run in a process of its own, on ``store`` (default: SQLite in ``workdir``)."""

    workdir: Path
    store: str = ""
    run_id: str = "run-1"
    app: str = "tests.durable.app"
    """The module the processes run (``python -m``)."""
    processes: list[subprocess.Popen[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.store:
            self.store = f"sqlite:///{self.workdir / 'store.sqlite'}"

    def start(
        self,
        mode: str,
        *,
        block: bool = False,
        stream: bool = False,
        parallel: bool = False,
        block_stream: bool = False,
        block_charge: bool = False,
        executor: str = "worker-1",
        run_id: str | None = None,
    ) -> subprocess.Popen[str]:
        env = dict(os.environ)
        env.update(
            AGENTRT_TEST_WORKDIR=str(self.workdir),
            AGENTRT_TEST_EXECUTOR=executor,
            AGENTRT_TEST_STREAM="1" if stream else "0",
            AGENTRT_TEST_PARALLEL="1" if parallel else "0",
        )
        env.pop("AGENTRT_TEST_BLOCK", None)
        env.pop("AGENTRT_TEST_BLOCK_STREAM", None)
        env.pop("AGENTRT_TEST_BLOCK_CHARGE", None)
        if block_charge:
            env["AGENTRT_TEST_BLOCK_CHARGE"] = "1"
        if block:
            env["AGENTRT_TEST_BLOCK"] = "1"
        if block_stream:
            env["AGENTRT_TEST_BLOCK_STREAM"] = "1"
        process = subprocess.Popen(
            [sys.executable, "-m", self.app, mode, self.store, run_id or self.run_id],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.processes.append(process)
        return process

    def finish(self, mode: str, **options: Any) -> str:
        """Run ``mode`` to its end; its last line of output."""
        process = self.start(mode, **options)
        out, err = process.communicate(timeout=STARTUP_LIMIT)
        assert process.returncode == 0, err
        return out.strip().splitlines()[-1]

    def wait_for(self, marker: str, process: subprocess.Popen[str]) -> None:
        """Wait until the process wrote ``marker`` (a bounded poll of a real process's file)."""
        path = self.workdir / marker
        deadline = time.monotonic() + STARTUP_LIMIT
        while not path.exists():
            if process.poll() is not None:
                raise AssertionError(f"the process ended first: {process.communicate()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{marker} did not appear within {STARTUP_LIMIT}s")
            time.sleep(0.02)

    def kill(self, process: subprocess.Popen[str]) -> None:
        """``kill -9`` the process: no cleanup, no flush, as when a machine dies."""
        process.send_signal(signal.SIGKILL)
        process.communicate()

    def lines(self, name: str) -> list[str]:
        path = self.workdir / name
        return path.read_text().splitlines() if path.exists() else []


@contextmanager
def in_process_store(tmp_path_factory: pytest.TempPathFactory, executor_id: str) -> Iterator[str]:
    """DBOS launched in this process on a fresh SQLite store, for one module's tests: its URL."""
    url = f"sqlite:///{tmp_path_factory.mktemp(executor_id) / 'store.sqlite'}"
    launch(url, executor_id=executor_id, sqlite_synchronous="NORMAL")
    try:
        yield url
    finally:
        shutdown()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A private PostgreSQL server on 127.0.0.1 (Debian's binaries): its base URL.

    nox -s durable sets AGENTRT_REQUIRE_POSTGRES=1: there, missing binaries fail the
    tests (.ci/run installs them) instead of skipping them.
    """
    try:
        with private_postgres() as url:
            yield url
    except FileNotFoundError as missing:
        if os.environ.get("AGENTRT_REQUIRE_POSTGRES") == "1":
            pytest.fail(str(missing))
        pytest.skip(str(missing))


@pytest.fixture(params=["sqlite", "postgres"])
def crashable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Crashable]:
    store = ""
    if request.param == "postgres":
        base: str = request.getfixturevalue("postgres_server")
        # DBOS creates the database on first launch: one per test.
        store = f"{base}/agentrt_{uuid.uuid4().hex[:12]}"
    run = Crashable(tmp_path, store)
    yield run
    for process in run.processes:
        if process.poll() is None:
            process.kill()
            process.communicate()


# -- agentrt serve in processes of its own ----------------------------------------------------


@dataclass
class ServerProcess:
    """A running ``agentrt serve`` process, its base URL and its log file."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    executor_id: str

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Servers:
    """``agentrt serve tests.durable.server_app:make`` processes on one store."""

    workdir: Path
    store: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(
        self,
        executor_id: str,
        *,
        block: bool = False,
        store: str | None = None,
        app_version: str | None = None,
        port: int | None = None,
        gate: bool = False,
        target: str = "tests.durable.server_app:make",
    ) -> ServerProcess:
        """Start a server and wait until it listens (a bounded poll of its log).

        ``gate``: the slow tool waits until the test writes ``WORKDIR/slow.open``.

        ``app_version`` sets DBOS's application version, as a deployment of changed
        code has another (by default DBOS derives it from the workflows' code).
        ``port``: a free one by default; a restarted server may take its predecessor's,
        as a page open in a browser expects. ``target``: the agent factory served.
        """
        port = port or free_port()
        log = self.workdir / f"server-{executor_id}-{len(self.processes)}.log"
        env = dict(os.environ, AGENTRT_TEST_WORKDIR=str(self.workdir))
        env.pop("AGENTRT_TEST_BLOCK", None)
        if block:
            env["AGENTRT_TEST_BLOCK"] = "1"
        env.pop("AGENTRT_TEST_GATE", None)
        if gate:
            env["AGENTRT_TEST_GATE"] = "1"
        env.pop("DBOS__APPVERSION", None)
        if app_version is not None:
            env["DBOS__APPVERSION"] = app_version
        command = [sys.executable, "-m", "agentrt", "serve", target]
        command += ["--port", str(port), "--store", store or self.store]
        command += ["--executor-id", executor_id]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        server = ServerProcess(process, f"http://127.0.0.1:{port}", log, executor_id)
        deadline = time.monotonic() + STARTUP_LIMIT
        while "Uvicorn running on" not in server.log_text():
            if process.poll() is not None:
                raise AssertionError(f"the server ended first:\n{server.log_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the server did not start:\n{server.log_text()}")
            time.sleep(0.05)
        return server

    def kill(self, server: ServerProcess) -> None:
        """``kill -9`` the server: no cleanup, no flush, as when a machine dies."""
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()

    def wait_for(self, marker: str) -> None:
        """Wait until a tool wrote ``marker`` (a bounded poll of a real process's file)."""
        path = self.workdir / marker
        deadline = time.monotonic() + STARTUP_LIMIT
        while not path.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"{marker} did not appear within {STARTUP_LIMIT}s")
            time.sleep(0.02)

    def lines(self, name: str) -> list[str]:
        path = self.workdir / name
        return path.read_text().splitlines() if path.exists() else []


def read_events(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    until: Callable[[SequencedEvent], bool] | None = None,
    **request: Any,
) -> list[SequencedEvent]:
    """The events of an SSE response: to its end, or to the first one ``until`` accepts
    (the connection is then closed, as a client that goes away); within STREAM_LIMIT."""
    events: list[SequencedEvent] = []
    deadline = time.monotonic() + STREAM_LIMIT
    with client.stream(method, url, **request) as response:
        assert response.status_code == 200, response.read()
        decoder = SSEEventDecoder()
        for chunk in response.iter_bytes():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{method} {url}: the stream did not end within {STREAM_LIMIT:.0f} s; "
                    f"read so far: {[item.event.type for item in events]}"
                )
            for item in decoder.feed(chunk):
                events.append(item)
                if until is not None and until(item):
                    return events
        events.extend(decoder.close())
    return events


@pytest.fixture
def sqlite_servers(tmp_path: Path) -> Iterator[Servers]:
    servers = Servers(tmp_path, f"sqlite:///{tmp_path / 'store.sqlite'}")
    yield servers
    _stop(servers)


@pytest.fixture
def postgres_servers(tmp_path: Path, postgres_server: str) -> Iterator[Servers]:
    # A database of its own, which the first server creates.
    servers = Servers(tmp_path, f"{postgres_server}/agentrt_{uuid.uuid4().hex[:12]}")
    yield servers
    _stop(servers)


def _stop(servers: Servers) -> None:
    for process in servers.processes:
        if process.poll() is None:
            process.kill()
            process.wait()
