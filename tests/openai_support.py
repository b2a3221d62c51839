"""What the OpenAIChatModel tests share: a scripted mock server, SSE answers, collecting chunks."""

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx

from agentrt import UserMessage
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
)
from agentrt.models.openai import OpenAIChatModel

BASE = "http://llm.test/v1"
URL = f"{BASE}/chat/completions"
REQUEST = ModelRequest(messages=[UserMessage(content="Weather in Paris?")])
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}

Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Script:
    """A mock server: answers requests from a list, in order, and records them."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return answer
        return answer(request)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


class Sleeps(list[float]):
    """An injected sleep that records the delays instead of waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def sse(body: bytes | Sequence[bytes], **headers: str) -> httpx.Response:
    """A streamed 200 response: ``body`` as one piece, or as the given pieces."""
    pieces = [body] if isinstance(body, bytes) else list(body)

    async def stream() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    return httpx.Response(200, headers={**SSE_HEADERS, **headers}, content=stream())


def model(script: Script, **options: Any) -> OpenAIChatModel:
    options.setdefault("api_key", "sk-test")
    options.setdefault("sleep", Sleeps())
    return OpenAIChatModel("gpt-4o-mini", base_url=BASE, transport=script.transport, **options)


async def collect(chat: OpenAIChatModel, request: ModelRequest = REQUEST) -> list[StreamChunk]:
    return [chunk async for chunk in chat.stream(request)]


def assemble(chunks: Sequence[StreamChunk]) -> ModelResponse:
    assembler = ResponseAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.response()


async def streamed(body: bytes | Sequence[bytes]) -> ModelResponse:
    async with model(Script(sse(body))) as chat:
        return assemble(await collect(chat))


def chunk_json(delta: dict[str, Any] | None = None, **fields: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
    return json.dumps({"object": "chat.completion.chunk", "choices": choices, **fields})
