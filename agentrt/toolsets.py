"""Toolsets: tools an agent gets from something that must be started first.

A function tool is known when the agent is built. A toolset's tools are not: an
MCP server (see :mod:`agentrt.mcp`) lists them once its process runs, and may
change them later. ``Agent(tools=[...])`` takes toolsets next to functions::

    agent = Agent(model=model, tools=[add, MCPServerStdio("python", ["-m", "mcp_server_time"])])

The agent opens its toolsets when it starts (``async with agent:``) or on its first
run, offers their tools with its own, and closes them with itself
(:meth:`Agent.close <agentrt.agent.Agent.close>`). Tool names must stay unique across
the function tools and every toolset: a clash is a :class:`ToolNameConflictError`
when the toolsets open (a toolset's own option, such as an MCP server's
``prefix=``, tells them apart).

Anything with the :class:`Toolset` protocol's four members is a toolset; the
protocol is what the agent relies on, nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import anyio

from agentrt.exceptions import AgentrtError, ToolDefinitionError
from agentrt.tools import Tool

__all__ = ("ToolNameConflictError", "Toolset", "ToolsetError")


@runtime_checkable
class Toolset(Protocol):
    """A source of tools that is opened before use and closed after.

    The agent calls :meth:`open` once when it starts and :meth:`close` once when it
    closes; a toolset given to several agents is opened by each (what that means
    is the toolset's choice: one process each, or one shared). Between the two,
    :attr:`tools` are offered to the model and called like function tools, through
    the same events. :attr:`version` changes whenever :attr:`tools` does, so that
    the agent rebuilds its table only then.
    """

    @property
    def name(self) -> str:
        """What the toolset is called in errors (an MCP server's name, say)."""
        ...

    @property
    def tools(self) -> Sequence[Tool[Any, Any]]:
        """The tools offered now (empty before :meth:`open`)."""
        ...

    @property
    def version(self) -> int:
        """A number that changes whenever :attr:`tools` changes."""
        ...

    async def open(self) -> None:
        """Start (or join) the toolset and learn its tools; called again after a failure."""
        ...

    async def close(self) -> None:
        """Leave the toolset; the last user's close stops it. Must not hang."""
        ...


class ToolsetError(AgentrtError):
    """A toolset could not be opened or used (an MCP server that does not start, say)."""


class ToolNameConflictError(ToolDefinitionError):
    """Two tools offered to one agent have the same name.

    Attributes:
        tool_name: The name given twice.
        sources: Where each came from (``"function tools"``, a toolset's name).
    """

    def __init__(self, tool_name: str, sources: tuple[str, str]) -> None:
        self.sources = sources
        super().__init__(
            tool_name,
            f"both {sources[0]} and {sources[1]} offer a tool of this name; give a toolset "
            "a prefix (MCPServerStdio(..., prefix='...')) to tell them apart",
        )


class AgentToolsets:
    """The toolsets of one agent: opening, the merged tool table, closing.

    For :class:`~agentrt.agent.Agent`, which keeps one when it was given toolsets.
    The table is rebuilt only when a toolset's :attr:`~Toolset.version` moved.

    Args:
        functions: The agent's own tools by name.
        toolsets: The toolsets, in the order given.
    """

    __slots__ = ("_functions", "_lock", "_opened", "_table", "_versions", "toolsets")

    def __init__(self, functions: dict[str, Tool[Any, Any]], toolsets: Sequence[Toolset]):
        self._functions = functions  # the agent's own table, never changed
        self.toolsets = tuple(toolsets)
        self._opened: list[Toolset] = []
        self._table: dict[str, Tool[Any, Any]] = self._functions
        self._versions: tuple[int, ...] | None = None
        self._lock = anyio.Lock()

    async def open(self) -> None:
        """Open every toolset not open yet, then check the names of all the tools.

        Raises:
            ToolNameConflictError: Two tools have one name; the toolsets opened here
                are closed again.
            Exception: What a toolset's ``open()`` raised (those opened before it
                by this call are closed again).
        """
        if len(self._opened) == len(self.toolsets):
            return
        async with self._lock:
            opened_now: list[Toolset] = []
            try:
                for toolset in self.toolsets:
                    if toolset not in self._opened:
                        await toolset.open()
                        opened_now.append(toolset)
                        self._opened.append(toolset)
                self._versions = None
                self.table()
            except BaseException:
                with anyio.CancelScope(shield=True):
                    for toolset in reversed(opened_now):
                        self._opened.remove(toolset)
                        await toolset.close()
                raise

    def table(self) -> dict[str, Tool[Any, Any]]:
        """The function tools, then each open toolset's, by name.

        Raises:
            ToolNameConflictError: A toolset now offers a name already taken (after
                it changed its tools, or when it opened).
        """
        opened = self._opened
        if not opened:
            return self._functions
        versions = tuple(toolset.version for toolset in opened)
        if versions == self._versions:
            return self._table
        table = dict(self._functions)
        sources = dict.fromkeys(table, "the function tools")
        for toolset in opened:
            source = f"toolset {toolset.name!r}"
            for item in toolset.tools:
                taken = sources.get(item.name)
                if taken is not None:
                    raise ToolNameConflictError(item.name, (taken, source))
                table[item.name] = item
                sources[item.name] = source
        self._table = table
        self._versions = versions
        return table

    async def close(self) -> None:
        """Close every open toolset, last opened first, even when one of them fails.

        Raises:
            Exception: The first failure of a toolset's ``close()``.
        """
        failures: list[Exception] = []
        with anyio.CancelScope(shield=True):
            while self._opened:
                try:
                    await self._opened.pop().close()
                except Exception as error:  # the others are still closed
                    failures.append(error)
        self._versions = None
        if failures:
            raise failures[0]
