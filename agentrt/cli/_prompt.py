"""Asking a person to approve a tool call: reading answers from standard input.

An answer is one line:

* ``y`` (``yes``, ``approve``): run this call;
* ``s`` (``session``): run it and every later call of the session without asking;
* ``t`` (``tool``): run it and every later call of the same tool without asking;
* ``n`` (``no``, ``reject``), optionally followed by a reason: do not run it; the model
  reads ``rejected by the user: <reason>``.

Anything else asks again. When standard input is a terminal the question waits for
the person; when it is a pipe or a file its lines are the answers, in order
(``printf 'y\\nn not today\\n' | agentrt demo``), echoed so the transcript shows them.
At the end of the input (or with no standard input at all) the call is rejected with
the reason ``"no terminal to ask"`` (``"no answer"`` after Ctrl-D at a terminal): the
command never hangs on a question nobody can answer.

Reading a terminal or a pipe waits on its file descriptor in the event loop (no
thread), so Ctrl-C interrupts a question like any other wait. Where that is not
possible (Windows consoles, anyio before 4.7) the read runs in a worker thread,
the one blocking call agentrt hands to ``anyio.to_thread``.
"""

import codecs
import os
import stat
import sys
from collections.abc import Callable
from typing import Any, Protocol, TextIO

import anyio
import anyio.to_thread

from agentrt.stream.confirm import Decision
from agentrt.stream.events import WireToolCall

__all__ = (
    "END_OF_INPUT_REASON",
    "NO_TERMINAL_REASON",
    "Asker",
    "LineReader",
    "PromptOutput",
    "is_terminal",
    "parse_answer",
)

NO_TERMINAL_REASON = "no terminal to ask"
"""The reason of a rejection when standard input ended (or there is none) and no --yes."""

END_OF_INPUT_REASON = "no answer"
"""The reason of a rejection when the person ended the input at a terminal (Ctrl-D)."""

HINT = "answer y (approve), s (approve for the session), t (approve this tool) or n [reason]"

_APPROVE = frozenset({"y", "yes", "a", "approve", "ok"})
_SESSION = frozenset({"s", "session", "approve-session"})
_TOOL = frozenset({"t", "tool", "approve-tool"})
_REJECT = frozenset({"n", "no", "r", "reject"})

_CHUNK = 65536

# anyio >= 4.7 waits on any file descriptor; older versions only on sockets.
_wait_readable: Callable[[int], Any] | None = getattr(anyio, "wait_readable", None)


def parse_answer(line: str) -> tuple[Decision, str | None] | None:
    """The decision a line of input gives, or None when it gives none.

    Args:
        line: What the person typed (surrounding whitespace is ignored).

    Returns:
        ``(decision, reason)``: the reason is the text after ``n`` (None when empty,
        and always None for approvals).
    """
    text = line.strip()
    word, _, rest = text.partition(" ")
    word = word.lower()
    if word in _REJECT:
        return "reject", rest.strip() or None
    if rest.strip():
        return None  # "y please": not a clear approval
    if word in _APPROVE:
        return "approve", None
    if word in _SESSION:
        return "approve-session", None
    if word in _TOOL:
        return "approve-tool", None
    return None


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is an open terminal (False for None, pipes, files, closed streams)."""
    isatty = getattr(stream, "isatty", None)
    if isatty is None:
        return False
    try:
        return bool(isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


class LineReader:
    """Read lines from a text stream without blocking the event loop.

    A stream with a file descriptor (a terminal, a pipe, a file) is read from the
    descriptor with a buffer of the reader's own; a stream without one (``io.StringIO``)
    is read directly, which never blocks.

    Args:
        stream: The stream, usually ``sys.stdin``; None reads as empty.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self._fd: int | None = None
        self._regular = False
        self._pending = b""
        self._ended = stream is None
        if stream is not None:
            try:
                self._fd = stream.fileno()
                self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
            except (AttributeError, OSError, ValueError):
                self._fd = None
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        except LookupError:
            self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    async def readline(self) -> str:
        """The next line with its line end; ``""`` at the end of the input."""
        if self._ended:
            return ""
        if self._fd is None:
            try:
                line = self._stream.readline() if self._stream is not None else ""
            except (OSError, ValueError):  # closed, or a stream that refuses reads
                line = ""
            if not line:
                self._ended = True
            return line
        while b"\n" not in self._pending:
            data = await self._read(self._fd)
            if not data:
                self._ended = True
                break
            self._pending += data
        raw, newline, self._pending = self._pending.partition(b"\n")
        return self._decoder.decode(raw + newline, final=self._ended)

    async def _read(self, fd: int) -> bytes:
        try:
            if self._regular:
                return os.read(fd, _CHUNK)  # a file on disk never makes a read wait
            if _wait_readable is None or sys.platform == "win32":
                return await anyio.to_thread.run_sync(os.read, fd, _CHUNK, abandon_on_cancel=True)
            while True:
                await _wait_readable(fd)
                try:
                    return os.read(fd, _CHUNK)
                except BlockingIOError:  # a non-blocking descriptor raced: wait again
                    continue
        except OSError:
            return b""  # closed under us, or not readable at all: no more answers


class PromptOutput(Protocol):
    """Where an :class:`Asker` writes its question and what it read."""

    def prompt(self, text: str) -> None:
        """Write the question, without a line end, and flush."""
        ...

    def echo(self, text: str) -> None:
        """Finish the question's line with ``text`` (the answer read, shown when not typed)."""
        ...

    def note(self, text: str) -> None:
        """Write a line of help."""
        ...


class Asker:
    """Ask for the decision on each tool call that needs approval.

    Args:
        reader: Where the answers come from.
        output: Where the question goes.
        interactive: Whether a person types the answers at a terminal (their typing
            is echoed by the terminal; otherwise the answer read is echoed here).
    """

    def __init__(self, reader: LineReader, output: PromptOutput, *, interactive: bool) -> None:
        self.reader = reader
        self.output = output
        self.interactive = interactive

    async def ask(self, call: WireToolCall) -> tuple[Decision, str | None]:
        """Ask until a valid answer arrives or the input ends.

        Returns:
            The decision and, for a rejection, its reason.
        """
        question = f"approve {call.function.name}? [y]es [s]ession [t]ool [n]o <reason>: "
        while True:
            self.output.prompt(question)
            line = await self.reader.readline()
            if not line:
                reason = END_OF_INPUT_REASON if self.interactive else NO_TERMINAL_REASON
                self.output.echo(f"({reason})")
                return "reject", reason
            if not self.interactive:
                self.output.echo(line.strip())
            answer = parse_answer(line)
            if answer is not None:
                return answer
            self.output.note(HINT)
