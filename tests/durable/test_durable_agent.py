"""DurableAgent in one process: each run a workflow, each model and tool call a recorded step."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from dbos import DBOS, SetWorkflowID

from agentrt import Agent, ScriptedModel, ToolCall
from agentrt.durable import (
    DurableAgent,
    DurableModel,
    FreshRun,
    RunCancelledError,
    RunNotFoundError,
    fresh_run,
    launch,
    result,
)
from agentrt.durable._steps import _replayed_chunks
from agentrt.messages import Usage, UserMessage
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import ModelRequest, ModelResponse
from agentrt.tools import current_tool_context

from .conftest import in_process_store

CALLS: list[str] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.append(f"add {a} {b}")
    return a + b


def fail(reason: str) -> str:
    """Always fails."""
    CALLS.append("fail")
    raise RuntimeError(reason)


_blocked: list[anyio.Event] = []


async def block() -> str:
    """Signals that it started, then waits until cancelled."""
    context = current_tool_context()
    CALLS.append(f"block {context.tool_call_id if context else '?'}")
    _blocked[0].set()
    await anyio.sleep_forever()
    return "never"


def opaque() -> object:
    """Returns a value that cannot be rendered as text."""
    CALLS.append("opaque")
    return object()


def _durable(name: str, script: list[Any]) -> DurableAgent:
    return DurableAgent(
        Agent(model=ScriptedModel(script), tools=[add, fail, block, opaque]), name=name
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with in_process_store(tmp_path_factory, "in-process") as url:
        yield url


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()
    _blocked[:] = [anyio.Event()]


async def _step_names(run_id: str) -> list[str]:
    steps = await DBOS.list_workflow_steps_async(run_id)
    return [step["function_name"] for step in steps]


async def test_each_model_call_and_each_tool_call_is_a_recorded_step(store: str) -> None:
    durable = _durable("steps", [ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3}), "5"])

    done = await durable.execute("add 2 and 3", run_id="steps-1")

    assert done.output == "5"
    assert [m.role for m in done.messages] == ["user", "assistant", "tool", "assistant"]
    assert CALLS == ["add 2 3"]
    # The final answer is the run's result, recorded with it: no step of its own.
    assert await _step_names("steps-1") == ["agentrt.steps.model", "agentrt.steps.tool.add"]


async def test_an_unrecorded_tool_runs_without_a_step_of_its_own(store: str) -> None:
    agent = Agent(
        model=ScriptedModel([ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3}), "5"]),
        tools=[add],
    )
    durable = DurableAgent(agent, name="unrecorded", unrecorded_tools={"add"})

    done = await durable.execute("add 2 and 3", run_id="unrecorded-1")

    assert done.output == "5"
    assert CALLS == ["add 2 3"]
    # A pure tool may run again on recovery: only the answer that asked for it is kept.
    assert await _step_names("unrecorded-1") == ["agentrt.unrecorded.model"]


@DBOS.workflow(name="agentrt.test.held-back")
async def _two_answers(prompt: str) -> str:
    model = DurableModel(ScriptedModel(["first", "second"]), "held.model")
    request = ModelRequest(messages=[UserMessage(content=prompt)])
    first = await model.complete(request)
    second = await model.complete(request)
    return f"{first.content} {second.content}"


async def test_an_answer_held_back_is_recorded_at_its_place_when_another_step_follows(
    store: str,
) -> None:
    token = fresh_run.set(FreshRun("held-1"))
    try:
        with SetWorkflowID("held-1"):
            assert await _two_answers("go") == "first second"
    finally:
        fresh_run.reset(token)

    # The first answer is recorded at its own place, once the second call comes; the
    # second, the run's last, never is (the run's result holds it).
    steps = await DBOS.list_workflow_steps_async("held-1")
    assert [step["function_name"] for step in steps] == ["held.model"]
    output = steps[0]["output"]
    assert isinstance(output, dict)
    assert output["content"] == "first"


async def test_a_finished_run_id_returns_the_recorded_result_and_runs_nothing(store: str) -> None:
    durable = _durable("again", [ToolCall(id="c1", name="add", arguments={"a": 1, "b": 1}), "2"])
    first = await durable.execute("add", run_id="again-1")

    second = await durable.execute("add", run_id="again-1")
    read = await result("again-1")

    assert CALLS == ["add 1 1"]
    assert second.output == read.output == first.output == "2"
    assert second.messages == read.messages == first.messages
    assert second.usage == first.usage


async def test_a_failed_tool_call_is_recorded_and_the_model_reads_the_error(store: str) -> None:
    durable = _durable(
        "failing", [ToolCall(id="c1", name="fail", arguments={"reason": "disk full"}), "sorry"]
    )

    done = await durable.execute("try", run_id="failing-1")

    tool = done.messages[2]
    assert tool.role == "tool"
    assert tool.is_error
    assert "disk full" in tool.content
    assert await _step_names("failing-1") == [
        "agentrt.failing.model",
        "agentrt.failing.tool.fail",
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_a_repeated_call_id_is_replaced_inside_the_step_so_the_record_keeps_it(
    store: str, stream: bool
) -> None:
    name = f"repeat-{int(stream)}"
    durable = _durable(
        name,
        [
            ToolCall(id="c1", name="add", arguments={"a": 1, "b": 1}),
            ToolCall(id="c1", name="add", arguments={"a": 2, "b": 2}),
            "done",
        ],
    )

    done = await durable.execute("twice", run_id=name, stream=stream)

    tool_ids = [m.tool_call_id for m in done.messages if m.role == "tool"]
    assert tool_ids[0] == "c1"
    assert tool_ids[1] not in ("", "c1")
    # The fresh id is the recorded one: a replay hands the tool step the same call.
    steps = await DBOS.list_workflow_steps_async(name)
    recorded = [step["output"] for step in steps if step["function_name"].endswith(".model")]
    second = recorded[1]
    assert isinstance(second, dict)
    assert second["tool_calls"][0]["id"] == tool_ids[1]


async def test_a_tool_value_that_cannot_be_text_is_a_recorded_tool_error(store: str) -> None:
    durable = _durable("opaque", [ToolCall(id="c1", name="opaque", arguments={}), "ok"])

    done = await durable.execute("try", run_id="opaque-1")

    tool = done.messages[2]
    assert tool.role == "tool"
    assert tool.is_error
    assert "cannot be rendered as text" in tool.content
    assert CALLS == ["opaque"]


async def test_a_model_that_answers_no_model_response_is_a_type_error(store: str) -> None:
    class Broken:
        name = "broken"

        async def complete(self, request: Any) -> Any:
            return "not a response"

        def stream(self, request: Any) -> Any:
            raise NotImplementedError

    durable = DurableAgent(Agent(model=Broken()), name="broken")
    assert durable.agent.model.name == "broken"

    with pytest.raises(TypeError, match="returned str, not a ModelResponse"):
        await durable.execute("hi", run_id="broken-1")


async def test_a_second_run_continues_the_conversation(store: str) -> None:
    durable = _durable("chat", ["hello", "again"])
    await durable.execute("hi", run_id="chat-1")

    done = await durable.execute("and now?", run_id="chat-2")

    assert done.output == "again"
    assert [m.content for m in durable.agent.messages] == ["hi", "hello", "and now?", "again"]


async def test_a_streamed_durable_run_announces_its_chunks_live(store: str) -> None:
    durable = _durable("streamed", ["one two three"])
    chunks: list[str] = []
    durable.agent.events.on(
        "llm:stream:chunk", lambda ctx: chunks.append(ctx.parameters["chunk"].text)
    )

    done = await durable.execute("count", run_id="streamed-1", stream=True)

    assert done.output == "one two three"
    assert "".join(chunks) == "one two three"
    assert len(chunks) > 1


async def test_a_caller_cancelled_mid_tool_cancels_the_run_in_the_store(store: str) -> None:
    durable = _durable("cancelled", [ToolCall(id="c1", name="block", arguments={}), "never"])

    async with anyio.create_task_group() as group:
        group.start_soon(functools.partial(durable.execute, "block", run_id="cancelled-1"))
        await _blocked[0].wait()
        group.cancel_scope.cancel()

    status = await DBOS.get_workflow_status_async("cancelled-1")
    assert status is not None
    assert status.status == "CANCELLED"
    with pytest.raises(RunCancelledError, match="cancelled-1"):
        await result("cancelled-1")
    assert CALLS == ["block c1"]
    # Every tool call of the cancelled run is answered in the conversation.
    assert [m.role for m in durable.agent.messages] == ["user", "assistant", "tool"]


def test_a_sqlite_store_runs_in_wal_mode(store: str) -> None:
    path = store.removeprefix("sqlite:///")
    with contextlib.closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_the_result_of_an_unknown_run_is_a_run_not_found_error(store: str) -> None:
    with pytest.raises(RunNotFoundError, match="no-such-run"):
        await result("no-such-run")


async def test_outside_a_workflow_the_durable_agent_runs_as_a_plain_agent() -> None:
    durable = _durable("plain", [ToolCall(id="c1", name="add", arguments={"a": 4, "b": 4}), "8"])
    assert isinstance(durable.agent.model, DurableModel)

    done = await durable.agent.execute("add")

    assert done.output == "8"
    assert CALLS == ["add 4 4"]


def test_bad_arguments_are_clear_errors() -> None:
    agent = Agent(model=ScriptedModel(["x"]))
    with pytest.raises(TypeError, match="wraps an Agent"):
        DurableAgent("agent", name="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="letters, digits"):
        DurableAgent(agent, name="no spaces")
    with pytest.raises(TypeError, match="unrecorded_tools is a collection of tool names"):
        DurableAgent(agent, name="names", unrecorded_tools="add")
    DurableAgent(agent, name="taken")
    with pytest.raises(ValueError, match="already registered"):
        DurableAgent(Agent(model=ScriptedModel(["x"])), name="taken")
    with pytest.raises(ValueError, match=r"sqlite:///PATH or postgresql://"):
        launch("mysql://nope")
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        launch("sqlite:///x.sqlite", sqlite_synchronous="OFF")  # type: ignore[arg-type]


async def test_bad_run_arguments_are_type_errors() -> None:
    durable = _durable("bad-args", ["x"])
    with pytest.raises(TypeError, match="prompt must be a string"):
        await durable.execute(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="run_id must be a non-empty string"):
        await durable.execute("x", run_id="")


def test_import_agentrt_does_not_import_dbos() -> None:
    code = "import sys, agentrt, agentrt.stream, agentrt.server; print('dbos' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("reasoning", ["weighed it", "", None])
def test_a_replayed_answer_assembles_into_the_recorded_one_every_field_kept(
    reasoning: str | None,
) -> None:
    recorded = ModelResponse(
        content="calling add",
        reasoning=reasoning,
        tool_calls=(ToolCall(id="call-1", name="add", arguments='{"a": 1, "b": 2}'),),
        usage=Usage(3, 4, requests=1),
        finish_reason="tool_calls",
    )
    assembler = ResponseAssembler()
    for chunk in _replayed_chunks(recorded):
        assembler.add(chunk)
    assert assembler.response() == recorded


_LAUNCH = """
import sys
from agentrt.durable import StoreUnavailableError, launch
try:
    launch(sys.argv[1], log_level="CRITICAL")
except StoreUnavailableError as error:
    print(error)
"""


@pytest.mark.parametrize(
    ("store", "shown", "reason"),
    [
        ("sqlite:////proc/no-such-dir/store.sqlite", "/proc/no-such-dir", "unable to open"),
        # Three slashes: relative to the working directory (the child's is ours).
        (
            "sqlite:///no-such-dir/store.sqlite",
            f"(the file {Path.cwd() / 'no-such-dir' / 'store.sqlite'})",
            f"(the directory {Path.cwd() / 'no-such-dir'} does not exist)",
        ),
        ("postgresql://ada:secret@127.0.0.1:1/runs", "ada:***@127.0.0.1:1", "refused"),
    ],
    ids=["unwritable-sqlite", "relative-sqlite", "unreachable-postgres"],
)
def test_a_store_that_cannot_be_opened_is_a_clear_error(
    store: str, shown: str, reason: str
) -> None:
    # In a process of its own: this module's DBOS instance stays launched.
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCH, store], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("the durable store ")
    assert shown in out
    assert reason in out
    assert "secret" not in out


def test_the_durable_package_is_documented_in_its_module() -> None:
    import agentrt.durable

    assert Path(agentrt.durable.__file__).parent.name == "durable"
