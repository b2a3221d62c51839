"""The built-in shell tool: run a command on this machine, stream its output while it runs.

::

    agent = Agent(model=..., tools=[shell_tool(timeout=30, max_output=30_000)])
    async with agent.stream("How much disk is free?") as events:
        async for event in events:
            if isinstance(event, ToolCallConfirmationEvent):    # asks first, by default
                await events.confirm(event.tool_call.id, "approve")
            elif isinstance(event, ShellOutputEvent):
                print(event.output, end="")                     # stdout and stderr, line by line

The command runs as ``/bin/sh -c <command>`` in a session of its own, through
``anyio.open_process`` (asyncio's subprocess support; no threads). stdout and stderr
are read concurrently, line by line, and each line goes to the *output sinks* as it
arrives. The tool's response (what the model reads) is the same text, followed by a
note when something happened to the command::

    [output truncated: 123456 more bytes not shown (limit 30000 bytes)]
    [timed out after 30s: the process was killed]
    [exit code 2]
    [exit code 0, no output]

and that note reaches the sinks too, so the concatenated output of a call is its
response. On timeout (or when the run is cancelled) the whole process group is
killed, so a command's children do not outlive it.

How the output reaches hooks and the stream: the run sets a
:class:`~agentrt.tools.ToolContext` for every tool call, and the shell tool reports
each line through it (:meth:`~agentrt.tools.ToolContext.emit`): a ``tool:call:output``
signal carrying the call (``agent.hooks.on_tool_call_output``), which the
:class:`~agentrt.stream.StreamAdapter` relays as ``shell`` events with the call's id,
so parallel commands stay apart. Outside a run (the tool called directly) there is no
context; pass ``on_output=`` to :func:`shell_tool`, or install a sink for a block with
:func:`shell_output_to`.
"""

import codecs
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio
from anyio.abc import ByteReceiveStream, Process

from agentrt.tools import Tool, current_tool_context

__all__ = (
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "ShellOutputSink",
    "current_shell_output",
    "shell_output_to",
    "shell_tool",
)

DEFAULT_TIMEOUT = 30.0
"""Seconds a command may run before it is killed."""
DEFAULT_MAX_OUTPUT = 30_000
"""Bytes of output (stdout and stderr together) kept for the response."""

ShellOutputSink: TypeAlias = Callable[[str], Awaitable[None]]
"""An async callable that receives the output of shell commands, a line (or note) at a time."""

# Pieces of a line longer than this go out without waiting for its end, so that a
# command writing megabytes without a newline neither stalls the stream nor the memory.
_MAX_LINE = 8192

_SINK: ContextVar[ShellOutputSink | None] = ContextVar("agentrt_shell_output", default=None)


def current_shell_output() -> ShellOutputSink | None:
    """The output sink installed for the current run, if any (see :func:`shell_output_to`)."""
    return _SINK.get()


@contextmanager
def shell_output_to(sink: ShellOutputSink | None) -> Iterator[None]:
    """Send the output of shell tools run within the block (and its tasks) to ``sink``.

    ``None`` sends it nowhere. Blocks nest: the innermost sink wins.

    Args:
        sink: An async callable receiving each piece of output.
    """
    if sink is not None and not callable(sink):
        raise TypeError(f"a shell output sink is an async callable, got {type(sink).__name__}")
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


@dataclass(frozen=True, slots=True)
class _Settings:
    shell: str
    timeout: float
    max_output: int
    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str] | None
    on_output: ShellOutputSink | None


def shell_tool(
    *,
    name: str = "shell",
    description: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    shell: str = "/bin/sh",
    requires_confirmation: bool = True,
    on_output: ShellOutputSink | None = None,
) -> Tool[Any, Any]:
    """A tool that runs a shell command and answers with its output (see the module docs).

    Args:
        name: The tool's name, as the model sees it.
        description: What the model reads about it (a default says what it does).
        timeout: Seconds a command may run; then its process group is killed and
            the response says so.
        max_output: Bytes of output kept for the response and the stream; the rest
            is read and counted but not kept.
        cwd: The working directory of commands (default: this process's).
        env: The environment of commands (default: this process's).
        shell: The shell that runs ``<shell> -c <command>``.
        requires_confirmation: Ask a person before each command (the stream's
            ``tool_call_confirmation``); only turn it off for sandboxes.
        on_output: Also send the output here (besides the stream's sink).

    Returns:
        The tool, with one argument: ``command``.

    Raises:
        ValueError: ``timeout`` or ``max_output`` is not positive.
        TypeError: ``on_output`` is not callable.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output <= 0:
        raise ValueError(f"max_output must be a positive number of bytes, got {max_output!r}")
    if on_output is not None and not callable(on_output):
        raise TypeError(f"on_output must be an async callable, got {type(on_output).__name__}")
    settings = _Settings(shell, float(timeout), max_output, cwd, env, on_output)

    async def run_shell_command(command: str) -> str:
        """Run a shell command on the user's machine and return its output.

        Args:
            command: The command line, run by the shell (``sh -c``).
        """
        return await _run(command, settings)

    return Tool(
        run_shell_command,
        name=name,
        description=description
        or (
            f"Run a command with {shell} on the user's machine and return its output "
            f"(stdout and stderr; at most {max_output} bytes; killed after {timeout:g}s)."
        ),
        requires_confirmation=requires_confirmation,
    )


class _Output:
    """The output of one command: what is kept (up to the cap), what was dropped, the sinks."""

    def __init__(self, limit: int, sinks: list[ShellOutputSink]) -> None:
        self.limit = limit
        self.sinks = sinks
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    async def pump(self, stream: ByteReceiveStream) -> None:
        """Read ``stream`` to its end, passing on each line as it completes."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = bytearray()
        async for chunk in stream:
            pending += chunk
            start = 0
            while (newline := pending.find(b"\n", start)) >= 0:
                await self._piece(bytes(pending[start : newline + 1]), decoder)
                start = newline + 1
            del pending[:start]
            if len(pending) >= _MAX_LINE:
                await self._piece(bytes(pending), decoder)
                pending.clear()
        await self._piece(bytes(pending), decoder, final=True)

    async def _piece(
        self, data: bytes, decoder: codecs.IncrementalDecoder, *, final: bool = False
    ) -> None:
        room = self.limit - self.kept
        if len(data) > room:
            self.dropped += len(data) - room
            data = data[:room]
        self.kept += len(data)
        text = decoder.decode(data, final) if data or final else ""
        if text:
            await self.write(text)

    async def write(self, text: str) -> None:
        self.parts.append(text)
        for sink in self.sinks:
            await sink(text)


async def _run(command: str, settings: _Settings) -> str:
    # The run's own channel first: each line is a tool:call:output signal of this call,
    # which hooks observe and the stream relays with the call's id.
    context = current_tool_context()
    sinks = [
        sink
        for sink in (
            None if context is None else context.emit,
            current_shell_output(),
            settings.on_output,
        )
        if sink is not None
    ]
    output = _Output(settings.max_output, sinks)
    process = await anyio.open_process(
        [settings.shell, "-c", command],
        stdin=subprocess.DEVNULL,
        cwd=settings.cwd,
        env=settings.env,
        start_new_session=True,  # its own process group: a timeout kills its children too
    )
    try:
        with anyio.move_on_after(settings.timeout) as deadline:
            assert process.stdout is not None  # both are pipes: open_process's default
            assert process.stderr is not None
            async with anyio.create_task_group() as group:
                group.start_soon(output.pump, process.stdout)
                group.start_soon(output.pump, process.stderr)
            await process.wait()
    finally:
        # Timed out, cancelled, or a sink failed: the command must not outlive the call.
        if process.returncode is None:
            _kill_group(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    notes: list[str] = []
    if output.dropped:
        notes.append(
            f"[output truncated: {output.dropped} more bytes not shown "
            f"(limit {settings.max_output} bytes)]"
        )
    if deadline.cancelled_caught:
        notes.append(f"[timed out after {settings.timeout:g}s: the process was killed]")
    elif process.returncode:
        notes.append(f"[exit code {process.returncode}]")
    elif not output.parts:
        notes.append("[exit code 0, no output]")
    if notes:
        text = "\n".join(notes) + "\n"
        if output.parts and not output.parts[-1].endswith("\n"):
            text = "\n" + text
        await output.write(text)
    return "".join(output.parts)


def _kill_group(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone
        process.kill()
