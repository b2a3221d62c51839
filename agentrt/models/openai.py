"""A model served over the OpenAI chat-completions API (OpenAI, vLLM, llama.cpp, ...).

:class:`OpenAIChatModel` POSTs to ``{base_url}/chat/completions`` with httpx, either
for a whole answer (:meth:`~OpenAIChatModel.complete`) or as Server-Sent Events
(:meth:`~OpenAIChatModel.stream`, decoded by :class:`~agentrt.models._sse.SSEDecoder`)::

    async with OpenAIChatModel("gpt-4o-mini") as model:        # OPENAI_API_KEY from the env
        async with Agent(model=model, tools=[get_weather]) as agent:
            result = await agent.execute("Weather in Paris?", stream=True)

    local = OpenAIChatModel("qwen3", base_url="http://127.0.0.1:8080/v1")  # no key needed

Tests give it an ``httpx.MockTransport`` (``transport=``) or a whole client
(``client=``) and need no network.

Failures are typed (see :mod:`agentrt.exceptions`): :class:`ModelHTTPError` for an
error status, :class:`ModelTimeoutError` and :class:`ModelConnectionError` for the
transport, :class:`ModelResponseError` for an answer that is not a chat completion,
:class:`StreamProtocolError` for a malformed stream. 429, 5xx, timeouts and
connection failures are retried ``max_retries`` times with exponential backoff
(``Retry-After`` wins when the server sends it) as long as nothing of the answer
has been handed out; other statuses fail at once.

Servers differ in small ways, and these are taken in stride: reasoning arrives as
``reasoning_content`` (vLLM, DeepSeek, llama.cpp) or ``reasoning`` (newer vLLM,
OpenRouter); llama.cpp-style servers repeat a tool call's id and name on every
fragment and add a legacy ``function_call`` copy; the usage comes in a chunk with
empty ``choices``, or on the last content chunk; ``delta.content`` may be ``null``.
Reading the answers is :mod:`agentrt.models._openai_wire`; this module is the client.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Self

import anyio
import httpx
from pydantic_core import PydanticSerializationError, to_json

from agentrt.exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    StreamProtocolError,
)
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from agentrt.models._openai_wire import ChunkReader, as_chunks, parse_completion
from agentrt.models._sse import SSEDecoder
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
)

__all__ = ("DEFAULT_BASE_URL", "DEFAULT_TIMEOUT", "OpenAIChatModel")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when neither ``base_url=`` nor ``OPENAI_BASE_URL`` says otherwise."""

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
"""Ten minutes to wait for bytes (a long answer from a slow model), five to connect."""

_BODY_EXCERPT = 2000
"""How much of an error body is read and kept: enough for any provider's message."""

_RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))

# Keys the model sets itself; settings cannot replace them without breaking the call.
_RESERVED = frozenset({"messages", "stream", "tools"})
# Settings OpenAI rejects in a request without tools (an agent's settings apply to
# every call, including structured extraction, which offers none).
_TOOL_SETTINGS = ("tool_choice", "parallel_tool_calls")

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")

Sleep = Callable[[float], Awaitable[Any]]
"""How the model waits between retries (``anyio.sleep``; tests record instead)."""


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: The model id sent with each request (``"gpt-4o-mini"``).
        base_url: The API root; default ``OPENAI_BASE_URL`` from the environment,
            else ``https://api.openai.com/v1``.
        api_key: The bearer token; default ``OPENAI_API_KEY`` from the environment.
            Without one no ``Authorization`` header is sent (local servers).
        client: An ``httpx.AsyncClient`` to send with. It stays yours:
            :meth:`aclose` does not close it, and its own timeout applies.
        transport: An httpx transport for the client this model creates (for
            example ``httpx.MockTransport`` in tests). Not with ``client``.
        headers: Extra headers sent with every request.
        timeout: The timeout of the client this model creates. Not with ``client``.
        max_retries: How many times a failed request is retried (429, 5xx,
            timeouts, connection failures); 0 never retries.
        backoff_base: The first retry waits this many seconds, each next one twice
            as long.
        backoff_max: The longest computed wait between two attempts.
        max_retry_after: The longest ``Retry-After`` honoured; a server asking for
            more gets the error raised at once rather than a stalled call.
        strict_output: Ask for ``"strict": true`` structured output. OpenAI's
            strict mode accepts only schemas whose every property is required
            and closed, which pydantic schemas with defaults are not; so off.
        supports_output_schema: Whether the server takes a ``json_schema``
            ``response_format`` (OpenAI, vLLM do; llama.cpp's server does not):
            structured runs use it when true, a final-output tool otherwise.
        sleep: Waits between retries; inject a recorder in tests.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: An argument has an unusable value, or ``client`` comes with
            ``transport`` or ``timeout``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_retry_after: float = 60.0,
        strict_output: bool = False,
        supports_output_schema: bool = True,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        if not isinstance(model, str):
            raise TypeError(f"model must be a model id string, got {type(model).__name__}")
        if not model.strip():
            raise ValueError("model must be a non-empty model id, got an empty string")
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a string, got {type(base_url).__name__}")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must be an http:// or https:// URL, got {base_url!r}"
                " (for example 'http://127.0.0.1:8000/v1')"
            )
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY") or None
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError(f"api_key must be a string or None, got {type(api_key).__name__}")
        if client is not None and not isinstance(client, httpx.AsyncClient):
            raise TypeError(f"client must be an httpx.AsyncClient, got {type(client).__name__}")
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise TypeError(
                f"transport must be an httpx.AsyncBaseTransport, got {type(transport).__name__}"
            )
        if client is not None and transport is not None:
            raise ValueError("pass either client= or transport=, not both")
        if client is not None and timeout is not DEFAULT_TIMEOUT:
            raise ValueError("with client=, set the timeout on the client you pass")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float | httpx.Timeout):
            raise TypeError(f"timeout must be seconds or an httpx.Timeout, got {timeout!r}")
        if headers is not None and not (
            isinstance(headers, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        ):
            raise TypeError(f"headers must be a mapping of str to str, got {headers!r:.80}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int):
            raise TypeError(f"max_retries must be an int, got {max_retries!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        for label, value in (
            ("backoff_base", backoff_base),
            ("backoff_max", backoff_max),
            ("max_retry_after", max_retry_after),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"{label} must be a number of seconds, got {value!r}")
            if not value >= 0:  # also refuses NaN
                raise ValueError(f"{label} must be 0 or more seconds, got {value!r}")
        if not isinstance(strict_output, bool):
            raise TypeError(f"strict_output must be a bool, got {strict_output!r}")
        if not callable(sleep):
            raise TypeError(f"sleep must be an async function of seconds, got {sleep!r}")

        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.max_retries = max_retries
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_after = float(max_retry_after)
        self.strict_output = strict_output
        self.supports_output_schema = bool(supports_output_schema)
        self._sleep = sleep
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(transport=transport, timeout=timeout)

    @property
    def name(self) -> str:
        """The model id, as events and logs report it."""
        return self.model

    # -- lifecycle ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client if this model created it (a given client stays open)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the request --------------------------------------------------------------------------

    def request_body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body sent for ``request``.

        Settings go in as they are (``temperature``, ``max_tokens``, ``tool_choice``,
        ``seed``, ``model`` to override the model id, ...), except where OpenAI would
        reject them: ``tool_choice`` and ``parallel_tool_calls`` are left out of a
        request without tools, ``stream_options`` out of one that does not stream.
        ``request.output_schema`` becomes a ``json_schema`` ``response_format``
        unless the settings carry one.

        Raises:
            ValueError: A setting tries to replace ``messages``, ``tools`` or ``stream``.
        """
        settings = request.settings
        reserved = _RESERVED.intersection(settings)
        if reserved:
            raise ValueError(
                f"request settings cannot set {sorted(reserved)!r}: the model sets them "
                "from the request"
            )
        body: dict[str, Any] = {"model": self.model, **settings}
        body["messages"] = [_message(message) for message in request.messages]
        if request.tools:
            body["tools"] = request.tools
        else:
            for key in _TOOL_SETTINGS:
                body.pop(key, None)
        if request.output_schema is not None and "response_format" not in body:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(request.output_schema),
                    "schema": request.output_schema,
                    "strict": self.strict_output,
                },
            }
        if stream:
            body["stream"] = True
            # Without include_usage a streamed call would not report what it spent.
            body["stream_options"] = {"include_usage": True, **settings.get("stream_options", {})}
        else:
            # OpenAI rejects stream_options in a request that does not stream.
            body.pop("stream_options", None)
        return body

    def _encode(self, request: ModelRequest, *, stream: bool) -> bytes:
        body = self.request_body(request, stream=stream)
        try:
            return to_json(body)
        except PydanticSerializationError as exc:
            raise TypeError(f"the request cannot be sent as JSON ({exc}); check settings") from exc

    # -- complete -----------------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """POST the request and return the whole answer.

        Raises:
            ModelHTTPError: An error status (after retries for 429 and 5xx).
            ModelTimeoutError: A timeout (after retries).
            ModelConnectionError: The server could not be reached (after retries).
            ModelResponseError: The answer is not a usable chat completion.
        """
        content = self._encode(request, stream=False)
        attempt = 1
        while True:
            try:
                async with self._post(content, attempt, stream=False) as response:
                    try:
                        body = await response.aread()
                    except httpx.TransportError as exc:
                        raise _transport_error(self.url, exc, attempt) from exc
                return parse_completion(body, self.url, self.model)
            except (ModelHTTPError, ModelTimeoutError, ModelConnectionError) as error:
                await self._backoff(error, attempt)
                attempt += 1

    # -- stream -------------------------------------------------------------------------------

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """POST the request with ``stream: true`` and yield the answer as it arrives.

        Text and reasoning fragments come as they arrive; each tool call's first
        fragment carries its id and name; one :class:`UsageChunk` (usage and
        finish reason) comes last, at ``[DONE]``.

        Raises:
            ModelHTTPError: An error status (after retries for 429 and 5xx).
            ModelTimeoutError: A timeout (retried only before any chunk was yielded).
            ModelConnectionError: The connection failed (same).
            ModelResponseError: The server reported an error inside the stream.
            StreamProtocolError: A chunk is malformed, or the stream ended without
                ``[DONE]``.
        """
        content = self._encode(request, stream=True)
        attempt = 1
        while True:
            yielded = False
            try:
                async with self._post(content, attempt, stream=True) as response:
                    if _media_type(response) == "application/json":
                        # A server that ignores stream=true answers in one piece.
                        try:
                            body = await response.aread()
                        except httpx.TransportError as exc:
                            raise _transport_error(self.url, exc, attempt) from exc
                        for chunk in as_chunks(parse_completion(body, self.url, self.model)):
                            yielded = True
                            yield chunk
                        return
                    decoder = SSEDecoder()
                    state = ChunkReader(self.url)
                    # aiter_raw() when nothing is to be decompressed: aiter_bytes() adds
                    # two generator layers per network read, a fifth of the cost when
                    # every token arrives in its own read.
                    encoded = response.headers.get("content-encoding", "identity") != "identity"
                    pieces = response.aiter_bytes() if encoded else response.aiter_raw()
                    try:
                        async for piece in pieces:
                            for event in decoder.feed(piece):
                                if event.data == "[DONE]":
                                    yield state.finish()
                                    return
                                chunks = state.feed(event.data, event.event)
                                if chunks:
                                    yielded = True
                                    for chunk in chunks:
                                        yield chunk
                    except httpx.TransportError as exc:
                        raise _transport_error(self.url, exc, attempt) from exc
                    except httpx.DecodingError as exc:
                        raise ModelResponseError(
                            self.url, f"the body cannot be decoded ({exc})", decoder.pending
                        ) from exc
                    pending = decoder.pending
                    decoder.close()
                    raise StreamProtocolError(
                        "the stream ended without the closing 'data: [DONE]' (the server "
                        "stopped or the connection was cut mid-answer)",
                        chunk=pending or state.last or "<no data>",
                    )
            except (ModelHTTPError, ModelTimeoutError, ModelConnectionError) as error:
                # Retrying after chunks went out would hand the caller the same
                # fragments twice.
                if yielded:
                    raise
                await self._backoff(error, attempt)
                attempt += 1

    # -- sending and retrying -----------------------------------------------------------------

    @asynccontextmanager
    async def _post(
        self, content: bytes, attempt: int, *, stream: bool
    ) -> AsyncIterator[httpx.Response]:
        """Send one attempt; yield a response with a success status, closed on exit."""
        headers = self._headers
        if stream:
            headers = {**headers, "Accept": "text/event-stream"}
        request = self._client.build_request("POST", self.url, content=content, headers=headers)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _transport_error(self.url, exc, attempt) from exc
        try:
            if not response.is_success:
                raise ModelHTTPError(
                    response.status_code,
                    self.url,
                    await _excerpt(response),
                    attempts=attempt,
                    retry_after=_retry_after(response.headers),
                )
            yield response
        finally:
            await response.aclose()

    def retry_delay(self, attempt: int, error: Exception) -> float | None:
        """How long to wait before retrying after ``error`` on attempt ``attempt``.

        Args:
            attempt: The attempt that failed (1 for the first request).
            error: What it failed with.

        Returns:
            Seconds to wait, or ``None`` when the error must not be retried: a
            status other than 429 and 5xx, no retries left, or a ``Retry-After``
            longer than ``max_retry_after``.
        """
        if attempt > self.max_retries:
            return None
        if isinstance(error, ModelHTTPError):
            if error.status not in _RETRY_STATUSES:
                return None
            if error.retry_after is not None:
                if error.retry_after > self.max_retry_after:
                    return None
                return error.retry_after
        elif not isinstance(error, ModelTimeoutError | ModelConnectionError):
            return None
        return min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))

    async def _backoff(self, error: Exception, attempt: int) -> None:
        delay = self.retry_delay(attempt, error)
        if delay is None:
            raise error
        await self._sleep(delay)

    def __repr__(self) -> str:
        # Never the API key.
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r})"


# -- helpers: the wire format -----------------------------------------------------------------


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage | SystemMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, AssistantMessage):
        # Reasoning is not sent back: DeepSeek rejects it in input, others ignore it.
        if not message.tool_calls:
            return {"role": "assistant", "content": message.content}
        return {
            "role": "assistant",
            # "" rather than null: OpenAI takes either, llama.cpp's server rejects null.
            "content": message.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    raise TypeError(f"cannot send a {type(message).__name__} to an OpenAI-compatible model")


def _schema_name(schema: Mapping[str, Any]) -> str:
    # OpenAI wants ^[a-zA-Z0-9_-]{1,64}$; pydantic titles fit once spaces are replaced.
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) else ""
    return name or "output"


def _media_type(response: httpx.Response) -> str:
    content_type: str = response.headers.get("content-type", "")
    return content_type.partition(";")[0].strip().lower()


async def _excerpt(response: httpx.Response) -> str:
    """The start of an error body; reading stops there (an error page can be large)."""
    received = bytearray()
    try:
        async for piece in response.aiter_bytes():
            received += piece
            if len(received) >= _BODY_EXCERPT:
                break
    except httpx.HTTPError:
        pass  # the status is the news; a body cut short still says what it can
    text = bytes(received[:_BODY_EXCERPT]).decode("utf-8", "replace")
    return text + "…" if len(received) > _BODY_EXCERPT else text


def _retry_after(headers: httpx.Headers) -> float | None:
    """The wait a response asks for in seconds, or ``None`` when absent or unreadable.

    ``retry-after-ms`` (OpenAI's, more precise) wins over ``Retry-After``, which is
    either seconds or an HTTP date.
    """
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _transport_error(
    url: str, exc: httpx.TransportError, attempt: int
) -> ModelTimeoutError | ModelConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        phase = {
            httpx.ConnectTimeout: "connect",
            httpx.ReadTimeout: "read",
            httpx.WriteTimeout: "write",
            httpx.PoolTimeout: "pool",
        }.get(type(exc), "read")
        return ModelTimeoutError(url, phase, attempts=attempt)
    return ModelConnectionError(url, f"{type(exc).__name__}: {exc}", attempts=attempt)
