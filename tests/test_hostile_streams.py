"""Issue 8, hostile provider streams: a correct assembly or a typed error, never a hang.

``OpenAIChatModel.stream`` (and ``complete``) over ``httpx.MockTransport``, fed the
recorded streams of :mod:`tests.openai_fixtures` cut at every byte, split at random
points, with invalid JSON, unknown fields and known fields of the wrong type. Each case
either assembles the right :class:`ModelResponse` or raises a typed
:class:`~agentrt.exceptions.ModelError` (``StreamProtocolError``,
``ModelResponseError``), within a deadline; never a bare ``KeyError``, ``TypeError`` or
``IndexError``, and an assembled response always has the declared field types.
"""

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrt import Agent, AssistantMessage, ToolCall
from agentrt.exceptions import ModelError, ModelResponseError, StreamProtocolError
from agentrt.messages import UserMessage
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import ModelRequest, ModelResponse
from agentrt.models.openai import OpenAIChatModel
from agentrt.stream import ErrorEvent, StreamEvent, validate
from tests.openai_fixtures import (
    LLAMACPP_COMPLETION,
    OPENAI_COMPLETION,
    OPENAI_TEXT_EXPECTED,
    OPENAI_TEXT_STREAM,
    RECORDED,
    VLLM_COMPLETION,
    Recorded,
    wire,
)

REQUEST = ModelRequest(messages=[UserMessage(content="hi")])
SSE = {"content-type": "text/event-stream"}
DEADLINE = 5.0


class Server:
    """One mock server for many requests: it answers with :attr:`pieces`, as set."""

    def __init__(self) -> None:
        self.pieces: Sequence[bytes] = ()
        self.json = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        pieces = list(self.pieces)
        if self.json:
            return httpx.Response(200, content=b"".join(pieces))

        async def body() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece

        return httpx.Response(200, headers=SSE, content=body())


SERVER = Server()
# One client for the whole module: building one per case would cost more than the case.
MODEL = OpenAIChatModel(
    "gpt-4o-mini",
    base_url="http://llm.test/v1",
    transport=httpx.MockTransport(SERVER),
    max_retries=0,
)


def check_well_formed(response: ModelResponse) -> None:
    """What an assembly may hold, whatever the stream said."""
    assert isinstance(response.content, str)
    assert response.reasoning is None or isinstance(response.reasoning, str)
    assert response.finish_reason is None or isinstance(response.finish_reason, str)
    for call in response.tool_calls:
        assert isinstance(call, ToolCall)
        assert call.id
        assert call.name
    assert all(isinstance(n, int) and n >= 0 for n in vars_of(response.usage))


def vars_of(usage: Any) -> list[Any]:
    return [
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        usage.reasoning_tokens,
        usage.requests,
    ]


async def streamed(pieces: Sequence[bytes]) -> ModelResponse:
    """Assemble what the model streams for ``pieces``; a typed error passes through."""
    SERVER.pieces, SERVER.json = pieces, False
    assembler = ResponseAssembler()
    with anyio.fail_after(DEADLINE):
        async for chunk in MODEL.stream(REQUEST):
            assembler.add(chunk)
    response = assembler.response()
    check_well_formed(response)
    return response


async def completed(body: bytes) -> ModelResponse:
    SERVER.pieces, SERVER.json = [body], True
    with anyio.fail_after(DEADLINE):
        response = await MODEL.complete(REQUEST)
    check_well_formed(response)
    return response


def split(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def events_of(body: bytes) -> list[str]:
    """The data of each event of a recorded body (they are all one-line events)."""
    return [line[6:] for line in body.decode().split("\n") if line.startswith("data: ")]


# -- truncation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("recorded", RECORDED, ids=lambda r: r.name)
async def test_truncation_at_every_byte_is_a_stream_protocol_error(recorded: Recorded) -> None:
    body = recorded.body
    for end in range(len(body)):
        with pytest.raises(StreamProtocolError) as caught:
            await streamed([body[:end]])
        assert "without the closing 'data: [DONE]'" in caught.value.reason, end
    assert await streamed([body]) == recorded.expected


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, len(RECORDED) - 1),
    end=st.integers(0, 100_000),
    cuts=st.lists(st.integers(0, 100_000), max_size=30),
)
async def test_truncated_and_split_anywhere_is_still_a_protocol_error(
    index: int, end: int, cuts: list[int]
) -> None:
    body = RECORDED[index].body
    body = body[: end % len(body)]
    with pytest.raises(StreamProtocolError):
        await streamed(split(body, cuts))


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, len(RECORDED) - 1),
    cuts=st.lists(st.integers(0, 100_000), max_size=80),
    crlf=st.booleans(),
)
async def test_random_splits_assemble_the_recorded_answer(
    index: int, cuts: list[int], crlf: bool
) -> None:
    recorded = RECORDED[index]
    body = recorded.body.replace(b"\n", b"\r\n") if crlf else recorded.body
    assert await streamed(split(body, cuts)) == recorded.expected


# -- invalid JSON and garbage -------------------------------------------------------------------

garbage = st.one_of(
    st.binary(max_size=40).map(lambda b: b.decode("utf-8", "replace")),
    st.text(max_size=40),
    st.sampled_from(
        ['{"choices":', "[1, 2]", "null", '"text"', "42", "{}", "{]", "[DONE", "DONE]", "\ufeff{}"]
    ),
).filter(lambda text: "\n" not in text and "\r" not in text)


@settings(max_examples=150, deadline=None)
@given(
    index=st.integers(0, len(RECORDED) - 1),
    position=st.integers(0, 1_000),
    junk=garbage,
    cuts=st.lists(st.integers(0, 100_000), max_size=10),
)
async def test_a_garbage_event_is_a_typed_error_or_ignored(
    index: int, position: int, junk: str, cuts: list[int]
) -> None:
    recorded = RECORDED[index]
    data = events_of(recorded.body)
    data.insert(position % len(data), junk)  # before [DONE] at the latest
    body = wire(*data[:-1])  # wire() adds [DONE]
    try:
        response = await streamed(split(body, cuts))
    except ModelError:
        return
    # Accepted garbage is a JSON object without anything to say (or with unknown fields).
    assert response == recorded.expected, junk


# -- unknown fields -----------------------------------------------------------------------------

unknown_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).map(
    lambda key: f"x_{key}"
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)


def objects_in(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths to every JSON object inside ``value`` (itself included)."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        found.append(path)
        for key, item in value.items():
            found.extend(objects_in(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(objects_in(item, (*path, index)))
    return found


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(0, len(RECORDED) - 1),
    data=st.data(),
)
async def test_unknown_fields_anywhere_are_ignored(index: int, data: st.DataObject) -> None:
    recorded = RECORDED[index]
    events = [json.loads(text) for text in events_of(recorded.body)[:-1]]
    for _ in range(data.draw(st.integers(1, 6))):
        event = events[data.draw(st.integers(0, len(events) - 1))]
        target = at(event, data.draw(st.sampled_from(objects_in(event))))
        target[data.draw(unknown_keys)] = data.draw(json_values)
    body = wire(*(json.dumps(event) for event in events))
    assert await streamed([body]) == recorded.expected


async def test_sse_fields_and_event_types_this_api_does_not_define_are_ignored() -> None:
    lines = events_of(OPENAI_TEXT_STREAM)[:-1]
    body = b"".join(
        f": keep-alive\nid: {n}\nretry: 10\nevent: x-ping\ndata: {{}}\n\ndata: {line}\n\n".encode()
        for n, line in enumerate(lines)
    )
    assert await streamed([body + b"data: [DONE]\n\n"]) == OPENAI_TEXT_EXPECTED


# -- known fields of the wrong type ------------------------------------------------------------


def paths_in(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path to every value inside ``value`` (not ``value`` itself)."""
    found: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        found.append((*path, key))
        if isinstance(item, dict | list):
            found.extend(paths_in(item, (*path, key)))
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(RECORDED) - 1), data=st.data())
async def test_known_fields_of_the_wrong_type_are_a_typed_error_or_read_safely(
    index: int, data: st.DataObject
) -> None:
    await check_wrong_types(index, data)


@pytest.mark.slow
@settings(max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(RECORDED) - 1), data=st.data())
async def test_known_fields_of_the_wrong_type_many_more_examples(
    index: int, data: st.DataObject
) -> None:
    await check_wrong_types(index, data)


async def check_wrong_types(index: int, data: st.DataObject) -> None:
    recorded = RECORDED[index]
    events = [json.loads(text) for text in events_of(recorded.body)[:-1]]
    for _ in range(data.draw(st.integers(1, 3))):
        event = events[data.draw(st.integers(0, len(events) - 1))]
        path = data.draw(st.sampled_from(paths_in(event)))
        at(event, path[:-1])[path[-1]] = data.draw(json_values)
    body = wire(*(json.dumps(event) for event in events))
    with contextlib.suppress(ModelError):
        await streamed([body])  # well-formed when it assembles (checked inside)


@pytest.mark.parametrize(
    ("delta", "content", "reasoning"),
    [
        pytest.param({"content": 5}, "", None, id="number-content"),
        pytest.param({"content": {"a": 1}}, "", None, id="object-content"),
        pytest.param(
            {"content": [{"type": "text", "text": "hi"}, {"type": "image"}]},
            "hi",
            None,
            id="parts",
        ),
        pytest.param({"reasoning_content": 5, "content": "a"}, "a", None, id="number-reasoning"),
        pytest.param({"reasoning": ["x"]}, "", None, id="list-reasoning"),
        pytest.param({"content": "a", "refusal": 3}, "a", None, id="number-refusal"),
    ],
)
async def test_wrong_typed_text_is_read_like_a_whole_answer(
    delta: dict[str, Any], content: str, reasoning: str | None
) -> None:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": 7}]}
    response = await streamed([wire(json.dumps(chunk))])
    assert (response.content, response.reasoning, response.finish_reason) == (
        content,
        reasoning,
        None,
    )


# -- complete(): the same hostility, in one body ------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.sampled_from([OPENAI_COMPLETION, VLLM_COMPLETION, LLAMACPP_COMPLETION]),
    data=st.data(),
)
async def test_complete_with_wrong_types_or_truncation_is_typed(
    body: bytes, data: st.DataObject
) -> None:
    if data.draw(st.booleans()):
        payload = json.loads(body)
        for _ in range(data.draw(st.integers(1, 3))):
            path = data.draw(st.sampled_from(paths_in(payload)))
            at(payload, path[:-1])[path[-1]] = data.draw(json_values)
        body = json.dumps(payload).encode()
    else:
        body = body[: data.draw(st.integers(0, len(body) - 1))]
    with contextlib.suppress(ModelResponseError):
        await completed(body)


def tool_call_body(call: dict[str, Any]) -> bytes:
    return json.dumps({"choices": [{"message": {"content": "", "tool_calls": [call]}}]}).encode()


async def test_complete_a_tool_call_id_that_is_not_text_is_replaced() -> None:
    response = await completed(tool_call_body({"id": 5, "function": {"name": "f"}}))
    assert response.tool_calls[0].id.startswith("call_")


@pytest.mark.parametrize("name", [5, ["f"], {"n": "f"}], ids=["number", "list", "object"])
async def test_complete_a_tool_name_that_is_not_text_is_a_response_error(name: object) -> None:
    with pytest.raises(ModelResponseError, match="function name is not text"):
        await completed(tool_call_body({"id": "a", "function": {"name": name}}))


# -- through the agent --------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
async def test_a_cut_stream_fails_the_run_and_the_stream_says_so(fraction: float) -> None:
    body = RECORDED[1].body  # the parallel tool calls
    cut = body[: int(len(body) * fraction)]

    def handler(request: httpx.Request) -> httpx.Response:
        async def content() -> AsyncIterator[bytes]:
            yield cut

        return httpx.Response(200, headers=SSE, content=content())

    model = OpenAIChatModel(
        "m", base_url="http://llm.test/v1", transport=httpx.MockTransport(handler), max_retries=0
    )
    events: list[StreamEvent] = []

    async def consume(agent: Agent) -> None:
        async with agent.stream("Weather?") as stream:
            async for event in stream:
                events.append(event)

    async with model, Agent(model=model, strict=True) as agent:
        with anyio.fail_after(DEADLINE), pytest.raises(StreamProtocolError):
            await consume(agent)
        # Nothing half-assembled reaches the conversation.
        assert [m.role for m in agent.messages] == ["user"]
        assert not any(isinstance(m, AssistantMessage) for m in agent.messages)
    assert validate(events) == []
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1
    assert errors[0].error.startswith("StreamProtocolError")
    assert events[-1].type == "stream_stopped"
