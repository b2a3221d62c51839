"""An A2A task told from its run's events (agentrt.a2a._task): the states a run's end,
errors, confirmations and a team's sub-agents give it."""

from __future__ import annotations

from a2a.helpers import get_data_parts, new_text_part
from a2a.types import Message, Role, TaskState

from agentrt.a2a._task import TaskFold
from agentrt.server._runlog import ABANDONED
from agentrt.stream.attribution import attributed
from agentrt.stream.events import (
    AgentChoiceEvent,
    ErrorEvent,
    StreamEvent,
    StreamStartedEvent,
    StreamStoppedEvent,
    ToolCallConfirmationEvent,
    ToolCallResponseEvent,
    WireFunction,
    WireToolCall,
)

SID = "session"


def fold_of(*events: StreamEvent) -> TaskFold:
    fold = TaskFold("task", "context", "run", 0)
    for n, event in enumerate((StreamStartedEvent(session_id=SID), *events), 1):
        fold.feed(n, event)
    return fold


def text(content: str) -> AgentChoiceEvent:
    return AgentChoiceEvent(session_id=SID, content=content, agent_name="root")


def call(call_id: str) -> WireToolCall:
    return WireToolCall(id=call_id, function=WireFunction(name="delete_file", arguments="{}"))


def asked(call_id: str) -> ToolCallConfirmationEvent:
    return ToolCallConfirmationEvent(session_id=SID, tool_call=call(call_id), agent_name="root")


def error(message: str) -> ErrorEvent:
    return ErrorEvent(session_id=SID, error=message, agent_name="root")


STOPPED = StreamStoppedEvent(session_id=SID)


def answer(content: str) -> Message:
    return Message(message_id=content, role=Role.ROLE_USER, parts=[new_text_part(content)])


def test_an_error_followed_by_more_of_the_run_did_not_end_it() -> None:
    # A durable run recovered after a crash says what it abandoned, then goes on.
    fold = fold_of(text("Hel"), error(ABANDONED), text("Hello"), STOPPED)
    assert fold.state == TaskState.TASK_STATE_COMPLETED
    assert [a.parts[0].text for a in fold.artifacts()] == ["Hel", "Hello"]


def test_an_error_just_before_the_end_fails_the_task_and_a_cancellation_cancels_it() -> None:
    failed = fold_of(text("Hel"), error("RuntimeError: the model is down"), STOPPED)
    assert failed.state == TaskState.TASK_STATE_FAILED
    assert failed.task().status.message.parts[0].text == "RuntimeError: the model is down"
    cancelled = fold_of(error("cancelled: the session was closed"), STOPPED)
    assert cancelled.state == TaskState.TASK_STATE_CANCELED


def test_calls_waiting_together_are_asked_together_and_one_answered_leaves_the_other() -> None:
    fold = fold_of(asked("a"), asked("b"))
    pending = get_data_parts(fold.task().status.message.parts)[0]["pending"]
    assert [entry["toolCallId"] for entry in pending] == ["a", "b"]
    fold.answered(["a"], answer("approve a"))
    assert fold.state == TaskState.TASK_STATE_INPUT_REQUIRED
    pending = get_data_parts(fold.task().status.message.parts)[0]["pending"]
    assert [entry["toolCallId"] for entry in pending] == ["b"]
    fold.answered(["b"], answer("approve b"))
    assert fold.state == TaskState.TASK_STATE_WORKING


def test_a_response_to_the_last_call_waiting_puts_the_task_back_to_work() -> None:
    response = ToolCallResponseEvent(
        session_id=SID, tool_call=call("a"), response="deleted", agent_name="root"
    )
    fold = fold_of(asked("a"), response)
    assert fold.state == TaskState.TASK_STATE_WORKING
    assert fold.pending == {}


def test_a_sub_agents_text_is_a_status_message_not_the_answer() -> None:
    helper = attributed(
        AgentChoiceEvent(session_id=SID, content="from the helper", agent_name="helper"),
        "call-1",
    )
    fold = fold_of(helper, text("the answer"), STOPPED)
    assert [a.parts[0].text for a in fold.artifacts()] == ["the answer"]
