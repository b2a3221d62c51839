"""MCP servers as toolsets: a process on stdio, or an endpoint of the streamable HTTP transport."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams

from agentrt.mcp._connection import Connection, describe_error
from agentrt.mcp._content import result_text, truncate
from agentrt.mcp._errors import MCPServerError, MCPToolError
from agentrt.mcp._tool import ConfirmationOption, MCPTool, RejectedTool, build_tool

__all__ = ("MCPServerHTTP", "MCPServerInProcess", "MCPServerStdio", "MCPToolset")

logger = logging.getLogger("agentrt.mcp")

# A tools/list that pages on and on cannot keep a server from starting.
_MAX_PAGES = 100


def _positive(name: str, value: object, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


class MCPToolset:
    """What every MCP server toolset shares: its tools, its session, its calls.

    Use :class:`MCPServerStdio` or :class:`MCPServerHTTP`. The session starts when
    the agent starts (or on its first run), lists the tools, keeps the list until
    the server announces a change (then lists them again), and ends when the agent
    closes. A server that dies is started again by the next call of one of its
    tools; the call it died in fails with an error naming it.

    Args:
        name: The server's name in errors and logs.
        prefix: Put ``prefix_`` before each tool's name, to tell apart servers (or
            function tools) that use the same names. The server still gets its own.
        shared: Let several agents use this server object: one session, which the
            last agent to close ends. Otherwise a second agent opening it is an error.
        requires_confirmation: Which calls wait for a person's approval (see
            :mod:`agentrt.stream.confirm`): ``None`` (default) the tools the server
            marks ``destructiveHint: true``, ``True`` or ``False`` every tool or
            none, or a collection of the server's tool names.
        timeout: Seconds a tool call may take before it fails with a timeout.
        startup_timeout: Seconds the server may take to start and list its tools.
        shutdown_timeout: Seconds the session may take to end on its own when
            closed before it is cut (a process is then killed, within seconds).
        max_output_chars: Longest tool message kept (the rest is cut, and the
            message says how much); ``None`` for no limit.

    Raises:
        ValueError: A time limit is not positive, or the prefix is not a name.
        TypeError: ``requires_confirmation`` is of the wrong type.
    """

    def __init__(
        self,
        *,
        name: str,
        prefix: str | None = None,
        shared: bool = False,
        requires_confirmation: ConfirmationOption = None,
        timeout: float | None = None,
        startup_timeout: float = 30.0,
        shutdown_timeout: float = 5.0,
        max_output_chars: int | None = 100_000,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"an MCP server's name is a non-empty string, got {name!r}")
        if prefix is not None and (
            not isinstance(prefix, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,60}", prefix)
        ):
            raise ValueError(f"prefix must be letters, digits, '_' or '-', got {prefix!r}")
        if requires_confirmation is not None and (
            isinstance(requires_confirmation, str)
            or not isinstance(requires_confirmation, bool | Sequence | set | frozenset)
        ):
            raise TypeError(
                "requires_confirmation is None, a bool or a collection of tool names, "
                f"got {requires_confirmation!r}"
            )
        _positive("timeout", timeout, allow_none=True)
        _positive("startup_timeout", startup_timeout)
        _positive("shutdown_timeout", shutdown_timeout)
        if max_output_chars is not None and (
            isinstance(max_output_chars, bool)
            or not isinstance(max_output_chars, int)
            or max_output_chars < 1
        ):
            raise ValueError(f"max_output_chars must be a positive int, got {max_output_chars!r}")
        self._name = name
        self.prefix = prefix
        self.shared = shared
        self.requires_confirmation = requires_confirmation
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self.max_output_chars = max_output_chars
        self._tools: tuple[MCPTool, ...] = ()
        self._rejected: dict[str, str] = {}
        self._version = 0
        self._changed = anyio.Event()
        self._users = 0
        self._connection: Connection | None = None
        self._lock = anyio.Lock()
        self.server_info: mcp_types.Implementation | None = None
        """What the server said of itself (name, version), once connected."""

    # -- the Toolset protocol ----------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's name in errors and logs."""
        return self._name

    @property
    def tools(self) -> tuple[MCPTool, ...]:
        """The server's tools as last listed (empty before the first session)."""
        return self._tools

    @property
    def version(self) -> int:
        """A number that moves each time the listed tools change."""
        return self._version

    async def open(self) -> None:
        """Start the session (or join it, when ``shared``) and list the tools.

        Raises:
            MCPServerError: The server could not be started or listed, or it is not
                shared and another agent has it open.
        """
        if self._users and not self.shared:
            raise MCPServerError(
                self.name,
                "another agent has it open; pass shared=True to share its session, "
                "or give each agent a server object of its own",
            )
        self._users += 1
        try:
            await self._connected()
        except BaseException:
            self._users -= 1
            raise

    async def close(self) -> None:
        """Leave the session; the last user's close ends it (within bounded time)."""
        if self._users == 0:
            return
        self._users -= 1
        if self._users == 0:
            connection, self._connection = self._connection, None
            if connection is not None:
                await connection.stop(self.shutdown_timeout)

    # -- tools ------------------------------------------------------------------------------

    @property
    def rejected_tools(self) -> dict[str, str]:
        """The listed tools left out (by the server's names), each with the reason."""
        return dict(self._rejected)

    async def tools_changed(self, since: int) -> int:
        """Wait until :attr:`version` is no longer ``since``; return the new version.

        The session lists the tools again by itself when the server announces a
        change; this waits for that (or any other) listing to change them.
        """
        while self._version == since:
            await self._changed.wait()
        return self._version

    async def refresh(self) -> None:
        """List the tools again now (whether or not the server announced a change).

        Raises:
            MCPServerError: The session is not open, or the listing failed.
        """
        connection = self._connection
        client = None if connection is None else connection.client
        if client is None:
            raise MCPServerError(self.name, "not connected: open it (start the agent) first")
        try:
            with anyio.fail_after(self.startup_timeout):
                await self.absorb_listing(client)
        except Exception as error:
            raise MCPServerError(
                self.name, f"listing tools failed: {describe_error(error)}"
            ) from error

    async def absorb_listing(self, client: Client) -> None:
        """List the server's tools through ``client`` and make them :attr:`tools`.

        For the session (:class:`~agentrt.mcp._connection.Connection`): a tool that
        cannot be offered (a name no model accepts, an invalid input schema, a name
        listed twice) is left out with a warning; the others stay usable.
        """
        definitions: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            definitions.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self.server_info = client.server_info
        previous = {tool.remote_name: tool for tool in self._tools}
        tools: dict[str, MCPTool] = {}
        rejected: dict[str, str] = {}
        for definition in definitions:
            known = previous.get(definition.name)
            if known is not None and known.definition == definition:
                tools[known.name] = known  # unchanged: keep its compiled validator
                continue
            try:
                tool = build_tool(
                    self,
                    definition,
                    prefix=self.prefix,
                    requires_confirmation=self.requires_confirmation,
                    timeout=self.timeout,
                )
                if tool.name in tools:
                    raise RejectedTool("the server lists this name twice")
            except RejectedTool as error:
                reason = rejected[definition.name] = str(error)
                if self._rejected.get(definition.name) != reason:  # once, not at every listing
                    logger.warning(
                        "MCP server %r: tool %r left out: %s", self.name, definition.name, reason
                    )
                continue
            tools[tool.name] = tool
        self._rejected = rejected
        listed = tuple(tools.values())
        if listed != self._tools:
            self._tools = listed
            self._version += 1
            self._changed.set()
            self._changed = anyio.Event()

    # -- calls ------------------------------------------------------------------------------

    async def call(self, tool: MCPTool, arguments: dict[str, Any]) -> str:
        """Call ``tool`` with checked ``arguments``; the result's text.

        Raises:
            MCPToolError: The server answered an error or an ``isError`` result, the
                structured content breaks the tool's output schema, the server is
                gone, or it died during the call.
        """
        try:
            connection = await self._connected()
        except MCPServerError as error:
            raise MCPToolError(self.name, tool.name, error.reason) from error
        client = connection.client
        if client is None:
            raise MCPToolError(self.name, tool.name, "the server stopped before the call")
        try:
            result = await client.call_tool(tool.remote_name, arguments)
        except MCPError as error:
            if error.code == mcp_types.CONNECTION_CLOSED:
                reason = (
                    "the server closed the connection during the call (it crashed or "
                    "exited); the next call starts it again"
                )
            else:
                reason = f"the server answered with error {error.code}: {error.message}"
            raise MCPToolError(self.name, tool.name, reason) from error
        except Exception as error:  # a result that breaks the output schema, say
            raise MCPToolError(self.name, tool.name, describe_error(error)) from error
        text = truncate(
            result_text(result.content, result.structured_content), self.max_output_chars
        )
        if result.is_error:
            raise MCPToolError(
                self.name, tool.name, text or "the tool failed and said nothing", is_result=True
            )
        return text

    async def _connected(self) -> Connection:
        """The standing session, started (again) if there is none."""
        connection = self._connection
        if connection is not None and not connection.lost:
            return connection
        async with self._lock:
            connection = self._connection
            if connection is not None and not connection.lost:
                return connection
            if self._users == 0:
                raise MCPServerError(self.name, "closed: no agent has it open")
            if connection is not None:
                await connection.stop(self.shutdown_timeout)  # reap what is left of it
            connection = Connection(self)
            await connection.start(self.startup_timeout)
            self._connection = connection
            return connection

    def transport(self) -> AbstractAsyncContextManager[Any]:
        """The SDK transport to the server: an async context manager of its streams."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} tools={len(self._tools)}>"


class MCPServerStdio(MCPToolset):
    """An MCP server run as a process that speaks MCP on its stdin and stdout.

    ``MCPServerStdio("python", ["-m", "mcp_server_time"])``. The process is started
    when the agent starts (or on its first run) and stopped when the agent closes:
    its stdin is closed, then it gets SIGTERM, then SIGKILL (the whole process
    group), each after a bounded wait. Runs a subprocess.

    Args:
        command: The program to run.
        args: Its arguments.
        env: Environment variables for it, added to the few the MCP SDK passes on
            (``PATH``, ``HOME``, ``USER``, ``SHELL``, ``TERM``, ``LOGNAME``).
        cwd: Its working directory (default: this process's).
        stderr: Where its standard error goes (default: this process's).
        name: Its name in errors and logs (default: the command line).
        **options: See :class:`MCPToolset` (``prefix``, ``shared``,
            ``requires_confirmation``, ``timeout``, ...).

    Raises:
        TypeError: ``args`` is not a list of strings, or ``env`` not a mapping of them.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: TextIO | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(command, str) or not command:
            raise TypeError(f"command must be a non-empty string, got {command!r}")
        if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
            raise TypeError(f"args must be a list of strings, got {args!r}")
        if env is not None and not all(
            isinstance(key, str) and isinstance(value, str) for key, value in env.items()
        ):
            raise TypeError("env must map strings to strings")
        self.command = command
        self.args = tuple(args)
        self.env = None if env is None else dict(env)
        self.cwd = None if cwd is None else Path(cwd)
        self.stderr = stderr
        shown = " ".join((Path(command).name, *self.args))
        super().__init__(name=name or (shown if len(shown) <= 60 else shown[:59] + "…"), **options)

    def transport(self) -> AbstractAsyncContextManager[Any]:
        """The server's process and its pipes (the SDK's ``stdio_client``)."""
        parameters = StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )
        return stdio_client(parameters, errlog=self.stderr or sys.stderr)


class MCPServerHTTP(MCPToolset):
    """An MCP server reached at a URL with the streamable HTTP transport.

    ``MCPServerHTTP("http://127.0.0.1:3001/mcp", headers={"Authorization": "..."})``.
    The session is opened when the agent starts (or on its first run) and ended,
    with the server told so, when the agent closes.

    Args:
        url: The server's MCP endpoint.
        headers: Sent with every request (credentials, say).
        http_timeout: Seconds to connect and to send a request; a response may
            stream for longer (five minutes between two pieces).
        name: Its name in errors and logs (default: the URL).
        **options: See :class:`MCPToolset` (``prefix``, ``shared``,
            ``requires_confirmation``, ``timeout``, ...).

    Raises:
        ValueError: ``url`` is not an http(s) URL.
        TypeError: ``headers`` is not a mapping of strings.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_timeout: float = 30.0,
        name: str | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http:// or https:// URL, got {url!r}")
        if headers is not None and not all(
            isinstance(key, str) and isinstance(value, str) for key, value in headers.items()
        ):
            raise TypeError("headers must map strings to strings")
        _positive("http_timeout", http_timeout)
        self.url = url
        self.headers = dict(headers or {})
        self.http_timeout = http_timeout
        super().__init__(name=name or url, **options)

    def transport(self) -> AbstractAsyncContextManager[Any]:
        """The SDK's ``streamable_http_client`` over an HTTP client with the headers."""

        @asynccontextmanager
        async def connect() -> AsyncIterator[Any]:
            timeout = httpx2.Timeout(self.http_timeout, read=300.0)
            async with (
                httpx2.AsyncClient(headers=self.headers, timeout=timeout) as http,
                streamable_http_client(self.url, http_client=http) as streams,
            ):
                yield streams

        return connect()


class MCPServerInProcess(MCPToolset):
    """An MCP server object of the SDK run in this process, over in-memory streams.

    For a server written with the SDK (its ``MCPServer``, or the low-level
    ``Server``) that an agent should use without a process of its own, and for
    tests: the session is the same as with :class:`MCPServerStdio`, the JSON-RPC
    messages travel through memory. The server runs in the session's task.

    Args:
        server: The SDK server object.
        name: Its name in errors and logs (default: the server's own).
        **options: See :class:`MCPToolset` (``prefix``, ``shared``,
            ``requires_confirmation``, ``timeout``, ...).

    Raises:
        TypeError: ``server`` is not an SDK server.
    """

    def __init__(
        self, server: Server[Any] | MCPServer, *, name: str | None = None, **options: Any
    ) -> None:
        if isinstance(server, MCPServer):
            server = server._lowlevel_server  # the SDK offers no public accessor
        if not isinstance(server, Server):
            raise TypeError(f"server must be an mcp Server or MCPServer, got {server!r:.80}")
        self.server = server
        super().__init__(name=name or server.name, **options)

    def transport(self) -> AbstractAsyncContextManager[Any]:
        """Memory streams to the server, which runs beside the session until it ends."""
        server = self.server

        @asynccontextmanager
        async def connect() -> AsyncIterator[Any]:
            async with (
                create_client_server_memory_streams() as (client_streams, server_streams),
                anyio.create_task_group() as group,
            ):
                options = server.create_initialization_options()
                group.start_soon(server.run, *server_streams, options)
                try:
                    yield client_streams
                finally:
                    group.cancel_scope.cancel()

        return connect()
