"""Replay: a recorded run of a durable server session, run again from its recording alone.

::

    from agentrt.durable import replay

    replayed = await replay("sqlite:///agentrt.sqlite", session_id, run=2)
    assert replayed.matches  # the same events as the original, timestamps apart

The session's agent is made again by its factory (the one the session was served
with, or the one given), its state put back as the run found it, and the run made
again with stand-ins: the recorded model answers for the model (streamed in the
pieces the clients saw), the recorded tool results for the tools, the recorded
answers for the confirmations. Nothing external is called: no model, no tool. What
the agent's own code does with them (handlers, the stream adapter, the loop) runs
for real, so the replay emits the events a run of *this* code emits.

A replay whose code takes another path than the recording (it asks for a tool call
the recording does not have, or another one; it asks the model once more, or once
less; it asks for a confirmation nobody gave) stops at once with a
:class:`ReplayDivergenceError` naming the first divergence: the step, what the
recording has there, what the replay asked for.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

import anyio
import anyio.lowlevel

from agentrt.agent import Agent
from agentrt.deferred import ExternalTool
from agentrt.exceptions import AgentrtError
from agentrt.messages import ToolCall
from agentrt.models.base import ModelRequest, ModelResponse, StreamChunk
from agentrt.models.scripted import ScriptedModel
from agentrt.stream.confirm import Confirmations, Decision
from agentrt.team import delegates
from agentrt.tools import Tool, current_tool_context

from ._codec import decode_tool_results
from ._recording import RecordedStep, Recording, ReplayError, read_recording
from ._steps import RecordedToolError

if TYPE_CHECKING:
    from agentrt._state import RunResult
    from agentrt.stream.events import StreamEvent

__all__ = (
    "AgentSource",
    "RecordedModel",
    "RecordedStepError",
    "ReplayDivergenceError",
    "ReplayResult",
    "replay",
    "replay_recording",
)

AgentSource: TypeAlias = Callable[[], Agent | Awaitable[Agent]] | str
"""The agent to replay with: a factory (sync or async), or its name (``module:attr``
or ``path/to/file.py:attr``, as ``agentrt serve`` takes it)."""

# Runs last among tools:provide handlers, as the durable steps do: the stand-ins
# replace the tools the model is offered, whoever added them.
_LAST = -(10**9)


class ReplayDivergenceError(ReplayError):
    """The replayed code took another path than the recorded run, at ``step``.

    Attributes:
        step: The number of the first recorded step that does not match (one past
            the last when the replay asked for more than the recording holds).
        expected: What the recording has there.
        got: What the replay asked for instead.
        events: The events the replay emitted up to there (its run stopped).
    """

    def __init__(self, step: int, expected: str, got: str) -> None:
        self.step = step
        self.expected = expected
        self.got = got
        self.events: tuple[StreamEvent, ...] = ()
        super().__init__(
            f"the replay diverges from the recording at step {step}: "
            f"expected {expected}, got {got}"
        )


class RecordedStepError(AgentrtError):
    """A step that failed in the recorded run, failing again in the replay.

    Raised as a subclass named after the recorded exception's type, so that the
    run's ``error`` event reads as the recorded one.
    """


def _failure(described: str) -> RecordedStepError:
    name, _, message = described.partition(": ")
    kind: type[RecordedStepError] = type(
        name if name.isidentifier() else "RecordedStepError", (RecordedStepError,), {}
    )
    return kind(message)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay produced.

    Attributes:
        recording: The recorded run it replayed.
        events: The replay's events, in order.
        result: The replay's run result (None when the run failed, as its events say).
        instructions: The instructions of the agent it replayed with.
        tools: The names of that agent's own tools.
    """

    recording: Recording
    events: tuple[StreamEvent, ...]
    result: RunResult[Any] | None
    instructions: str | None = None
    tools: tuple[str, ...] = ()

    def event_data(self) -> list[dict[str, Any]]:
        """The events as JSON data without their timestamps (as the recording's)."""
        data = []
        for event in self.events:
            item = event.model_dump(mode="json")
            item.pop("timestamp", None)
            data.append(item)
        return data

    def differences(self) -> list[str]:
        """Where the replay differs from the recording (empty: nowhere).

        Its agent's instructions and tools, when the session recorded them (the
        model answered the recorded ones: other ones may have changed its answers,
        which a replay cannot know), then each event that differs.
        """
        recording = self.recording
        found: list[str] = []
        if recording.instructions is not None and self.instructions != recording.instructions:
            found.append(
                f"the agent's instructions are not the recorded ones: recorded "
                f"{recording.instructions!r}, now {self.instructions!r}"
            )
        if recording.tools is not None and self.tools != recording.tools:
            found.append(
                f"the agent's tools are not the recorded ones: recorded "
                f"{list(recording.tools)}, now {list(self.tools)}"
            )
        replayed, recorded = self.event_data(), recording.event_data()
        found += [
            f"event {n}: recorded {old}, replayed {new}"
            for n, (old, new) in enumerate(zip(recorded, replayed, strict=False), 1)
            if old != new
        ]
        if len(replayed) != len(recorded):
            found.append(f"the recording has {len(recorded)} events, the replay {len(replayed)}")
        return found

    @property
    def matches(self) -> bool:
        """Whether the replay is the recorded run: the same events (timestamps apart),
        by an agent with the recorded instructions and tools."""
        return not self.differences()


class _Script:
    """The recorded steps, taken in the order the replay asks for them.

    A model call takes the next step; a tool call, or a confirmation, takes its own
    among those before the next model step (calls run in parallel take theirs in
    any order). A request that finds nothing to take diverges: the run is stopped
    (``scope``) and :attr:`divergence` says where.
    """

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.steps = [step for step in recording.steps if step.kind != "other"]
        self.used: set[int] = set()
        self.confirmed: set[str] = set()
        self.failed = False
        self.divergence: ReplayDivergenceError | None = None
        self.scope: anyio.CancelScope | None = None

    def _open(self) -> list[RecordedStep]:
        """The steps not taken yet, up to the next model step (included)."""
        turn: list[RecordedStep] = []
        for step in self.steps:
            if step.number in self.used:
                continue
            turn.append(step)
            if step.kind == "model":
                break
        return turn

    def _end(self) -> int:
        return max((step.number for step in self.recording.steps), default=0) + 1

    async def diverge(self, expected: RecordedStep | None, got: str) -> NoReturn:
        """Stop the run: it asked for ``got`` where the recording has ``expected``."""
        if expected is None:
            error = ReplayDivergenceError(self._end(), "the end of the run", got)
        else:
            error = ReplayDivergenceError(expected.number, expected.describe(), got)
        if self.divergence is None:
            self.divergence = error
        if self.scope is not None:
            self.scope.cancel()
            await anyio.lowlevel.checkpoint()  # cancelled here: the run stops
        raise error

    async def model(self, step_name: str, asker: str) -> RecordedStep:
        turn = self._open()
        step = turn[0] if turn else None
        failure = self.recording.failure
        if step is None and failure is not None and not self.failed:
            # A model call that failed records no step (nothing to reuse): the run's
            # events say how it failed, and the replayed call fails alike.
            self.failed = True
            raise _failure(failure)
        if step is None or step.kind != "model" or step.name != step_name:
            await self.diverge(step, asker)
        self.used.add(step.number)
        if step.error is not None:
            raise _failure(step.error)
        return step

    async def tool(self, name: str, call_id: str, arguments: dict[str, Any]) -> RecordedStep:
        turn = self._open()
        if call_id in self.recording.answers and call_id not in self.confirmed:
            # Recorded as asked and answered: the replay runs it unasked.
            asked = next((step for step in turn if step.kind == "confirmation"), None)
            await self.diverge(
                asked, f"a call of tool {name!r} (call {call_id}) without its confirmation"
            )
        for step in turn:
            if step.kind == "tool" and step.output.get("id") == call_id:
                if step.tool_name != name:
                    await self.diverge(step, f"a call of tool {name!r} (call {call_id})")
                recorded = self.recording.tool_arguments(call_id)
                if recorded is not None and recorded != _plain(arguments):
                    await self.diverge(
                        step,
                        f"a call of tool {name!r} (call {call_id}) with arguments "
                        f"{_shown(arguments)} (the recorded call had {_shown(recorded)})",
                    )
                self.used.add(step.number)
                return step
        waiting = next((step for step in turn if step.kind == "tool"), turn[0] if turn else None)
        return await self.diverge(waiting, f"a call of tool {name!r} (call {call_id})")

    async def confirmation(self, call: ToolCall) -> tuple[Decision, str | None]:
        turn = self._open()
        asked = f"a confirmation of tool {call.name!r} (call {call.id})"
        step = next((step for step in turn if step.kind == "confirmation"), None)
        answer = self.recording.answers.get(call.id)
        if step is None or answer is None:
            await self.diverge(step or (turn[0] if turn else None), asked)
        self.used.add(step.number)
        self.confirmed.add(call.id)
        return answer[0], answer[1]  # type: ignore[return-value]

    async def finish(self) -> None:
        """The replay ended: every recorded step must have been taken."""
        turn = self._open()
        if turn:
            await self.diverge(turn[0], "the end of the run")


def _plain(arguments: dict[str, Any]) -> Any:
    """``arguments`` as JSON data (as a ``tool_call`` event shows them)."""
    try:
        return json.loads(json.dumps(arguments, default=repr))
    except (TypeError, ValueError):
        return arguments


def _shown(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, default=repr, sort_keys=True)


class RecordedModel(ScriptedModel):
    """A :class:`~agentrt.ScriptedModel` whose script is a run's recorded answers.

    Each call takes the next recorded model step; a streamed call yields the chunks
    the recorded answer streamed in (see :meth:`Recording.chunks`). It shows the
    replaced model's name, prices and context window, which the stream's token
    usage reads.

    Args:
        script: The recorded steps, in the order the replay takes them.
        original: The model it stands in for.
        step_name: The name of its steps (a team member's are named after it).
        asker: Its call, in the words of a divergence.
    """

    def __init__(self, script: _Script, original: object, step_name: str, asker: str) -> None:
        super().__init__(self._answer, name=str(getattr(original, "name", "") or "scripted"))
        self._steps = script
        self._step_name = step_name
        self._asker = asker
        self.prices = getattr(original, "prices", None)
        self.context_limit = getattr(original, "context_limit", None)
        self.supports_schema = getattr(original, "supports_output_schema", False) is True

    @property
    def supports_output_schema(self) -> bool:
        """As the replaced model."""
        return self.supports_schema

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        return (await self._steps.model(self._step_name, self._asker)).response

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The next recorded answer, as it was recorded."""
        self.requests.append(request)
        return await self._answer(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """The next recorded answer, in the chunks its clients saw."""
        self.requests.append(request)
        step = await self._steps.model(self._step_name, self._asker)
        for chunk in self._steps.recording.chunks(step):
            yield chunk


class _RecordedTool(Tool[Any, Any]):
    """A tool whose calls return their recorded results (see :func:`_stand_in`)."""

    __slots__ = ("_script",)

    _script: _Script

    async def run(self, arguments: dict[str, Any]) -> Any:
        """The recorded result of this call."""
        context = current_tool_context()
        call_id = "" if context is None else context.tool_call_id
        step = await self._script.tool(self.name, call_id, arguments)
        if step.error is not None:
            raise _failure(step.error)
        if "error" in step.output:
            raise RecordedToolError(step.output["error"])
        return step.output["text"]


def _recorded_tool(tool: Tool[Any, Any], script: _Script) -> Tool[Any, Any]:
    stand_in = Tool.__new__(_RecordedTool)
    for slot in Tool.__slots__:
        object.__setattr__(stand_in, slot, getattr(tool, slot))
    stand_in._script = script
    return stand_in


class _RecordedConfirmations(Confirmations):
    """Confirmations answered as the recorded run's were."""

    script: _Script

    async def wait(self, call: ToolCall) -> tuple[Decision, str | None]:
        if call.id not in self._answers:
            self._answers[call.id] = await self.script.confirmation(call)
        return await super().wait(call)


class _ReplayTeam:
    """The :class:`~agentrt.team.MemberSetup` of a replay: each member the replayed
    agent makes, at any depth, gets the recorded answers and results of its own steps
    (named after it, as a durable run names them); the member runs one agent delegates
    take turns, as in a durable run, so that their steps come in the recorded order."""

    def __init__(self, script: _Script, prefix: str) -> None:
        self._script = script
        self._prefix = prefix
        self._turns = anyio.Lock()

    def setup(self, member: Agent) -> None:
        """Stand in for ``member``'s model and tools."""
        _stand_in(member, self._script, f"{self._prefix}.{member.name}")

    @asynccontextmanager
    async def delegation(self) -> AsyncIterator[None]:
        """One member run at a time."""
        async with self._turns:
            yield


def _stand_in(agent: Agent, script: _Script, prefix: str = "agentrt.server") -> None:
    """The recorded answers in place of ``agent``'s model, recorded results of its tools,
    and so for each member of its team."""
    member = prefix != "agentrt.server"
    asker = f"a model call of agent {agent.name!r}" if member else "a model call"
    agent.model = RecordedModel(script, agent.model, f"{prefix}.model", asker)
    agent._member_setup = _ReplayTeam(script, prefix)
    made: dict[int, tuple[Tool[Any, Any], Tool[Any, Any]]] = {}

    def recorded(ctx: Any) -> None:
        tools: list[Tool[Any, Any]] = []
        for tool in ctx.output:
            if isinstance(tool, ExternalTool) or delegates(tool):
                # Its caller answers it (the run's input holds that), or it runs a
                # member, whose own calls are stood in for.
                tools.append(tool)
                continue
            entry = made.get(id(tool))
            if entry is None or entry[0] is not tool:
                entry = made[id(tool)] = (tool, _recorded_tool(tool, script))
            tools.append(entry[1])
        ctx.output = tools

    agent.events.on("tools:provide", recorded, priority=_LAST)


async def _make_agent(source: AgentSource | None, recording: Recording) -> Agent:
    if source is None:
        if recording.factory is None:
            raise ReplayError(
                f"session {recording.session_id!r} recorded no importable agent factory "
                "(it was served with a lambda, a closure or a method): name the agent to "
                "replay with (agent=..., or --agent module:attr)"
            )
        source = recording.factory
    if isinstance(source, str):
        from agentrt.cli._targets import TargetError, load_factory

        try:
            source = load_factory(source)
        except TargetError as error:
            raise ReplayError(f"the agent factory cannot be loaded: {error}") from None
    if not callable(source):
        raise TypeError(f"agent must be a factory or its name, got {type(source).__name__}")
    made = source()
    agent = await made if inspect.isawaitable(made) else made
    if not isinstance(agent, Agent):
        raise TypeError(f"the agent factory must return an Agent, got {type(agent).__name__}")
    return agent


async def replay_recording(
    recording: Recording,
    agent: AgentSource | None = None,
    *,
    stream_options: Mapping[str, Any] | None = None,
) -> ReplayResult:
    """Run ``recording`` again with a new agent, from the recording alone.

    Args:
        recording: The recorded run (:func:`~agentrt.durable.read_recording`, or
            :meth:`Recording.from_json`).
        agent: The agent factory, or its name (default: the one the session was
            served with).
        stream_options: The server's options for each run's stream adapter
            (``auto_approve``, ``title``, ...), when it was given any.

    Returns:
        The replay's events and result.

    Raises:
        ReplayDivergenceError: The code took another path than the recording.
        ReplayError: No agent factory is known, or it cannot be loaded.
        TypeError: The factory did not make an Agent.
    """
    from agentrt.server.durable import restore_state
    from agentrt.stream._adapter import StreamAdapter

    made = await _make_agent(agent, recording)
    original = made.model
    instructions = made.instructions
    tools = tuple(sorted(tool.name for tool in made.tools))
    events: list[StreamEvent] = []
    result: RunResult[Any] | None = None
    script = _Script(recording)
    try:
        await restore_state(made, recording.state)
        _stand_in(made, script)
        options = dict(stream_options or {})

        def take(event: StreamEvent) -> bool:
            events.append(event)
            return True

        async def put(event: StreamEvent) -> None:
            events.append(event)

        adapter = StreamAdapter(
            made, put, sink_nowait=take, session_id=recording.session_id, **options
        )
        confirmations = _RecordedConfirmations(
            made,
            auto_approve=bool(options.get("auto_approve", False)),
            policy=options.get("confirmation_policy"),
            defer=recording.defer_confirmations,
        )
        confirmations.script = script
        adapter.confirmations = confirmations
        answers = (
            None if recording.tool_results is None else decode_tool_results(recording.tool_results)
        )
        with anyio.CancelScope() as scope:
            script.scope = scope
            try:
                if answers is None:
                    result = await adapter.run(recording.message)
                else:
                    result = await adapter.run(recording.message, tool_results=answers)
            except ReplayDivergenceError:
                raise
            except Exception:
                pass  # the run failed, as recorded: its events say so
        script.scope = None
        if script.divergence is None:
            with anyio.CancelScope() as scope:
                script.scope = scope
                await script.finish()
        if script.divergence is not None:
            script.divergence.events = tuple(events)
            raise script.divergence
    finally:
        with anyio.CancelScope(shield=True):
            await made.close("the replay ended")
            aclose = getattr(original, "aclose", None)
            if aclose is not None:
                await aclose()
    return ReplayResult(recording, tuple(events), result, instructions, tools)


async def replay(
    store: str,
    session_id: str,
    *,
    run: int | str | None = None,
    agent: AgentSource | None = None,
    stream_options: Mapping[str, Any] | None = None,
) -> ReplayResult:
    """Replay one recorded run of a durable server session (see the module docstring).

    Args:
        store: The durable store the session was served from (``sqlite:///PATH`` or
            ``postgresql://...``); read only.
        session_id: The session's id.
        run: The run's number in the session (from 1) or its id; default: the latest.
        agent: The agent factory, or its name (default: the one the session was
            served with, as the store recorded it).
        stream_options: The server's stream options, when it was given any.

    Returns:
        The replay's events and result, and the recording (:attr:`ReplayResult.matches`
        says whether the events are the recorded ones).

    Raises:
        NoRecordingStoreError: ``store`` is ``memory``.
        RecordingNotFoundError: No such store, session or run.
        RecordingIncompleteError: The run has not finished, or its events are gone.
        ReplayDivergenceError: The code took another path than the recording.
        ReplayError: No agent factory is known, or it cannot be loaded.
    """
    recording = await read_recording(store, session_id, run)
    return await replay_recording(recording, agent, stream_options=stream_options)
