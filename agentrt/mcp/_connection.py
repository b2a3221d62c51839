"""The live session with one MCP server, held open by a task of its own.

The SDK's client is an async context manager whose task group must be entered and
left by one task. An agent's runs are many tasks (a stream runs each in a task
of its own, a server in a task per request), and the session must outlive them
all: it lives in a task no caller's task group owns (an asyncio task, or a trio
system task), started by the first use and stopped by
:meth:`Connection.stop` when the agent closes, or at the latest when the event
loop shuts down (which cancels it: the SDK then stops the server process).
Tool calls are made from the callers' own tasks; only the session's loop runs
in the hosting task.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

import anyio
import mcp_types
from mcp import Client
from mcp.client import Transport
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentrt.mcp._errors import MCPServerError

if TYPE_CHECKING:
    from mcp.client.session import IncomingMessage

    from agentrt.mcp._servers import MCPToolset

__all__ = ("Connection", "describe_error", "spawn_detached")

logger = logging.getLogger("agentrt.mcp")
T = TypeVar("T")

_DETACHED: set[asyncio.Task[None]] = set()


def spawn_detached(function: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``function()`` in a task that no caller's task group owns.

    On trio a system task (cancelled when the run ends); on asyncio a task of the
    running loop (cancelled by ``asyncio.run`` as it ends), kept referenced until
    done. ``function`` must not raise: it catches what it does not want lost.
    """
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass  # trio is imported, but this is not a trio run
        else:
            trio.lowlevel.spawn_system_task(function)
            return
    task = asyncio.get_running_loop().create_task(function())
    _DETACHED.add(task)
    task.add_done_callback(_DETACHED.discard)


class _WatchedReadStream(Generic[T]):
    """A transport's read stream that reports when it ends (the server hung up or died)."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, where the stream keeps one."""
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> T:
        try:
            item: T = await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Connection:
    """One session with a server: the task that holds it, and whether it still stands.

    Args:
        toolset: The server it connects to; the connection asks it for the
            transport and hands it each tool listing.
    """

    def __init__(self, toolset: MCPToolset) -> None:
        self.toolset = toolset
        self.client: Client | None = None
        """The SDK's client while the session stands."""
        self.lost = False
        """Whether the session ended (the server hung up or died, or it was stopped)."""
        self._failure: Exception | None = None
        self._ready = anyio.Event()
        self._finished = anyio.Event()
        self._stop = anyio.Event()
        self._relist = anyio.Event()
        self._scope = anyio.CancelScope()

    async def start(self, within: float) -> None:
        """Start the session: the server runs and its tools are listed when this returns.

        Raises:
            MCPServerError: The server could not be started or did not answer
                within ``within`` seconds; nothing of it is left running.
        """
        spawn_detached(self._host)
        try:
            with anyio.move_on_after(within):
                await self._ready.wait()
        except BaseException:
            await self.stop(grace=0)
            raise
        name = self.toolset.name
        if not self._ready.is_set():
            await self.stop(grace=0)
            raise MCPServerError(name, f"did not answer within {within:g} s of being started")
        failure = self._failure
        if failure is not None:
            await self.stop(grace=0)
            raise MCPServerError(
                name, f"could not be started: {describe_error(failure)}"
            ) from failure

    async def stop(self, grace: float) -> None:
        """End the session: the server is asked to stop, then made to; never hangs.

        Args:
            grace: Seconds the session may take to end on its own before its task
                is cancelled (the SDK then stops a server process: stdin closed,
                SIGTERM, SIGKILL, each after a bounded wait).
        """
        with anyio.CancelScope(shield=True):
            self._stop.set()
            if grace > 0 and not self._finished.is_set():
                with anyio.move_on_after(grace):
                    await self._finished.wait()
            if not self._finished.is_set():
                self._scope.cancel()
                await self._finished.wait()

    async def _host(self) -> None:
        try:
            with self._scope:
                async with Client(
                    self._watched(self.toolset.transport()),
                    message_handler=self._on_message,
                    cache=None,  # the toolset keeps the listing itself
                ) as client:
                    self.client = client
                    await self.toolset.absorb_listing(client)
                    self._ready.set()
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._relister, client)
                        capabilities = client.server_capabilities.tools
                        if (
                            client.protocol_version in MODERN_PROTOCOL_VERSIONS
                            and capabilities is not None
                            and capabilities.list_changed
                        ):
                            group.start_soon(self._listen, client)
                        await self._stop.wait()
                        group.cancel_scope.cancel()
        except Exception as error:  # this task has no caller to raise to
            if self._ready.is_set():
                logger.warning(
                    "MCP server %r: the session ended with %s",
                    self.toolset.name,
                    describe_error(error),
                )
            else:
                self._failure = error
        finally:
            self.client = None
            self.lost = True
            self._ready.set()
            self._finished.set()

    def _watched(self, transport: AbstractAsyncContextManager[Any]) -> Transport:
        @asynccontextmanager
        async def watched() -> AsyncIterator[Any]:
            async with transport as (read_stream, write_stream):
                yield _WatchedReadStream[Any](read_stream, self._on_end), write_stream

        return watched()

    def _on_end(self) -> None:
        # The server hung up or died: leave the session now, which reaps its process,
        # rather than when the agent closes. The next call starts a new one.
        self.lost = True
        self._stop.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._relist.set()
        elif isinstance(message, Exception):
            logger.warning(
                "MCP server %r sent something unreadable: %s",
                self.toolset.name,
                describe_error(message),
            )

    async def _relister(self, client: Client) -> None:
        while True:
            await self._relist.wait()
            self._relist = anyio.Event()  # changes announced from here on list again
            try:
                with anyio.fail_after(self.toolset.startup_timeout):
                    await self.toolset.absorb_listing(client)
            except Exception as error:
                logger.warning(
                    "MCP server %r: listing its changed tools failed: %s",
                    self.toolset.name,
                    describe_error(error),
                )

    async def _listen(self, client: Client) -> None:
        # Servers of the 2026-07-28 protocol announce changes on a subscription only.
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                self._relist.set()  # a change made before the subscription stood
                async for _event in subscription:
                    self._relist.set()
        except Exception as error:
            logger.warning(
                "MCP server %r: no announcements of tool changes (%s)",
                self.toolset.name,
                describe_error(error),
            )


def describe_error(error: BaseException) -> str:
    """``Type: message`` of an error (of the one error in a group of one)."""
    if isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        return describe_error(error.exceptions[0])
    # The first line: the SDK's schema errors go on with the whole schema.
    text = str(error).strip().split("\n", 1)[0]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
