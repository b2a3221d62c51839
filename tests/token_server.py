"""``agentrt serve`` with a token, in a process of its own, for the official clients' tests.

The AG-UI (tests/agui) and A2A (tests/a2a_clients) client tests drive a live server
with Node and Python clients no one here wrote; both start it the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGET = "examples/agui_endpoint.py:make_agent"


@contextlib.contextmanager
def serving(
    token: str, *options: str, target: str = TARGET, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``agentrt serve`` on a port the system picks, with ``token``: (its URL, process)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agentrt", "serve", target, "--port", "0", *options],
        cwd=ROOT,
        env={
            **os.environ,
            "AGENTRT_TOKEN": token,
            "OPENAI_BASE_URL": "",
            "AGENTRT_MODEL": "",
            **(env or {}),
        },
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    drain = threading.Thread(target=process.stderr.read, daemon=True)
    try:
        seen: list[str] = []
        # uvicorn says where it listens once it does: the port the system gave it.
        for line in process.stderr:
            seen.append(line)
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                break
        else:
            pytest.fail(f"agentrt serve did not start:\n{''.join(seen)}")
        # Its access log goes on: read it, or a full pipe would block the server.
        drain.start()
        yield found.group(1), process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)
        if drain.is_alive():
            drain.join(timeout=30)
        process.stderr.close()
