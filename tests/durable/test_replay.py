"""Replay: a recorded run of a durable session, run again from its recording alone.

The original run is served from a durable store (in process, through the routes) on
a real OpenAI-compatible HTTP endpoint (uvicorn on loopback): the model streams a
tool call of ``add``, then one of ``delete_file`` (which a person approves), then a
reasoned answer in pieces. The endpoint is shut down, and the server too, before
each replay: whatever the replay emits comes from the recording.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import sqlalchemy as sa
from dbos import DBOS
from starlette.responses import JSONResponse, Response

from agentrt.deferred import Approval
from agentrt.durable import (
    NoRecordingStoreError,
    RecordedModel,
    Recording,
    RecordingNotFoundError,
    ReplayDivergenceError,
    read_recording,
    replay,
    replay_recording,
)
from agentrt.models.scripted import ScriptedModel
from agentrt.server import create_app
from agentrt.stream import InvalidEvent
from agentrt.stream.codec import SequencedEvent, SSEEventDecoder
from agentrt.stream.events import StreamStoppedEvent, ToolCallConfirmationEvent
from tests.durable import replay_app, server_app, team_support
from tests.durable.test_durable_server import _store, _until
from tests.openai_fixtures import Turn
from tests.test_openai_server import ChatServer, serve

BASE = "http://localhost"
PROMPT = "Add 2 and 3, then delete notes.txt."
ANSWER = "2 + 3 = 5, and notes.txt is deleted as you asked."

ORIGINAL_TYPES = [
    "user_message",
    "stream_started",
    *["agent_choice_reasoning"] * 6,  # "The user wants a sum first." in 5-character pieces
    *["partial_tool_call"] * 4,
    "token_usage",
    "tool_call",
    "tool_call_response",
    *["agent_choice"] * 3,  # "Now the file."
    *["partial_tool_call"] * 5,
    "token_usage",
    "tool_call_confirmation",
    "tool_call",
    "tool_call_response",
    *["agent_choice_reasoning"] * 2,  # "Both done."
    *["agent_choice"] * 10,
    "token_usage",
    "stream_stopped",
]


def _answer(body: dict[str, Any], count: int) -> Turn:
    """The endpoint's answers, from the request's messages alone."""
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    done = sum(1 for m in messages[last_user:] if m["role"] == "tool")
    if done == 0:
        call = ("call-add", "add", '{"a": 2, "b": 3}')
        return Turn(reasoning="The user wants a sum first.", tool_calls=(call,), usage=(30, 12))
    if done == 1:
        call = ("call-delete", "delete_file", '{"path": "notes.txt"}')
        return Turn(content="Now the file.", tool_calls=(call,), usage=(45, 9))
    return Turn(reasoning="Both done.", content=ANSWER, usage=(60, 15))


@dataclass
class Recorded:
    """A session served and recorded: its store, its id, the events its client read."""

    store: str
    session_id: str
    events: list[dict[str, Any]]
    requests: int


async def _close_models() -> None:
    for model in replay_app.MODELS:
        await model.aclose()
    replay_app.MODELS.clear()


def _failing(body: dict[str, Any], count: int) -> Turn | Response:
    """The endpoint answers the first call, then fails."""
    if count == 1:
        return _answer(body, count)
    return JSONResponse({"error": {"message": "the model is overloaded"}}, status_code=503)


async def record(
    store: str,
    *messages: str,
    answer: Callable[[dict[str, Any], int], Turn | Response] = _answer,
    defer: bool = False,
) -> Recorded:
    """Serve one session from ``store`` on a real endpoint; each message a run, every
    confirmation approved; then shut the server and the endpoint down.

    With ``defer``, a run ends waiting on its confirmations, and the next run (without
    a message) approves them (``tool_results``), until one ends answering.
    """
    chat = ChatServer(answer)
    async with serve(chat.app) as endpoint:
        replay_app.ENDPOINT[0] = endpoint
        app = create_app(replay_app.make, storage=store, executor_id="recorder")
        try:
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
            ):
                session_id = (await client.post("/sessions")).json()["id"]
                runs: list[tuple[str | None, dict[str, Approval] | None]] = [
                    (message, None) for message in messages
                ]
                while runs:
                    message, approvals = runs.pop(0)
                    session = await _store(app).open(session_id)
                    run = await session.start(
                        message, tool_results=approvals, defer_confirmations=defer
                    )
                    after = run.after
                    while True:
                        item = (await _until(app, session_id, _past(after, defer)))[-1]
                        if isinstance(item.event, StreamStoppedEvent):
                            waiting = item.event.pending_tool_call_ids or ()
                            if waiting:
                                approved = {call: Approval("approve") for call in waiting}
                                runs.insert(0, (None, approved))
                            break
                        assert isinstance(item.event, ToolCallConfirmationEvent)
                        answered = await client.post(
                            f"/sessions/{session_id}/confirmations/{item.event.tool_call.id}",
                            json={"decision": "approve"},
                        )
                        assert answered.status_code == 200
                        after = item.sequence
                    # The workflow records its outcome right after the run's last event.
                    await (await DBOS.retrieve_workflow_async(run.run_id)).get_result()
                body = (await client.get(f"/sessions/{session_id}/events?after=0")).content
        finally:
            replay_app.ENDPOINT[0] = "http://127.0.0.1:9/v1"
            await _close_models()
    return Recorded(store, session_id, _event_data(body), len(chat.bodies))


def _event_data(body: bytes) -> list[dict[str, Any]]:
    """The events of an SSE body as JSON data, without their timestamps."""
    events = []
    for _, event in SSEEventDecoder().feed(body):
        assert not isinstance(event, InvalidEvent), event
        data = event.model_dump(mode="json")
        data.pop("timestamp")
        events.append(data)
    return events


def _past(after: int, deferred: bool) -> Callable[[SequencedEvent], bool]:
    """Accepts the first confirmation (unless ``deferred``) or end of a run after the
    event ``after``."""
    types = ("stream_stopped",) if deferred else ("tool_call_confirmation", "stream_stopped")

    def accept(item: SequencedEvent) -> bool:
        return item.sequence > after and item.event.type in types

    return accept


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.durable)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        base: str = request.getfixturevalue("postgres_server")
        return f"{base}/agentrt_{uuid.uuid4().hex[:12]}"
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One session with one run of PROMPT on SQLite, for the tests that only read it."""
    store = f"sqlite:///{tmp_path_factory.mktemp('replay') / 'store.sqlite'}"
    recorded = anyio.run(record, store, PROMPT)
    assert replay_app.CALLS == ["add 2 3", "delete notes.txt"]
    return recorded


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    replay_app.CALLS.clear()
    yield
    replay_app.CALLS.clear()


@contextlib.asynccontextmanager
async def changed(monkeypatch: pytest.MonkeyPatch, change: str) -> AsyncIterator[None]:
    monkeypatch.setenv("AGENTRT_TEST_CHANGE", change)
    try:
        yield
    finally:
        monkeypatch.delenv("AGENTRT_TEST_CHANGE")
        await _close_models()


async def test_a_replay_emits_the_original_events_with_the_model_endpoint_gone(
    store: str,
) -> None:
    recorded = await record(store, PROMPT)
    assert [event["type"] for event in recorded.events] == ORIGINAL_TYPES
    assert recorded.requests == 3
    assert replay_app.CALLS == ["add 2 3", "delete notes.txt"]

    # The endpoint and the server are gone: a model call would fail the run.
    replayed = await replay(recorded.store, recorded.session_id)
    await _close_models()

    assert replayed.event_data() == recorded.events
    assert replayed.matches
    assert replayed.differences() == []
    assert replayed.result is not None
    assert replayed.result.output == ANSWER
    assert [m.role for m in replayed.result.messages] == [
        "user",
        *["assistant", "tool"] * 2,
        "assistant",
    ]
    # No tool ran again, and the session's own factory made the agent.
    assert replay_app.CALLS == ["add 2 3", "delete notes.txt"]
    assert replayed.recording.factory == "tests.durable.replay_app:make"


async def test_each_run_of_a_session_replays_from_the_state_it_began_with(tmp_path: Path) -> None:
    recorded = await record(f"sqlite:///{tmp_path / 'store.sqlite'}", PROMPT, "And again?")
    first = await replay(recorded.store, recorded.session_id, run=1)
    second = await replay(recorded.store, recorded.session_id, run=2)
    latest = await replay(recorded.store, recorded.session_id)
    await _close_models()

    first_count = len(ORIGINAL_TYPES)
    assert first.event_data() == recorded.events[:first_count]
    assert second.event_data() == recorded.events[first_count:]
    assert latest.event_data() == second.event_data()
    assert second.recording.number == 2
    assert second.recording.message == "And again?"
    # The second run began from the first one's conversation (and the endpoint, asked
    # again, answered it from the tool results it found there: its final answer).
    assert [m["role"] for m in second.recording.state["messages"]] == [
        "system",
        "user",
        *["assistant", "tool"] * 2,
        "assistant",
    ]


@pytest.mark.parametrize(
    ("change", "step", "expected", "got"),
    [
        (
            "no-add",
            2,
            "a call of tool 'add' (step 2, call call-add)",
            "a model call",
        ),
        (
            "doubled",
            2,
            "a call of tool 'add' (step 2, call call-add)",
            "a call of tool 'add' (call call-add) with arguments "
            '{"a": 4, "b": 3} (the recorded call had {"a": 2, "b": 3})',
        ),
        (
            "no-confirm",
            4,
            "a confirmation (step 4, answered approve)",
            "a call of tool 'delete_file' (call call-delete) without its confirmation",
        ),
    ],
)
async def test_a_changed_agent_stops_at_the_first_step_that_diverges(
    one_run: Recorded,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
    step: int,
    expected: str,
    got: str,
) -> None:
    recording = await read_recording(one_run.store, one_run.session_id)
    assert [s.name for s in recording.steps] == [
        "agentrt.server.model",
        "agentrt.server.tool.add",
        "agentrt.server.model",
        "DBOS.recv",
        "DBOS.sleep",
        "agentrt.server.tool.delete_file",
        "agentrt.server.model",  # the last answer, recorded with the run's outcome
    ]
    async with changed(monkeypatch, change):
        with pytest.raises(ReplayDivergenceError) as raised:
            await replay_recording(recording)

    error = raised.value
    assert (error.step, error.expected, error.got) == (step, expected, got)
    assert str(error) == (
        f"the replay diverges from the recording at step {step}: expected {expected}, got {got}"
    )
    # What the replay emitted up to there, none of it after.
    assert error.events[0].type == "user_message"
    assert error.events[-1].type == "stream_stopped"
    assert replay_app.CALLS == []


async def test_a_changed_agent_that_takes_the_same_path_emits_other_events(
    one_run: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with changed(monkeypatch, "renamed"):
        replayed = await replay(one_run.store, one_run.session_id)

    assert not replayed.matches
    assert replayed.differences()[0].startswith("event 3: recorded {")
    assert [event.type for event in replayed.events] == ORIGINAL_TYPES


async def test_an_agent_with_other_instructions_emits_the_events_but_is_not_the_recording(
    one_run: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with changed(monkeypatch, "instructions"):
        replayed = await replay(one_run.store, one_run.session_id)

    assert replayed.recording.instructions == replay_app.INSTRUCTIONS
    assert replayed.recording.tools == ("add", "delete_file")
    assert replayed.event_data() == one_run.events
    assert not replayed.matches
    assert replayed.differences() == [
        "the agent's instructions are not the recorded ones: recorded "
        f"{replay_app.INSTRUCTIONS!r}, now {replay_app.INSTRUCTIONS + ' Be terse.'!r}"
    ]


async def test_a_run_that_failed_on_the_model_replays_to_the_same_failure(
    tmp_path: Path,
) -> None:
    recorded = await record(f"sqlite:///{tmp_path / 'store.sqlite'}", PROMPT, answer=_failing)
    replayed = await replay(recorded.store, recorded.session_id)
    await _close_models()

    assert [event["type"] for event in recorded.events][-4:] == [
        "tool_call",
        "tool_call_response",
        "error",
        "stream_stopped",
    ]
    assert "503" in recorded.events[-2]["error"]
    assert replayed.event_data() == recorded.events
    assert replayed.result is None
    assert replay_app.CALLS == ["add 2 3"]


async def test_a_run_whose_server_stopped_before_recording_its_outcome_replays_alike(
    tmp_path: Path,
) -> None:
    recorded = await record(f"sqlite:///{tmp_path / 'store.sqlite'}", PROMPT, "And again?")
    # As a server stopped between a run's last event and DBOS's record of its outcome
    # leaves it: pending (a recovery closes it without its last answer).
    engine = sa.create_engine(recorded.store)
    with engine.begin() as db:
        db.execute(sa.text("UPDATE workflow_status SET status = 'PENDING', output = NULL"))
        db.execute(sa.text("DELETE FROM workflow_output"))
    engine.dispose()

    first = await replay(recorded.store, recorded.session_id, run=1)
    second = await replay(recorded.store, recorded.session_id, run=2)
    await _close_models()

    assert first.recording.steps[-1].output["content"] == ANSWER
    assert first.event_data() + second.event_data() == recorded.events


async def test_a_run_that_ended_waiting_and_its_continuation_replay_alike(
    tmp_path: Path,
) -> None:
    recorded = await record(f"sqlite:///{tmp_path / 'store.sqlite'}", PROMPT, defer=True)
    waiting = await replay(recorded.store, recorded.session_id, run=1)
    continued = await replay(recorded.store, recorded.session_id, run=2)
    await _close_models()

    assert waiting.recording.defer_confirmations
    assert waiting.events[-1].type == "stream_stopped"
    assert waiting.event_data()[-1]["pending_tool_call_ids"] == ["call-delete"]
    assert continued.recording.message is None
    assert continued.recording.tool_results == {
        "call-delete": {"decision": "approve", "reason": None}
    }
    assert waiting.event_data() + continued.event_data() == recorded.events
    assert continued.result is not None
    assert continued.result.output == ANSWER
    assert replay_app.CALLS == ["add 2 3", "delete notes.txt"]


async def test_a_recording_carried_as_json_replays_alike(one_run: Recorded) -> None:
    recording = await read_recording(one_run.store, one_run.session_id)
    carried = Recording.from_json(recording.to_json())
    replayed = await replay_recording(carried, replay_app.make)
    await _close_models()

    assert carried == recording
    assert replayed.event_data() == one_run.events


async def test_the_stand_in_model_is_a_scripted_model_streaming_the_recorded_pieces(
    one_run: Recorded,
) -> None:
    recording = await read_recording(one_run.store, one_run.session_id)
    last = recording.steps[-1]
    chunks = recording.chunks(last)
    await _close_models()

    assert [getattr(chunk, "text", None) for chunk in chunks[:-1]] == [
        "Both ",
        "done.",
        *[ANSWER[i : i + 5] for i in range(0, len(ANSWER), 5)],
    ]
    assert issubclass(RecordedModel, ScriptedModel)


async def test_replay_needs_a_durable_store() -> None:
    with pytest.raises(NoRecordingStoreError, match="replay needs a durable store"):
        await replay("memory", "any")


async def test_an_unknown_store_session_or_run_is_a_clear_error(
    one_run: Recorded, tmp_path: Path
) -> None:
    missing = f"sqlite:///{tmp_path / 'nothing.sqlite'}"
    with pytest.raises(RecordingNotFoundError, match="does not exist"):
        await replay(missing, "any")
    assert not (tmp_path / "nothing.sqlite").exists()  # a reader creates nothing
    recorded = one_run
    with pytest.raises(RecordingNotFoundError, match="no session 'nope'"):
        await replay(recorded.store, "nope")
    with pytest.raises(RecordingNotFoundError, match="has 1 run: run 2 does not exist"):
        await replay(recorded.store, recorded.session_id, run=2)
    with pytest.raises(ValueError, match="run must be a run's number"):
        await replay(recorded.store, recorded.session_id, run=0)
    with pytest.raises(TypeError, match="run must be a run's number or id, got float"):
        await replay(recorded.store, recorded.session_id, run=1.0)  # type: ignore[arg-type]


def test_a_session_records_its_factory_by_a_name_that_finds_it_again() -> None:
    from agentrt.cli._targets import load_factory
    from agentrt.durable._recording import factory_target

    def closure() -> None:
        """Made inside a function: no name finds it."""

    # As `agentrt serve path/to/file.py:make` loads it: a module of a private name.
    from_file = load_factory(f"{replay_app.__file__}:make")
    named = factory_target(from_file)

    assert factory_target(replay_app.make) == "tests.durable.replay_app:make"
    assert from_file.__module__.startswith("_agentrt_target_")
    assert named == f"{Path(replay_app.__file__).resolve()}:make"
    assert load_factory(named).__qualname__ == "make"
    assert factory_target(closure) is None
    assert factory_target(lambda: None) is None
    assert factory_target(functools.partial(replay_app.make)) is None


def _notes(folder: Path) -> dict[str, str]:
    """What the team noted of its calls (the real ones: model calls and tool calls)."""
    return {path.name: path.read_text() for path in folder.glob("*.count")}


async def _serve_team(store: str, *messages: str) -> tuple[str, list[dict[str, Any]]]:
    """A session of team_support's team, one run per message; its id and events."""
    app = create_app(team_support.make_team, storage=store, executor_id="team")
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        session_id = (await client.post("/sessions")).json()["id"]
        for message in messages:
            url = f"/sessions/{session_id}/messages"
            assert b"stream_stopped" in (await client.post(url, json={"message": message})).content
        body = (await client.get(f"/sessions/{session_id}/events?after=0")).content
    return session_id, _event_data(body)


# Not "parallel": calls run at once interleave their events as their steps' timing
# decides, which a replay (its steps instant) does not reproduce (see the README).
@pytest.mark.parametrize("plan", ["delegate", "deep", "billing please"])
async def test_a_team_run_replays_each_members_recorded_answers_and_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: str
) -> None:
    monkeypatch.setattr(server_app, "WORKDIR", tmp_path)  # where the team notes its calls
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    session_id, events = await _serve_team(store, plan)
    notes = _notes(tmp_path)

    replayed = await replay(store, session_id)

    assert replayed.differences() == []
    assert replayed.event_data() == events
    # No member's model, no tool, was called again.
    assert _notes(tmp_path) == notes
    assert len(notes) >= 2
