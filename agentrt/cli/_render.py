"""Show a stream of events to a person: plain text when piped, rich output at a terminal.

:func:`make_renderer` picks one for an output stream:

* not a terminal (a pipe, a file): :class:`PlainRenderer` without escape codes, one
  marker per kind of line (``->`` a tool call, ``<-`` its result, ``??`` a question);
* a terminal, with ``rich`` installed (``pip install 'agentrt[cli]'``):
  :class:`RichRenderer`, with colors and panels;
* a terminal without ``rich``: :class:`PlainRenderer` with ANSI colors.

``NO_COLOR`` (set and non-empty, https://no-color.org) turns colors off in both
terminal renderers; ``TERM=dumb`` gives plain text.

Text and reasoning are written as their chunks arrive and flushed at once, so the
answer appears as the model produces it, also through a pipe.
"""

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TextIO, assert_never

from agentrt.stream._adapter import REJECTED_PREFIX
from agentrt.stream.confirm import Decision
from agentrt.stream.events import (
    EventType,
    StreamEvent,
    TeamInfoEvent,
    TokenUsage,
    WireToolCall,
    parent_tool_call_id,
)

__all__ = (
    "PlainRenderer",
    "Renderer",
    "RichRenderer",
    "describe_decision",
    "format_arguments",
    "format_usage",
    "make_renderer",
)

# The event types both renderers deliberately do not show; they show every other
# (their `match` blocks end in assert_never, and tests/test_stream_consumers.py checks
# that they show each type not listed here, and nothing of these). stream_started: the
# prompt already began the turn; partial_tool_call: the complete call (tool_call, or
# its question) shows its arguments once.
_IGNORED_EVENTS: frozenset[EventType] = frozenset({"stream_started", "partial_tool_call"})

_MAX_VALUE = 120
_MAX_LINES = 20
_MAX_CHARS = 2000


class Renderer(Protocol):
    """Shows events, questions and notes to a person."""

    def banner(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        """A heading with ``(label, value)`` rows (what runs, on which model)."""
        ...

    def event(self, event: StreamEvent) -> None:
        """Show one stream event (chunks of text continue the current line)."""
        ...

    def decision(
        self, call: WireToolCall, decision: Decision, reason: str | None, *, automatic: bool
    ) -> None:
        """Show the answer given to a confirmation."""
        ...

    def prompt(self, text: str) -> None:
        """Write a question, without a line end, and flush."""
        ...

    def echo(self, text: str) -> None:
        """Finish the question's line with ``text``."""
        ...

    def note(self, text: str) -> None:
        """Write a line of secondary information."""
        ...

    def finish(self) -> None:
        """End a line left open by streamed text."""
        ...


def format_arguments(arguments: str, *, limit: int | None = _MAX_VALUE) -> str:
    """Tool-call arguments as ``name="value", n=2``; the raw text when not a JSON object.

    Args:
        arguments: The JSON text of the arguments.
        limit: Cut each value's text after this many characters (None: never).
    """
    try:
        values = json.loads(arguments or "{}")
    except ValueError:
        return _cut(arguments, limit)
    if not isinstance(values, dict):
        return _cut(arguments, limit)
    return ", ".join(
        f"{key}={_cut(json.dumps(value, ensure_ascii=False), limit)}"
        for key, value in values.items()
    )


def format_usage(usage: TokenUsage) -> str:
    """One line of token figures: the last call's, the session's, context and cost."""
    parts: list[str] = []
    last = usage.last_message
    if last is not None:
        parts.append(f"{last.input_tokens} in, {last.output_tokens} out")
    parts.append(f"session {usage.input_tokens} in, {usage.output_tokens} out")
    if usage.context_limit:
        parts.append(f"context {usage.context_length}/{usage.context_limit}")
    elif usage.context_length:
        parts.append(f"context {usage.context_length}")
    if usage.cost:
        parts.append(f"cost ${usage.cost:.4f}")
    return "tokens: " + "; ".join(parts)


def describe_decision(
    call: WireToolCall, decision: Decision, reason: str | None, *, automatic: bool
) -> str:
    """A confirmation's answer in words: ``approved``, ``rejected: too risky``..."""
    text = {
        "approve": "approved",
        "approve-session": "approved for the rest of the session",
        "approve-tool": f"approved, and every later {call.function.name} call",
        "reject": "rejected",
    }[decision]
    if reason:
        text += f": {reason}"
    return text + (" (--yes)" if automatic else "")


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def _clip_block(text: str) -> str:
    """A long tool result cut to its first lines, saying how much was left out."""
    lines = text.splitlines() or [""]
    clipped = "\n".join(lines[:_MAX_LINES])
    if len(clipped) > _MAX_CHARS:
        return f"{clipped[:_MAX_CHARS]}\n... ({len(text) - _MAX_CHARS} more characters)"
    if len(lines) > _MAX_LINES:
        return f"{clipped}\n... ({len(lines) - _MAX_LINES} more lines)"
    return clipped


class _Speakers:
    """Whose lines are labelled: a sub-agent's, and, in a team, those of any agent other
    than the one the stream started with (the agent a hand-off gave the conversation)."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first: str | None = None  # team_info's current_agent

    def by(self, event: StreamEvent) -> str:
        """``"[researcher] "`` for another agent's event, ``""`` for the stream's agent's."""
        agent = event.agent_name
        if parent_tool_call_id(event) is not None or (
            self.first is not None and agent is not None and agent != self.first
        ):
            return f"[{agent}] "
        return ""


def _nested(event: StreamEvent) -> str:
    """The indent of an event of a sub-agent's run (the run nests under the parent's call)."""
    return "   " if parent_tool_call_id(event) is not None else ""


def _team(event: TeamInfoEvent) -> str:
    """The agents of a team, the one answering first: ``lead (answering), researcher``."""
    names = [agent.name for agent in event.available_agents]
    return ", ".join(f"{n} (answering)" if n == event.current_agent else n for n in names)


def _is_rejection(response: str) -> bool:
    return response.startswith(REJECTED_PREFIX)


# -- plain text ---------------------------------------------------------------------------

_ANSI = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


class PlainRenderer:
    """Lines of text, with ANSI colors when ``color`` is true.

    Args:
        out: Where to write.
        color: Add ANSI color codes (for a terminal without ``rich``).
    """

    def __init__(self, out: TextIO, *, color: bool = False) -> None:
        self.out = out
        self.color = color
        self._open: str | None = None  # "text <agent>" or "reasoning <agent>": a line open
        self._asked: set[str] = set()  # calls shown with their question already
        self._speakers = _Speakers()

    def _style(self, text: str, *styles: str) -> str:
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_ANSI[style] for style in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _line(self, text: str) -> None:
        self.finish()
        self._write(text + "\n")

    def finish(self) -> None:
        """End a line left open by streamed text."""
        if self._open is not None:
            self._open = None
            self._write("\n")

    def banner(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        """A heading with ``(label, value)`` rows."""
        self._line(self._style(f"== {title} ==", "bold"))
        for label, value in rows:
            self._line(f"   {self._style(label + ':', 'dim')} {value}")

    def _chunk(self, kind: str, label: str, content: str, *styles: str) -> None:
        if self._open != kind:
            self.finish()
            self._open = kind
            self._write(self._style(label, "bold", *styles))
        self._write(self._style(content, *styles))

    def event(self, event: StreamEvent) -> None:
        """Show one stream event."""
        match event.type:
            case "agent_choice":
                # Keyed by agent: a sub-agent's text starts a line of its own.
                who = event.agent_name
                self._chunk(f"text {who}", f"{_nested(event)}{who}: ", event.content)
            case "agent_choice_reasoning":
                self._chunk(
                    f"reasoning {event.agent_name}",
                    f"{_nested(event)}{self._speakers.by(event)}thinking: ",
                    event.content,
                    "dim",
                    "italic",
                )
            case "user_message":
                self._line(self._style("you: ", "bold", "cyan") + event.message)
            case "tool_call":
                call = event.tool_call
                if call.id in self._asked:
                    return  # its question showed it, and the answer follows it
                arguments = format_arguments(call.function.arguments)
                self._line(
                    _nested(event)
                    + self._style(f"{self._speakers.by(event)}-> {call.function.name}", "blue")
                    + f"({arguments})"
                )
            case "tool_call_confirmation":
                call = event.tool_call
                self._asked.add(call.id)
                arguments = format_arguments(call.function.arguments, limit=None)
                self._line(
                    _nested(event)
                    + self._style(
                        f"{self._speakers.by(event)}?? {call.function.name}({arguments})", "yellow"
                    )
                    + " needs your approval"
                )
            case "tool_call_response":
                style = "red" if _is_rejection(event.response) else "green"
                body = _clip_block(event.response).replace("\n", "\n   ")
                name = event.tool_call.function.name
                self._line(
                    _nested(event)
                    + self._style(f"{self._speakers.by(event)}<- {name}:", style)
                    + f" {body}"
                )
            case "token_usage":
                self._line(self._style(f"   {format_usage(event.usage)}", "dim"))
            case "error":
                self._line(
                    _nested(event)
                    + self._style(f"{self._speakers.by(event)}error: {event.error}", "bold", "red")
                )
            case "shell":
                self.finish()
                self._write(event.output)
            case "session_title":
                self._line(self._style(f"title: {event.title}", "magenta"))
            case "session_summary":
                self._line(self._style(f"summary: {event.summary}", "magenta"))
            case "session_compaction":
                self._line(self._style(f"   compaction {event.status}", "dim"))
            case "team_info":
                self._speakers.first = event.current_agent
                self._line(self._style(f"team: {_team(event)}", "magenta"))
            case "agent_switching":
                self._line(self._style(f"=> {event.to_agent} answers now", "magenta"))
            case "stream_stopped":
                self.finish()
            case "stream_started" | "partial_tool_call":  # _IGNORED_EVENTS
                pass
            case _:
                assert_never(event)

    def decision(
        self, call: WireToolCall, decision: Decision, reason: str | None, *, automatic: bool
    ) -> None:
        """Show the answer given to a confirmation."""
        style = "red" if decision == "reject" else "green"
        text = describe_decision(call, decision, reason, automatic=automatic)
        self._line(self._style(f"   {text}", style))

    def prompt(self, text: str) -> None:
        """Write a question, without a line end, and flush."""
        self.finish()
        self._write(self._style(text, "bold", "yellow"))

    def echo(self, text: str) -> None:
        """Finish the question's line with ``text``."""
        self._write(text + "\n")

    def note(self, text: str) -> None:
        """Write a line of secondary information."""
        self._line(self._style(text, "dim"))


# -- rich ---------------------------------------------------------------------------------


class RichRenderer:
    """Colors and panels through ``rich`` (the ``agentrt[cli]`` extra).

    Args:
        console: A ``rich.console.Console``.
    """

    def __init__(self, console: Any) -> None:
        # rich is optional: imported here, not at module import.
        from rich.json import JSON  # type: ignore[import-not-found, unused-ignore]
        from rich.panel import Panel  # type: ignore[import-not-found, unused-ignore]
        from rich.table import Table  # type: ignore[import-not-found, unused-ignore]
        from rich.text import Text  # type: ignore[import-not-found, unused-ignore]

        self.console = console
        self._json = JSON
        self._panel = Panel
        self._table = Table
        self._text = Text
        self._open: str | None = None
        self._asked: set[str] = set()
        self._speakers = _Speakers()

    def finish(self) -> None:
        """End a line left open by streamed text."""
        if self._open is not None:
            self._open = None
            self.console.out("")

    def _print(self, renderable: Any) -> None:
        self.finish()
        self.console.print(renderable)

    def _arguments(self, arguments: str) -> Any:
        try:
            values = json.loads(arguments or "{}")
        except ValueError:
            return self._text(arguments)
        return self._json.from_data(values)

    def banner(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        """A panel with ``(label, value)`` rows."""
        grid = self._table.grid(padding=(0, 1))
        grid.add_column(style="dim")
        grid.add_column()
        for label, value in rows:
            grid.add_row(label, value)
        self._print(self._panel(grid, title=title, border_style="cyan", expand=False))

    def _chunk(self, kind: str, label: str, content: str, style: str) -> None:
        if self._open != kind:
            self.finish()
            self._open = kind
            self.console.out(label, style=f"bold {style}".strip(), end="", highlight=False)
        self.console.out(content, style=style or None, end="", highlight=False)
        self.console.file.flush()

    def event(self, event: StreamEvent) -> None:
        """Show one stream event."""
        text = self._text
        panel = self._panel
        match event.type:
            case "agent_choice":
                who = event.agent_name
                self._chunk(f"text {who}", f"{_nested(event)}{who} ", event.content, "")
            case "agent_choice_reasoning":
                self._chunk(
                    f"reasoning {event.agent_name}",
                    f"{_nested(event)}{self._speakers.by(event)}thinking ",
                    event.content,
                    "dim italic",
                )
            case "user_message":
                self._print(text.assemble(("you ", "bold cyan"), event.message))
            case "tool_call":
                call = event.tool_call
                if call.id in self._asked:
                    return
                self._print(
                    panel(
                        self._arguments(call.function.arguments),
                        title=text(f"{self._speakers.by(event)}tool call: {call.function.name}"),
                        title_align="left",
                        border_style="blue",
                        expand=False,
                    )
                )
            case "tool_call_confirmation":
                call = event.tool_call
                self._asked.add(call.id)
                self._print(
                    panel(
                        self._arguments(call.function.arguments),
                        title=text(
                            f"{self._speakers.by(event)}approval needed: {call.function.name}"
                        ),
                        title_align="left",
                        border_style="yellow",
                        expand=False,
                    )
                )
            case "tool_call_response":
                rejected = _is_rejection(event.response)
                self._print(
                    panel(
                        text(_clip_block(event.response)),
                        title=text(
                            f"{self._speakers.by(event)}result: {event.tool_call.function.name}"
                        ),
                        title_align="left",
                        border_style="red" if rejected else "green",
                        expand=False,
                    )
                )
            case "token_usage":
                self._print(text(format_usage(event.usage), style="dim"))
            case "error":
                self._print(
                    panel(
                        text(event.error),
                        title=text(f"{self._speakers.by(event)}error"),
                        title_align="left",
                        border_style="red",
                    )
                )
            case "shell":
                self.finish()
                self.console.out(event.output, end="", highlight=False)
            case "session_title":
                self._print(text(f"title: {event.title}", style="magenta"))
            case "session_summary":
                self._print(text(f"summary: {event.summary}", style="magenta"))
            case "session_compaction":
                self._print(text(f"compaction {event.status}", style="dim"))
            case "team_info":
                self._speakers.first = event.current_agent
                self._print(text(f"team: {_team(event)}", style="magenta"))
            case "agent_switching":
                self._print(text(f"=> {event.to_agent} answers now", style="magenta"))
            case "stream_stopped":
                self.finish()
            case "stream_started" | "partial_tool_call":  # _IGNORED_EVENTS
                pass
            case _:
                assert_never(event)

    def decision(
        self, call: WireToolCall, decision: Decision, reason: str | None, *, automatic: bool
    ) -> None:
        """Show the answer given to a confirmation."""
        style = "bold red" if decision == "reject" else "bold green"
        self._print(
            self._text(describe_decision(call, decision, reason, automatic=automatic), style)
        )

    def prompt(self, text: str) -> None:
        """Write a question, without a line end, and flush."""
        self.finish()
        self.console.out(text, style="bold yellow", end="", highlight=False)
        self.console.file.flush()

    def echo(self, text: str) -> None:
        """Finish the question's line with ``text``."""
        self.console.out(text, highlight=False)

    def note(self, text: str) -> None:
        """Write a line of secondary information."""
        self._print(self._text(text, style="dim"))


def make_renderer(
    out: TextIO, *, environ: Mapping[str, str] | None = None, use_rich: bool = True
) -> Renderer:
    """The renderer for ``out``: plain when piped, rich (or ANSI colors) at a terminal.

    Args:
        out: The stream the person reads.
        environ: The environment to read ``NO_COLOR`` and ``TERM`` from (default:
            ``os.environ``).
        use_rich: Use ``rich`` at a terminal when it is installed.
    """
    env = os.environ if environ is None else environ
    try:
        terminal = out.isatty()
    except (OSError, ValueError):
        terminal = False
    if not terminal or env.get("TERM") == "dumb":
        return PlainRenderer(out)
    no_color = bool(env.get("NO_COLOR"))
    if use_rich:
        try:
            from rich.console import Console  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            pass
        else:
            return RichRenderer(Console(file=out, no_color=no_color, highlight=False))
    return PlainRenderer(out, color=not no_color)
