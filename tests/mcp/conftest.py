"""Real MCP servers for the tests of nox -s mcp: where they are, how to start and find them.

``mcp-server-time`` comes from PyPI (the session installs it), the everything server
from npm (the session runs ``npm ci`` in tests/mcp/node), the hostile server is
tests/mcp/hostile_server.py. Every server process started here gets a tag in its
environment, so that a test can find it (and any orphan) in /proc.
"""

import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

HERE = Path(__file__).parent
HOSTILE = str(HERE / "hostile_server.py")
EVERYTHING = HERE / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything"
EVERYTHING_JS = str(EVERYTHING / "dist" / "index.js")
TAG_VARIABLE = "AGENTRT_MCP_TEST_TAG"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == HERE:
            item.add_marker(pytest.mark.mcp)


@pytest.fixture
def tag() -> str:
    """A tag for this test's server processes (their environment carries it)."""
    return uuid.uuid4().hex


def tagged_processes(tag: str) -> list[int]:
    """The live processes whose environment carries ``tag`` (any parent: orphans too)."""
    found = []
    needle = f"{TAG_VARIABLE}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def node() -> str:
    if not Path(EVERYTHING_JS).exists():
        pytest.fail(f"{EVERYTHING_JS} is missing: run `npm ci` in {EVERYTHING.parents[2]}")
    return "node"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def serve_http(command: list[str], tag: str, ready: str, port: int) -> AsyncIterator[str]:
    """Start an MCP server's streamable HTTP transport for real; its URL while it runs.

    ``ready`` is what the server writes on stderr once it listens.
    """
    env = {**os.environ, "PORT": str(port), TAG_VARIABLE: tag}
    process: Process = await anyio.open_process(command, env=env, stdout=None)
    try:
        assert process.stderr is not None
        seen = ""
        with anyio.fail_after(30):
            async for chunk in TextReceiveStream(process.stderr):
                seen += chunk
                if ready in seen:
                    break
            else:
                pytest.fail(f"{command} exited: {seen}")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()


@pytest.fixture
async def everything_http(tag: str) -> AsyncIterator[str]:
    """The everything server's streamable HTTP transport (Node): its URL."""
    port = free_port()
    command = [node(), EVERYTHING_JS, "streamableHttp"]
    async for url in serve_http(command, tag, f"listening on port {port}", port):
        yield url


@pytest.fixture
async def hostile_http(tag: str) -> AsyncIterator[str]:
    """The hostile server's streamable HTTP transport (the SDK's app on uvicorn): its URL."""
    port = free_port()
    command = [sys.executable, HOSTILE, "--http", str(port)]
    async for url in serve_http(command, tag, "Uvicorn running on", port):
        yield url


PYTHON = sys.executable
