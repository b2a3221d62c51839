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


class PrivatePostgres:
    """A PostgreSQL server in a fresh data directory on 127.0.0.1, stopped and started at will.

    Raises:
        FileNotFoundError: PostgreSQL is not installed (apt-get install postgresql).
    """

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise FileNotFoundError("PostgreSQL is not installed (apt-get install postgresql)")
        self._bin = Path(found[-1]).parent
        self._data = Path(tempfile.mkdtemp(prefix="agentrt-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self._data, "postgres", "postgres")
        initdb = [str(self._bin / "initdb"), "-D", str(self._data), "-A", "trust"]
        subprocess.run(_as_postgres([*initdb, "-U", "postgres"]), check=True, capture_output=True)
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}"
        self._server: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        command = [str(self._bin / "postgres"), "-D", str(self._data), "-h", "127.0.0.1"]
        command += ["-p", str(self.port), "-k", str(self._data)]
        self._server = server = subprocess.Popen(
            _as_postgres(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + STARTUP_LIMIT
        ready = [str(self._bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"]
        while subprocess.run(ready, check=False).returncode != 0:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the PostgreSQL server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (its clients' connections break)."""
        if self._server is not None:
            # Fast shutdown, waited for: clients are disconnected, the port is free.
            stop = [str(self._bin / "pg_ctl"), "-D", str(self._data), "-m", "fast", "-w", "stop"]
            subprocess.run(_as_postgres(stop), check=False, capture_output=True)
            self._server.wait()
            self._server = None

    def remove(self) -> None:
        """Stop the server and delete its data."""
        self.stop()
        shutil.rmtree(self._data, ignore_errors=True)


@contextmanager
def private_postgres() -> Iterator[str]:
    """A started :class:`PrivatePostgres`, removed afterwards: its base URL.

    Raises:
        FileNotFoundError: PostgreSQL is not installed (apt-get install postgresql).
    """
    server = PrivatePostgres()
    try:
        server.start()
        yield server.url
    finally:
        server.remove()
