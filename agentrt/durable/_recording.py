"""A recorded run of a durable server session, read back from the store.

A server on a durable store (``agentrt serve --store sqlite:///...`` or
``postgresql://...``) records each run three ways: DBOS records the run's workflow
(its input: the message and the session's state when the run began) and each of its
steps (every model answer, every tool result, every confirmation received); the
server's tables hold the events its clients saw, numbered across the session, and
the answers to its confirmations. :func:`read_recording` gathers all of it for one
run into a :class:`Recording`: plain data, read by any process on the store without
starting DBOS or changing anything there, and written out as JSON
(:meth:`Recording.to_json`) for a test to carry.

What the recording holds is what a replay (:mod:`agentrt.durable._replay`) and a fork
need: the steps in order (:attr:`Recording.steps`; each model and tool step records
how far the session's events had got when it ended, so a step and the events it
produced line up), the events, and the name of the agent factory the session was
served with (recorded when the session was made, when the factory has an importable
name).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread

from agentrt.exceptions import AgentrtError
from agentrt.messages import Usage
from agentrt.models.base import (
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

from ._codec import decode_response

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.stream.codec import SequencedEvent

__all__ = (
    "FACTORY_ATTACHMENT",
    "NoRecordingStoreError",
    "RecordedStep",
    "Recording",
    "RecordingIncompleteError",
    "RecordingNotFoundError",
    "ReplayError",
    "StepKind",
    "agent_record",
    "factory_target",
    "read_recording",
)

FACTORY_ATTACHMENT = "agentrt.factory"
"""The name under which a durable session keeps how its agent was made (see
:func:`agent_record`)."""

_FORMAT = 1
"""The version of :meth:`Recording.to_json`'s format."""

StepKind = Literal["model", "tool", "confirmation", "other"]
"""What a recorded step is: a model answer, a tool result, a confirmation received,
or something else DBOS records (the timer of a wait)."""

# The event types that carry a streamed answer's pieces, as the model yielded them.
_DELTAS = frozenset({"agent_choice", "agent_choice_reasoning", "partial_tool_call"})


class ReplayError(AgentrtError):
    """A run cannot be read back or replayed (the subclass says why)."""


class NoRecordingStoreError(ReplayError, ValueError):
    """The store is not a durable one: nothing there records runs (``memory``)."""


class RecordingNotFoundError(ReplayError, LookupError):
    """The store holds no such session, or no such run of it."""


class RecordingIncompleteError(ReplayError):
    """The run's recording cannot be replayed: it is still running, was cancelled,
    or its events are no longer kept."""


def factory_target(factory: object) -> str | None:
    """The name ``agentrt serve``, ``agentrt replay`` and an import find ``factory`` by.

    ``package.module:attr`` for a function of an importable module, or
    ``/path/to/file.py:attr`` for one of a file run as a script or loaded by
    ``agentrt serve file.py:attr``; None for what has no such name (a lambda, a
    closure, a bound method, a ``functools.partial``).
    """
    module_name = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    module = sys.modules.get(module_name)
    if module is None:
        return None
    value: object = module
    for part in qualname.split("."):
        value = getattr(value, part, None)
    if value is not factory:
        return None
    if module_name == "__main__":
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.name != "__main__":
            return f"{spec.name}:{qualname}"  # python -m package.module
    if module_name == "__main__" or module_name.startswith("_agentrt_target_"):
        path = getattr(module, "__file__", None)
        return None if path is None else f"{os.path.abspath(path)}:{qualname}"
    return f"{module_name}:{qualname}"


def agent_record(agent: Agent, factory: object) -> dict[str, Any]:
    """What a durable session keeps of how its agent was made, when it is made.

    The factory's name (:func:`factory_target`) makes the agent again for a replay;
    the instructions and the names of the agent's own tools are what the model was
    given beside the conversation, which no step records: a replay whose agent has
    others says so (:meth:`~agentrt.durable.ReplayResult.differences`).
    """
    return {
        "target": factory_target(factory),
        "instructions": agent.instructions,
        "tools": sorted(tool.name for tool in agent.tools),
    }


@dataclass(frozen=True, slots=True)
class RecordedStep:
    """One step of a recorded run, as DBOS recorded it.

    Attributes:
        number: The step's number in the run (DBOS's ``function_id``, from 1); the
            last answer a run records with its outcome comes last.
        name: The step's name (``agentrt.server.model``, ``agentrt.server.tool.NAME``,
            ``DBOS.recv``, ...).
        output: What the step returned, as plain data (a model answer, a tool
            result ``{"id", "text" | "error"}``, a confirmation ``{"decision",
            "reason"}``), with ``journal``: the number of the session's last event
            when the step ended.
        error: ``"Type: message"`` of what the step raised, if it did.
    """

    number: int
    name: str
    output: Any
    error: str | None = None

    @property
    def kind(self) -> StepKind:
        """What the step is (see :data:`StepKind`)."""
        if self.name.startswith("agentrt.") and self.name.endswith(".model"):
            return "model"
        if self.name.startswith("agentrt.") and ".tool." in self.name:
            return "tool"
        if self.name == "DBOS.recv" and isinstance(self.output, dict):
            return "confirmation"
        return "other"

    @property
    def tool_name(self) -> str | None:
        """The tool a tool step called."""
        return self.name.partition(".tool.")[2] if self.kind == "tool" else None

    @property
    def response(self) -> ModelResponse:
        """A model step's answer.

        Raises:
            ValueError: The step is not a model step that answered.
        """
        if self.kind != "model" or not isinstance(self.output, dict):
            raise ValueError(f"step {self.number} ({self.name}) is not a model answer")
        return decode_response(self.output)

    @property
    def journal(self) -> int | None:
        """The number of the session's last event when the step ended, if recorded."""
        if isinstance(self.output, dict):
            value = self.output.get("journal")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    def describe(self) -> str:
        """The step in a few words, for an error message."""
        kind = self.kind
        if kind == "model":
            if self.error is not None:
                return f"a model call (step {self.number}, which failed: {self.error})"
            calls = [call.name for call in self.response.tool_calls]
            answer = f"tool calls {', '.join(calls)}" if calls else "a final answer"
            return f"a model call (step {self.number}, answered with {answer})"
        if kind == "tool":
            call_id = self.output.get("id") if isinstance(self.output, dict) else None
            return f"a call of tool {self.tool_name!r} (step {self.number}, call {call_id})"
        if kind == "confirmation":
            return f"a confirmation (step {self.number}, answered {self.output.get('decision')})"
        return f"step {self.number} ({self.name})"

    def to_data(self) -> dict[str, Any]:
        """The step as JSON-compatible data."""
        return {
            "number": self.number,
            "name": self.name,
            "output": self.output,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class Recording:
    """One recorded run of a durable server session (see the module docstring).

    Attributes:
        session_id: The session.
        run_id: The run (its DBOS workflow id).
        number: The run's number in the session, from 1.
        status: The DBOS status of the run's workflow (``SUCCESS`` once it ended).
        message: The user's message of the run (None: it went on without one).
        state: The session's state when the run began: its conversation
            (``messages``), usage, approvals and title.
        tool_results: The answers the run was started with (encoded), if any.
        defer_confirmations: Whether the run left its confirmations to a later run.
        after: The number of the session's last event before the run's first.
        steps: The recorded steps, in order.
        events: The run's events, as the store holds them: ``(number, JSON data)``.
        answers: The recorded answers to the run's confirmations, by tool-call id.
        factory: The name of the session's agent factory (``module:attr`` or
            ``file.py:attr``), when it had one.
        instructions: The instructions of the session's agent when it was made
            (None: not recorded, or none).
        tools: The names of the agent's own tools when it was made (None: not recorded).
    """

    session_id: str
    run_id: str
    number: int
    status: str
    message: str | None
    state: dict[str, Any]
    tool_results: dict[str, dict[str, Any]] | None
    defer_confirmations: bool
    after: int
    steps: tuple[RecordedStep, ...]
    events: tuple[tuple[int, dict[str, Any]], ...]
    answers: dict[str, tuple[str, str | None]]
    factory: str | None
    instructions: str | None = None
    tools: tuple[str, ...] | None = None

    @property
    def failure(self) -> str | None:
        """What the run failed with, when its events end with an ``error``."""
        types = [data.get("type") for _, data in self.events[-2:]]
        if types == ["error", "stream_stopped"]:
            error = self.events[-2][1].get("error")
            return error if isinstance(error, str) else None
        return None

    def tool_arguments(self, call_id: str) -> dict[str, Any] | None:
        """The arguments a tool call ran with, as its ``tool_call`` event showed them."""
        for _, data in self.events:
            call = data.get("tool_call")
            if data.get("type") == "tool_call" and call and call.get("id") == call_id:
                try:
                    arguments = json.loads(call["function"]["arguments"] or "{}")
                except (KeyError, TypeError, ValueError):
                    return None
                return arguments if isinstance(arguments, dict) else None
        return None

    def stream_events(self) -> list[SequencedEvent]:
        """The run's events as typed stream events, with their numbers."""
        from agentrt.stream._parse import parse_event
        from agentrt.stream.codec import SequencedEvent

        return [SequencedEvent(seq, parse_event(json.dumps(data))) for seq, data in self.events]

    def event_data(self) -> list[dict[str, Any]]:
        """The run's events as JSON data without their timestamps: what a replay matches."""
        return [_comparable(data) for _, data in self.events]

    def chunks(self, step: RecordedStep) -> list[StreamChunk]:
        """The chunks a model step's answer streamed in, as its clients saw them.

        Read from the step's events (each streamed piece is one); when they do not
        add up to the recorded answer (no journal to find them by), the answer in
        one chunk per part.
        """
        response = step.response
        events = self._events_of(step)
        if events is not None:
            # A team member's steps are named after it, its events attributed to it.
            member = step.name.removeprefix("agentrt.server.").removesuffix(".model")
            speaker = None if member == "model" else member.rpartition(".")[2]
            chunks = _chunks_from_events(events, response, speaker)
            if chunks is not None:
                return chunks
        return _whole_chunks(response)

    def _events_of(self, step: RecordedStep) -> list[dict[str, Any]] | None:
        end = step.journal
        if end is None:
            return None
        start = self.after
        for earlier in self.steps:
            if earlier.number >= step.number:
                break
            journal = earlier.journal
            if journal is not None:
                start = max(start, journal)
        return [data for seq, data in self.events if start < seq <= end]

    def to_json(self) -> str:
        """The recording as JSON text (:meth:`from_json` reads it back)."""
        data = {
            "format": _FORMAT,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "number": self.number,
            "status": self.status,
            "message": self.message,
            "state": self.state,
            "tool_results": self.tool_results,
            "defer_confirmations": self.defer_confirmations,
            "after": self.after,
            "steps": [step.to_data() for step in self.steps],
            "events": [[seq, event] for seq, event in self.events],
            "answers": {key: list(value) for key, value in self.answers.items()},
            "factory": self.factory,
            "instructions": self.instructions,
            "tools": None if self.tools is None else list(self.tools),
        }
        return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Recording:
        """The recording :meth:`to_json` wrote.

        Raises:
            ValueError: ``text`` is not such a recording.
        """
        try:
            data = json.loads(text)
            if data.get("format") != _FORMAT:
                raise ValueError(f"unknown recording format {data.get('format')!r}")
            return cls(
                session_id=data["session_id"],
                run_id=data["run_id"],
                number=int(data["number"]),
                status=data["status"],
                message=data["message"],
                state=data["state"],
                tool_results=data["tool_results"],
                defer_confirmations=bool(data["defer_confirmations"]),
                after=int(data["after"]),
                steps=tuple(RecordedStep(**step) for step in data["steps"]),
                events=tuple((int(seq), event) for seq, event in data["events"]),
                answers={key: (value[0], value[1]) for key, value in data["answers"].items()},
                factory=data["factory"],
                instructions=data.get("instructions"),
                tools=None if data.get("tools") is None else tuple(data["tools"]),
            )
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as error:
            raise ValueError(f"not a recording of agentrt: {error}") from None


def _comparable(data: Mapping[str, Any]) -> dict[str, Any]:
    """An event's data without what differs from one run to the next (its timestamp)."""
    return {key: value for key, value in data.items() if key != "timestamp"}


def _whole_chunks(response: ModelResponse) -> list[StreamChunk]:
    from ._steps import _replayed_chunks

    return _replayed_chunks(response)


def _chunks_from_events(
    events: list[dict[str, Any]], response: ModelResponse, member: str | None
) -> list[StreamChunk] | None:
    """The chunks of ``response`` its events show (the ``member``'s, else the agent's
    own); None when they do not add up to it."""
    chunks: list[StreamChunk] = []
    indexes: dict[str, int] = {}
    for event in events:
        kind = event.get("type")
        if kind not in _DELTAS:
            continue
        if member is None and "parent_tool_call_id" in event:
            continue  # a team member's pieces are its own model's
        if member is not None and event.get("agent_name") != member:
            continue
        if kind == "agent_choice":
            chunks.append(TextDelta(event["content"]))
        elif kind == "agent_choice_reasoning":
            chunks.append(ReasoningDelta(event["content"]))
        else:
            call = event["tool_call"]
            call_id = call["id"]
            function = call["function"]
            if call_id in indexes:
                chunks.append(ToolCallDelta(indexes[call_id], arguments=function["arguments"]))
            else:
                indexes[call_id] = len(indexes)
                chunks.append(
                    ToolCallDelta(
                        len(indexes) - 1, call_id, function["name"], function["arguments"]
                    )
                )
    chunks.append(UsageChunk(response.usage, response.finish_reason))
    text = "".join(chunk.text for chunk in chunks if isinstance(chunk, TextDelta))
    reasoning = "".join(chunk.text for chunk in chunks if isinstance(chunk, ReasoningDelta))
    calls = [(call.id, call.name) for call in response.tool_calls]
    if (
        text != response.content
        or reasoning != (response.reasoning or "")
        or (list(indexes) != [call_id for call_id, _ in calls])
    ):
        return None
    return chunks


# -- reading the store ---------------------------------------------------------------------


async def read_recording(store: str, session_id: str, run: int | str | None = None) -> Recording:
    """The recording of one run of a durable server session, read from ``store``.

    Reads only: DBOS is not started (no run of the store is recovered here), and
    nothing is written.

    Args:
        store: The durable store the session was served from: ``sqlite:///PATH`` or
            ``postgresql://...``.
        session_id: The session's id.
        run: The run: its number in the session (from 1), its run id, or None for
            the latest.

    Raises:
        NoRecordingStoreError: ``store`` is ``memory`` (it records nothing).
        ValueError: ``store`` is not a store URL, or ``run`` is not a positive number.
        TypeError: ``run`` is neither a number nor an id.
        RecordingNotFoundError: No such store file, session, or run.
        RecordingIncompleteError: The run is still going on, was cancelled, or its
            events are no longer kept.
        StoreUnavailableError: The store cannot be opened.
    """
    if store == "memory":
        raise NoRecordingStoreError(
            "replay needs a durable store (sqlite:///PATH or postgresql://...): a memory "
            "store keeps no recording of its runs, and forgets them when its process ends"
        )
    if not isinstance(store, str) or not store.startswith(
        ("sqlite:///", "postgresql://", "postgresql+psycopg://", "postgres://")
    ):
        raise ValueError(f"store must be sqlite:///PATH or postgresql://..., got {store!r}")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    if run is not None and (isinstance(run, bool) or not isinstance(run, int | str)):
        raise TypeError(f"run must be a run's number or id, got {type(run).__name__}")
    if isinstance(run, int) and run < 1:
        raise ValueError(f"run must be a run's number (from 1) or id, got {run!r}")
    return await anyio.to_thread.run_sync(_read, store, session_id, run)


def _read(store: str, session_id: str, run: int | str | None) -> Recording:
    from agentrt.server._storage import Storage, shown_url

    shown = shown_url(store)
    if store.startswith("sqlite:///"):
        path = store[len("sqlite:///") :]
        if path != ":memory:" and not os.path.isfile(path):
            raise RecordingNotFoundError(f"the durable store {shown} does not exist")
    storage = Storage(store, create=False)
    try:
        if not storage.has_tables():
            raise RecordingNotFoundError(f"no session was ever served from {shown}")
        if storage.load_session(session_id) is None:
            raise RecordingNotFoundError(f"no session {session_id!r} in {shown}")
        runs = storage.runs_of(session_id)
        if not runs:
            raise RecordingNotFoundError(f"session {session_id!r} has no run in {shown}")
        if run is None:
            number = len(runs)
        elif isinstance(run, int):
            if run > len(runs):
                raise RecordingNotFoundError(
                    f"session {session_id!r} has {len(runs)} run{'s' * (len(runs) != 1)}: "
                    f"run {run} does not exist"
                )
            number = run
        else:
            ids = [known.run_id for known in runs]
            if run not in ids:
                raise RecordingNotFoundError(f"session {session_id!r} has no run {run!r}")
            number = ids.index(run) + 1
        chosen = runs[number - 1]
        following = runs[number].run_id if number < len(runs) else None
        events = _events(storage, session_id, chosen.run_id, chosen.after)
        answers = storage.answers(session_id)
        made = storage.read_attachment(session_id, FACTORY_ATTACHMENT) or {}
        latest = storage.load_session(session_id)
    finally:
        storage.close()
    status, arguments, (final_step, final), steps, after_run = _workflow(
        store, chosen.run_id, following
    )
    closed = bool(events) and events[-1][1].get("type") == "stream_stopped"
    if status in ("PENDING", "ENQUEUED") and closed:
        # Its events closed it (its session's state saved with them): the process
        # stopped before DBOS recorded the workflow's outcome, which a recovery records.
        status = "SUCCESS"
    if status in ("PENDING", "ENQUEUED"):
        raise RecordingIncompleteError(
            f"run {number} of session {session_id!r} is still going on: replay a finished run"
        )
    if status == "CANCELLED":
        raise RecordingIncompleteError(
            f"run {number} of session {session_id!r} was cancelled: its recording stops "
            "where it was cut off; replay a finished run"
        )
    if not events or events[0][0] != chosen.after + 1:
        raise RecordingIncompleteError(
            f"the events of run {number} of session {session_id!r} are no longer kept "
            "(a session keeps its latest events only)"
        )
    if final is None:
        messages = after_run if after_run is not None else (latest.state if latest else {})
        final = _unrecorded_answer(arguments["state"], messages, steps, events)
    if final is not None:
        last = max((step.number for step in steps), default=0)
        steps.append(RecordedStep(last + 1, final_step, final))
    seen = {
        data["tool_call"]["id"]
        for _, data in events
        if data.get("type") == "tool_call_confirmation"
    }
    return Recording(
        session_id=session_id,
        run_id=chosen.run_id,
        number=number,
        status=status,
        message=arguments["message"],
        state=arguments["state"],
        tool_results=arguments["tool_results"],
        defer_confirmations=bool(arguments["defer_confirmations"]),
        after=chosen.after,
        steps=tuple(steps),
        events=tuple(events),
        answers={call_id: answer for call_id, answer in answers.items() if call_id in seen},
        factory=made.get("target"),
        instructions=made.get("instructions"),
        tools=None if made.get("tools") is None else tuple(made["tools"]),
    )


def _events(
    storage: Any, session_id: str, run_id: str, after: int
) -> list[tuple[int, dict[str, Any]]]:
    """The run's events: those numbered after ``after`` up to the next run's."""
    events: list[tuple[int, dict[str, Any]]] = []
    while True:
        rows = storage.read(session_id, after, 1000)
        for seq, owner, data in rows:
            if owner != run_id:
                return events
            events.append((seq, json.loads(data)))
        if len(rows) < 1000:
            return events
        after = rows[-1][0]


def _unrecorded_answer(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    steps: list[RecordedStep],
    events: list[tuple[int, dict[str, Any]]],
) -> dict[str, Any] | None:
    """The run's last answer when no step records it, from the conversation after it.

    A run records its last answer with its outcome; a process stopped between the
    end of the run and that record leaves it unrecorded (the server's recovery of the
    run records none). The conversation saved with the run's end holds it: its last
    assistant message, when the run's messages hold one answer more than its steps.
    """
    messages = after.get("messages")
    if not isinstance(messages, list):
        return None
    added = messages[len(before.get("messages", [])) :]
    answers = [message for message in added if message.get("role") == "assistant"]
    if len(answers) <= sum(1 for step in steps if step.kind == "model") or not answers:
        return None
    answer = answers[-1]
    if answer.get("tool_calls"):
        return None
    usage = answer.get("usage") or {}
    return {
        "content": answer.get("content", ""),
        "reasoning": answer.get("reasoning"),
        "tool_calls": [],
        "usage": {**dataclasses.asdict(Usage()), **usage},
        "finish_reason": "stop",
        "model_name": None,
        # Its pieces are the run's last streamed ones: up to its last event.
        "journal": events[-1][0] if events else None,
    }


def _workflow(
    store: str, run_id: str, following: str | None
) -> tuple[
    str,
    dict[str, Any],
    tuple[str, dict[str, Any] | None],
    list[RecordedStep],
    dict[str, Any] | None,
]:
    """The run's workflow: its status, its arguments, its last answer (its step name and
    record, when the outcome holds it), its steps; and
    the session's state the next run (``following``) began with, if there is one."""
    from dbos import DBOSClient

    from agentrt.server.durable import WORKFLOW

    client = DBOSClient(system_database_url=store, retry_connection_errors=False)
    try:
        found = client.list_workflows(workflow_ids=[run_id], load_input=True, load_output=True)
        if not found or found[0].name != WORKFLOW or found[0].input is None:
            raise RecordingNotFoundError(f"the store holds no recording of the run {run_id!r}")
        status = found[0]
        inputs = found[0].input
        steps = [
            RecordedStep(
                step["function_id"],
                step["function_name"],
                step["output"],
                None if step["error"] is None else _described(step["error"]),
            )
            for step in client.list_workflow_steps(run_id)
        ]
        after_run = None
        if following is not None:
            found = client.list_workflows(workflow_ids=[following], load_input=True)
            if found and found[0].input is not None:
                after_run = _arguments(found[0].input)["state"]
    finally:
        client.destroy()
    output = status.output if isinstance(status.output, dict) else {}
    # The step name of the answer: a team member's (after a hand-off) is named after it.
    final = (output.get("final_step", "agentrt.server.model"), output.get("final"))
    return str(status.status), _arguments(inputs), final, steps, after_run


def _arguments(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A server run's workflow arguments by name."""
    from agentrt.server.durable import _server_run

    bound = inspect.signature(_server_run).bind(*inputs["args"], **inputs.get("kwargs", {}))
    bound.apply_defaults()
    return dict(bound.arguments)


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
