"""LocalModel shows a small model the tools' results as facts when it asks for text.

agentrt/models/_local_facts.py, and where agentrt/models/local.py uses it: the
``chatml-function-calling`` format, on the calls that offer no tool (``tool_choice``
``"none"``, or no tools).
"""

from typing import Any

import pytest

from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentrt.models._local_facts import fact_line, fold_tool_rounds
from agentrt.models.base import ModelRequest
from agentrt.models.local import chat_completion_kwargs
from tests.local_model_support import WEATHER_TOOL

QUESTION = "What is 6 * 7, and the weather in Paris?"

RUN: list[Message] = [
    SystemMessage(content="Be brief."),
    UserMessage(content=QUESTION),
    AssistantMessage(
        tool_calls=(
            ToolCall(id="c1", name="calculate", arguments='{"expression": "6 * 7"}'),
            ToolCall(id="c2", name="get_weather", arguments='{"city": "Paris"}'),
        )
    ),
    ToolMessage(content="42", tool_call_id="c1", name="calculate"),
    ToolMessage(content="sunny, 21 C", tool_call_id="c2", name="get_weather"),
]

FACTS = 'Facts:\ncalculate(expression="6 * 7") = 42\nget_weather(city="Paris") = sunny, 21 C'


def test_tool_rounds_become_facts_before_the_question_they_answer() -> None:
    assert fold_tool_rounds(RUN) == [
        SystemMessage(content="Be brief."),
        UserMessage(content=f"{FACTS}\n\n{QUESTION}"),
    ]


def test_each_question_gets_the_facts_of_its_own_run() -> None:
    second: list[Message] = [
        AssistantMessage(content="42, and sunny."),
        UserMessage(content="And in Rome?"),
        AssistantMessage(
            content="Let me look.",
            tool_calls=(ToolCall(id="c3", name="get_weather", arguments='{"city": "Rome"}'),),
        ),
        ToolMessage(content="rain", tool_call_id="c3", name="get_weather"),
    ]

    assert fold_tool_rounds([*RUN, *second]) == [
        SystemMessage(content="Be brief."),
        UserMessage(content=f"{FACTS}\n\n{QUESTION}"),
        AssistantMessage(content="42, and sunny."),
        UserMessage(content='Facts:\nget_weather(city="Rome") = rain\n\nAnd in Rome?'),
        # The text of a turn that also called a tool is kept, its calls are not.
        AssistantMessage(content="Let me look."),
    ]


def test_long_values_are_cut() -> None:
    call = ToolCall(id="c1", name="write_note", arguments={"text": "x" * 100})
    result = ToolMessage(content="wrote 100 characters", tool_call_id="c1")

    assert fact_line(call, result) == (
        f'write_note(text="{"x" * 38}\u2026) = wrote 100 characters'
    )


def test_a_failed_tool_is_a_fact_too() -> None:
    call = ToolCall(id="c1", name="write_note", arguments='{"filename": "a.txt", "text": "x"}')
    refused = ToolMessage(
        content="rejected by the user:\n  not now", tool_call_id="c1", is_error=True
    )

    assert fact_line(call, refused) == (
        'write_note(filename="a.txt", text="x") failed: rejected by the user: not now'
    )


def test_a_delegated_tasks_answer_is_what_its_sub_agent_said() -> None:
    # SmolLM2-135M restates only the last of two answers shown as transfer_task(...) = ...
    # (agentrt demo --team on the local model).
    call = ToolCall(
        id="t1", name="transfer_task", arguments='{"agent": "mathematician", "task": "6 * 7?"}'
    )
    answer = ToolMessage(content="6 * 7\n= 42.", tool_call_id="t1", name="transfer_task")
    assert fact_line(call, answer) == "mathematician: 6 * 7 = 42."
    # A failed delegation, or one that names no agent, is shown as any other call.
    failed = answer.model_copy(update={"content": "no such agent", "is_error": True})
    assert fact_line(call, failed) == (
        'transfer_task(agent="mathematician", task="6 * 7?") failed: no such agent'
    )
    for arguments in ("{oops", '{"task": "6 * 7?"}', '{"agent": ""}'):
        unnamed = call.model_copy(update={"arguments": arguments})
        assert fact_line(unnamed, answer).startswith("transfer_task(")
    assert fact_line(None, answer) == "transfer_task() = 6 * 7 = 42."


def test_arguments_that_are_not_a_json_object_are_shown_as_they_are() -> None:
    result = ToolMessage(content="1", tool_call_id="c1", name="f")

    assert fact_line(ToolCall(id="c1", name="f", arguments="{oops"), result) == "f({oops) = 1"
    assert fact_line(ToolCall(id="c1", name="f", arguments="[1, 2]"), result) == "f([1, 2]) = 1"
    assert fact_line(None, result) == "f() = 1"


def test_a_result_before_any_question_is_a_user_turn_of_its_own() -> None:
    orphan = ToolMessage(content="42", tool_call_id="gone")

    assert fold_tool_rounds([orphan]) == [UserMessage(content="Facts:\ngone() = 42")]


def test_a_conversation_without_tools_is_left_as_it_is() -> None:
    plain: list[Message] = [UserMessage(content="Hi"), AssistantMessage(content="Hello")]

    assert fold_tool_rounds(plain) == plain


def _rendered(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(m["role"], m["content"]) for m in messages]


def test_the_function_calling_format_shows_facts_when_it_asks_for_text() -> None:
    # Asked for text after a few "functions.NAME:" turns, SmolLM2 wrote one more.
    request = ModelRequest(messages=RUN, tools=[WEATHER_TOOL], settings={"tool_choice": "none"})

    kwargs = chat_completion_kwargs(request, chat_format="chatml-function-calling")

    assert _rendered(kwargs["messages"]) == [
        ("system", "Be brief."),
        ("user", f"{FACTS}\n\n{QUESTION}"),
    ]
    assert not any("tool_calls" in m for m in kwargs["messages"])


def test_without_tools_the_function_calling_format_shows_facts() -> None:
    kwargs = chat_completion_kwargs(
        ModelRequest(messages=RUN), chat_format="chatml-function-calling"
    )

    assert _rendered(kwargs["messages"])[1] == ("user", f"{FACTS}\n\n{QUESTION}")


@pytest.mark.parametrize(
    "tool_choice",
    ["auto", {"type": "function", "function": {"name": "get_weather"}}],
    ids=["auto", "forced"],
)
def test_a_call_that_may_call_a_tool_sees_the_formats_own_tool_turns(tool_choice: Any) -> None:
    request = ModelRequest(
        messages=RUN, tools=[WEATHER_TOOL], settings={"tool_choice": tool_choice}
    )

    messages = chat_completion_kwargs(request, chat_format="chatml-function-calling")["messages"]

    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "user"]
    assert messages[3]["content"] == "functions.calculate returned:\n42"


def test_other_chat_formats_get_the_tool_turns() -> None:
    request = ModelRequest(messages=RUN, tools=[WEATHER_TOOL], settings={"tool_choice": "none"})

    messages = chat_completion_kwargs(request, chat_format="chatml")["messages"]

    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
