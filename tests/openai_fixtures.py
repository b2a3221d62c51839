"""Recorded-style OpenAI-compatible answers, in the exact wire format of each server.

The ``*_STREAM`` constants are chat-completion streams as OpenAI, vLLM and llama.cpp's
``llama-server`` send them (field order, ``null`` fields, the usage chunk, the
``[DONE]`` line), each with the :class:`ModelResponse` it must assemble into. The
``*_COMPLETION`` constants are the matching non-streamed bodies. :func:`sse_stream`
and :func:`completion_body` build both formats from one :class:`Turn`, for the
local test server, so that streamed and complete answers say the same thing.
"""

import json
from dataclasses import dataclass
from typing import Any

from agentrt.messages import ToolCall, Usage
from agentrt.models.base import ModelResponse

__all__ = (
    "LLAMACPP_COMPLETION",
    "LLAMACPP_TOOLS_EXPECTED",
    "LLAMACPP_TOOLS_STREAM",
    "OPENAI_COMPLETION",
    "OPENAI_COMPLETION_EXPECTED",
    "OPENAI_TEXT_EXPECTED",
    "OPENAI_TEXT_STREAM",
    "OPENAI_TOOLS_EXPECTED",
    "OPENAI_TOOLS_STREAM",
    "RECORDED",
    "VLLM_COMPLETION",
    "VLLM_REASONING_EXPECTED",
    "VLLM_REASONING_STREAM",
    "Recorded",
    "Turn",
    "completion_body",
    "sse_stream",
    "wire",
)


def wire(*data: str, newline: str = "\n") -> bytes:
    """An SSE body of ``data:`` events, each followed by a blank line, then ``[DONE]``."""
    return "".join(f"data: {line}{newline}{newline}" for line in (*data, "[DONE]")).encode()


# -- OpenAI (api.openai.com), gpt-4o-mini ------------------------------------------------------

_OA = (
    '{{"id":"chatcmpl-AXq2kP9wZ1vB3nRtY6sL0mE8cFh","object":"chat.completion.chunk",'
    '"created":1732623456,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0705bf87c0",'
    '"choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}],'
    '"usage":null}}'
)
_OA_USAGE = (
    '{"id":"chatcmpl-AXq2kP9wZ1vB3nRtY6sL0mE8cFh","object":"chat.completion.chunk",'
    '"created":1732623456,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0705bf87c0",'
    '"choices":[],"usage":{"prompt_tokens":1187,"completion_tokens":9,"total_tokens":1196,'
    '"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},'
    '"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,'
    '"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}'
)

OPENAI_TEXT_STREAM = wire(
    _OA.format(delta='{"role":"assistant","content":"","refusal":null}', finish="null"),
    _OA.format(delta='{"content":"Bonjour"}', finish="null"),
    _OA.format(delta='{"content":"! Il fait"}', finish="null"),
    _OA.format(delta='{"content":" 18\\u00b0C à"}', finish="null"),
    _OA.format(delta='{"content":" Paris 🌤"}', finish="null"),
    _OA.format(delta='{"content":"."}', finish="null"),
    _OA.format(delta="{}", finish='"stop"'),
    _OA_USAGE,
)
OPENAI_TEXT_EXPECTED = ModelResponse(
    content="Bonjour! Il fait 18°C à Paris 🌤.",
    usage=Usage(
        input_tokens=1187, output_tokens=9, cached_tokens=1024, reasoning_tokens=0, requests=1
    ),
    finish_reason="stop",
)

_OA_TOOL_USAGE = _OA_USAGE.replace('"completion_tokens":9', '"completion_tokens":51').replace(
    '"total_tokens":1196', '"total_tokens":1238'
)
OPENAI_TOOLS_STREAM = wire(
    _OA.format(
        delta='{"role":"assistant","content":null,"tool_calls":[{"index":0,'
        '"id":"call_9pQmZ2xR7tYb1LkW3nVc8dHe","type":"function","function":'
        '{"name":"get_weather","arguments":""}}],"refusal":null}',
        finish="null",
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":0,"function":{"arguments":"{\\"ci"}}]}', finish="null"
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":0,"function":{"arguments":"ty\\": \\"P"}}]}', finish="null"
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":0,"function":{"arguments":"aris\\"}"}}]}', finish="null"
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":1,"id":"call_Hk4sD8fJ2mN6pQ0rT5vX1yZa","type":"function",'
        '"function":{"name":"get_weather","arguments":""}}]}',
        finish="null",
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":1,"function":{"arguments":"{\\"ci"}}]}', finish="null"
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":1,"function":{"arguments":"ty\\": \\"R"}}]}', finish="null"
    ),
    _OA.format(
        delta='{"tool_calls":[{"index":1,"function":{"arguments":"ome\\"}"}}]}', finish="null"
    ),
    _OA.format(delta="{}", finish='"tool_calls"'),
    _OA_TOOL_USAGE,
)
OPENAI_TOOLS_EXPECTED = ModelResponse(
    tool_calls=(
        ToolCall(
            id="call_9pQmZ2xR7tYb1LkW3nVc8dHe", name="get_weather", arguments='{"city": "Paris"}'
        ),
        ToolCall(
            id="call_Hk4sD8fJ2mN6pQ0rT5vX1yZa", name="get_weather", arguments='{"city": "Rome"}'
        ),
    ),
    usage=Usage(input_tokens=1187, output_tokens=51, cached_tokens=1024, requests=1),
    finish_reason="tool_calls",
)

OPENAI_COMPLETION = b"""{
  "id": "chatcmpl-AXq3mT4yU8iO2pLkJ9hG6fD1sA0",
  "object": "chat.completion",
  "created": 1732623501,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_9pQmZ2xR7tYb1LkW3nVc8dHe",
            "type": "function",
            "function": {
              "name": "get_weather",
              "arguments": "{\\"city\\":\\"Paris\\"}"
            }
          }
        ],
        "refusal": null
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 82,
    "completion_tokens": 17,
    "total_tokens": 99,
    "prompt_tokens_details": {
      "cached_tokens": 0,
      "audio_tokens": 0
    },
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  },
  "system_fingerprint": "fp_0705bf87c0"
}
"""
OPENAI_COMPLETION_EXPECTED = ModelResponse(
    tool_calls=(
        ToolCall(
            id="call_9pQmZ2xR7tYb1LkW3nVc8dHe", name="get_weather", arguments='{"city":"Paris"}'
        ),
    ),
    usage=Usage(input_tokens=82, output_tokens=17, requests=1),
    finish_reason="tool_calls",
    model_name="gpt-4o-mini-2024-07-18",
)

# -- vLLM serving DeepSeek-R1-Distill (reasoning parser on) -----------------------------------

_VL = (
    '{{"id":"chatcmpl-3f1e0c2b9a8d4e7f8a6b5c4d3e2f1a0b","object":"chat.completion.chunk",'
    '"created":1739187203,"model":"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",'
    '"choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}{stop}}}]}}'
)


def _vl(delta: str, finish: str = "null") -> str:
    return _VL.format(
        delta=delta, finish=finish, stop=',"stop_reason":null' if finish != "null" else ""
    )


VLLM_REASONING_STREAM = wire(
    _vl('{"role":"assistant","content":""}'),
    _vl('{"reasoning_content":"Okay"}'),
    _vl('{"reasoning_content":", the user"}'),
    _vl('{"reasoning_content":" asks 2+2."}'),
    _vl('{"reasoning_content":" That is 4.\\n"}'),
    _vl('{"content":"2 + 2"}'),
    _vl('{"content":" = **4**"}'),
    _vl('{"content":""}', finish='"stop"'),
    '{"id":"chatcmpl-3f1e0c2b9a8d4e7f8a6b5c4d3e2f1a0b","object":"chat.completion.chunk",'
    '"created":1739187203,"model":"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B","choices":[],'
    '"usage":{"prompt_tokens":14,"total_tokens":73,"completion_tokens":59,'
    '"prompt_tokens_details":null}}',
)
VLLM_REASONING_EXPECTED = ModelResponse(
    content="2 + 2 = **4**",
    reasoning="Okay, the user asks 2+2. That is 4.\n",
    usage=Usage(input_tokens=14, output_tokens=59, requests=1),
    finish_reason="stop",
)

VLLM_COMPLETION = b"""{"id":"chatcmpl-8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f",\
"object":"chat.completion","created":1739187290,"model":"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B","choices":[{"index":0,\
"message":{"role":"assistant","reasoning_content":"Okay, the user asks 2+2. That is 4.\\n",\
"content":"2 + 2 = **4**","tool_calls":[]},"logprobs":null,"finish_reason":"stop",\
"stop_reason":null}],"usage":{"prompt_tokens":14,"total_tokens":73,"completion_tokens":59,\
"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":21}},\
"prompt_logprobs":null}"""

# -- llama.cpp llama-server (--jinja), Qwen2.5 GGUF -------------------------------------------
# This server repeats id, type and name on every tool-call fragment and mirrors the
# call in the legacy "function_call" field; usage and timings ride on the last chunk.

_LC = (
    '{{"choices":[{{"finish_reason":{finish},"index":0,"delta":{delta}}}],"created":1747312840,'
    '"id":"chatcmpl-7RkQf2LwXc9VbN1mZa3sDe5TgH8yJu0i","model":"qwen2.5-7b-instruct-q4_k_m.gguf",'
    '"system_fingerprint":"b5478-f5cd27b7","object":"chat.completion.chunk"{extra}}}'
)


def _lc_call(index: int, call_id: str, city_piece: str) -> str:
    arguments = json.dumps(city_piece)
    function = f'{{"name":"get_weather","arguments":{arguments}}}'
    return _LC.format(
        finish="null",
        delta=(
            f'{{"content":null,"tool_calls":[{{"index":{index},"id":"{call_id}",'
            f'"type":"function","function":{function}}}],"function_call":{function}}}'
        ),
        extra="",
    )


LLAMACPP_TOOLS_STREAM = wire(
    _LC.format(finish="null", delta='{"role":"assistant","content":null}', extra=""),
    _lc_call(0, "k3JrT8xWq2ZpL5vN9mB1cY7hD4fG6sA0", '{"city":'),
    _lc_call(0, "k3JrT8xWq2ZpL5vN9mB1cY7hD4fG6sA0", ' "Paris"}'),
    _lc_call(1, "Xe9Wq1Lr5Tz3Ky7Nu0Bv4Cm8Pa2Sd6Fh", '{"city":'),
    _lc_call(1, "Xe9Wq1Lr5Tz3Ky7Nu0Bv4Cm8Pa2Sd6Fh", ' "Rome"}'),
    _LC.format(
        finish='"tool_calls"',
        delta="{}",
        extra=(
            ',"usage":{"completion_tokens":42,"prompt_tokens":310,"total_tokens":352},'
            '"timings":{"prompt_n":310,"prompt_ms":95.213,"prompt_per_token_ms":0.307,'
            '"prompt_per_second":3255.85,"predicted_n":42,"predicted_ms":611.05,'
            '"predicted_per_token_ms":14.549,"predicted_per_second":68.73}'
        ),
    ),
)
LLAMACPP_TOOLS_EXPECTED = ModelResponse(
    tool_calls=(
        ToolCall(
            id="k3JrT8xWq2ZpL5vN9mB1cY7hD4fG6sA0",
            name="get_weather",
            arguments='{"city": "Paris"}',
        ),
        ToolCall(
            id="Xe9Wq1Lr5Tz3Ky7Nu0Bv4Cm8Pa2Sd6Fh", name="get_weather", arguments='{"city": "Rome"}'
        ),
    ),
    usage=Usage(input_tokens=310, output_tokens=42, requests=1),
    finish_reason="tool_calls",
)

LLAMACPP_COMPLETION = b"""{"choices":[{"finish_reason":"stop","index":0,"message":{"role":\
"assistant","reasoning_content":"The user greets me.","content":"Hello! How can I help?"}}],\
"created":1747312901,"model":"qwen2.5-7b-instruct-q4_k_m.gguf","system_fingerprint":\
"b5478-f5cd27b7","object":"chat.completion","usage":{"completion_tokens":12,"prompt_tokens":9,\
"total_tokens":21},"id":"chatcmpl-Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc","timings":{"prompt_n":9,\
"prompt_ms":11.2,"predicted_n":12,"predicted_ms":170.4}}"""


@dataclass(frozen=True)
class Recorded:
    """A recorded stream and the response it assembles into."""

    name: str
    body: bytes
    expected: ModelResponse


RECORDED = (
    Recorded("openai-text", OPENAI_TEXT_STREAM, OPENAI_TEXT_EXPECTED),
    Recorded("openai-parallel-tools", OPENAI_TOOLS_STREAM, OPENAI_TOOLS_EXPECTED),
    Recorded("vllm-reasoning", VLLM_REASONING_STREAM, VLLM_REASONING_EXPECTED),
    Recorded("llamacpp-tools", LLAMACPP_TOOLS_STREAM, LLAMACPP_TOOLS_EXPECTED),
)


# -- builders: one Turn, both formats ---------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One answer, to be sent streamed or whole.

    Attributes:
        content: The answer's text.
        reasoning: Reasoning text (sent as ``reasoning_content``).
        tool_calls: ``(id, name, arguments)`` per call.
        usage: ``prompt_tokens`` and ``completion_tokens``.
        model: The model name the server reports.
    """

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    usage: tuple[int, int] = (20, 10)
    model: str = "local-test-model"

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sse_stream(turn: Turn, *, piece: int = 5) -> bytes:
    """``turn`` as an OpenAI-style stream: role, reasoning, text, calls, finish, usage."""
    head = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": 1}
    head["model"] = turn.model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _dumps({**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": None})]
    events += [chunk({"reasoning_content": p}) for p in _pieces(turn.reasoning, piece)]
    events += [chunk({"content": p}) for p in _pieces(turn.content, piece)]
    for index, (call_id, name, arguments) in enumerate(turn.tool_calls):
        fragments = _pieces(arguments, piece) or [""]
        opening = {"index": index, "id": call_id, "type": "function"}
        opening["function"] = {"name": name, "arguments": fragments[0]}
        events.append(chunk({"tool_calls": [opening]}))
        for fragment in fragments[1:]:
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            )
    events.append(chunk({}, turn.finish_reason))
    prompt, completion = turn.usage
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage["total_tokens"] = prompt + completion
    events.append(_dumps({**head, "choices": [], "usage": usage}))
    return wire(*events)


def completion_body(turn: Turn) -> bytes:
    """``turn`` as a non-streamed chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.content or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in turn.tool_calls
        ]
    prompt, completion = turn.usage
    return _dumps(
        {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": 1,
            "model": turn.model,
            "choices": [{"index": 0, "message": message, "finish_reason": turn.finish_reason}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    ).encode()
