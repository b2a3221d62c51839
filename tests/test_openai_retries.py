"""OpenAIChatModel's failures: typed errors, which are retried, Retry-After and backoff."""

import email.utils
import json
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from agentrt.exceptions import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    StreamProtocolError,
)
from agentrt.models.base import (
    StreamChunk,
    TextDelta,
)
from agentrt.models.openai import OpenAIChatModel
from tests.openai_fixtures import (
    OPENAI_COMPLETION,
    OPENAI_COMPLETION_EXPECTED,
    OPENAI_TEXT_EXPECTED,
    OPENAI_TEXT_STREAM,
    wire,
)
from tests.openai_support import (
    BASE,
    REQUEST,
    SSE_HEADERS,
    URL,
    Script,
    Sleeps,
    assemble,
    chunk_json,
    collect,
    model,
    sse,
)

# -- failures and retries -----------------------------------------------------------------------


def status(code: int, body: str = "", **headers: str) -> httpx.Response:
    return httpx.Response(code, content=body.encode(), headers=headers)


async def test_500_then_success_honours_retry_after_seconds() -> None:
    sleeps = Sleeps()
    script = Script(
        status(500, '{"error": {"message": "internal"}}', **{"Retry-After": "2"}),
        httpx.Response(200, content=OPENAI_COMPLETION),
    )
    async with model(script, sleep=sleeps) as chat:
        assert await chat.complete(REQUEST) == OPENAI_COMPLETION_EXPECTED
    assert sleeps == [2.0]
    assert len(script.requests) == 2
    assert script.requests[0].content == script.requests[1].content


async def test_retry_after_as_an_http_date() -> None:
    sleeps = Sleeps()
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    script = Script(status(503, **{"Retry-After": when}), status(200, OPENAI_COMPLETION.decode()))
    async with model(script, sleep=sleeps) as chat:
        await chat.complete(REQUEST)
    (delay,) = sleeps
    assert 28 <= delay <= 30


async def test_unreadable_retry_after_falls_back_to_backoff() -> None:
    sleeps = Sleeps()
    script = Script(
        status(503, **{"Retry-After": "soon"}),
        status(503, **{"retry-after-ms": "x"}),
        status(200, OPENAI_COMPLETION.decode()),
    )
    async with model(script, sleep=sleeps) as chat:
        await chat.complete(REQUEST)
    assert sleeps == [0.5, 1.0]


async def test_retry_after_ms_wins_and_past_dates_mean_now() -> None:
    sleeps = Sleeps()
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    script = Script(
        status(429, **{"retry-after-ms": "250", "Retry-After": "1"}),
        status(429, **{"Retry-After": past}),
        status(200, OPENAI_COMPLETION.decode()),
    )
    async with model(script, sleep=sleeps) as chat:
        await chat.complete(REQUEST)
    assert sleeps == [0.25, 0.0]


async def test_429_exhausting_retries_with_exponential_backoff() -> None:
    sleeps = Sleeps()
    body = '{"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests"}}'
    script = Script(*(status(429, body) for _ in range(3)))
    async with model(script, sleep=sleeps, backoff_base=0.5) as chat:
        with pytest.raises(ModelHTTPError) as caught:
            await chat.complete(REQUEST)
    error = caught.value
    assert (error.status, error.attempts, error.url, error.retry_after) == (429, 3, URL, None)
    assert error.body == body
    assert sleeps == [0.5, 1.0]
    assert len(script.requests) == 3
    assert str(error) == (
        f"POST {URL} answered HTTP 429 (after 3 attempts): rate limited or out of quota; "
        f"body: {body}"
    )


async def test_backoff_doubles_up_to_its_cap() -> None:
    sleeps = Sleeps()
    script = Script(*(status(502) for _ in range(6)))
    async with model(script, sleep=sleeps, max_retries=5, backoff_base=1, backoff_max=3) as chat:
        with pytest.raises(ModelHTTPError, match="HTTP 502 \\(after 6 attempts\\)"):
            await chat.complete(REQUEST)
    assert sleeps == [1.0, 2.0, 3.0, 3.0, 3.0]


async def test_400_is_not_retried_and_shows_the_body() -> None:
    sleeps = Sleeps()
    body = json.dumps(
        {
            "error": {
                "message": "Invalid schema for function 'get_weather': 'strin' is not valid",
                "type": "invalid_request_error",
                "param": "tools[0].function.parameters",
            }
        }
    )
    script = Script(status(400, body), status(200, OPENAI_COMPLETION.decode()))
    async with model(script, sleep=sleeps) as chat:
        with pytest.raises(ModelHTTPError) as caught:
            await chat.complete(REQUEST)
    message = str(caught.value)
    assert message.startswith(f"POST {URL} answered HTTP 400: the server rejected the request")
    assert "Invalid schema for function 'get_weather'" in message
    assert (caught.value.status, caught.value.attempts) == (400, 1)
    assert sleeps == []
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    ("code", "hint"),
    [(401, "check the API key"), (404, "check base_url and the model name"), (418, "did not")],
)
async def test_other_4xx_fail_at_once_with_a_hint(code: int, hint: str) -> None:
    async with model(Script(status(code, "nope"))) as chat:
        with pytest.raises(ModelHTTPError, match=hint):
            await chat.complete(REQUEST)


async def test_a_long_error_body_is_cut() -> None:
    async with model(Script(status(500, "x" * 10_000)), max_retries=0) as chat:
        with pytest.raises(ModelHTTPError) as caught:
            await chat.complete(REQUEST)
    assert caught.value.body == "x" * 2000 + "…"
    assert len(str(caught.value)) < 700


async def test_a_retry_after_beyond_the_limit_fails_at_once() -> None:
    sleeps = Sleeps()
    script = Script(status(429, "quota", **{"Retry-After": "3600"}))
    async with model(script, sleep=sleeps) as chat:
        with pytest.raises(ModelHTTPError, match="asked to retry after 3600 s") as caught:
            await chat.complete(REQUEST)
    assert caught.value.retry_after == 3600.0
    assert sleeps == []


async def test_max_retries_zero_never_retries() -> None:
    script = Script(status(503))
    async with model(script, max_retries=0) as chat:
        with pytest.raises(ModelHTTPError, match="HTTP 503: the server failed"):
            await chat.complete(REQUEST)


@pytest.mark.parametrize(
    ("failure", "error", "match"),
    [
        (httpx.ConnectTimeout("timed out"), ModelTimeoutError, r"timed out \(connect\)"),
        (httpx.ReadTimeout("timed out"), ModelTimeoutError, r"timed out \(read\)"),
        (httpx.WriteTimeout("timed out"), ModelTimeoutError, r"timed out \(write\)"),
        (httpx.PoolTimeout("timed out"), ModelTimeoutError, r"timed out \(pool\)"),
        (httpx.ConnectError("Connection refused"), ModelConnectionError, "Connection refused"),
        (httpx.RemoteProtocolError("Server disconnected"), ModelConnectionError, "disconnected"),
    ],
)
async def test_transport_failures_are_typed_and_retried(
    failure: Exception, error: type[ModelError], match: str
) -> None:
    sleeps = Sleeps()
    async with model(Script(failure, failure, failure), sleep=sleeps, backoff_base=0.1) as chat:
        with pytest.raises(error, match=match) as caught:
            await chat.complete(REQUEST)
    assert caught.value.attempts == 3  # type: ignore[attr-defined]
    assert "(after 3 attempts)" in str(caught.value)
    assert isinstance(caught.value.__cause__, type(failure))
    assert sleeps == [0.1, 0.2]


async def test_a_timeout_then_success() -> None:
    sleeps = Sleeps()
    script = Script(httpx.ReadTimeout("slow"), status(200, OPENAI_COMPLETION.decode()))
    async with model(script, sleep=sleeps) as chat:
        assert (await chat.complete(REQUEST)).tool_calls
    assert sleeps == [0.5]


async def test_a_body_cut_off_while_reading_a_complete_answer_is_retried() -> None:
    async def cut() -> AsyncIterator[bytes]:
        yield OPENAI_COMPLETION[:50]
        raise httpx.ReadError("connection reset")

    script = Script(httpx.Response(200, content=cut()), status(200, OPENAI_COMPLETION.decode()))
    async with model(script) as chat:
        assert await chat.complete(REQUEST) == OPENAI_COMPLETION_EXPECTED
    assert len(script.requests) == 2


async def test_stream_retries_before_the_first_chunk() -> None:
    sleeps = Sleeps()
    script = Script(
        status(503, "loading model", **{"Retry-After": "1"}),
        httpx.ConnectError("refused"),
        sse(OPENAI_TEXT_STREAM),
    )
    async with model(script, sleep=sleeps) as chat:
        assert assemble(await collect(chat)) == OPENAI_TEXT_EXPECTED
    assert sleeps == [1.0, 1.0]
    assert len(script.requests) == 3


async def test_stream_timeout_before_any_chunk_is_retried() -> None:
    async def silent() -> AsyncIterator[bytes]:
        yield b": keep-alive\n\n"
        yield wire(chunk_json({"role": "assistant", "content": None}))[:-15]
        raise httpx.ReadTimeout("no tokens")

    script = Script(
        httpx.Response(200, headers=SSE_HEADERS, content=silent()), sse(OPENAI_TEXT_STREAM)
    )
    async with model(script) as chat:
        assert assemble(await collect(chat)) == OPENAI_TEXT_EXPECTED


async def test_stream_failing_after_a_chunk_is_not_retried() -> None:
    async def cut() -> AsyncIterator[bytes]:
        yield wire(chunk_json({"content": "Hel"})).removesuffix(b"data: [DONE]\n\n")
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message")

    script = Script(
        httpx.Response(200, headers=SSE_HEADERS, content=cut()), sse(OPENAI_TEXT_STREAM)
    )
    received: list[StreamChunk] = []

    async def consume(chat: OpenAIChatModel) -> None:
        async for chunk in chat.stream(REQUEST):
            received.append(chunk)

    async with model(script) as chat:
        with pytest.raises(ModelConnectionError, match="peer closed connection") as caught:
            await consume(chat)
    assert received == [TextDelta("Hel")]
    assert caught.value.attempts == 1
    assert len(script.requests) == 1


async def test_stream_http_error_exhausting_retries() -> None:
    sleeps = Sleeps()
    script = Script(status(500), status(500), status(500, "still down"))
    async with model(script, sleep=sleeps, backoff_base=0) as chat:
        with pytest.raises(ModelHTTPError, match="still down") as caught:
            await collect(chat)
    assert caught.value.attempts == 3
    assert sleeps == [0.0, 0.0]


async def test_the_default_sleep_is_anyio_sleep() -> None:
    script = Script(status(500), status(200, OPENAI_COMPLETION.decode()))
    chat = OpenAIChatModel("m", base_url=BASE, transport=script.transport, backoff_base=0)
    async with chat:
        await chat.complete(REQUEST)
    assert len(script.requests) == 2


def test_retry_delay_decisions() -> None:
    chat = OpenAIChatModel("m", api_key="k", max_retries=3, backoff_base=0.25, backoff_max=10)
    server_error = ModelHTTPError(500, URL, "")
    assert [chat.retry_delay(n, server_error) for n in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, None]
    assert chat.retry_delay(1, ModelHTTPError(429, URL, "", retry_after=7)) == 7
    assert chat.retry_delay(1, ModelHTTPError(409, URL, "")) is None
    assert chat.retry_delay(1, ModelTimeoutError(URL, "read")) == 0.25
    assert chat.retry_delay(1, ModelConnectionError(URL, "refused")) == 0.25
    assert chat.retry_delay(1, ModelResponseError(URL, "not JSON", "")) is None
    assert chat.retry_delay(1, StreamProtocolError("bad", chunk="")) is None


def test_errors_are_model_errors() -> None:
    for error in (
        ModelHTTPError(500, URL, ""),
        ModelTimeoutError(URL, "read"),
        ModelConnectionError(URL, "refused"),
        ModelResponseError(URL, "not JSON", ""),
    ):
        assert isinstance(error, ModelError)
        assert URL in str(error)
