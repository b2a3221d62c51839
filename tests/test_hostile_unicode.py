"""Issue 17, point 5: tool calls whose name or arguments are not valid Unicode text.

Lone surrogates (raw in a script's string, or as ``\\ud800`` escapes on the wire), NUL
characters (raw, or ``\\u0000``), invalid escapes, numbers out of range, deep nesting and
huge payloads, from :class:`ScriptedModel` and :class:`OpenAIChatModel`, each complete and
streamed. The properties:

* ``execute`` returns: the hostile call ends in an ``Error: ...`` tool message the model
  reads, a benign one in the tool's answer; no unexpected exception;
* the conversation stays consistent: every tool call answered by exactly one tool message,
  and every message can be encoded as JSON (sent back to the model, streamed).
"""

import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from agentrt import Agent, ModelResponse, OpenAIChatModel, ScriptedModel, ToolCall
from agentrt._unicode import escape_surrogates
from agentrt.messages import AssistantMessage, Message, ToolMessage
from tests.openai_support import sse

Source = Literal["scripted", "openai"]
SOURCES: tuple[tuple[Source, bool], ...] = (
    ("scripted", False),
    ("scripted", True),
    ("openai", False),
    ("openai", True),
)

# (arguments text, hostile?): hostile text must end as a tool error.
HOSTILE_ARGUMENTS: tuple[str, ...] = (
    '{"text": "\ud800"}',  # a lone high surrogate, raw (a script) or escaped (the wire)
    '{"text": "a\udfffb"}',  # a lone low surrogate
    '{"\udc00": "x"}',  # in a key
    '"\ud800"',  # the whole arguments one lone surrogate
    r'{"text": "\ud800"}',  # the escape itself, as the inner JSON text
    r'{"text": "\ude00\ud83d"}',  # a pair in the wrong order
    '{"text": "a\x00b"}',  # a raw NUL: JSON forbids control characters in strings
    r'{"text": "a\u0000b"}',  # an escaped NUL
    "\x00",
    r'{"text": "\x41"}',  # an escape JSON does not have
    r'{"text": "\u12"}',  # a truncated escape
    '{"text": 1e999999}',  # a number past every float
    '{"text": ' + "9" * 5000 + "}",  # an integer too long to read
    '{"text": ' + "[" * 5000 + "]" * 5000 + "}",  # nested past the parser's limit
    '{"text": "' + "x" * 200_000 + '", "extra": 1}',  # huge, and an unknown argument
)
BENIGN_ARGUMENTS: tuple[str, ...] = (
    r'{"text": "\ud83d\ude00"}',  # a valid escaped pair: an emoji
    '{"text": "😀 caf\u00e9"}',
    r'{"text": "a\\u0000b"}',  # an escaped backslash, then the six characters u0000
    r'{"text": "\\ud800"}',  # likewise: text, not a surrogate
)
HOSTILE_NAMES: tuple[str, ...] = ("echo\ud800", "\udfff", "echo\x00", "\x00", "ech\u0000o")


def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text[:20]}"


def _call(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _dumps(value: Any) -> str:
    # ensure_ascii: a lone surrogate goes on the wire as its \uXXXX escape, as a server
    # that decoded broken model output and re-encoded it would send it.
    return json.dumps(value, separators=(",", ":"))


def _completion(calls: list[tuple[str, str]], content: str = "") -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [_call(n, a, f"call_{i}") for i, (n, a) in enumerate(calls)]
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return _dumps({"id": "c", "object": "chat.completion", "choices": [choice]}).encode()


def _stream(calls: list[tuple[str, str]], content: str = "") -> bytes:
    def chunk(delta: dict[str, Any]) -> str:
        return _dumps({"id": "c", "choices": [{"index": 0, "delta": delta}]})

    events = [chunk({"role": "assistant", "content": content})] if content else []
    for index, (name, arguments) in enumerate(calls):
        pieces = [arguments[i : i + 7] for i in range(0, len(arguments), 7)] or [""]
        opening = {"index": index, **_call(name, pieces[0], f"call_{index}")}
        events.append(chunk({"tool_calls": [opening]}))
        for piece in pieces[1:]:
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    return "".join(f"data: {event}\n\n" for event in (*events, "[DONE]")).encode()


def _model(source: Source, streamed: bool, calls: list[tuple[str, str]]) -> Any:
    if source == "scripted":
        first = ModelResponse(
            tool_calls=tuple(
                ToolCall(id=f"call_{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)
            )
        )
        return ScriptedModel([first, "done"], chunk_size=5)
    answers = iter((calls, []))

    def handler(request: httpx.Request) -> httpx.Response:
        turn = next(answers)
        content = "" if turn else "done"
        if streamed:
            return sse(_stream(turn, content))
        body = _completion(turn, content)
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    return OpenAIChatModel("m", transport=httpx.MockTransport(handler), max_retries=0)


async def _run(source: Source, streamed: bool, calls: list[tuple[str, str]]) -> list[Message]:
    agent = Agent(model=_model(source, streamed, calls), tools=[echo], strict=True)
    async with agent:
        if streamed:
            async with agent.stream("go") as events:
                async for _ in events:
                    pass
            result = events.result
            assert result is not None
            return list(result.messages)
        return list((await agent.execute("go")).messages)


def _tool_answers(messages: list[Message]) -> Iterator[tuple[ToolCall, ToolMessage]]:
    """Each tool call with the one tool message answering it; fails if inconsistent."""
    pending: list[ToolCall] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            assert not pending, f"calls left unanswered: {pending}"
            pending = list(message.tool_calls)
        elif isinstance(message, ToolMessage):
            call = pending.pop(0)
            assert message.tool_call_id == call.id
            yield call, message
    assert not pending, f"calls left unanswered: {pending}"


def _check(messages: list[Message], expected_errors: list[bool]) -> None:
    to_json(messages)  # every message can be sent back to a model, or streamed
    answers = list(_tool_answers(messages))
    assert [message.is_error for _, message in answers] == expected_errors
    for (_, message), error in zip(answers, expected_errors, strict=True):
        assert message.content.startswith("Error: " if error else "echo: ")
    assert isinstance(messages[-1], AssistantMessage)
    assert messages[-1].content == "done"


@pytest.mark.parametrize(("source", "streamed"), SOURCES)
@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS)
async def test_hostile_arguments_end_as_a_tool_error_the_model_reads(
    source: Source, streamed: bool, arguments: str
) -> None:
    messages = await _run(source, streamed, [("echo", arguments), ("echo", '{"text": "ok"}')])
    _check(messages, [True, False])


@pytest.mark.parametrize(("source", "streamed"), SOURCES)
@pytest.mark.parametrize("arguments", BENIGN_ARGUMENTS)
async def test_valid_escapes_reach_the_tool(
    source: Source, streamed: bool, arguments: str
) -> None:
    _check(await _run(source, streamed, [("echo", arguments)]), [False])


@pytest.mark.parametrize(("source", "streamed"), SOURCES)
@pytest.mark.parametrize("name", HOSTILE_NAMES)
async def test_hostile_names_are_unknown_tools(source: Source, streamed: bool, name: str) -> None:
    messages = await _run(source, streamed, [(name, '{"text": "x"}')])
    _check(messages, [True])
    assert "unknown tool" in messages[-2].content


def test_a_lone_surrogate_is_stored_as_its_escape_and_refused_by_name() -> None:
    call = ToolCall(name="echo\ud800", arguments='{"text": "\udfff"}')
    assert (call.name, call.arguments) == ("echo\\ud800", '{"text": "\\udfff"}')
    with pytest.raises(Exception, match=r"not valid Unicode text \(a lone surrogate \\udfff"):
        call.parse_arguments()


_FRAGMENTS = st.sampled_from(
    [
        "\ud800",
        "\udfff",
        "\x00",
        r"\u0000",
        r"\ud800",
        r"\udc00",
        r"\x",
        r"\u12",
        "\\",
        '"',
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "1e999",
        "-" + "9" * 400,
        "😀",
        r"\ud83d\ude00",
        '"text"',
        "[" * 300,
        "]" * 300,
        "x" * 5000,
    ]
)
_ARGUMENTS = st.one_of(
    st.lists(_FRAGMENTS | st.text(max_size=8), max_size=12).map("".join),
    st.builds(lambda s: '{"text": "' + s + '"}', st.lists(_FRAGMENTS, max_size=6).map("".join)),
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=30),
)
_NAMES = st.sampled_from(["echo", "echo\ud800", "\udfff", "e\x00", ""]) | st.text(max_size=6)
CASES = 500


@settings(max_examples=CASES, deadline=None)
@given(
    calls=st.lists(st.tuples(_NAMES.filter(bool), _ARGUMENTS), min_size=1, max_size=3),
    source=st.sampled_from(SOURCES),
)
async def test_any_hostile_call_ends_as_tool_messages_in_a_consistent_conversation(
    calls: list[tuple[str, str]], source: tuple[Source, bool]
) -> None:
    messages = await _run(*source, calls)
    to_json(messages)
    answered = list(_tool_answers(messages))
    assert len(answered) == len(calls)
    for (call, message), (name, _) in zip(answered, calls, strict=True):
        assert call.name == escape_surrogates(name)
        if name != "echo":
            assert message.is_error
        if message.is_error:
            assert message.content.startswith("Error: ")
    assert isinstance(messages[-1], AssistantMessage)
    assert messages[-1].content == "done"
