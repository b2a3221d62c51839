"""The HTTP/SSE app: routes over a :class:`~agentrt.server.store.SessionStore`.

Requests and answers are JSON; a run comes back as Server-Sent Events, one frame
per stream event (``event:`` its type, ``id:`` its sequence number in the session,
``data:`` its JSON) and ``: heartbeat`` comments while nothing happens. Every error
is a JSON body ``{"error": {"code": "...", "message": "..."}}`` with its status;
an unexpected failure is logged on the ``agentrt.server`` logger and answered with
a 500 that carries no traceback.
"""

import importlib.metadata
import logging
import socket
import time
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agentrt.server._gc import server_collections
from agentrt.server._http import endpoint, http_exception, unexpected
from agentrt.server._redact import install_redaction
from agentrt.server._routes import BODIES, SessionRoutes
from agentrt.server._webpage import page_and_policy
from agentrt.server.agui import AGUIEndpoint
from agentrt.server.limits import DEFAULT_LIMITS, ServerLimits, StreamLimitMiddleware
from agentrt.server.openapi import openapi_document
from agentrt.server.security import SecurityMiddleware, SecurityPolicy, is_loopback
from agentrt.server.store import AgentFactory, SessionStore

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
    from agentrt.server.durable import DurableBackend

    backend = DurableBackend(storage, executor_id=executor_id)
    return SessionStore(agent_factory, backend=backend, **options)


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
    a2a: bool | None = None,
) -> Starlette:
    """Build the Starlette app serving agents made by ``agent_factory``.

    Routes (JSON bodies; SSE for runs), each written in one place::

        GET    /                                          the web page (here)
        GET    /healthz                                   {"status": "ok"}, no token needed
                                                          (agentrt.server.security)
        GET    /openapi.json                              the OpenAPI document (here,
                                                          from agentrt.server.openapi)
        POST   /sessions                                  201 {"id": ...}
        DELETE /sessions/{id}                             204, the session is closed
        POST   /sessions/{id}/messages  {"message": ...}  the run as SSE (409 if one runs)
        GET    /sessions/{id}/messages                    {"messages": [...]}
        GET    /sessions/{id}/events?after=N              SSE: replay, then live
        POST   /sessions/{id}/confirmations/{call_id}     {"decision": ..., "reason": ...}
        DELETE /sessions/{id}/run                         202, the run is cancelled (409 if none)
                                                          (the /sessions routes:
                                                          agentrt.server._routes)
        POST   /ag-ui                    RunAgentInput    the run as AG-UI events (SSE)
                                                          (agentrt.server.agui)
        GET    /.well-known/agent-card.json               A2A: the agent card, then
        POST   /a2a, /a2a/rest/...                        its JSON-RPC and HTTP+JSON
                                                          bindings (agentrt.a2a.server)

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
        a2a: Serve A2A (:mod:`agentrt.a2a.server`): ``None`` (the default) when
            ``a2a-sdk`` is installed (``agentrt[a2a]``), ``True`` always (an
            ``ImportError`` without it), ``False`` never.

    Returns:
        The app; its :class:`~agentrt.server.store.SessionStore` is
        ``app.state.sessions``.

    Raises:
        TypeError: ``agent_factory`` is not callable, or a stream option is unknown.
        ValueError: A size, interval or limit is not positive, or ``storage`` is
            neither ``"memory"`` nor a sqlite or postgresql URL.
        ImportError: ``a2a=True`` without ``a2a-sdk``.
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

    heartbeat = float(heartbeat_interval)
    sessions = SessionRoutes(
        store, limits=limits, heartbeat=heartbeat, max_body_size=max_body_size
    )
    agui = AGUIEndpoint(store, limits=limits, heartbeat=heartbeat, max_body_size=max_body_size)

    from agentrt import __version__

    document = openapi_document(
        BODIES,
        token=security is not None and security.token is not None,
        page=page,
        version=__version__,
    )

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    routes: list[BaseRoute] = [
        Route("/openapi.json", endpoint(openapi), methods=["GET"]),
        *sessions.routes(),
        agui.route(),
    ]
    if a2a or (a2a is None and _a2a_installed()):
        routes += _a2a_routes(
            store,
            agent_factory,
            limits=limits,
            max_body_size=max_body_size,
            token=security is not None and security.token is not None,
        )
    if page:
        html, policy = page_and_policy()
        headers = {
            "Content-Security-Policy": policy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }

        async def index(request: Request) -> Response:
            return HTMLResponse(html, headers=headers)

        routes.insert(0, Route("/", endpoint(index), methods=["GET"]))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with store:
            yield

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception, Exception: unexpected},
        middleware=[
            Middleware(SecurityMiddleware, policy=security or SecurityPolicy()),
            Middleware(StreamLimitMiddleware, limits=limits),
        ],
    )
    app.state.sessions = store
    return app


def _a2a_installed() -> bool:
    """Whether the a2a SDK is installed: its distribution, not whatever ``import a2a``
    would find (a folder named ``a2a`` beside a served file is not the SDK)."""
    try:
        importlib.metadata.distribution("a2a-sdk")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _a2a_routes(
    store: SessionStore,
    agent_factory: AgentFactory,
    *,
    limits: ServerLimits,
    max_body_size: int,
    token: bool,
) -> list[BaseRoute]:
    try:
        from agentrt.a2a.server import A2AEndpoint
    except ImportError as error:
        raise ImportError(
            f"serving A2A needs the a2a extra ({error.name} is missing): "
            "pip install 'agentrt[a2a]'"
        ) from error
    endpoint = A2AEndpoint(
        store, agent_factory, limits=limits, max_body_size=max_body_size, token=token
    )
    return endpoint.routes()


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


@contextmanager
def _asyncio_named() -> Iterator[None]:
    """Name asyncio as the running library in sniffio's context variable, then restore it.

    uvicorn runs a plain asyncio loop, which names no library: every anyio call that
    finds its backend (an Event, a cancel scope, a task group; a dozen a run) then
    has sniffio guess it by calling ``asyncio.current_task()``, a ``getpid()`` system
    call in CPython 3.11. With the name set the answer is one context-variable read.
    """
    try:
        from sniffio import current_async_library_cvar
    except ImportError:  # pragma: no cover - anyio then assumes asyncio without asking
        yield
        return
    token = current_async_library_cvar.set("asyncio")
    try:
        yield
    finally:
        current_async_library_cvar.reset(token)


class AgentServer(uvicorn.Server):
    """A uvicorn server for an app of :func:`create_app` (see :func:`make_server`).

    While it serves, the garbage collector runs full collections less often and does not
    walk what survives its middle generation again and again (it is frozen: see
    ``agentrt.server._gc``; all set back when it ends): the process is the server's, and
    its idle sessions are what a full collection walks.

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
        """Serve as uvicorn does, with fewer full garbage collections until it ends.

        And with asyncio named as the event loop's library for sniffio, as
        ``anyio.run()`` names it: every task the server makes inherits the name.
        """
        with server_collections(), _asyncio_named():
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
