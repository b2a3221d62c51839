"""agentrt/models/scripted.py (ScriptedModel) and models/_assemble.py (ResponseAssembler)"""

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, cast

import pytest

from agentrt.exceptions import ModelError, ScriptExhaustedError, StreamProtocolError
from agentrt.messages import AssistantMessage, SystemMessage, ToolCall, Usage, UserMessage
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.models.scripted import ScriptedModel, ScriptItem, estimate_tokens


def request(text: str = "hello world") -> ModelRequest:
    """A one-message request: its estimated prompt is estimate_tokens(text)."""
    return ModelRequest(messages=[UserMessage(content=text)])


async def collect(model: ScriptedModel, req: ModelRequest) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(req)]


def assemble(chunks: Sequence[Any]) -> ModelResponse:
    assembler = ResponseAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.response()


# -- script items -------------------------------------------------------------------------------


async def test_str_item_is_the_final_answer() -> None:
    response = await ScriptedModel(["Hi there"]).complete(request())
    assert response.content == "Hi there"
    assert response.reasoning is None
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.model_name == "scripted"


async def test_tool_call_item() -> None:
    call = ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})
    response = await ScriptedModel([call]).complete(request())
    assert response.content == ""
    assert response.tool_calls == (call,)
    assert response.finish_reason == "tool_calls"


CALLS = [ToolCall(id="c1", name="a"), ToolCall(id="c2", name="b")]


@pytest.mark.parametrize("item", [CALLS, tuple(CALLS)], ids=["list", "tuple"])
async def test_sequence_of_tool_calls_item(item: Sequence[ToolCall]) -> None:
    response = await ScriptedModel([item]).complete(request())
    assert response.tool_calls == tuple(CALLS)
    assert response.finish_reason == "tool_calls"


async def test_assistant_message_item_is_used_as_is() -> None:
    call = ToolCall(id="c1", name="f")
    usage = Usage(input_tokens=10, output_tokens=20, requests=1)
    message = AssistantMessage(content="text", reasoning="why", tool_calls=(call,), usage=usage)
    response = await ScriptedModel([message]).complete(request())
    assert response.content == "text"
    assert response.reasoning == "why"
    assert response.tool_calls == (call,)
    assert response.usage == usage
    assert response.finish_reason == "tool_calls"
    assert response.to_message() == message


async def test_assistant_message_item_without_usage_gets_an_estimate() -> None:
    response = await ScriptedModel([AssistantMessage(content="abcd")]).complete(request())
    assert response.usage == Usage(input_tokens=3, output_tokens=1, requests=1)


async def test_model_response_item_is_used_as_is() -> None:
    item = ModelResponse(
        content="done",
        usage=Usage(input_tokens=1, output_tokens=1, requests=1),
        finish_reason="length",
        model_name="other",
    )
    response = await ScriptedModel([item]).complete(request())
    assert response.content == "done"
    assert response.usage == Usage(input_tokens=1, output_tokens=1, requests=1)
    assert response.finish_reason == "length"
    assert response.model_name == "other"


async def test_model_response_item_gets_missing_fields_filled_in() -> None:
    item = ModelResponse(content="done", tool_calls=(ToolCall(name="f"),))
    response = await ScriptedModel([item], name="m").complete(request())
    assert response.finish_reason == "tool_calls"
    assert response.model_name == "m"
    assert response.usage.requests == 1


async def test_exception_item_is_raised_and_the_script_moves_on() -> None:
    error = ConnectionError("provider down")
    model = ScriptedModel([error, "recovered"])
    with pytest.raises(ConnectionError) as info:
        await model.complete(request())
    assert info.value is error
    assert model.remaining == 1
    assert len(model.requests) == 1
    assert (await model.complete(request())).content == "recovered"


async def test_script_items_are_served_in_order() -> None:
    model = ScriptedModel(["one", ToolCall(name="f"), "three"])
    contents = []
    for _ in range(3):
        response = await model.complete(request())
        contents.append(response.content or response.tool_calls[0].name)
    assert contents == ["one", "f", "three"]


# -- function scripts ---------------------------------------------------------------------------


async def test_sync_function_script_receives_the_request() -> None:
    seen: list[ModelRequest] = []

    def answer(req: ModelRequest) -> ScriptItem:
        seen.append(req)
        return f"echo: {req.messages[-1].content}"

    model = ScriptedModel(answer)
    req = request("ping")
    response = await model.complete(req)
    assert response.content == "echo: ping"
    assert seen == [req]
    assert seen[0] is req
    assert model.remaining is None


async def test_async_function_script_receives_the_request() -> None:
    async def answer(req: ModelRequest) -> ScriptItem:
        if len(req.messages) > 1:
            return "final"
        return ToolCall(id="c1", name="lookup")

    model = ScriptedModel(answer)
    first = await model.complete(request())
    assert first.tool_calls == (ToolCall(id="c1", name="lookup"),)
    two = ModelRequest(messages=[UserMessage(content="a"), UserMessage(content="b")])
    assert (await model.complete(two)).content == "final"
    assert model.remaining is None


async def test_function_script_never_runs_out() -> None:
    model = ScriptedModel(lambda req: "again")
    for _ in range(5):
        assert (await model.complete(request())).content == "again"
    assert len(model.requests) == 5


async def test_function_script_may_return_an_exception() -> None:
    model = ScriptedModel(lambda req: ValueError("scripted failure"))
    with pytest.raises(ValueError, match="scripted failure"):
        await model.complete(request())


async def test_function_script_that_raises_propagates() -> None:
    def answer(req: ModelRequest) -> ScriptItem:
        raise KeyError("inside")

    with pytest.raises(KeyError):
        await ScriptedModel(answer).complete(request())


# -- requests, remaining, reset -----------------------------------------------------------------


async def test_requests_are_recorded_in_order() -> None:
    model = ScriptedModel(["a", "b"])
    first, second = request("1"), request("2")
    await model.complete(first)
    async for _ in model.stream(second):
        pass
    assert model.requests == [first, second]
    assert model.requests[0] is first


async def test_record_false_keeps_no_requests() -> None:
    model = ScriptedModel(["a", "b"], record=False)
    assert model.record is False
    await model.complete(request())
    async for _ in model.stream(request()):
        pass
    assert model.requests == []
    assert model.remaining == 0


async def test_async_callable_object_script() -> None:
    class Answer:
        async def __call__(self, req: ModelRequest) -> ScriptItem:
            return "from object"

    model = ScriptedModel(Answer())
    assert (await model.complete(request())).content == "from object"
    assert model.remaining is None


async def test_remaining_counts_down() -> None:
    model = ScriptedModel(["a", "b", "c"])
    assert model.remaining == 3
    await model.complete(request())
    assert model.remaining == 2
    await model.complete(request())
    await model.complete(request())
    assert model.remaining == 0


async def test_reset_starts_over_and_forgets_requests() -> None:
    model = ScriptedModel(["a", "b"])
    await model.complete(request())
    await model.complete(request())
    model.reset()
    assert model.remaining == 2
    assert model.requests == []
    assert (await model.complete(request())).content == "a"


async def test_reset_with_a_new_script() -> None:
    model = ScriptedModel(["a"])
    await model.complete(request())
    model.reset(["x", "y", "z"])
    assert model.remaining == 3
    assert model.requests == []
    assert (await model.complete(request())).content == "x"


async def test_reset_function_script() -> None:
    async def answer(req: ModelRequest) -> ScriptItem:
        return "from function"

    model = ScriptedModel(answer)
    await model.complete(request())
    model.reset()
    assert model.requests == []
    assert (await model.complete(request())).content == "from function"
    model.reset(["listed"])
    assert model.remaining == 1
    assert (await model.complete(request())).content == "listed"


async def test_exhaustion_raises_script_exhausted_error() -> None:
    model = ScriptedModel(["a", "b"])
    await model.complete(request())
    await model.complete(request())
    with pytest.raises(ScriptExhaustedError) as info:
        await model.complete(request())
    err = info.value
    assert isinstance(err, ModelError)
    assert err.calls == 2
    assert "its script had 2" in str(err)
    assert str(err) == (
        "ScriptedModel ran out of responses: its script had 2, and the agent asked for response 3"
    )
    # Still exhausted on the next call; every request is recorded.
    with pytest.raises(ScriptExhaustedError):
        await model.complete(request())
    assert len(model.requests) == 4


async def test_empty_script_is_exhausted_at_once() -> None:
    model = ScriptedModel([])
    assert model.remaining == 0
    with pytest.raises(ScriptExhaustedError, match="its script had 0"):
        await model.complete(request())


async def test_exhaustion_when_streaming() -> None:
    model = ScriptedModel([])
    with pytest.raises(ScriptExhaustedError):
        await collect(model, request())


# -- bad items and constructor arguments --------------------------------------------------------

ALLOWED = "str, ToolCall, a list of ToolCall, AssistantMessage, ModelResponse or Exception"


@pytest.mark.parametrize(
    ("item", "type_name"),
    [
        (42, "int"),
        ({"content": "x"}, "dict"),
        ([ToolCall(name="f"), "text"], "list"),
        (None, "NoneType"),
        (UserMessage(content="x"), "UserMessage"),
    ],
)
async def test_bad_item_is_a_type_error_naming_the_allowed_kinds(
    item: Any, type_name: str
) -> None:
    model = ScriptedModel([item])
    with pytest.raises(TypeError) as info:
        await model.complete(request())
    assert str(info.value) == (
        f"ScriptedModel cannot answer with {type_name}: script items are {ALLOWED}"
    )


async def test_bad_item_from_a_function_script() -> None:
    model = ScriptedModel(lambda req: cast("Any", 3.5))
    with pytest.raises(TypeError, match=r"cannot answer with float"):
        await model.complete(request())


@pytest.mark.parametrize(("script", "type_name"), [("just text", "str"), (42, "int")])
def test_bad_script_is_a_type_error(script: Any, type_name: str) -> None:
    with pytest.raises(TypeError) as info:
        ScriptedModel(script)
    assert str(info.value) == (
        f"ScriptedModel takes a list of responses or a function of the request, got {type_name}"
    )


@pytest.mark.parametrize("chunk_size", [0, -1, True, False, 1.5, "8", None])
def test_bad_chunk_size_is_a_type_error(chunk_size: Any) -> None:
    with pytest.raises(TypeError) as info:
        ScriptedModel(["a"], chunk_size=chunk_size)
    assert str(info.value) == f"chunk_size must be a positive int, got {chunk_size!r}"


def test_name_and_repr() -> None:
    model = ScriptedModel(["a", "b"], name="fake-gpt", chunk_size=3)
    assert model.name == "fake-gpt"
    assert model.chunk_size == 3
    assert repr(model) == "ScriptedModel(name='fake-gpt', remaining=2)"
    assert repr(ScriptedModel(lambda req: "x")) == "ScriptedModel(name='scripted', remaining=None)"


# -- usage estimation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abc", 1), ("abcd", 1), ("abcde", 2), ("x" * 40, 10), ("x" * 41, 11)],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


async def test_usage_of_a_text_answer() -> None:
    response = await ScriptedModel(["Hi there"]).complete(request("hello world"))
    assert response.usage == Usage(
        input_tokens=estimate_tokens("hello world"),
        output_tokens=estimate_tokens("Hi there"),
        cached_tokens=0,
        reasoning_tokens=0,
        requests=1,
    )


async def test_usage_of_tool_calls_counts_name_and_arguments() -> None:
    calls = [
        ToolCall(name="lookup", arguments='{"city": "Paris"}'),
        ToolCall(name="f", arguments="{}"),
    ]
    response = await ScriptedModel([calls]).complete(request())
    # The estimate covers every call's name and arguments text, taken together.
    expected = estimate_tokens("".join(c.name + c.arguments for c in calls))
    assert response.usage.output_tokens == expected
    assert response.usage.requests == 1


async def test_usage_counts_reasoning() -> None:
    item = AssistantMessage(content="answer", reasoning="long reasoning here")
    response = await ScriptedModel([item]).complete(request())
    reasoning = estimate_tokens("long reasoning here")
    assert response.usage.reasoning_tokens == reasoning
    assert response.usage.output_tokens == estimate_tokens("answer") + reasoning


async def test_usage_given_figures_are_kept() -> None:
    item = ModelResponse(
        content="Hi there",
        usage=Usage(input_tokens=100, cached_tokens=40, reasoning_tokens=5),
    )
    response = await ScriptedModel([item]).complete(request("hello world"))
    assert response.usage == Usage(
        input_tokens=100,
        output_tokens=estimate_tokens("Hi there"),
        cached_tokens=40,
        reasoning_tokens=5,
        requests=1,
    )


async def test_usage_with_requests_is_kept_exactly() -> None:
    usage = Usage(input_tokens=0, output_tokens=0, requests=2)
    response = await ScriptedModel([ModelResponse(content="x", usage=usage)]).complete(request())
    assert response.usage == usage


async def test_usage_of_an_empty_request() -> None:
    response = await ScriptedModel([""]).complete(ModelRequest(messages=[]))
    assert response.usage == Usage(requests=1)
    assert response.finish_reason == "stop"


# -- streaming ----------------------------------------------------------------------------------


async def test_stream_chunks_in_order() -> None:
    item = AssistantMessage(
        content="Hello, world!",
        reasoning="think hard",
        tool_calls=(
            ToolCall(id="c1", name="f", arguments='{"x": 12345}'),
            ToolCall(id="c2", name="g", arguments="{}"),
        ),
        usage=Usage(input_tokens=3, output_tokens=9, requests=1),
    )
    chunks = await collect(ScriptedModel([item], chunk_size=5), request())
    assert chunks == [
        ReasoningDelta("think"),
        ReasoningDelta(" hard"),
        TextDelta("Hello"),
        TextDelta(", wor"),
        TextDelta("ld!"),
        ToolCallDelta(0, id="c1", name="f", arguments='{"x":'),
        ToolCallDelta(0, arguments=" 1234"),
        ToolCallDelta(0, arguments="5}"),
        ToolCallDelta(1, id="c2", name="g", arguments="{}"),
        UsageChunk(Usage(input_tokens=3, output_tokens=9, requests=1), "tool_calls"),
    ]


async def test_stream_text_only_uses_the_default_chunk_size() -> None:
    model = ScriptedModel(["abcdefghijklmnopqrst"])
    chunks = await collect(model, request("hello world"))
    assert chunks == [
        TextDelta("abcdefgh"),
        TextDelta("ijklmnop"),
        TextDelta("qrst"),
        UsageChunk(Usage(input_tokens=3, output_tokens=5, requests=1), "stop"),
    ]


async def test_stream_later_fragments_carry_only_arguments() -> None:
    call = ToolCall(id="c9", name="search", arguments='{"query": "weather in Paris"}')
    chunks = await collect(ScriptedModel([call], chunk_size=4), request())
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert deltas[0].id == "c9"
    assert deltas[0].name == "search"
    assert all(d.id is None and d.name is None for d in deltas[1:])
    assert all(len(d.arguments) <= 4 for d in deltas)
    assert "".join(d.arguments for d in deltas) == call.arguments
    assert {d.index for d in deltas} == {0}


async def test_stream_tool_call_with_empty_arguments_has_one_fragment() -> None:
    call = ToolCall(id="c1", name="ping", arguments="")
    chunks = await collect(ScriptedModel([call]), request())
    assert chunks[0] == ToolCallDelta(0, id="c1", name="ping", arguments="")
    assert len(chunks) == 2
    assert isinstance(chunks[1], UsageChunk)


async def test_stream_empty_answer_is_one_usage_chunk() -> None:
    chunks = await collect(ScriptedModel([""]), request(""))
    assert chunks == [UsageChunk(Usage(requests=1), "stop")]


async def test_stream_exception_item_is_raised() -> None:
    model = ScriptedModel([RuntimeError("stream failed")])
    with pytest.raises(RuntimeError, match="stream failed"):
        await collect(model, request())


async def test_stream_with_a_function_script() -> None:
    async def answer(req: ModelRequest) -> ScriptItem:
        return "ok"

    chunks = await collect(ScriptedModel(answer), request())
    assert chunks[0] == TextDelta("ok")


# -- ResponseAssembler --------------------------------------------------------------------------


def script_items() -> list[ScriptItem]:
    """Fresh items (the model fills in a ModelResponse item's missing fields in place)."""
    return [
        "A plain answer that spans several chunks.",
        ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),
        [
            ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),
            ToolCall(id="c2", name="divide", arguments='{"a": 10, "b": 4}'),
            ToolCall(id="c3", name="noop", arguments=""),
        ],
        AssistantMessage(
            content="Let me check.",
            reasoning="The user wants the weather; call the tool.",
            tool_calls=(ToolCall(id="w", name="weather", arguments={"city": "Paris"}),),
        ),
        ModelResponse(content="given", usage=Usage(input_tokens=7, cached_tokens=2, requests=1)),
        ModelResponse(content="", finish_reason="content_filter"),
    ]


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 1000])
@pytest.mark.parametrize("index", range(len(script_items())))
async def test_assembled_stream_equals_complete(index: int, chunk_size: int) -> None:
    req = ModelRequest(
        messages=[SystemMessage(content="Be brief."), UserMessage(content="What now?")]
    )
    completed = await ScriptedModel([script_items()[index]], chunk_size=chunk_size).complete(req)
    model = ScriptedModel([script_items()[index]], chunk_size=chunk_size)
    streamed = assemble(await collect(model, req))
    # A stream does not name its model; everything else is the same.
    assert streamed == dataclasses.replace(completed, model_name=None)


async def test_assembler_joins_interleaved_fragments_in_index_order() -> None:
    chunks: list[StreamChunk] = [
        TextDelta("Checking "),
        ToolCallDelta(1, id="b", name="second", arguments='{"y"'),
        ReasoningDelta("first "),
        ToolCallDelta(0, id="a", name="first", arguments='{"x"'),
        ToolCallDelta(1, arguments=": 2}"),
        TextDelta("both."),
        ToolCallDelta(0, arguments=": 1}"),
        ReasoningDelta("thought"),
    ]
    response = assemble(chunks)
    assert response.content == "Checking both."
    assert response.reasoning == "first thought"
    assert response.tool_calls == (
        ToolCall(id="a", name="first", arguments='{"x": 1}'),
        ToolCall(id="b", name="second", arguments='{"y": 2}'),
    )
    assert response.usage == Usage()
    assert response.finish_reason is None
    assert response.model_name is None


async def test_assembler_sums_several_usage_chunks() -> None:
    response = assemble(
        [
            UsageChunk(Usage(input_tokens=10, cached_tokens=4, requests=1)),
            TextDelta("x"),
            UsageChunk(Usage(output_tokens=3, reasoning_tokens=1), "stop"),
            UsageChunk(Usage(output_tokens=2)),
        ]
    )
    assert response.usage == Usage(
        input_tokens=10, output_tokens=5, cached_tokens=4, reasoning_tokens=1, requests=1
    )
    # A later chunk without a finish reason keeps the earlier one.
    assert response.finish_reason == "stop"


def test_assembler_empty() -> None:
    response = ResponseAssembler().response()
    assert response == ModelResponse(content="", reasoning=None, tool_calls=(), usage=Usage())


def test_assembler_gives_a_call_without_id_a_fresh_id() -> None:
    response = assemble([ToolCallDelta(0, name="f", arguments="{}")])
    (call,) = response.tool_calls
    assert re.fullmatch(r"call_[0-9a-f]{24}", call.id)
    assert call.name == "f"


def test_assembler_response_can_be_read_while_streaming() -> None:
    assembler = ResponseAssembler()
    assembler.add(TextDelta("par"))
    assert assembler.response().content == "par"
    assembler.add(TextDelta("tial"))
    assert assembler.response().content == "partial"


@pytest.mark.parametrize(
    "chunk",
    [
        ToolCallDelta(3, arguments='{"x": 1}'),
        ToolCallDelta(0, id="c1", arguments="{}"),
        ToolCallDelta(0, id="c1", name="", arguments="{}"),
    ],
)
def test_fragment_of_an_unopened_index_is_a_protocol_error(chunk: ToolCallDelta) -> None:
    assembler = ResponseAssembler()
    with pytest.raises(StreamProtocolError) as info:
        assembler.add(chunk)
    err = info.value
    assert isinstance(err, ModelError)
    assert err.chunk == repr(chunk)
    assert f"a tool-call fragment for index {chunk.index} arrived before" in err.reason
    assert str(err) == f"malformed model stream: {err.reason}; offending chunk: {chunk!r}"


def test_fragment_of_another_index_than_the_opened_one_is_a_protocol_error() -> None:
    assembler = ResponseAssembler()
    assembler.add(ToolCallDelta(0, id="c1", name="f", arguments="{"))
    with pytest.raises(StreamProtocolError, match=r"index 1 arrived before"):
        assembler.add(ToolCallDelta(1, arguments="}"))
    # What was accepted is kept.
    assert assembler.response().tool_calls == (ToolCall(id="c1", name="f", arguments="{"),)


@pytest.mark.parametrize(
    ("chunk", "type_name"),
    [("plain text", "str"), ({"text": "x"}, "dict"), (None, "NoneType"), (42, "int")],
)
def test_non_chunk_is_a_protocol_error(chunk: Any, type_name: str) -> None:
    with pytest.raises(StreamProtocolError) as info:
        ResponseAssembler().add(chunk)
    err = info.value
    assert err.reason == f"a model stream yielded {type_name}, which is not a StreamChunk"
    assert err.chunk == repr(chunk)
    assert str(err).endswith(f"; offending chunk: {chunk!r}")
