"""How :class:`~agentrt.LocalModel` shows a small model the tools' results when it asks for text.

llama-cpp-python's ``chatml-function-calling`` template renders an earlier tool call as
``functions.NAME:`` and its JSON arguments, as an assistant turn. Asked for an answer in
words after a few of those, SmolLM2-135M copies the pattern: its "answer" is one more
call, written as text (``functions.write_note: {"text": ...,}``), and never says what the
tools returned.

So when a call offers no tool (``tool_choice`` ``"none"``, or no tools), the tool rounds
that answered a user message are shown as facts instead, put before the message they
answer::

    Facts:
    calculate(expression="6 * 7") = 42
    get_weather(city="Paris") = sunny, 21 C

    What is 6 * 7, and what is the weather in Paris?

and the assistant turns that only called tools are left out (their text, if any, is
kept). Facts before the question is what a 135M model reads best: placed after it, as a
user or system turn, it restates them or writes code (measured in
``benches/demo_answers.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentrt.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from agentrt.team import TRANSFER_TASK

__all__ = ("FACTS_HEADING", "fact_line", "fold_tool_rounds")

FACTS_HEADING = "Facts:"
"""The first line of a user turn that carries tool results."""


_VALUE_LIMIT = 40


def _value_text(value: Any) -> str:
    # A long value (a note's text) is cut: a small model answers with it otherwise.
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _VALUE_LIMIT else text[: _VALUE_LIMIT - 1] + "\u2026"


def _arguments_text(call: ToolCall) -> str:
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return call.arguments
    if not isinstance(arguments, dict):
        return call.arguments
    return ", ".join(f"{key}={_value_text(value)}" for key, value in arguments.items())


def _delegate(call: ToolCall | None) -> str | None:
    """The sub-agent a ``transfer_task`` call gave its task to, if it names one."""
    if call is None:
        return None
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return None
    agent = arguments.get("agent") if isinstance(arguments, dict) else None
    return agent if isinstance(agent, str) and agent else None


def fact_line(call: ToolCall | None, result: ToolMessage) -> str:
    """One tool result as a line: ``name(key="value") = result``, or ``failed:`` and the error.

    Each argument's value is shown as JSON, cut to 40 characters; the result's
    whitespace is folded into single spaces. A delegated task's answer is what its
    sub-agent said: ``mathematician: 6 * 7 = 42`` (SmolLM2-135M restates only the last
    of two answers shown as ``transfer_task(agent=..., task=...) = ...``).

    Args:
        call: The call the result answers (its arguments are shown), if it is known.
        result: The tool's result.
    """
    name = result.name or (call.name if call is not None else result.tool_call_id)
    text = " ".join(result.content.split())
    delegate = _delegate(call) if name == TRANSFER_TASK and not result.is_error else None
    if delegate is not None:
        return f"{delegate}: {text}"
    arguments = _arguments_text(call) if call is not None else ""
    if result.is_error:
        return f"{name}({arguments}) failed: {text}"
    return f"{name}({arguments}) = {text}"


def fold_tool_rounds(messages: Sequence[Message]) -> list[Message]:
    """The conversation with each user message's tool rounds folded into it as facts.

    The tool results that follow a user message (up to the next one) become a
    ``Facts:`` block at the start of that message; assistant messages that only called
    tools are dropped, and the tool calls of the others with them. Nothing else changes.
    A tool result before any user message becomes a user message of its own.
    """
    calls: dict[str, ToolCall] = {}
    folded: list[Message] = []
    facts: list[str] = []
    # Where the user message the pending facts belong to sits in ``folded``.
    anchor: int | None = None

    def flush() -> None:
        if not facts:
            return
        block = "\n".join((FACTS_HEADING, *facts))
        if anchor is None:
            folded.append(UserMessage(content=block))
        else:
            question = folded[anchor]
            assert isinstance(question, UserMessage)
            folded[anchor] = question.model_copy(
                update={"content": f"{block}\n\n{question.content}"}
            )
        facts.clear()

    for message in messages:
        if isinstance(message, UserMessage):
            flush()
            anchor = len(folded)
            folded.append(message)
        elif isinstance(message, AssistantMessage) and message.tool_calls:
            calls.update((call.id, call) for call in message.tool_calls)
            if message.content:
                folded.append(message.model_copy(update={"tool_calls": ()}))
        elif isinstance(message, ToolMessage):
            facts.append(fact_line(calls.get(message.tool_call_id), message))
        else:
            folded.append(message)
    flush()
    return folded
