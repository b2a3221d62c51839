"""HTTP plumbing of the server's routes: error answers, request bodies, event streams.

Every route (:mod:`agentrt.server._routes`, :mod:`agentrt.server.agui`, the page and
the document) is wrapped by :func:`endpoint`, so that whatever it raises becomes a
JSON error answer (:mod:`agentrt.server._errors`), reads its body with
:func:`read_json` and :func:`validate`, and answers a run with an
:class:`EventStream`.
"""

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import TypeVar

import anyio
import anyio.lowlevel
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from agentrt.server._errors import ERROR_MEDIA_TYPE, error_body
from agentrt.server.backend import EncodedEvent
from agentrt.server.limits import LimitError
from agentrt.server.session_errors import (
    AGUIInputError,
    AlreadyAnsweredError,
    CannotForkError,
    NoRunError,
    RunEndedError,
    RunInProgressError,
    SessionLimitError,
    SessionNotFoundError,
    StoreFailedError,
    StoreNotRunningError,
    UnknownEventError,
)
from agentrt.stream._log import EventsExpiredError
from agentrt.stream.codec import SequencedEvent, encode_sse, sse_heartbeat
from agentrt.stream.confirm import InvalidDecisionError, UnknownToolCallError

__all__ = (
    "NO_BODY",
    "SESSION_ERRORS",
    "EventStream",
    "HTTPError",
    "after_of",
    "endpoint",
    "error_response",
    "frames",
    "http_exception",
    "read_json",
    "unexpected",
    "validate",
)

logger = logging.getLogger("agentrt.server")

M = TypeVar("M", bound=BaseModel)

# -- errors -------------------------------------------------------------------------------


class HTTPError(Exception):
    """An error answer, raised inside an endpoint and turned into its JSON response."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: list[dict[str, str]] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        super().__init__(f"{status} {code}: {message}")


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    details: list[dict[str, str]] | None = None,
) -> Response:
    body = error_body(code, message, details)
    return Response(body, status_code=status, headers=headers, media_type=ERROR_MEDIA_TYPE)


# What the session layer raises, as HTTP. In order: the first class that matches wins.
SESSION_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (AGUIInputError, 422, "invalid_ag_ui_input"),
    (SessionNotFoundError, 404, "session_not_found"),
    (UnknownToolCallError, 404, "unknown_tool_call"),
    # 422 like an ``after`` beyond the latest event: the session exists, the body names
    # an event it does not have.
    (UnknownEventError, 422, "unknown_event"),
    (CannotForkError, 409, "cannot_fork"),
    (RunInProgressError, 409, "run_in_progress"),
    (NoRunError, 409, "no_run"),
    (AlreadyAnsweredError, 409, "already_answered"),
    (RunEndedError, 409, "run_ended"),
    (EventsExpiredError, 410, "events_expired"),
    (InvalidDecisionError, 422, "invalid_decision"),
    (SessionLimitError, 503, "session_limit"),
    (StoreNotRunningError, 503, "not_started"),
    (StoreFailedError, 503, "store_failed"),
)

_INTERNAL = "the server failed to handle this request; the error was logged"

_STARLETTE_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
}


def endpoint(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap an endpoint so that every failure becomes a JSON error response."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except HTTPError as error:
            return error_response(error.status, error.code, error.message, details=error.details)
        except ClientDisconnect:
            # The client left while sending its body: nobody reads this answer.
            return error_response(
                400, "client_disconnected", "the client disconnected mid-request"
            )
        except LimitError as error:
            retry = {"Retry-After": "1"} if error.status == 429 else None
            return error_response(error.status, error.code, str(error), headers=retry)
        except Exception as error:
            for kind, status, code in SESSION_ERRORS:
                if isinstance(error, kind):
                    return error_response(status, code, str(error))
            # The handler's name, not the path: paths carry secret session ids.
            logger.exception("unexpected error in %s %s", request.method, handler.__name__)
            return error_response(500, "internal_error", _INTERNAL)

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


async def http_exception(request: Request, error: Exception) -> Response:
    """Routing errors (no such route, wrong method) as JSON, with their headers (Allow)."""
    assert isinstance(error, HTTPException)
    status = error.status_code
    code = _STARLETTE_CODES.get(status, "http_error")
    if status == 404:
        message = f"no route {request.url.path!r}; see the routes in agentrt.server"
    elif status == 405:
        allowed = (error.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed here; use {allowed or 'another method'}"
    else:
        message = error.detail
    return error_response(status, code, message, headers=error.headers)


async def unexpected(request: Request, error: Exception) -> Response:
    """The last resort, for failures outside the endpoints (they catch their own).

    Not logged here: Starlette re-raises the error after this response, and the ASGI
    server logs it.
    """
    return error_response(500, "internal_error", _INTERNAL)


# -- request bodies -----------------------------------------------------------------------

NO_BODY = object()


async def read_json(request: Request, limit: int) -> object:
    """The request's JSON body (``NO_BODY`` when empty), read no further than ``limit`` bytes.

    Raises:
        HTTPError: 413 for a body over the limit (declared or streamed), 400 for an
            invalid Content-Length or a body that is not JSON.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise HTTPError(400, "invalid_content_length", f"bad Content-Length {declared!r}")
        if int(declared) > limit:
            raise HTTPError(413, "body_too_large", f"the body is over {limit} bytes")
    body = bytearray()
    # Counted as it streams: a chunked body declares no length, and a declared one
    # may lie.
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPError(413, "body_too_large", f"the body is over {limit} bytes")
    if not body.strip():
        return NO_BODY
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        # ValueError covers bad JSON and bad UTF-8; RecursionError very deep nesting.
        reason = error.args[0] if isinstance(error, ValueError) and error.args else "too deep"
        raise HTTPError(400, "invalid_json", f"the body is not valid JSON: {reason}") from None


def validate(model: type[M], data: object) -> M:
    """``data`` as ``model``, or a 422 that lists every problem (without the input)."""
    try:
        # No body is an empty object; a JSON null is not an object (a 422).
        return model.model_validate({} if data is NO_BODY else data)
    except ValidationError as error:
        details = [
            {
                "field": ".".join(str(part) for part in problem["loc"]) or "(body)",
                "problem": problem["msg"],
            }
            for problem in error.errors(include_url=False, include_input=False)
        ]
        message = "; ".join(f"{d['field']}: {d['problem']}" for d in details)
        raise HTTPError(422, "invalid_body", message, details=details) from None


def after_of(request: Request) -> int:
    """Where a reader resumes: ``Last-Event-ID``, else ``?after=``, else 0.

    The header wins: a browser's EventSource reconnects to the URL it first opened
    (with its old ``after``) and sends the progress it made since in the header.
    """
    text = request.headers.get("last-event-id")
    name = "Last-Event-ID"
    if text is None:
        text = request.query_params.get("after")
        name = "after"
    # An empty header is a reader that has seen nothing yet; an empty ?after= is no
    # number (the document says an integer).
    if text is None or (text == "" and name == "Last-Event-ID"):
        return 0
    if not (text.isascii() and text.isdigit()):
        raise HTTPError(
            422, "invalid_after", f"{name} must be an event sequence number, got {text!r}"
        )
    return int(text)


# -- event streams ------------------------------------------------------------------------

_EXPIRED_COMMENT = b": events expired: this reader fell behind the events the server keeps\n\n"


async def frames(
    batches: AsyncGenerator[list[SequencedEvent | EncodedEvent], None],
) -> AsyncGenerator[bytes, None]:
    """The SSE frames of the batches of :meth:`Session.follow_encoded`."""
    async with aclosing(batches):
        try:
            async for batch in batches:
                if batch:
                    yield b"".join(map(_frame, batch))
                else:
                    yield sse_heartbeat()
        except EventsExpiredError:
            # Too late for a status code; the stream ends and a reconnection with
            # Last-Event-ID gets the 410 that says why.
            yield _EXPIRED_COMMENT


def _frame(item: SequencedEvent | EncodedEvent) -> bytes:
    if isinstance(item, EncodedEvent):
        return item.sse()
    return encode_sse(item.event, sequence=item.sequence)


class EventStream(StreamingResponse):
    """An SSE response whose source is closed as soon as the client leaves.

    Starlette's StreamingResponse leaves its iterator to the garbage collector when
    the client disconnects; this one closes it at once (a reader count drops, the
    session may expire) and treats a client gone mid-write as a normal end.
    """

    def __init__(self, chunks: AsyncGenerator[bytes, None]) -> None:
        self._chunks = chunks
        super().__init__(
            self._chunks,
            media_type="text/event-stream",
            # no-cache: every read is live. X-Accel-Buffering: proxies (nginx) must
            # pass frames on as they come rather than buffer the response.
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": self.status_code,
                "headers": self.raw_headers,
            }
        )
        async with anyio.create_task_group() as group:
            watch = _Watch()
            group.start_soon(cancel_on_disconnect, receive, group.cancel_scope, watch)
            try:
                async with aclosing(self._chunks) as chunks:
                    async for chunk in chunks:
                        await send(
                            {"type": "http.response.body", "body": chunk, "more_body": True}
                        )
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass  # an ASGI 2.4 server saying that the client is gone: a normal end
            except Exception:
                # Headers are out: no status to send. Log it and end the stream; the
                # client resumes with Last-Event-ID.
                logger.exception("an event stream failed")
            watch.over = True
            if watch.watching:
                # The watcher is left one turn of the loop to end by itself: uvicorn
                # answers its pending receive() with http.disconnect once the response
                # is complete. Cancelling it instead costs about 25 µs a stream (anyio
                # writes the task's repr into the reason of every cancel), a few per cent
                # of a whole run (bench_server.py). Any other server: cancelled as before.
                await anyio.lowlevel.checkpoint()
                if watch.watching:
                    group.cancel_scope.cancel()


class _Watch:
    """An event stream's state, shared with its disconnect watcher."""

    __slots__ = ("over", "watching")

    def __init__(self) -> None:
        self.over = False  # the response is complete, or was abandoned
        self.watching = True  # the watcher still waits for the disconnect


async def cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope, watch: _Watch) -> None:
    """Cancel ``scope`` when the client disconnects before the response is complete."""
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    finally:
        watch.watching = False
    # After the response the disconnect is the server's way of saying so: nothing to stop.
    if not watch.over:
        scope.cancel()
