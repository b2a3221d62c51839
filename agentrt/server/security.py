"""Who may talk to the server: Host and Origin checks, a bearer token, CORS, JSON only.

The server runs tools on its user's machine, so every request passes these checks before
any route runs (the MCP specification's rules for local HTTP servers: validate ``Origin``,
bind to localhost, authenticate):

* ``Host`` must be one of the server's own names (loopback names by default): a DNS
  rebinding attack reaches the server under the attacker's name and is refused (403);
* a state-changing request (any method but ``GET``, ``HEAD``, ``OPTIONS``) whose
  ``Origin`` is neither the server's own nor one of ``cors_origins`` is refused (403);
* with a token, every request but the health check (``GET /healthz``) and the A2A
  agent card (``GET /.well-known/agent-card.json``, which declares the token) needs
  ``Authorization: Bearer TOKEN``, compared in constant time; otherwise 401. The web
  page (``GET /``), which a browser loads without headers, is let in by the one-time
  URL ``/?token=TOKEN`` (as Jupyter does): that answer sets a cookie holding a random
  key of this server process (never the token), ``HttpOnly`` and ``SameSite=Strict``,
  which lets the page in again; a page request with neither is answered the page all
  the same, as a 401: it holds no data, and asks for the token with its own form. The
  cookie admits the page only, never an API route;
* a state-changing request whose body declares a type other than JSON is a 415, so
  that a cross-site form (which can only send form or text bodies) cannot act;
* CORS answers only for ``cors_origins`` (none by default).

Every refusal is the app's JSON error body ``{"error": {"code": ..., "message": ...}}``.
"""

import hmac
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = (
    "AGENT_CARD_PATH",
    "HEALTH_PATH",
    "LOOPBACK_HOSTS",
    "SecurityMiddleware",
    "SecurityPolicy",
    "is_loopback",
)

LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
"""The names a server bound to loopback answers to."""

HEALTH_PATH = "/healthz"
"""A route that needs no token: ``{"status": "ok"}``."""

AGENT_CARD_PATH = "/.well-known/agent-card.json"
"""The other route that needs no token (``GET``): the A2A agent card, which a client
reads to learn how to authenticate (it declares the token as a security scheme)."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_CORS_HEADERS = "Authorization, Content-Type, Last-Event-ID"
_CORS_METHODS = "GET, POST, DELETE, OPTIONS"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address to bind) is a loopback one."""
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def _host_name(value: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:8000`` is ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class SecurityPolicy:
    """What :class:`SecurityMiddleware` lets through.

    Attributes:
        token: The bearer token every request needs (``None``: no authentication;
            only sensible on loopback).
        allowed_hosts: The ``Host`` names accepted (without port); ``"*"`` accepts any
            (never do this on a server that can run tools).
        cors_origins: Origins (``https://app.example``) that may call the API from a
            browser, besides the server's own; none by default.
    """

    token: str | None = None
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    cors_origins: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.token is not None and (not isinstance(self.token, str) or len(self.token) < 8):
            raise ValueError("the token must be a string of at least 8 characters")
        for name, values in (
            ("allowed_hosts", self.allowed_hosts),
            ("cors_origins", self.cors_origins),
        ):
            if isinstance(values, str) or not all(isinstance(v, str) and v for v in values):
                raise TypeError(f"{name} must be a tuple of non-empty strings, got {values!r}")
        object.__setattr__(self, "allowed_hosts", tuple(h.lower() for h in self.allowed_hosts))
        object.__setattr__(self, "cors_origins", tuple(o.rstrip("/") for o in self.cors_origins))

    @classmethod
    def for_bind(
        cls,
        host: str,
        *,
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
        cors_origins: Iterable[str] = (),
    ) -> "SecurityPolicy":
        """The policy for a server bound to ``host``: its own name is always allowed."""
        names = (*LOOPBACK_HOSTS, *allowed_hosts) if is_loopback(host) else (host, *allowed_hosts)
        return cls(
            token=token,
            allowed_hosts=tuple(dict.fromkeys(names)),
            cors_origins=tuple(cors_origins),
        )


async def _refuse(send: Send, status: int, code: str, message: str, **headers: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Pure ASGI middleware enforcing a :class:`SecurityPolicy` (see the module)."""

    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy
        self._token = policy.token.encode() if policy.token else None
        # What the page cookie holds: random per process, so it reveals nothing of the
        # token and dies with the server.
        self._page_key = secrets.token_urlsafe(32).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method: str = scope["method"]
        path: str = scope["path"]
        host = headers.get("host", "")
        if (
            "*" not in self.policy.allowed_hosts
            and _host_name(host) not in self.policy.allowed_hosts
        ):
            # Not echoed in full: the header is the attacker's text.
            await _refuse(
                send,
                403,
                "host_not_allowed",
                "this server does not answer to that Host (its allowed hosts are configured "
                "with --allowed-host)",
            )
            return
        origin = headers.get("origin")
        cors = origin is not None and origin.rstrip("/") in self.policy.cors_origins
        if origin is not None and not cors and method not in _SAFE_METHODS:
            own = {f"{scope.get('scheme', 'http')}://{host}".lower()}
            if origin.lower().rstrip("/") not in own:
                await _refuse(send, 403, "origin_not_allowed", "cross-origin requests are refused")
                return
        if cors and method == "OPTIONS" and "access-control-request-method" in headers:
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [
                        *self._cors_headers(origin or ""),
                        (b"access-control-allow-methods", _CORS_METHODS.encode()),
                        (b"access-control-allow-headers", _CORS_HEADERS.encode()),
                        (b"access-control-max-age", b"600"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if path == HEALTH_PATH:
            if method in ("GET", "HEAD"):
                await _health(send)
            else:
                await _refuse(
                    send, 405, "method_not_allowed", "use GET /healthz", Allow="GET, HEAD"
                )
            return
        if path == "/" and method in ("GET", "HEAD") and self._token is not None:
            await self._page(scope, receive, send, headers)
            return
        public = path == AGENT_CARD_PATH and method in ("GET", "HEAD")
        if not public and not self._authorized(headers.get("authorization", "")):
            await _refuse(
                send,
                401,
                "unauthorized",
                "this server needs Authorization: Bearer <token>",
                **{"WWW-Authenticate": 'Bearer realm="agentrt"'},
            )
            return
        if method not in _SAFE_METHODS and not _is_json_or_untyped(headers):
            await _refuse(send, 415, "unsupported_media_type", "the body must be application/json")
            return
        if cors:
            send = self._with_cors(send, origin or "")
        await self.app(scope, receive, send)

    async def _page(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """The web page: let in by the bearer token, the one-time URL or the page cookie.

        Without any of them, the same page as a 401: it holds no data, and asks for the
        token itself.
        """
        if self._authorized(headers.get("authorization", "")) or self._has_page_cookie(headers):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get("token", [""])[-1].encode("utf-8", "replace")
        if self._token is not None and hmac.compare_digest(given, self._token):
            cookie = f"{_PAGE_COOKIE}={self._page_key.decode()}; Path=/; HttpOnly; SameSite=Strict"

            async def send_with_cookie(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message = {
                        **message,
                        "headers": [*message["headers"], (b"set-cookie", cookie.encode())],
                    }
                await send(message)

            await self.app(scope, receive, send_with_cookie)
            return
        # Neither: the page all the same, as a 401. It holds no data (every route it
        # calls needs the token) and asks for the token with its own form.

        async def send_unauthorized(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                message = {
                    **message,
                    "status": 401,
                    "headers": [*message["headers"], (b"www-authenticate", _CHALLENGE)],
                }
            await send(message)

        await self.app(scope, receive, send_unauthorized)

    def _has_page_cookie(self, headers: Headers) -> bool:
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == _PAGE_COOKIE and hmac.compare_digest(
                value.encode("utf-8", "replace"), self._page_key
            ):
                return True
        return False

    def _authorized(self, header: str) -> bool:
        if self._token is None:
            return True
        scheme, _, credentials = header.partition(" ")
        # compare_digest on bytes: constant time whatever the (attacker's) input.
        given = credentials.strip().encode("utf-8", "replace")
        return scheme.lower() == "bearer" and hmac.compare_digest(given, self._token)

    @staticmethod
    def _cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
        return [(b"access-control-allow-origin", origin.encode()), (b"vary", b"Origin")]

    def _with_cors(self, send: Send, origin: str) -> Send:
        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message["headers"], *self._cors_headers(origin)],
                }
            await send(message)

        return send_with_cors


_PAGE_COOKIE = "agentrt_page"
_CHALLENGE = b'Bearer realm="agentrt"'


def _is_json_or_untyped(headers: Headers) -> bool:
    content_type = headers.get("content-type")
    if content_type is None:
        # No type is read as JSON (and is a 400 if it is not): every body a browser can
        # send cross-site without a preflight declares a type (a form, text/plain).
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def _health(send: Send) -> None:
    body = b'{"status":"ok"}'
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"15")],
        }
    )
    await send({"type": "http.response.body", "body": body})
