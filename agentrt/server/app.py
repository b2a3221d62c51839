"""The HTTP/SSE app: routes over a :class:`~agentrt.server.sessions.SessionStore`.

Requests and answers are JSON; a run comes back as Server-Sent Events, one frame
per stream event (``event:`` its type, ``id:`` its sequence number in the session,
``data:`` its JSON) and ``: heartbeat`` comments while nothing happens. Every error
is a JSON body ``{"error": {"code": "...", "message": "..."}}`` with its status;
an unexpected failure is logged on the ``agentrt.server`` logger and answered with
a 500 that carries no traceback.
"""

import gc
import hashlib
import itertools
import json
import logging
import re
import socket
import time
from base64 import b64encode
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, aclosing, asynccontextmanager, contextmanager
from importlib import resources
from typing import Any, TypeVar

import anyio
import uvicorn
from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agentrt.server.agui import AGUIEndpoint, AGUIInputError
from agentrt.server.limits import DEFAULT_LIMITS, LimitError, ServerLimits, StreamLimitMiddleware
from agentrt.server.openapi import openapi_document
from agentrt.server.redact import install_redaction
from agentrt.server.security import SecurityMiddleware, SecurityPolicy, is_loopback
from agentrt.server.sessions import (
    AgentFactory,
    AlreadyAnsweredError,
    NoRunError,
    RunEndedError,
    RunInProgressError,
    Session,
    SessionLimitError,
    SessionNotFoundError,
    SessionStore,
    StoreFailedError,
    StoreNotRunningError,
)
from agentrt.stream.codec import SequencedEvent, encode_sse, sse_heartbeat
from agentrt.stream.confirm import DECISIONS, InvalidDecisionError, UnknownToolCallError
from agentrt.stream.log import EventsExpiredError

__all__ = (
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_MAX_BODY_SIZE",
    "AgentServer",
    "InsecureBindError",
    "create_app",
    "make_server",
    "serve",
)

logger = logging.getLogger("agentrt.server")

DEFAULT_MAX_BODY_SIZE = 1024 * 1024
"""Bytes a request body may hold (1 MiB)."""

DEFAULT_HEARTBEAT_INTERVAL = 15.0
"""Seconds without an event before an event stream sends a ``: heartbeat`` comment."""

M = TypeVar("M", bound=BaseModel)


# -- errors -------------------------------------------------------------------------------


class _HTTPError(Exception):
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


def _error(
    status: int,
    code: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    details: list[dict[str, str]] | None = None,
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return JSONResponse({"error": error}, status_code=status, headers=headers)


# What the session layer raises, as HTTP. In order: the first class that matches wins.
_SESSION_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (AGUIInputError, 422, "invalid_ag_ui_input"),
    (SessionNotFoundError, 404, "session_not_found"),
    (UnknownToolCallError, 404, "unknown_tool_call"),
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


def _endpoint(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap an endpoint so that every failure becomes a JSON error response."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except _HTTPError as error:
            return _error(error.status, error.code, error.message, details=error.details)
        except ClientDisconnect:
            # The client left while sending its body: nobody reads this answer.
            return _error(400, "client_disconnected", "the client disconnected mid-request")
        except LimitError as error:
            retry = {"Retry-After": "1"} if error.status == 429 else None
            return _error(error.status, error.code, str(error), headers=retry)
        except Exception as error:
            for kind, status, code in _SESSION_ERRORS:
                if isinstance(error, kind):
                    return _error(status, code, str(error))
            # The handler's name, not the path: paths carry secret session ids.
            logger.exception("unexpected error in %s %s", request.method, handler.__name__)
            return _error(500, "internal_error", _INTERNAL)

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


async def _http_exception(request: Request, error: Exception) -> Response:
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
    return _error(status, code, message, headers=error.headers)


async def _unexpected(request: Request, error: Exception) -> Response:
    """The last resort, for failures outside the endpoints (they catch their own).

    Not logged here: Starlette re-raises the error after this response, and the ASGI
    server logs it.
    """
    return _error(500, "internal_error", _INTERNAL)


# -- request bodies -----------------------------------------------------------------------


class _Body(BaseModel):
    # Strict and closed: "5" is not a message and a misspelt field is an error, not
    # silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _NewSession(_Body):
    """``POST /sessions``: no fields yet (an empty body is fine)."""


class _NewMessage(_Body):
    message: str = Field(min_length=1)


class _Answer(_Body):
    # str, not Decision: an unknown decision is the endpoint's own 422 invalid_decision,
    # which names the valid ones; the document still lists them.
    decision: str = Field(json_schema_extra={"enum": list(DECISIONS)})
    reason: str | None = None


_NO_BODY = object()


async def _read_json(request: Request, limit: int) -> object:
    """The request's JSON body (``_NO_BODY`` when empty), read no further than ``limit`` bytes.

    Raises:
        _HTTPError: 413 for a body over the limit (declared or streamed), 400 for an
            invalid Content-Length or a body that is not JSON.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise _HTTPError(400, "invalid_content_length", f"bad Content-Length {declared!r}")
        if int(declared) > limit:
            raise _HTTPError(413, "body_too_large", f"the body is over {limit} bytes")
    body = bytearray()
    # Counted as it streams: a chunked body declares no length, and a declared one
    # may lie.
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _HTTPError(413, "body_too_large", f"the body is over {limit} bytes")
    if not body.strip():
        return _NO_BODY
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        # ValueError covers bad JSON and bad UTF-8; RecursionError very deep nesting.
        reason = error.args[0] if isinstance(error, ValueError) and error.args else "too deep"
        raise _HTTPError(400, "invalid_json", f"the body is not valid JSON: {reason}") from None


def _validate(model: type[M], data: object) -> M:
    """``data`` as ``model``, or a 422 that lists every problem (without the input)."""
    try:
        # No body is an empty object; a JSON null is not an object (a 422).
        return model.model_validate({} if data is _NO_BODY else data)
    except ValidationError as error:
        details = [
            {
                "field": ".".join(str(part) for part in problem["loc"]) or "(body)",
                "problem": problem["msg"],
            }
            for problem in error.errors(include_url=False, include_input=False)
        ]
        message = "; ".join(f"{d['field']}: {d['problem']}" for d in details)
        raise _HTTPError(422, "invalid_body", message, details=details) from None


def _after(request: Request) -> int:
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
        raise _HTTPError(
            422, "invalid_after", f"{name} must be an event sequence number, got {text!r}"
        )
    return int(text)


# -- event streams ------------------------------------------------------------------------

_EXPIRED_COMMENT = b": events expired: this reader fell behind the events the server keeps\n\n"


async def _frames(
    batches: AsyncGenerator[list[SequencedEvent], None],
) -> AsyncGenerator[bytes, None]:
    async with aclosing(batches):
        try:
            async for batch in batches:
                if batch:
                    yield b"".join(encode_sse(e, sequence=s) for s, e in batch)
                else:
                    yield sse_heartbeat()
        except EventsExpiredError:
            # Too late for a status code; the stream ends and a reconnection with
            # Last-Event-ID gets the 410 that says why.
            yield _EXPIRED_COMMENT


class _EventStream(StreamingResponse):
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
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope, watch)
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


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope, watch: _Watch) -> None:
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    finally:
        watch.watching = False
    # After the response the disconnect is the server's way of saying so: nothing to stop.
    if not watch.over:
        scope.cancel()


# -- the web page -------------------------------------------------------------------------


def _page() -> tuple[str, str]:
    """The page's HTML and a Content-Security-Policy allowing exactly its own code."""
    html = resources.files("agentrt.server").joinpath("page.html").read_text(encoding="utf-8")

    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
        return " ".join(
            f"'sha256-{b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks
        )

    # Hashes rather than 'unsafe-inline': should model output ever reach the page as
    # markup, the browser still runs no script but the page's own.
    policy = (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    return html, policy


# -- the app ------------------------------------------------------------------------------

_DURABLE_STORES = ("sqlite:///", "postgresql://", "postgresql+psycopg://", "postgres://")


def _session_store(
    agent_factory: AgentFactory, storage: str, executor_id: str | None, **options: Any
) -> SessionStore:
    """The sessions in memory, or in a durable store (imported only then: it needs DBOS)."""
    if storage == "memory":
        if executor_id is not None:
            raise ValueError("executor_id names a process of a durable store, not of memory")
        return SessionStore(agent_factory, **options)
    if not isinstance(storage, str) or not storage.startswith(_DURABLE_STORES):
        raise ValueError(
            f'storage must be "memory", sqlite:///PATH or postgresql://..., got {storage!r}'
        )
    from agentrt.server.durable import DurableSessionStore

    return DurableSessionStore(agent_factory, storage, executor_id=executor_id, **options)


def create_app(
    agent_factory: AgentFactory,
    *,
    max_body_size: int = DEFAULT_MAX_BODY_SIZE,
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
    retain: int = 10_000,
    session_ttl: float = 3600.0,
    max_sessions: int | None = 1000,
    stream_options: Mapping[str, Any] | None = None,
    page: bool = True,
    clock: Callable[[], float] = time.monotonic,
    security: SecurityPolicy | None = None,
    limits: ServerLimits = DEFAULT_LIMITS,
    storage: str = "memory",
    executor_id: str | None = None,
) -> Starlette:
    """Build the Starlette app serving agents made by ``agent_factory``.

    Routes (JSON bodies; SSE for runs)::

        GET    /                                          the web page
        GET    /healthz                                   {"status": "ok"}, no token needed
        GET    /openapi.json                              the OpenAPI document
        POST   /sessions                                  201 {"id": ...}
        DELETE /sessions/{id}                             204, the session is closed
        POST   /sessions/{id}/messages  {"message": ...}  the run as SSE (409 if one runs)
        GET    /sessions/{id}/messages                    {"messages": [...]}
        GET    /sessions/{id}/events?after=N              SSE: replay, then live
        POST   /sessions/{id}/confirmations/{call_id}     {"decision": ..., "reason": ...}
        DELETE /sessions/{id}/run                         202, the run is cancelled (409 if none)
        POST   /ag-ui                    RunAgentInput    the run as AG-UI events (SSE)

    ``POST /ag-ui`` speaks AG-UI to frontends such as CopilotKit: an AG-UI thread is
    a session of its own (see :mod:`agentrt.server.agui`). With a durable
    ``storage``, AG-UI threads are kept in this process's memory, not in the store:
    they do not survive a restart, and ``max_sessions`` bounds them apart from the
    store's sessions (which the processes sharing the store count together).

    Runs live in a task group of the app's lifespan, not in the request that
    started them: a client that disconnects does not stop its run, and reads the
    rest with ``GET /sessions/{id}/events`` and ``Last-Event-ID``. A cancelled run
    stops its model call and tools at once, answers its open tool calls as
    cancelled, and ends its stream with an ``error`` saying so, then
    ``stream_stopped``; the session takes its next message as usual.

    Args:
        agent_factory: Makes each session's agent (sync or async callable).
        max_body_size: Bytes a request body may hold; more is a 413.
        heartbeat_interval: Seconds without an event before an event stream sends
            a ``: heartbeat`` comment (keeps proxies and clients from timing out).
        retain: Events each session keeps for readers that come back.
        session_ttl: Seconds a session may stay idle (no reader, and no run or one
            that waits only for a client's answer) before it is closed and forgotten;
            a waiting run is cancelled with it.
        max_sessions: Sessions that may exist at once (``None``: unbounded); more
            is a 503.
        stream_options: Keyword arguments for each run's
            :class:`~agentrt.stream.StreamAdapter` (``auto_approve``, ``prices``,
            ``context_limit``, ``title``, ``compaction``...).
        page: Serve the built-in web page at ``/``.
        clock: Monotonic seconds, for idle expiry (tests pass a fake one).
        security: Host, Origin, token and CORS checks run before every route
            (:mod:`agentrt.server.security`); by default loopback names only, no token.
        limits: Caps on concurrent runs, open event streams and message size
            (:mod:`agentrt.server.limits`).
        storage: Where sessions, event logs and runs live: ``"memory"`` (this
            process, gone with it), or a durable store (``agentrt[durable]``):
            ``sqlite:///PATH`` or ``postgresql://...``, where runs survive a crash
            and several processes serve the same sessions
            (:mod:`agentrt.server.durable`).
        executor_id: With a durable store, this process's name: a process started
            with the id of one that died recovers that one's runs.

    Returns:
        The app; its :class:`~agentrt.server.sessions.SessionStore` is
        ``app.state.sessions``.

    Raises:
        TypeError: ``agent_factory`` is not callable, or a stream option is unknown.
        ValueError: A size, interval or limit is not positive, or ``storage`` is
            neither ``"memory"`` nor a sqlite or postgresql URL.
        StoreUnavailableError: The durable store cannot be used.
    """
    if isinstance(max_body_size, bool) or not isinstance(max_body_size, int) or max_body_size < 1:
        raise ValueError(f"max_body_size must be a positive int, got {max_body_size!r}")
    if not heartbeat_interval > 0:
        raise ValueError(
            f"heartbeat_interval must be positive seconds, got {heartbeat_interval!r}"
        )
    options: dict[str, Any] = {
        "retain": retain,
        "session_ttl": session_ttl,
        "max_sessions": max_sessions,
        "stream_options": stream_options,
        "clock": clock,
    }
    store = _session_store(agent_factory, storage, executor_id, **options)
    # An AG-UI thread's run waits inside a frontend tool for the client's next request,
    # which a durable run (a DBOS workflow, recovered in any process) cannot: with a
    # durable store, AG-UI threads live in this process's memory.
    agui_store = store if storage == "memory" else SessionStore(agent_factory, **options)

    def every_session() -> Iterable[Session]:
        # The cap on runs at once is the server's, whichever store holds a run.
        return store if agui_store is store else itertools.chain(store, agui_store)

    heartbeat = float(heartbeat_interval)

    async def session_of(request: Request) -> Session:
        return await store.open(request.path_params["session_id"])

    async def body_of(request: Request, model: type[M]) -> M:
        return _validate(model, await _read_json(request, max_body_size))

    async def create_session(request: Request) -> Response:
        await body_of(request, _NewSession)
        session = await store.create()
        return JSONResponse(
            {"id": session.id}, status_code=201, headers={"Location": f"/sessions/{session.id}"}
        )

    async def delete_session(request: Request) -> Response:
        await store.remove(request.path_params["session_id"])
        return Response(status_code=204)

    async def post_message(request: Request) -> Response:
        session = await session_of(request)
        body = await body_of(request, _NewMessage)
        limits.check_message(body.message)
        limits.check_run(every_session())
        run = await store.begin(session, body.message)
        return _EventStream(_frames(session.follow(run.after, run=run, heartbeat=heartbeat)))

    async def get_messages(request: Request) -> Response:
        session = await session_of(request)
        messages = await session.read_messages()
        return JSONResponse({"messages": [m.model_dump(mode="json") for m in messages]})

    async def messages(request: Request) -> Response:
        if request.method == "POST":
            return await post_message(request)
        return await get_messages(request)

    async def get_events(request: Request) -> Response:
        session = await session_of(request)
        after = _after(request)
        try:
            await session.check_resume(after)
        except ValueError as error:
            raise _HTTPError(422, "invalid_after", str(error)) from None
        return _EventStream(_frames(session.follow(after, heartbeat=heartbeat)))

    async def answer(request: Request) -> Response:
        session = await session_of(request)
        body = await body_of(request, _Answer)
        tool_call_id = request.path_params["tool_call_id"]
        await session.confirm(tool_call_id, body.decision, body.reason)
        return JSONResponse({"tool_call_id": tool_call_id, "decision": body.decision})

    async def cancel_run(request: Request) -> Response:
        await (await session_of(request)).stop()
        return JSONResponse({"status": "cancelling"}, status_code=202)

    agui = AGUIEndpoint(agui_store, limits=limits, heartbeat=heartbeat, counted=every_session)

    async def ag_ui(request: Request) -> Response:
        body = _validate(RunAgentInput, await _read_json(request, max_body_size))
        return _EventStream(await agui.open(body))

    from agentrt import __version__

    document = openapi_document(
        {"NewSession": _NewSession, "NewMessage": _NewMessage, "Answer": _Answer},
        token=security is not None and security.token is not None,
        page=page,
        version=__version__,
    )

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    routes = [
        Route("/openapi.json", _endpoint(openapi), methods=["GET"]),
        Route("/sessions", _endpoint(create_session), methods=["POST"]),
        Route("/sessions/{session_id}", _endpoint(delete_session), methods=["DELETE"]),
        # One route for both methods, so that a 405 lists both in its Allow header.
        Route("/sessions/{session_id}/messages", _endpoint(messages), methods=["GET", "POST"]),
        Route("/sessions/{session_id}/events", _endpoint(get_events), methods=["GET"]),
        Route(
            "/sessions/{session_id}/confirmations/{tool_call_id}",
            _endpoint(answer),
            methods=["POST"],
        ),
        Route("/sessions/{session_id}/run", _endpoint(cancel_run), methods=["DELETE"]),
        Route("/ag-ui", _endpoint(ag_ui), methods=["POST"]),
    ]
    if page:
        html, policy = _page()
        headers = {
            "Content-Security-Policy": policy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }

        async def index(request: Request) -> Response:
            return HTMLResponse(html, headers=headers)

        routes.insert(0, Route("/", _endpoint(index), methods=["GET"]))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(store)
            if agui_store is not store:
                await stack.enter_async_context(agui_store)
            yield

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _unexpected},
        middleware=[
            Middleware(SecurityMiddleware, policy=security or SecurityPolicy()),
            Middleware(StreamLimitMiddleware, limits=limits),
        ],
    )
    app.state.sessions = store
    return app


# -- serving ------------------------------------------------------------------------------


class InsecureBindError(ValueError):
    """A server would listen beyond loopback without a token."""

    def __init__(self, host: str) -> None:
        self.host = host
        super().__init__(
            f"refusing to listen on {host!r} without a token: anyone who reaches it could "
            "run this agent's tools; set a token (--token or AGENTRT_TOKEN), bind to "
            "127.0.0.1, or pass --insecure if something else guards the address"
        )


_FULL_COLLECTION_THRESHOLD = 100
"""The garbage collector's third threshold while an :class:`AgentServer` serves."""


@contextmanager
def _fewer_full_collections() -> Iterator[None]:
    """Raise the collector's third threshold to ``_FULL_COLLECTION_THRESHOLD``, then restore it.

    A server keeps every idle session (its agent, conversation and event log: about 120
    objects the collector tracks) for ``session_ttl``, and CPython runs a full
    collection, which walks every one of them, after every 10 collections of the middle
    generation once the old one has grown by a quarter. With 200 runs at once the full
    collections were a third of the server's CPU time (bench_server.py: 12 of them, 1.9
    of 5.6 s, in 3,200 runs); at 100 it was one. The young generations are collected as
    often as before, so short-lived garbage goes as fast; cycles that reached the old
    generation wait longer, as does the memory they hold. Python 3.14's incremental
    collector ignores this threshold.
    """
    first, second, third = gc.get_threshold()
    ours = (first, second, max(third, _FULL_COLLECTION_THRESHOLD))
    gc.set_threshold(*ours)
    try:
        yield
    finally:
        # Unless someone set it meanwhile (another server in this process that ended
        # first set it back already, or the application changed it).
        if gc.get_threshold() == ours:
            gc.set_threshold(first, second, third)


class AgentServer(uvicorn.Server):
    """A uvicorn server for an app of :func:`create_app` (see :func:`make_server`).

    While it serves, the garbage collector runs full collections less often (its third
    threshold is at least 100, then set back): the process is the server's, and its idle
    sessions are what a full collection walks.

    Attributes:
        sessions: The app's session store.
        ready: Set once startup is over (``started`` tells whether it succeeded).
    """

    def __init__(self, config: uvicorn.Config, sessions: SessionStore) -> None:
        super().__init__(config)
        self.sessions = sessions
        self.ready = anyio.Event()

    @property
    def port(self) -> int:
        """The port listened on (the one the system chose for ``port=0``).

        Raises:
            RuntimeError: The server is not listening.
        """
        for server in getattr(self, "servers", ()):
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        raise RuntimeError("the server is not listening (yet)")

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve as uvicorn does, with fewer full garbage collections until it ends."""
        with _fewer_full_collections():
            await super().serve(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start as uvicorn does, then set :attr:`ready`."""
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """End the event streams first, then shut down as uvicorn does.

        uvicorn waits for open responses before it runs the lifespan's shutdown;
        an event stream of a run waiting for a confirmation would hold it forever.
        """
        self.sessions.end_streams()
        await super().shutdown(sockets)


def make_server(
    agent_factory: AgentFactory,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    log_level: str = "info",
    graceful_shutdown: int = 5,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    cors_origins: Sequence[str] = (),
    insecure: bool = False,
    **options: Any,
) -> AgentServer:
    """A uvicorn server for ``create_app(agent_factory, **options)``, not yet started.

    ``await server.serve()`` runs it until ``server.should_exit`` is set (or a
    signal: Ctrl-C). Only asyncio: uvicorn runs on it.

    Args:
        agent_factory: Makes each session's agent.
        host: The interface to listen on (loopback by default).
        port: The port; 0 lets the system choose (read it from ``server.port``).
        log_level: uvicorn's log level.
        graceful_shutdown: Seconds shutdown waits for open responses.
        token: The bearer token every request needs (see
            :mod:`agentrt.server.security`); required off loopback.
        allowed_hosts: ``Host`` names accepted besides the bound address (and the
            loopback names when bound to loopback).
        cors_origins: Browser origins allowed to call the API (none by default).
        insecure: Allow a non-loopback ``host`` without a token.
        **options: :func:`create_app` options.

    Raises:
        InsecureBindError: ``host`` is not loopback, no token is set, and
            ``insecure`` is false.
    """
    if token is None and not insecure and not is_loopback(host):
        raise InsecureBindError(host)
    if insecure and token is None and not is_loopback(host):
        logger.warning(
            "serving on %s WITHOUT authentication (--insecure): anyone who reaches this "
            "address can run this agent's tools",
            host,
        )
    options.setdefault(
        "security",
        SecurityPolicy.for_bind(
            host, token=token, allowed_hosts=allowed_hosts, cors_origins=cors_origins
        ),
    )
    app = create_app(agent_factory, **options)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        # No websocket routes: skip importing a websocket library.
        ws="none",
        timeout_graceful_shutdown=graceful_shutdown,
    )
    # After Config: uvicorn (re)configures its loggers there.
    install_redaction()
    return AgentServer(config, app.state.sessions)


async def serve(
    agent_factory: AgentFactory, host: str = "127.0.0.1", port: int = 8000, **options: Any
) -> None:
    """Serve agents made by ``agent_factory`` over HTTP until interrupted.

    ``anyio.run(functools.partial(serve, factory, port=8080))``; see
    :func:`make_server` for ``options`` (and :func:`create_app` for the app's).
    """
    await make_server(agent_factory, host, port, **options).serve()
