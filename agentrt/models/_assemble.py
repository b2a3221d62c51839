"""Assemble a :class:`ModelResponse` from streamed chunks.

Tool-call fragments are joined by ``index``: the first fragment of a call carries
its id and name, later ones only more of the arguments text.
"""

from __future__ import annotations

from collections.abc import Callable

from agentrt.exceptions import StreamProtocolError
from agentrt.messages import ToolCall, Usage, new_tool_call_id
from agentrt.models.base import (
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

__all__ = ("ResponseAssembler",)


class ResponseAssembler:
    """Feed chunks in arrival order with :meth:`add`; read the result with :meth:`response`."""

    __slots__ = ("_calls", "_finish_reason", "_reasoning", "_text", "_usage", "add_text")

    def __init__(self) -> None:
        self._text: list[str] = []
        self.add_text: Callable[[str], None] = self._text.append
        """Take the text of a :class:`TextDelta`: ``add(chunk)`` without its type tests.

        The list's own ``append``, for the chunk that streams most often.
        """
        self._reasoning: list[str] = []
        # index -> [id, name, argument fragments]
        self._calls: dict[int, tuple[str, str, list[str]]] = {}
        self._usage: Usage | None = None
        self._finish_reason: str | None = None

    def add(self, chunk: StreamChunk) -> None:
        """Take one chunk.

        Raises:
            StreamProtocolError: A tool-call fragment names an index that no
                fragment with a name opened, or the chunk is of an unknown type.
        """
        if isinstance(chunk, TextDelta):
            self._text.append(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self._reasoning.append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            call = self._calls.get(chunk.index)
            if call is None:
                if not chunk.name:
                    raise StreamProtocolError(
                        f"a tool-call fragment for index {chunk.index} arrived before the "
                        "fragment that names the call",
                        chunk=repr(chunk),
                    )
                self._calls[chunk.index] = (
                    chunk.id or new_tool_call_id(),
                    chunk.name,
                    [chunk.arguments],
                )
            else:
                call[2].append(chunk.arguments)
        elif isinstance(chunk, UsageChunk):
            self._usage = chunk.usage if self._usage is None else self._usage + chunk.usage
            self._finish_reason = chunk.finish_reason or self._finish_reason
        else:
            raise StreamProtocolError(
                f"a model stream yielded {type(chunk).__name__}, which is not a StreamChunk",
                chunk=repr(chunk),
            )

    def response(self) -> ModelResponse:
        """The response assembled from the chunks so far."""
        calls = tuple(
            ToolCall(id=call_id, name=name, arguments="".join(fragments))
            for _, (call_id, name, fragments) in sorted(self._calls.items())
        )
        return ModelResponse(
            content="".join(self._text),
            reasoning="".join(self._reasoning) if self._reasoning else None,
            tool_calls=calls,
            usage=self._usage or Usage(),
            finish_reason=self._finish_reason,
        )
