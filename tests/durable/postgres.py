"""A private PostgreSQL server from Debian's binaries, for the durable tests and benches."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STARTUP_LIMIT = 60.0  # seconds the server may take to accept connections


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _as_postgres(command: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root: CI runs as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def private_postgres() -> Iterator[str]:
    """Start a PostgreSQL server on 127.0.0.1 in a fresh data directory; its base URL.

    Raises:
        FileNotFoundError: PostgreSQL is not installed (apt-get install postgresql).
    """
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise FileNotFoundError("PostgreSQL is not installed (apt-get install postgresql)")
    bin_dir = Path(found[-1]).parent
    data = Path(tempfile.mkdtemp(prefix="agentrt-pg-"))
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    subprocess.run(
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
    )
    port = free_port()
    command = [str(bin_dir / "postgres"), "-D", str(data), "-h", "127.0.0.1"]
    command += ["-p", str(port), "-k", str(data)]
    server = subprocess.Popen(
        _as_postgres(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        ready = [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-q"]
        while subprocess.run(ready, check=False).returncode != 0:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the PostgreSQL server did not start")
            time.sleep(0.05)
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)
