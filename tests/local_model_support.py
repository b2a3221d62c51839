"""What the LocalModel tests share: a fake Llama, and chunk dicts in llama-cpp-python's shapes.

The chunk dicts copy the shapes llama-cpp-python 0.3 produces with the
``chatml-function-calling`` format (see tests/live for the real thing).
"""

import threading
from collections.abc import Iterator
from typing import Any

from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentrt.models import local
from agentrt.models.base import (
    ModelRequest,
    StreamChunk,
)
from agentrt.models.local import (
    LocalModel,
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
