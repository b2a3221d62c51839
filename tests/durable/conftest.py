"""Crash tests run a durable agent in real processes (tests/durable/app.py) and kill them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_LIMIT = 60.0  # seconds a process may take to reach a marker (a cold start on 2 cores)


@dataclass
class Crashable:
    """A durable run in a process of its own, on a SQLite store in ``workdir``."""

    workdir: Path
    run_id: str = "run-1"
    processes: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def store(self) -> str:
        return f"sqlite:///{self.workdir / 'store.sqlite'}"

    def start(
        self, mode: str, *, block: bool = False, stream: bool = False
    ) -> subprocess.Popen[str]:
        env = dict(os.environ)
        env.update(
            AGENTRT_TEST_WORKDIR=str(self.workdir),
            AGENTRT_TEST_EXECUTOR="worker-1",
            AGENTRT_TEST_STREAM="1" if stream else "0",
        )
        env.pop("AGENTRT_TEST_BLOCK", None)
        if block:
            env["AGENTRT_TEST_BLOCK"] = "1"
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.durable.app", mode, self.store, self.run_id],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.processes.append(process)
        return process

    def finish(self, mode: str, **options: bool) -> str:
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


@pytest.fixture
def crashable(tmp_path: Path) -> Iterator[Crashable]:
    run = Crashable(tmp_path)
    yield run
    for process in run.processes:
        if process.poll() is None:
            process.kill()
            process.communicate()
