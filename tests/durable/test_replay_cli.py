"""``agentrt replay``: a recorded run replayed from the command line, or written out as a test.

The runs are recorded as in test_replay.py (a durable server in process, a real
HTTP endpoint, both shut down before the replay). The exported test runs under
pytest in a process of its own, against the unchanged agent and a changed one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa

from tests.cli.support import Result, cli
from tests.durable import replay_app
from tests.durable.test_replay import ORIGINAL_TYPES, PROMPT, Recorded, record

ROOT = Path(__file__).resolve().parents[2]


def _recorded(store: str) -> Recorded:
    return anyio.run(record, store, PROMPT)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One run of PROMPT on SQLite, replayed by each test (a replay writes nothing).

    Made before any test's capsys: DBOS's log handler keeps the stream it found at
    launch, and a later launch flushes it.
    """
    return _recorded(f"sqlite:///{tmp_path_factory.mktemp('cli') / 'store.sqlite'}")


@pytest.fixture
def own_recording(tmp_path: Path) -> Recorded:
    """A run of PROMPT in a store of its own, for a test that changes the store."""
    return _recorded(f"sqlite:///{tmp_path / 'store.sqlite'}")


def _replay(capsys: pytest.CaptureFixture[str], recorded: Recorded, *options: str) -> Result:
    return cli(capsys, "replay", "--store", recorded.store, recorded.session_id, *options)


def test_agentrt_replay_shows_the_run_and_says_it_emitted_the_recorded_events(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = list(replay_app.CALLS)
    result = _replay(capsys, recorded)

    assert result.code == 0, result.err
    assert "delete_file" in result.out
    assert "2 + 3 = 5, and notes.txt is deleted as you asked." in result.out
    assert result.err == (
        f"agentrt: replayed run 1 of session {recorded.session_id}: the "
        f"{len(ORIGINAL_TYPES)} recorded events, in order (the model and the tools were "
        "not called)\n"
    )
    assert calls == replay_app.CALLS  # no tool ran


def test_agentrt_replay_json_prints_the_replayed_events_as_ndjson(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _replay(capsys, recorded, "--run", "1", "--json")

    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    for event in events:
        event.pop("timestamp")
    assert events == recorded.events


def test_agentrt_replay_of_a_changed_agent_exits_1_naming_the_divergence(
    recorded: Recorded, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTRT_TEST_CHANGE", "no-add")
    result = _replay(capsys, recorded, "--json")

    assert result.code == 1
    assert result.err == (
        "agentrt: the replay diverges from the recording at step 2: expected a call of "
        "tool 'add' (step 2, call call-add), got a model call\n"
    )
    # The events up to the divergence, for the reader to see where it went.
    assert [json.loads(line)["type"] for line in result.out.splitlines()][-1] == "stream_stopped"


def test_agentrt_replay_on_a_memory_store_says_it_needs_a_durable_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = cli(capsys, "replay", "--store", "memory", "some-session")

    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        "agentrt replay: replay needs a durable store (sqlite:///PATH or postgresql://...): "
        "a memory store keeps no recording of its runs, and forgets them when its process "
        "ends\n"
    )


def test_agentrt_replay_of_an_unknown_run_is_bad_usage(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _replay(capsys, recorded, "--run", "0").err == (
        "agentrt replay: --run takes a run's number, from 1; got 0\n"
    )
    result = _replay(capsys, recorded, "--run", "3")
    assert result.code == 2
    assert result.err == (
        f"agentrt replay: session {recorded.session_id!r} has 1 run: run 3 does not exist\n"
    )


def _pytest(path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_exported_test_passes_against_the_agent_and_fails_against_a_changed_one(
    recorded: Recorded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    exported = _replay(capsys, recorded, "--export-test")
    assert exported.code == 0, exported.err
    path = tmp_path / "test_recorded_run.py"
    path.write_text(exported.out)
    assert "from tests.durable.replay_app import make as AGENT" in exported.out

    unchanged = _pytest(path)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "1 passed" in unchanged.stdout

    diverging = _pytest(path, AGENTRT_TEST_CHANGE="no-add")
    assert diverging.returncode == 1
    assert (
        "ReplayDivergenceError: the replay diverges from the recording at step 2"
        in diverging.stdout
    )

    instructed = _pytest(path, AGENTRT_TEST_CHANGE="instructions")
    assert instructed.returncode == 1
    assert "the agent's instructions are not the recorded ones" in instructed.stdout

    renamed = _pytest(path, AGENTRT_TEST_CHANGE="renamed")
    assert renamed.returncode == 1
    assert "'agent_name': 'helper'" in renamed.stdout


def test_a_session_without_a_recorded_factory_replays_with_the_one_given(
    own_recording: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = own_recording
    # As a session served with a lambda would be: no factory name in the store.
    engine = sa.create_engine(recorded.store)
    with engine.begin() as db:
        db.execute(sa.text("DELETE FROM agentrt_attachments"))
    engine.dispose()

    target = "tests/durable/replay_app.py:make"
    unknown = _replay(capsys, recorded)
    assert unknown.code == 2
    assert unknown.err.endswith(
        "recorded no importable agent factory (it was served with a lambda, a closure or a "
        "method): name the agent to replay with (agent=..., or --agent module:attr)\n"
    )
    unexported = _replay(capsys, recorded, "--export-test")
    assert unexported.code == 2
    assert unexported.err.endswith("name the agent the test makes (--agent module:attr)\n")
    replayed = _replay(capsys, recorded, "--agent", target)
    assert replayed.code == 0, replayed.err
    given = _replay(capsys, recorded, "--export-test", "--agent", target)
    assert given.code == 0
    assert "AGENT = 'tests/durable/replay_app.py:make'  # the agent factory, by name" in given.out


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.durable)])
def test_a_recorded_run_replays_in_another_process(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if kind == "postgres":
        store = f"{request.getfixturevalue('postgres_server')}/agentrt_replay_cli"
    else:
        store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    recorded = _recorded(store)
    command = ["agentrt", "replay", "--store", store, "--json", recorded.session_id]
    replayed = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert replayed.returncode == 0, replayed.stderr
    events = [json.loads(line) for line in replayed.stdout.splitlines()]
    for event in events:
        event.pop("timestamp")
    assert events == recorded.events
