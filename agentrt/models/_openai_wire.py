"""Reading the OpenAI chat-completions API's answers: a whole completion, or a stream's chunks.

What servers differ in is taken in stride here (see :mod:`agentrt.models.openai`):
``reasoning_content`` or ``reasoning``, repeated ids and names on every fragment of a
tool call, a legacy ``function_call`` copy, usage on its own chunk or on the last
content chunk, ``null`` content, arguments as an object instead of JSON text.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json, to_json

from agentrt._unicode import loads_escaping_surrogates
from agentrt.exceptions import ModelResponseError, StreamProtocolError
from agentrt.messages import ToolCall, Usage, new_tool_call_id
from agentrt.models.base import (
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

__all__ = ("ChunkReader", "as_chunks", "parse_completion")


def _int(value: object) -> int:
    # A count below zero is no count: a negative one would fail the stream's
    # token_usage event (counts are >= 0) far from here.
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage(requests=1)
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        cached_tokens=(
            _int(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0
        ),
        reasoning_tokens=(
            _int(completion_details.get("reasoning_tokens"))
            if isinstance(completion_details, dict)
            else 0
        ),
        requests=1,
    )


def _text(value: object) -> str:
    """Message content: a string, or a list of parts (some servers) of which text counts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            part["text"]
            for part in value
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _arguments(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    # A few servers send the arguments as an object rather than as JSON text.
    return to_json(value).decode()


def _error_message(error: object) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str):
            return message
    return str(error)


def _from_json(data: str | bytes) -> Any:
    try:
        return from_json(data)
    except ValueError:
        # pydantic_core refuses a lone-surrogate escape anywhere in the body; the slower
        # parser keeps the answer, so that one bad tool call is a tool error the model
        # reads rather than the whole answer lost.
        return loads_escaping_surrogates(data)


def parse_completion(body: bytes, url: str, model: str) -> ModelResponse:
    """The answer a chat-completion body (not streamed) carries.

    Args:
        body: The response body as received.
        url: The endpoint, to name it in errors.
        model: The model asked, for an answer that does not name its model.

    Raises:
        ModelResponseError: The body is not JSON, reports an error, or has no usable
            first choice (a tool call without a function name, say).
    """
    text = body.decode("utf-8", "replace")
    try:
        payload = _from_json(body)
    except ValueError:
        raise ModelResponseError(url, "the body is not JSON", text) from None
    if not isinstance(payload, dict):
        raise ModelResponseError(url, "the body is not a JSON object", text)
    if payload.get("error"):
        raise ModelResponseError(
            url, f"the server reported an error: {_error_message(payload['error'])}", text
        )
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelResponseError(url, "the answer has no choices", text)
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ModelResponseError(url, "the first choice has no message", text)
    calls: list[ToolCall] = []
    raw_calls = message.get("tool_calls") or []
    if not raw_calls and isinstance(message.get("function_call"), dict):
        raw_calls = [{"function": message["function_call"]}]  # the legacy single call
    if not isinstance(raw_calls, list):  # iterating a true or a string would go wrong
        raise ModelResponseError(url, f"tool_calls is not a list: {raw_calls!r:.200}", text)
    for raw in raw_calls:
        function = raw.get("function") if isinstance(raw, dict) else None
        # Type checks, not just truthiness: a number would fail ToolCall's validation
        # with an untyped pydantic error.
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(raw, dict) or not isinstance(function, dict) or not name:
            raise ModelResponseError(url, f"a tool call has no function name: {raw!r:.200}", text)
        if not isinstance(name, str):
            raise ModelResponseError(
                url, f"a tool call's function name is not text: {raw!r:.200}", text
            )
        call_id = raw.get("id")
        calls.append(
            ToolCall(
                id=call_id if isinstance(call_id, str) and call_id else new_tool_call_id(),
                name=name,
                arguments=_arguments(function.get("arguments")) or "{}",
            )
        )
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    model_name = payload.get("model")
    finish_reason = choice.get("finish_reason")
    return ModelResponse(
        content=_text(message.get("content")) or _text(message.get("refusal")),
        reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
        tool_calls=tuple(calls),
        usage=_usage(payload.get("usage")),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        model_name=model_name if isinstance(model_name, str) else model,
    )


def as_chunks(response: ModelResponse) -> list[StreamChunk]:
    """A whole answer as the chunks a stream of it would have carried (for a server that
    answered a streamed request with one JSON body)."""
    chunks: list[StreamChunk] = []
    if response.reasoning:
        chunks.append(ReasoningDelta(response.reasoning))
    if response.content:
        chunks.append(TextDelta(response.content))
    for index, call in enumerate(response.tool_calls):
        chunks.append(ToolCallDelta(index, id=call.id, name=call.name, arguments=call.arguments))
    chunks.append(UsageChunk(response.usage, response.finish_reason))
    return chunks


class ChunkReader:
    """Reads one streamed answer's events into chunks.

    It keeps what the answer has said so far: the calls opened, the usage, the finish
    reason. :meth:`feed` takes each SSE event; :meth:`finish` gives the closing chunk.
    """

    __slots__ = ("calls", "finish_reason", "last", "url", "usage")

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls: set[int] = set()
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.last = ""  # the last chunk's data, to name it when the stream breaks off

    def feed(self, data: str, event: str) -> list[StreamChunk]:
        """The chunks one event's data carries (often none: a role or usage chunk)."""
        self.last = data
        if event != "message":
            if event == "error":
                raise ModelResponseError(self.url, "the server reported an error event", data)
            return []  # an event type this API does not define: not ours to read
        try:
            payload = _from_json(data)
        except ValueError:
            raise StreamProtocolError("a chunk is not valid JSON", chunk=data) from None
        if type(payload) is not dict:
            raise StreamProtocolError("a chunk is not a JSON object", chunk=data)
        chunks: list[StreamChunk] = []
        choices = payload.get("choices")
        if choices:
            if type(choices) is not list:
                raise StreamProtocolError("a chunk's choices are not a list", chunk=data)
            for choice in choices:
                if type(choice) is not dict:
                    raise StreamProtocolError("a choice is not an object", chunk=data)
                # n > 1 is not supported: the first choice is the answer.
                if choice.get("index", 0) != 0:
                    continue
                finish_reason = choice.get("finish_reason")
                if finish_reason and type(finish_reason) is str:
                    self.finish_reason = finish_reason
                delta = choice.get("delta")
                if not delta:
                    continue
                if type(delta) is not dict:
                    raise StreamProtocolError("a choice's delta is not an object", chunk=data)
                content = delta.get("content")
                # str only: a list of parts (or a wrong type) takes the checked path.
                if len(delta) == 1 and type(content) is str and content:
                    # Nearly every chunk of an answer is this one: text and nothing else.
                    chunks.append(TextDelta(content))
                else:
                    self._delta(delta, data, chunks)
        elif payload.get("error"):
            raise ModelResponseError(
                self.url,
                f"the server reported an error mid-stream: {_error_message(payload['error'])}",
                data,
            )
        usage = payload.get("usage")
        if usage:
            # Servers that report usage on several chunks report running totals.
            self.usage = _usage(usage)
        return chunks

    def _delta(self, delta: dict[str, Any], data: str, chunks: list[StreamChunk]) -> None:
        # _text(): as in a whole answer, a list of parts gives its text and any other
        # non-string nothing; a number here would break the assembler's join later.
        reasoning = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
        if reasoning:
            chunks.append(ReasoningDelta(reasoning))
        content = _text(delta.get("content")) or _text(delta.get("refusal"))
        if content:
            chunks.append(TextDelta(content))
        calls = delta.get("tool_calls")
        if not calls and isinstance(delta.get("function_call"), dict):
            # The legacy single-call field, on its own (with tool_calls it is a copy).
            calls = [{"index": 0, "function": delta["function_call"]}]
        if calls:
            if not isinstance(calls, list):
                raise StreamProtocolError("delta.tool_calls is not a list", chunk=data)
            for position, call in enumerate(calls):
                self._call(call, position, data, chunks)

    def _call(self, call: object, position: int, data: str, chunks: list[StreamChunk]) -> None:
        if not isinstance(call, dict):
            raise StreamProtocolError("a tool-call delta is not an object", chunk=data)
        index = call.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int):
            raise StreamProtocolError(f"a tool-call delta has index {index!r}", chunk=data)
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise StreamProtocolError("a tool-call delta's function is not an object", chunk=data)
        arguments = _arguments(function.get("arguments"))
        if index in self.calls:
            # llama.cpp-style servers repeat id and name on every fragment: only the
            # first one counts, the assembler would otherwise see a second call.
            if arguments:
                chunks.append(ToolCallDelta(index, arguments=arguments))
            return
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise StreamProtocolError(
                f"a tool-call delta for index {index} has no name, and no earlier delta "
                "opened a call at that index",
                chunk=data,
            )
        call_id = call.get("id")
        self.calls.add(index)
        chunks.append(
            ToolCallDelta(
                index,
                id=call_id if isinstance(call_id, str) and call_id else None,
                name=name,
                arguments=arguments,
            )
        )

    def finish(self) -> UsageChunk:
        """The closing chunk: the usage last reported, and the finish reason."""
        return UsageChunk(self.usage or Usage(requests=1), self.finish_reason)
