"""OpenAIChatModel against a real local server (uvicorn), and an agent end to end over it."""

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentrt import Agent, AssistantMessage
from agentrt.exceptions import (
    ModelHTTPError,
    ModelTimeoutError,
)
from agentrt.messages import Usage
from agentrt.models.openai import OpenAIChatModel
from tests.openai_fixtures import (
    RECORDED,
    Recorded,
    Turn,
    completion_body,
    sse_stream,
    wire,
)
from tests.openai_support import (
    REQUEST,
    Sleeps,
    assemble,
    collect,
)

# -- against a real local server ----------------------------------------------------------------


@asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a free 127.0.0.1 port in this event loop; yield its API URL."""
    # A socket bound here (port 0: the system picks a free one) and handed to uvicorn,
    # so no other process can take the port between choosing and binding it.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [sock])
        with anyio.fail_after(10):
            # uvicorn offers a flag, not an event, to wait on; polling is bounded above.
            while not server.started:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            server.should_exit = True
    sock.close()


class ChatServer:
    """A Starlette app speaking the chat-completions API from a function of the request."""

    def __init__(
        self, answer: Callable[[dict[str, Any], int], Turn | Response], *, piece: int = 7
    ) -> None:
        self.answer = answer
        self.piece = piece
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        answer = self.answer(body, len(self.bodies))
        if isinstance(answer, Response):
            return answer
        if not body.get("stream"):
            return Response(completion_body(answer), media_type="application/json")
        data = sse_stream(answer)
        size = self.piece

        async def pieces() -> AsyncIterator[bytes]:
            # Odd-sized pieces, so chunks arrive cut mid-line and mid-character.
            for i in range(0, len(data), size):
                yield data[i : i + size]

        return StreamingResponse(pieces(), media_type="text/event-stream")


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
async def test_local_server_replays_recorded_streams(recorded: Recorded) -> None:
    async def replay(request: Request) -> Response:
        async def pieces() -> AsyncIterator[bytes]:
            for i in range(0, len(recorded.body), 13):
                yield recorded.body[i : i + 13]

        return StreamingResponse(pieces(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", replay, methods=["POST"])])
    async with serve(app) as base_url, OpenAIChatModel("m", base_url=base_url) as chat:
        assert assemble(await collect(chat)) == recorded.expected


async def test_local_server_500_then_success_with_retry_after() -> None:
    def answer(body: dict[str, Any], count: int) -> Turn | Response:
        if count == 1:
            return JSONResponse(
                {"error": {"message": "upstream overloaded"}},
                status_code=500,
                headers={"Retry-After": "3"},
            )
        return Turn(content="Recovered.")

    server = ChatServer(answer)
    sleeps = Sleeps()
    async with (
        serve(server.app) as base_url,
        OpenAIChatModel("m", base_url=base_url, sleep=sleeps) as chat,
    ):
        response = await chat.complete(REQUEST)
        chunks = await collect(chat)
    assert response.content == assemble(chunks).content == "Recovered."
    assert sleeps == [3.0]
    assert len(server.bodies) == 3


async def test_local_server_400_is_not_retried() -> None:
    def answer(body: dict[str, Any], count: int) -> Response:
        return JSONResponse({"error": {"message": "max_tokens is too large"}}, status_code=400)

    server = ChatServer(answer)
    async with (
        serve(server.app) as base_url,
        OpenAIChatModel("m", base_url=base_url) as chat,
    ):
        with pytest.raises(ModelHTTPError, match="max_tokens is too large"):
            await collect(chat)
    assert len(server.bodies) == 1


async def test_local_server_read_timeout() -> None:
    release = anyio.Event()

    async def stall(request: Request) -> Response:
        async def pieces() -> AsyncIterator[bytes]:
            yield b": accepted\n\n"
            await release.wait()
            yield wire()

        return StreamingResponse(pieces(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", stall, methods=["POST"])])
    async with serve(app) as base_url:
        client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.2))
        async with (
            client,
            OpenAIChatModel("m", base_url=base_url, client=client, max_retries=0) as chat,
        ):
            with pytest.raises(ModelTimeoutError, match=r"timed out \(read\)"):
                await collect(chat)
        release.set()


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return {"Paris": "18°C, sunny", "Rome": "24°C, clear"}[city]


def weather_turns(body: dict[str, Any], count: int) -> Turn:
    """Call get_weather for two cities, then answer from the tool results."""
    messages = body["messages"]
    if messages[-1]["role"] == "user":
        return Turn(
            reasoning="Two cities, so two calls.",
            tool_calls=(
                ("call_paris", "get_weather", '{"city": "Paris"}'),
                ("call_rome", "get_weather", '{"city": "Rome"}'),
            ),
            usage=(40, 24),
        )
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    return Turn(
        content=f"Paris: {results['call_paris']}. Rome: {results['call_rome']}. ✓",
        usage=(90, 15),
    )


async def test_agent_end_to_end_complete_and_stream_agree() -> None:
    server = ChatServer(weather_turns)
    async with (
        serve(server.app) as base_url,
        OpenAIChatModel("local-test-model", base_url=base_url, api_key="sk-local") as chat,
    ):
        async with Agent(model=chat, tools=[get_weather], strict=True) as agent:
            completed = await agent.execute("Weather in Paris and Rome?")
        async with Agent(model=chat, tools=[get_weather], strict=True) as agent:
            streamed_run = await agent.execute("Weather in Paris and Rome?", stream=True)

    answer = "Paris: 18°C, sunny. Rome: 24°C, clear. ✓"
    assert completed.output == streamed_run.output == answer
    assert completed.messages == streamed_run.messages
    assert completed.usage == streamed_run.usage == Usage(130, 39, requests=2)
    assistant = completed.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.reasoning == "Two cities, so two calls."
    assert [call.id for call in assistant.tool_calls] == ["call_paris", "call_rome"]

    assert [body.get("stream", False) for body in server.bodies] == [False, False, True, True]
    assert all(h["authorization"] == "Bearer sk-local" for h in server.headers)
    first, second = server.bodies[0], server.bodies[1]
    assert first["model"] == "local-test-model"
    assert first["messages"] == [{"role": "user", "content": "Weather in Paris and Rome?"}]
    (tool,) = first["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "get_weather"
    assert tool["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert tool["function"]["parameters"]["required"] == ["city"]
    assert second["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_paris",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_rome",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_paris", "content": "18°C, sunny"},
        {"role": "tool", "tool_call_id": "call_rome", "content": "24°C, clear"},
    ]
    assert server.bodies[2]["messages"] == first["messages"]
    assert server.bodies[3]["messages"] == second["messages"]
    assert server.bodies[2]["stream_options"] == {"include_usage": True}
