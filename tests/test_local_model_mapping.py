"""LocalModel's mapping (agentrt/models/local.py): requests to llama.cpp, answers back."""

from typing import Any

import pytest

from agentrt.exceptions import ModelError
from agentrt.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.models.local import (
    StreamTranslator,
    chat_completion_kwargs,
    response_chunks,
    to_chat_messages,
    to_model_response,
    to_usage,
)
from tests.local_model_support import (
    CONVERSATION,
    FORCED_TOOL_STREAM,
    TEXT_STREAM,
    WEATHER_TOOL,
    ask,
    chunk,
    text_result,
    tool_result,
)

# -- request mapping ---------------------------------------------------------------------


def test_messages_map_to_the_openai_shape() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert to_chat_messages(CONVERSATION) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "c2", "name": "get_time", "content": "boom"},
        {"role": "assistant", "content": "It is sunny."},
    ]


def test_tool_results_become_user_turns_for_formats_without_a_tool_role() -> None:
    messages = to_chat_messages(CONVERSATION, tool_result_role="user")
    assert messages[3:5] == [
        {"role": "user", "content": "functions.get_weather returned:\nSunny"},
        {"role": "user", "content": "functions.get_time failed:\nboom"},
    ]


def test_an_empty_assistant_turn_keeps_empty_text() -> None:
    assert to_chat_messages([AssistantMessage(content="")]) == [
        {"role": "assistant", "content": ""}
    ]


def test_kwargs_merge_defaults_under_request_settings() -> None:
    kwargs = chat_completion_kwargs(
        ask(settings={"temperature": 0.0}), {"temperature": 0.7, "max_tokens": 20}
    )
    assert kwargs == {
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.0,
        "max_tokens": 20,
    }


def test_tools_default_to_auto_tool_choice() -> None:
    kwargs = chat_completion_kwargs(ask(tools=[WEATHER_TOOL]))
    assert kwargs["tools"] == [WEATHER_TOOL]
    assert kwargs["tool_choice"] == "auto"


def test_an_explicit_tool_choice_is_kept() -> None:
    forced = {"type": "function", "function": {"name": "get_weather"}}
    kwargs = chat_completion_kwargs(ask(tools=[WEATHER_TOOL], settings={"tool_choice": forced}))
    assert kwargs["tool_choice"] == forced


def test_tool_choice_without_tools_is_dropped() -> None:
    kwargs = chat_completion_kwargs(ask(settings={"tool_choice": "auto"}))
    assert "tool_choice" not in kwargs
    assert "tools" not in kwargs


def test_output_schema_becomes_a_json_response_format() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    kwargs = chat_completion_kwargs(ask(output_schema=schema))
    assert kwargs["response_format"] == {"type": "json_object", "schema": schema}


def test_max_completion_tokens_is_max_tokens() -> None:
    kwargs = chat_completion_kwargs(ask(settings={"max_completion_tokens": 5}), {"max_tokens": 64})
    assert kwargs["max_tokens"] == 5
    assert "max_completion_tokens" not in kwargs


def test_an_unknown_setting_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"does not understand the setting\(s\) 'parallel_tool"):
        chat_completion_kwargs(ask(settings={"parallel_tool_calls": False}))


def test_the_function_calling_format_gets_tool_results_as_user_turns() -> None:
    request = ModelRequest(messages=list(CONVERSATION), tools=[WEATHER_TOOL])
    kwargs = chat_completion_kwargs(request, chat_format="chatml-function-calling")
    assert kwargs["messages"] == to_chat_messages(CONVERSATION, tool_result_role="user")


def test_the_function_calling_format_marks_every_text_verbatim() -> None:
    # llama-cpp-python renders this format's template with HTML autoescaping on; text
    # marked as markupsafe.Markup is printed as it is.
    kwargs = chat_completion_kwargs(
        ModelRequest(messages=list(CONVERSATION), tools=[WEATHER_TOOL]),
        chat_format="chatml-function-calling",
    )
    messages = kwargs["messages"]
    contents = [m["content"] for m in messages if m["content"] is not None]
    arguments = [c["function"]["arguments"] for m in messages for c in m.get("tool_calls", ())]
    assert arguments == ['{"city": "Paris"}']
    assert all(hasattr(text, "__html__") for text in (*contents, *arguments))
    # Other formats (their templates concatenate text) get plain strings.
    plain = chat_completion_kwargs(ModelRequest(messages=list(CONVERSATION)))["messages"]
    assert not any(hasattr(m["content"], "__html__") for m in plain)


def test_an_autoescaping_template_prints_marked_arguments_verbatim() -> None:
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # The environment llama-cpp-python's chatml-function-calling handler renders with.
    template = ImmutableSandboxedEnvironment(
        autoescape=jinja2.select_autoescape(["html", "xml"]),
        undefined=jinja2.StrictUndefined,
    ).from_string(
        "{% for m in messages %}{{ m.content or '' }}|"
        "{% for c in m.get('tool_calls', []) %}{{ c.function.arguments }}|{% endfor %}"
        "{% endfor %}"
    )
    conversation: list[Message] = [
        UserMessage(content="Write \"notes.txt\" with <b> & 'quotes'"),
        AssistantMessage(
            content="",
            tool_calls=(
                ToolCall(
                    id="c1",
                    name="write_note",
                    arguments='{"filename": "notes.txt", "text": "a & b"}',
                ),
            ),
        ),
        ToolMessage(content='wrote "notes.txt"', tool_call_id="c1", name="write_note"),
    ]
    verbatim = to_chat_messages(conversation, tool_result_role="user", verbatim=True)
    rendered = template.render(messages=verbatim)
    assert rendered == (
        "Write \"notes.txt\" with <b> & 'quotes'|"
        '|{"filename": "notes.txt", "text": "a & b"}|'
        'functions.write_note returned:\nwrote "notes.txt"|'
    )
    assert "&#34;" in template.render(messages=to_chat_messages(conversation))  # the bug


def test_the_function_calling_format_gets_a_system_message_for_the_tools() -> None:
    # Its template lists the tools inside the system message, and only there.
    fc = "chatml-function-calling"
    with_tools = chat_completion_kwargs(ask(tools=[WEATHER_TOOL]), chat_format=fc)
    assert with_tools["messages"] == [
        {"role": "system", "content": ""},
        {"role": "user", "content": "Hi"},
    ]
    assert chat_completion_kwargs(ask(), chat_format=fc)["messages"] == [
        {"role": "user", "content": "Hi"}
    ]
    other = chat_completion_kwargs(ask(tools=[WEATHER_TOOL]), chat_format="chatml")
    assert other["messages"] == [{"role": "user", "content": "Hi"}]


# -- response mapping --------------------------------------------------------------------


def test_usage_maps_prompt_and_completion_tokens() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    assert to_usage(usage) == Usage(input_tokens=12, output_tokens=4, requests=1)
    cached = {**usage, "prompt_tokens_details": {"cached_tokens": 8}}
    assert to_usage(cached).cached_tokens == 8
    assert to_usage(None) == Usage(requests=1)


def test_a_text_completion_maps_to_a_response() -> None:
    response = to_model_response(text_result("Hello!"), model_name="smol")
    assert response == ModelResponse(
        content="Hello!",
        usage=Usage(input_tokens=10, output_tokens=3, requests=1),
        finish_reason="stop",
        model_name="smol",
    )


def test_tool_calls_win_over_the_legacy_function_call() -> None:
    response = to_model_response(tool_result("get_weather", '{"city": "Paris"}'))
    assert response.content == ""
    assert response.tool_calls == (
        ToolCall(id="call__0_x", name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(input_tokens=50, output_tokens=7, requests=1)


def test_a_lone_function_call_becomes_a_tool_call() -> None:
    result = text_result("")
    result["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "get_weather", "arguments": ""},
    }
    (call,) = to_model_response(result).tool_calls
    assert (call.name, call.arguments) == ("get_weather", "{}")
    assert call.id.startswith("call_")


def test_a_completion_without_a_message_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="without a message"):
        to_model_response({"choices": []})


def test_a_response_splits_into_chunks() -> None:
    response = ModelResponse(
        content="Hi",
        tool_calls=(ToolCall(id="c1", name="f", arguments="{}"),),
        usage=Usage(requests=1),
        finish_reason="tool_calls",
    )
    assert response_chunks(response) == [
        TextDelta("Hi"),
        ToolCallDelta(0, id="c1", name="f", arguments="{}"),
        UsageChunk(Usage(requests=1), "tool_calls"),
    ]


# -- stream translation --------------------------------------------------------------------


def translate(chunks: list[dict[str, Any]]) -> tuple[list[StreamChunk], StreamTranslator]:
    translator = StreamTranslator()
    return [item for c in chunks for item in translator.feed(c)], translator


def test_repeated_tool_call_ids_and_names_pass_on_once() -> None:
    items, translator = translate(FORCED_TOOL_STREAM)
    assert items == [
        ToolCallDelta(0, id="call__0_get_weather_c", name="get_weather", arguments='{"city": '),
        ToolCallDelta(0, arguments='"Paris"'),
        ToolCallDelta(0, arguments="}"),
    ]
    assert translator.finish_reason == "tool_calls"
    assert translator.text == '{"city": "Paris"}'
    assert translator.usage is None


def test_translated_tool_fragments_assemble_into_one_call() -> None:
    assembler = ResponseAssembler()
    for item in translate(FORCED_TOOL_STREAM)[0]:
        assembler.add(item)
    assert assembler.response().tool_calls == (
        ToolCall(id="call__0_get_weather_c", name="get_weather", arguments='{"city": "Paris"}'),
    )


def test_text_deltas_pass_on() -> None:
    items, translator = translate(TEXT_STREAM)
    assert items == [TextDelta("Hello"), TextDelta(" there")]
    assert translator.finish_reason == "stop"


def test_a_legacy_only_stream_is_read_as_call_zero() -> None:
    stream = [
        chunk({"function_call": {"name": "get_weather", "arguments": "{"}}),
        chunk({"function_call": {"name": "get_weather", "arguments": "}"}}),
    ]
    assert translate(stream)[0] == [
        ToolCallDelta(0, name="get_weather", arguments="{"),
        ToolCallDelta(0, arguments="}"),
    ]


def test_parallel_calls_open_by_index() -> None:
    def fragment(index: int, name: str, arguments: str) -> dict[str, Any]:
        call = {
            "index": index,
            "id": f"c{index}",
            "function": {"name": name, "arguments": arguments},
        }
        return chunk({"tool_calls": [call]})

    stream = [fragment(0, "a", "{"), fragment(1, "b", "{}"), fragment(0, "a", "}")]
    assert translate(stream)[0] == [
        ToolCallDelta(0, id="c0", name="a", arguments="{"),
        ToolCallDelta(1, id="c1", name="b", arguments="{}"),
        ToolCallDelta(0, arguments="}"),
    ]


def test_a_nameless_first_fragment_is_passed_on_for_the_assembler_to_report() -> None:
    stream = [chunk({"tool_calls": [{"index": 2, "function": {"arguments": "{}"}}]})]
    assert translate(stream)[0] == [ToolCallDelta(2, arguments="{}")]


def test_usage_in_a_chunk_is_kept_and_other_choices_ignored() -> None:
    usage_chunk = {
        "choices": [{"index": 1, "delta": {"content": "other answer"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    items, translator = translate([usage_chunk])
    assert items == []
    assert translator.usage == Usage(input_tokens=3, output_tokens=2, requests=1)
