"""A durable run survives ``kill -9``: restarted with the same executor id, it completes."""

from __future__ import annotations

import pytest

from .conftest import Crashable

pytestmark = pytest.mark.durable


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_a_run_killed_in_its_second_tool_completes_after_restart_and_the_first_tool_ran_once(
    crashable: Crashable, stream: bool
) -> None:
    first = crashable.start("run", block=True, stream=stream)
    crashable.wait_for("slow.started", first)
    crashable.kill(first)

    output = crashable.finish("recover", stream=stream)

    assert output == "all done: first done (1); slow done (3)"
    # The completed tool call is never executed again: its recorded result is used.
    assert crashable.lines("first.count") == ["1"]
    # The two recorded model calls are replayed; only the final answer is asked for.
    assert crashable.lines("model.count") == ["0", "1", "2"]
    # The interrupted call runs again, and sees the same tool-call id both times.
    assert crashable.lines("slow.started") == ["call-slow", "call-slow"]


def test_a_cancelled_run_is_not_recovered_after_restart(crashable: Crashable) -> None:
    first = crashable.start("run", block=True)
    crashable.wait_for("slow.started", first)
    assert crashable.finish("cancel") == "cancel sent"
    crashable.kill(first)

    assert crashable.finish("recover") == "cancelled"
    assert crashable.lines("first.count") == ["1"]
    assert crashable.lines("model.count") == ["0", "1"]
    assert crashable.lines("slow.started") == ["call-slow"]


def test_a_finished_run_started_again_with_its_id_returns_its_recorded_result(
    crashable: Crashable,
) -> None:
    assert crashable.finish("run") == "all done: first done (1); slow done (3)"
    assert crashable.finish("run") == "all done: first done (1); slow done (3)"
    assert crashable.lines("first.count") == ["1"]
    assert crashable.lines("model.count") == ["0", "1", "2"]


def test_parallel_calls_of_one_tool_replay_each_its_own_record(crashable: Crashable) -> None:
    first = crashable.start("run", block=True, parallel=True)
    crashable.wait_for("slow.started", first)
    crashable.kill(first)

    output = crashable.finish("recover", parallel=True)

    # Each call's recorded result goes back to its own call, in the model's order.
    assert output == "all done: first done (1); first done (2); slow done (3)"
    assert sorted(crashable.lines("first.count")) == ["1", "2"]
    assert crashable.lines("model.count") == ["0", "2", "3"]
    assert crashable.lines("slow.started") == ["call-slow", "call-slow"]


def test_a_model_call_killed_mid_stream_is_made_again_without_its_partial_output(
    crashable: Crashable,
) -> None:
    first = crashable.start("run", stream=True, block_stream=True)
    crashable.wait_for("stream.started", first)
    crashable.kill(first)

    output = crashable.finish("recover", stream=True)

    # Only the new call's chunks make the answer: the dead call's two were never recorded.
    assert output == "all done: first done (1); slow done (3)"
    assert crashable.lines("stream.started") == ["all done: firs"]
    # The final call is made twice (cut off, then again); the recorded ones once.
    assert crashable.lines("model.count") == ["0", "1", "2", "2"]
    assert crashable.lines("first.count") == ["1"]
    assert crashable.lines("slow.started") == ["call-slow"]
