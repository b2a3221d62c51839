"""``agentrt demo`` and ``agentrt run``: load the agent, stream its run, ask for confirmations.

:func:`run_command` runs one in an event loop of its own and returns the exit code
(see :mod:`agentrt.cli._app`).
"""

import os
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TextIO

import anyio

from agentrt.agent import Agent
from agentrt.cli._app import (
    EXIT_CLOSED_STDOUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    PROG,
    usage_error,
)
from agentrt.cli._demo import (
    DemoModel,
    build_demo_agent,
    demo_directory,
    pick_demo_model,
    scripted_demo_model,
)
from agentrt.cli._demo_team import TEAM_SUMMARY, build_demo_team, scripted_team_model
from agentrt.cli._prompt import Asker, LineReader, is_terminal
from agentrt.cli._render import Renderer, make_renderer
from agentrt.cli._specs import ModelSpec, ModelSpecError
from agentrt.cli._targets import TargetError, load_agent, one_line
from agentrt.exceptions import ModelUnavailableError
from agentrt.models.base import Model
from agentrt.stream.codec import encode_ndjson
from agentrt.stream.confirm import Decision
from agentrt.stream.events import StreamEvent, ToolCallConfirmationEvent

__all__ = ("RunOptions", "run_command")


@dataclass(slots=True)
class RunOptions:
    """What ``agentrt demo`` and ``agentrt run`` were asked to do."""

    command: str
    prompt: str
    model: ModelSpec | None
    yes: bool
    json: bool
    target: str | None
    team: bool = False


def run_command(options: RunOptions) -> int:
    """Run ``agentrt demo`` or ``agentrt run``; the exit code (0, 1, 2, 130 or 141)."""
    try:
        return anyio.run(_command, options)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader left (``agentrt demo | head``): not a failed run. Stop quietly with
        # the status of a Unix tool that SIGPIPE ends, and keep Python from complaining
        # when it flushes stdout at exit.
        _silence_stdout()
        return EXIT_CLOSED_STDOUT


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


async def _command(options: RunOptions) -> int:
    async with AsyncExitStack() as stack:
        try:
            agent, demo = await _prepare(options, stack)
        except (TargetError, ModelSpecError, ModelUnavailableError) as error:
            return usage_error(f"{PROG} {options.command}: {error}")
        return await _stream(agent, options, demo=demo)


async def _prepare(options: RunOptions, stack: AsyncExitStack) -> tuple[Agent, DemoModel | None]:
    """The agent to run (and the demo's model); ``stack`` closes them and models made here."""
    if options.command == "demo":
        picked = _demo_model(options.model, team=options.team)
        stack.push_async_callback(_close_model, picked.model)
        if picked.note is not None:
            sys.stderr.write(f"{PROG}: {picked.note}\n")
        build = build_demo_team if options.team else build_demo_agent
        agent = build(picked.model)
        stack.push_async_callback(agent.close)
        return agent, picked
    assert options.target is not None
    agent = await load_agent(options.target)
    stack.push_async_callback(agent.close)
    if options.model is not None:
        agent.model = options.model.build()
        stack.push_async_callback(_close_model, agent.model)
    return agent, None


def _demo_model(spec: ModelSpec | None, *, team: bool = False) -> DemoModel:
    scripted = scripted_team_model if team else scripted_demo_model
    if spec is None:
        return pick_demo_model(scripted=scripted)
    if spec.kind == "scripted" and spec.value is None:
        return DemoModel(scripted(), "scripted (deterministic, offline)")
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


async def _stream(agent: Agent, options: RunOptions, *, demo: DemoModel | None) -> int:
    stdin = sys.stdin
    interactive = is_terminal(stdin)
    # With --json, stdout carries only events: questions and notes go to stderr.
    interaction: Renderer = make_renderer(sys.stderr if options.json else sys.stdout)
    show = _ndjson_writer(sys.stdout) if options.json else interaction.event
    if demo is not None and not options.json:
        what = (
            ("team", TEAM_SUMMARY)
            if options.team
            else ("tools", "calculate, get_weather, write_note (asks first)")
        )
        interaction.banner(
            "agentrt demo --team" if options.team else "agentrt demo",
            [
                ("model", demo.description),
                what,
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
