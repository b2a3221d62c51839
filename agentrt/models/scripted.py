"""The scripted model: deterministic responses for tests and offline runs.

``ScriptedModel([...])`` answers each call with the next item of its script;
``ScriptedModel(fn)`` answers with ``fn(request)`` (sync or async). An item is

* a ``str``: the final answer text;
* a :class:`~agentrt.ToolCall` or a list of them: tool calls (a list runs in parallel);
* an :class:`~agentrt.AssistantMessage` or :class:`~agentrt.ModelResponse`: used as is
  (text, reasoning, tool calls, usage);
* an ``Exception`` instance: raised by the call, to script model failures.

Every request is recorded in :attr:`ScriptedModel.requests`. Streaming splits the
text and reasoning into chunks and each tool call's arguments into fragments.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import TypeAlias, cast

from agentrt.exceptions import ScriptExhaustedError
from agentrt.messages import AssistantMessage, ToolCall, Usage
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

__all__ = ("ScriptItem", "ScriptedModel", "estimate_tokens")

ScriptItem: TypeAlias = (
    str | ToolCall | Sequence[ToolCall] | AssistantMessage | ModelResponse | Exception
)
"""One scripted answer (see the module docstring)."""

ScriptFunction: TypeAlias = Callable[[ModelRequest], ScriptItem | Awaitable[ScriptItem]]


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate (about four characters a token, at least one)."""
    return max(1, (len(text) + 3) // 4) if text else 0


def _pieces(text: str, size: int) -> Iterable[str]:
    """``text`` in pieces of ``size`` characters; by character a str is its own iterator."""
    if size == 1:
        return text
    return (text[i : i + size] for i in range(0, len(text), size))


class ScriptedModel:
    """A model that answers from a script or a function, without a network.

    Args:
        script: A sequence of :data:`ScriptItem`, consumed one per call, or a
            function of the :class:`ModelRequest` (sync or async) returning one.
        name: The model name reported in events.
        chunk_size: Characters per text/reasoning chunk (and per arguments
            fragment) when streaming.
        record: Keep every request in :attr:`requests`. Turn it off for a model
            that serves many runs (a demo, a benchmark): recording grows without
            bound, and a large heap makes every garbage collection slower.

    Raises:
        TypeError: ``script`` is neither a sequence nor a callable, or
            ``chunk_size`` is not a positive int.
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | ScriptFunction,
        *,
        name: str = "scripted",
        chunk_size: int = 8,
        record: bool = True,
    ) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise TypeError(f"chunk_size must be a positive int, got {chunk_size!r}")
        if isinstance(script, str) or not (callable(script) or isinstance(script, Sequence)):
            raise TypeError(
                "ScriptedModel takes a list of responses or a function of the request, "
                f"got {type(script).__name__}"
            )
        self._script = script
        # Decided once: inspect.isawaitable() on every call is measurable.
        self._async_script = inspect.iscoroutinefunction(script)
        self._position = 0
        self._name = name
        self.chunk_size = chunk_size
        self.record = record
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    @property
    def name(self) -> str:
        """The model name reported in events."""
        return self._name

    @property
    def supports_output_schema(self) -> bool:
        """Structured output is native: the script's text answers are the JSON."""
        return True

    @property
    def remaining(self) -> int | None:
        """Responses left in a list script (``None`` for a function script)."""
        if callable(self._script):
            return None
        return len(self._script) - self._position

    def reset(self, script: Sequence[ScriptItem] | None = None) -> None:
        """Start the script over (or replace it) and forget recorded requests."""
        if script is not None:
            self._script = script
            self._async_script = False
        self._position = 0
        self.requests.clear()

    async def _next(self, request: ModelRequest) -> ModelResponse:
        if self.record:
            self.requests.append(request)
        script = self._script
        if callable(script):
            answer = script(request)
            # The usual answers (text, a tool call) skip isawaitable's ABC check.
            kind = type(answer)
            if self._async_script or (
                kind is not str and kind is not ToolCall and inspect.isawaitable(answer)
            ):
                item = await cast("Awaitable[ScriptItem]", answer)
            else:
                item = cast("ScriptItem", answer)
        else:
            if self._position >= len(script):
                raise ScriptExhaustedError(len(script))
            item = script[self._position]
            self._position += 1
        return self._to_response(item, request)

    def _to_response(self, item: ScriptItem, request: ModelRequest) -> ModelResponse:
        # Exact-type tests first: the common items cost no isinstance() against
        # pydantic's metaclass.
        kind = type(item)
        if kind is str:
            response = ModelResponse(content=cast("str", item))
        elif kind is ToolCall:
            response = ModelResponse(tool_calls=(cast("ToolCall", item),))
        elif isinstance(item, Exception):
            raise item
        elif isinstance(item, ModelResponse):
            # A copy: filling in usage and finish_reason must not change the script,
            # which may be replayed after reset().
            response = dataclasses.replace(item)
        elif isinstance(item, str):
            response = ModelResponse(content=item)
        elif isinstance(item, ToolCall):
            response = ModelResponse(tool_calls=(item,))
        elif isinstance(item, AssistantMessage):
            response = ModelResponse(
                content=item.content,
                reasoning=item.reasoning,
                tool_calls=item.tool_calls,
                usage=item.usage or Usage(),
            )
        elif isinstance(item, Sequence) and all(isinstance(c, ToolCall) for c in item):
            response = ModelResponse(tool_calls=tuple(cast("Sequence[ToolCall]", item)))
        else:
            raise TypeError(
                f"ScriptedModel cannot answer with {type(item).__name__}: script items are "
                "str, ToolCall, a list of ToolCall, AssistantMessage, ModelResponse or Exception"
            )
        if response.usage.requests == 0:
            response.usage = self._usage(request, response)
        if response.finish_reason is None:
            response.finish_reason = "tool_calls" if response.tool_calls else "stop"
        if response.model_name is None:
            response.model_name = self._name
        return response

    @staticmethod
    def _usage(request: ModelRequest, response: ModelResponse) -> Usage:
        given = response.usage
        prompt = estimate_tokens("".join([m.content for m in request.messages]))
        completion = estimate_tokens(
            response.content
            + "".join([call.name + call.arguments for call in response.tool_calls])
        )
        reasoning = estimate_tokens(response.reasoning) if response.reasoning else 0
        # Positional: the frozen dataclass's keyword path is measurably slower.
        return Usage(
            given.input_tokens or prompt,
            given.output_tokens or completion + reasoning,
            given.cached_tokens,
            given.reasoning_tokens or reasoning,
            1,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the next script item.

        Raises:
            ScriptExhaustedError: The list script has no items left.
            Exception: A scripted exception item.
        """
        return await self._next(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Answer with the next script item, as chunks in generation order.

        Reasoning comes first, then text, then each tool call (its first fragment
        carries id and name), then the usage.
        """
        response = await self._next(request)
        size = self.chunk_size
        for reasoning in map(ReasoningDelta, _pieces(response.reasoning or "", size)):
            yield reasoning
        for text in map(TextDelta, _pieces(response.content, size)):
            yield text
        for index, call in enumerate(response.tool_calls):
            fragments = list(_pieces(call.arguments, size)) or [""]
            yield ToolCallDelta(index, id=call.id, name=call.name, arguments=fragments[0])
            for fragment in fragments[1:]:
                yield ToolCallDelta(index, arguments=fragment)
        yield UsageChunk(response.usage, response.finish_reason)

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self._name!r}, remaining={self.remaining!r})"
