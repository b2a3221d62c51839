"""A run that ends waiting holds nothing in a process: ``kill -9`` it, any process continues it."""

from __future__ import annotations

import pytest

from .conftest import Crashable

pytestmark = pytest.mark.durable


def test_a_process_killed_while_its_run_waits_loses_nothing_another_process_continues_it(
    crashable: Crashable,
) -> None:
    first = crashable.start("wait", block=True)
    crashable.wait_for("waiting", first)
    crashable.kill(first)

    # A fresh process, under another executor id: on Postgres, any process of the store.
    output = crashable.finish("answer", executor="worker-2")

    assert output == "done: Lyon; charged 10"
    assert crashable.lines("waiting") == ["call-locate,call-charge"]
    # The approved call ran once, in the second process; one model call in each process.
    assert crashable.lines("charge.count") == ["10"]
    assert crashable.lines("model.count") == ["0", "2"]


def test_a_continuation_killed_in_its_approved_call_completes_after_restart(
    crashable: Crashable,
) -> None:
    assert crashable.finish("wait") == "call-locate,call-charge"
    second = crashable.start("answer", executor="worker-2", block_charge=True)
    crashable.wait_for("charge.started", second)
    crashable.kill(second)

    # worker-2 starts again and recovers the continuation, from its recorded input.
    output = crashable.finish("recover", executor="worker-2", run_id="run-1.answer")

    assert output == "done: Lyon; charged 10"
    assert crashable.lines("charge.started") == ["10"]
    assert crashable.lines("charge.count") == ["10"]
    assert crashable.lines("model.count") == ["0", "2"]
