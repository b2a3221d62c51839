"""agentrt/messages.py: messages, tool calls, tool responses, usage, to_text."""

import dataclasses
import json
import re
from typing import Any

import pydantic
import pytest

from agentrt.exceptions import ToolArgumentsError
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolResponse,
    Usage,
    UserMessage,
    is_message,
    new_tool_call_id,
    to_text,
)

MESSAGES: pydantic.TypeAdapter[Message] = pydantic.TypeAdapter(Message)
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


# -- ToolCall -----------------------------------------------------------------------------------


def test_tool_call_dict_arguments_are_dumped_to_json() -> None:
    call = ToolCall(name="f", arguments={"a": 1, "b": [1, "x"]})
    assert isinstance(call.arguments, str)
    assert json.loads(call.arguments) == {"a": 1, "b": [1, "x"]}
    assert call.parse_arguments() == {"a": 1, "b": [1, "x"]}


def test_tool_call_string_arguments_are_kept_verbatim() -> None:
    text = '{ "a" :  1 }'
    assert ToolCall(name="f", arguments=text).arguments == text


def test_tool_call_invalid_json_is_kept_verbatim() -> None:
    text = '{"a": 1, oops'
    call = ToolCall(name="f", arguments=text)
    assert call.arguments == text


def test_tool_call_default_arguments() -> None:
    call = ToolCall(name="f")
    assert call.arguments == "{}"
    assert call.parse_arguments() == {}


def test_tool_call_default_id_format() -> None:
    first = ToolCall(name="f")
    second = ToolCall(name="f")
    assert CALL_ID.fullmatch(first.id)
    assert CALL_ID.fullmatch(second.id)
    assert first.id != second.id


def test_tool_call_explicit_id_is_kept() -> None:
    assert ToolCall(id="abc", name="f").id == "abc"


def test_new_tool_call_id() -> None:
    ids = {new_tool_call_id() for _ in range(20)}
    assert len(ids) == 20
    assert all(CALL_ID.fullmatch(i) for i in ids)


def test_tool_call_non_string_arguments_are_rejected() -> None:
    with pytest.raises(pydantic.ValidationError):
        ToolCall.model_validate({"name": "f", "arguments": 12})


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_parse_arguments_empty_text_is_an_empty_object(text: str) -> None:
    assert ToolCall(name="f", arguments=text).parse_arguments() == {}


def test_parse_arguments_object() -> None:
    call = ToolCall(name="f", arguments=' {"x": {"y": null}} ')
    assert call.parse_arguments() == {"x": {"y": None}}


def test_parse_arguments_invalid_json() -> None:
    call = ToolCall(name="lookup", arguments="{bad")
    with pytest.raises(ToolArgumentsError) as info:
        call.parse_arguments()
    err = info.value
    assert err.tool_name == "lookup"
    assert err.arguments == "{bad"
    assert err.reason.startswith("not valid JSON (")
    assert str(err).startswith("invalid arguments for tool 'lookup': not valid JSON (")
    assert str(err).endswith("; got '{bad'")
    assert isinstance(err.__cause__, ValueError)


@pytest.mark.parametrize(
    ("text", "kind"),
    [("[1, 2]", "list"), ('"s"', "str"), ("3", "int"), ("1.5", "float"), ("true", "bool")],
)
def test_parse_arguments_non_object(text: str, kind: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        ToolCall(name="f", arguments=text).parse_arguments()
    assert info.value.reason == f"a JSON {kind}, not an object"
    assert info.value.arguments == text
    assert str(info.value) == (
        f"invalid arguments for tool 'f': a JSON {kind}, not an object; got {text!r}"
    )


def test_parse_arguments_long_text_is_truncated_in_the_message() -> None:
    text = "[" + "1," * 300 + "1]"
    with pytest.raises(ToolArgumentsError) as info:
        ToolCall(name="f", arguments=text).parse_arguments()
    assert info.value.arguments == text  # the attribute keeps all of it
    message = str(info.value)
    assert repr(text[:200] + "…") in message
    assert text not in message
    assert len(message) < len(text)


def test_parse_arguments_200_characters_are_not_truncated() -> None:
    text = "x" * 200
    with pytest.raises(ToolArgumentsError) as info:
        ToolCall(name="f", arguments=text).parse_arguments()
    assert str(info.value).endswith(f"; got {text!r}")


# -- frozen, extra forbidden --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (ToolCall(name="f"), "name"),
        (SystemMessage(content="s"), "content"),
        (UserMessage(content="u"), "content"),
        (AssistantMessage(content="a"), "content"),
        (ToolMessage(content="t", tool_call_id="c"), "is_error"),
        (ToolResponse("x"), "is_error"),
    ],
)
def test_models_are_frozen(message: pydantic.BaseModel, field: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        setattr(message, field, True)


@pytest.mark.parametrize(
    "cls", [ToolCall, SystemMessage, UserMessage, AssistantMessage, ToolMessage]
)
def test_extra_fields_are_forbidden(cls: type[pydantic.BaseModel]) -> None:
    data: dict[str, Any] = {
        "name": "f",
        "content": "c",
        "tool_call_id": "c1",
    }
    fields = {k: v for k, v in data.items() if k in cls.model_fields}
    cls.model_validate(fields)  # valid without the extra field
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        cls.model_validate({**fields, "bogus": 1})


def test_tool_response_extra_fields_are_forbidden() -> None:
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        ToolResponse("x", bogus=1)


def test_model_copy_makes_a_changed_message() -> None:
    original = UserMessage(content="hi")
    changed = original.model_copy(update={"content": "bye"})
    assert original.content == "hi"
    assert changed.content == "bye"


# -- the Message union --------------------------------------------------------------------------

ROUND_TRIP_CASES: list[tuple[dict[str, Any], type[pydantic.BaseModel]]] = [
    ({"role": "system", "content": "Be brief."}, SystemMessage),
    ({"role": "user", "content": "Hi"}, UserMessage),
    (
        {
            "role": "assistant",
            "content": "Calling.",
            "reasoning": "I should call f.",
            "tool_calls": [{"id": "c1", "name": "f", "arguments": {"x": 1}}],
            "usage": {"input_tokens": 3, "output_tokens": 4, "requests": 1},
        },
        AssistantMessage,
    ),
    (
        {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f", "is_error": True},
        ToolMessage,
    ),
]


@pytest.mark.parametrize(("data", "cls"), ROUND_TRIP_CASES)
def test_message_union_round_trip(data: dict[str, Any], cls: type[pydantic.BaseModel]) -> None:
    message = MESSAGES.validate_python(data)
    assert type(message) is cls
    assert message.role == data["role"]
    text = MESSAGES.dump_json(message)
    again = MESSAGES.validate_json(text)
    assert again == message
    assert type(again) is cls
    assert MESSAGES.validate_python(MESSAGES.dump_python(message)) == message


def test_message_union_assistant_details() -> None:
    message = MESSAGES.validate_python(ROUND_TRIP_CASES[2][0])
    assert isinstance(message, AssistantMessage)
    assert message.tool_calls == (ToolCall(id="c1", name="f", arguments='{"x": 1}'),)
    assert message.usage == Usage(input_tokens=3, output_tokens=4, requests=1)
    assert message.reasoning == "I should call f."


def test_message_union_defaults() -> None:
    message = MESSAGES.validate_python({"role": "assistant"})
    assert message == AssistantMessage()
    assert isinstance(message, AssistantMessage)
    assert (message.content, message.reasoning, message.tool_calls, message.usage) == (
        "",
        None,
        (),
        None,
    )
    tool_message = MESSAGES.validate_python({"role": "tool", "content": "", "tool_call_id": "c"})
    assert tool_message == ToolMessage(content="", tool_call_id="c", name="", is_error=False)


def test_message_union_rejects_unknown_role() -> None:
    with pytest.raises(pydantic.ValidationError):
        MESSAGES.validate_python({"role": "bot", "content": "x"})


def test_message_union_rejects_missing_role() -> None:
    with pytest.raises(pydantic.ValidationError):
        MESSAGES.validate_python({"content": "x"})


def test_message_union_keeps_role_specific_validation() -> None:
    with pytest.raises(pydantic.ValidationError, match="tool_call_id"):
        MESSAGES.validate_python({"role": "tool", "content": "x"})


def test_message_list_round_trip() -> None:
    adapter = pydantic.TypeAdapter(list[Message])
    messages = adapter.validate_python([data for data, _ in ROUND_TRIP_CASES])
    assert [type(m) for m in messages] == [cls for _, cls in ROUND_TRIP_CASES]
    assert adapter.validate_json(adapter.dump_json(messages)) == messages


def test_is_message() -> None:
    assert is_message(UserMessage(content="x"))
    assert is_message(SystemMessage(content="x"))
    assert is_message(AssistantMessage())
    assert is_message(ToolMessage(content="x", tool_call_id="c"))

    class Custom(UserMessage):
        pass

    assert is_message(Custom(content="x"))
    assert not is_message({"role": "user", "content": "x"})
    assert not is_message(ToolCall(name="f"))
    assert not is_message("x")


# -- to_text ------------------------------------------------------------------------------------


class Point(pydantic.BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class City:
    name: str
    population: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("as is", "as is"),
        ("", ""),
        ('{"a": 1}', '{"a": 1}'),
        (42, "42"),
        (1.5, "1.5"),
        (True, "True"),
        (False, "False"),
        (None, "None"),
        ({"a": [1, 2], "b": None}, '{"a":[1,2],"b":null}'),
        ([1, "x", True], '[1,"x",true]'),
        ((1, 2), "[1,2]"),
        (Point(x=1, y=2), '{"x":1,"y":2}'),
        (City("Zürich", 400_000), '{"name":"Zürich","population":400000}'),
        ([Point(x=0, y=0)], '[{"x":0,"y":0}]'),
    ],
)
def test_to_text(value: Any, expected: str) -> None:
    assert to_text(value) == expected


# -- ToolResponse -------------------------------------------------------------------------------


def test_tool_response_positional_text() -> None:
    response = ToolResponse("sunny")
    assert response.content == "sunny"
    assert response.is_error is False


def test_tool_response_positional_value_is_rendered() -> None:
    assert ToolResponse({"t": 21}).content == '{"t":21}'
    assert ToolResponse(3).content == "3"
    assert ToolResponse(Point(x=1, y=2)).content == '{"x":1,"y":2}'


def test_tool_response_keyword_content_and_error() -> None:
    response = ToolResponse(content="it failed", is_error=True)
    assert response.content == "it failed"
    assert response.is_error is True


def test_tool_response_keyword_content_is_rendered_too() -> None:
    assert ToolResponse(content=[1, 2]).content == "[1,2]"


def test_tool_response_positional_with_error() -> None:
    assert ToolResponse("bad", is_error=True) == ToolResponse(content="bad", is_error=True)


def test_tool_response_validate_and_json() -> None:
    response = ToolResponse.model_validate({"content": "x", "is_error": True})
    assert response == ToolResponse("x", is_error=True)
    assert ToolResponse.model_validate_json(response.model_dump_json()) == response


# -- Usage --------------------------------------------------------------------------------------


def test_usage_defaults() -> None:
    usage = Usage()
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        usage.reasoning_tokens,
        usage.requests,
    ) == (0, 0, 0, 0, 0)
    assert usage.total_tokens == 0


def test_usage_is_immutable() -> None:
    usage = Usage(input_tokens=1)
    # A frozen pydantic model raises ValidationError, a frozen dataclass AttributeError.
    with pytest.raises((pydantic.ValidationError, AttributeError)):
        usage.input_tokens = 2  # type: ignore[misc]
    assert usage.input_tokens == 1


def test_usage_is_validated_as_a_message_field() -> None:
    message = AssistantMessage.model_validate({"usage": {"input_tokens": 2, "requests": 1}})
    assert message.usage == Usage(input_tokens=2, requests=1)
    assert AssistantMessage.model_validate_json(message.model_dump_json()) == message
    with pytest.raises(pydantic.ValidationError):
        AssistantMessage.model_validate({"usage": {"input_tokens": "many"}})


def test_usage_addition_adds_every_field() -> None:
    a = Usage(input_tokens=1, output_tokens=2, cached_tokens=3, reasoning_tokens=4, requests=5)
    b = Usage(input_tokens=10, output_tokens=20, cached_tokens=30, reasoning_tokens=40, requests=1)
    total = a + b
    assert total == Usage(
        input_tokens=11, output_tokens=22, cached_tokens=33, reasoning_tokens=44, requests=6
    )
    # The operands are unchanged.
    assert a.input_tokens == 1
    assert b.input_tokens == 10


def test_usage_sum() -> None:
    parts = [Usage(input_tokens=i, requests=1) for i in range(4)]
    assert sum(parts, Usage()) == Usage(input_tokens=6, requests=4)


def test_total_tokens_is_input_plus_output() -> None:
    usage = Usage(input_tokens=7, output_tokens=5, cached_tokens=3, reasoning_tokens=2)
    assert usage.total_tokens == 12


@pytest.mark.parametrize("other", [1, None, "x", {"input_tokens": 1}])
def test_usage_plus_non_usage_is_a_type_error(other: Any) -> None:
    usage = Usage(input_tokens=1)
    assert usage.__add__(other) is NotImplemented
    with pytest.raises(TypeError):
        usage + other
