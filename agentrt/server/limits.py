"""Server-wide caps that keep one client from starving the others.

* ``max_runs``: runs in progress at once, across sessions; one more is a 429
  ``too_many_runs`` (the session takes the message once a run ends);
* ``max_streams``: event streams open at once (``POST .../messages``,
  ``GET .../events`` and ``POST /ag-ui`` responses); one more is a 429 ``too_many_streams``;
* ``max_message_chars``: the characters of one user message; more is a 413
  ``message_too_large`` (the request body is capped separately, ``max_body_size``).

Each session's stored events are capped by ``retain`` (:func:`~agentrt.server.create_app`):
older events are dropped, and a reader asking for them gets a 410 ``events_expired``.
Every 429 carries ``Retry-After``.
"""

from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from agentrt.server._errors import ERROR_MEDIA_TYPE, error_body
from agentrt.server.sessions import SessionError

__all__ = (
    "DEFAULT_LIMITS",
    "LimitError",
    "MessageTooLargeError",
    "RunLimitError",
    "ServerLimits",
    "StreamLimitError",
    "StreamLimitMiddleware",
)


@dataclass(frozen=True)
class ServerLimits:
    """The caps of one server (see the module).

    Attributes:
        max_runs: Runs in progress at once (``None``: no cap).
        max_streams: Event streams open at once (``None``: no cap).
        max_message_chars: Characters of one user message.
    """

    max_runs: int | None = 32
    max_streams: int | None = 256
    max_message_chars: int = 100_000

    def __post_init__(self) -> None:
        for name in ("max_runs", "max_streams", "max_message_chars"):
            value = getattr(self, name)
            if value is None and name != "max_message_chars":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")

    def check_run(self, running: int) -> None:
        """Raise :class:`RunLimitError` when ``running`` (the runs in progress) is
        ``max_runs`` or more."""
        if self.max_runs is None:
            return
        if running >= self.max_runs:
            raise RunLimitError(self.max_runs)

    def check_message(self, message: str) -> None:
        """Raise :class:`MessageTooLargeError` for a message over ``max_message_chars``."""
        if len(message) > self.max_message_chars:
            raise MessageTooLargeError(self.max_message_chars)


DEFAULT_LIMITS = ServerLimits()


class LimitError(SessionError):
    """A server limit was reached; ``status`` and ``code`` are the HTTP answer."""

    status = 429
    code = "limit"

    def __init__(self, message: str, limit: int) -> None:
        self.limit = limit
        super().__init__(message)


class RunLimitError(LimitError):
    """``max_runs`` runs are in progress."""

    code = "too_many_runs"

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} runs are in progress, the most this server runs at once", limit)


class StreamLimitError(LimitError):
    """``max_streams`` event streams are open."""

    code = "too_many_streams"

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} event streams are open, the most this server keeps", limit)


class MessageTooLargeError(LimitError):
    """A user message is over ``max_message_chars``."""

    status = 413
    code = "message_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(f"the message is over {limit} characters", limit)


def _is_stream(method: str, path: str) -> bool:
    if path == "/ag-ui":
        return method == "POST"
    if path.startswith("/a2a"):
        # A2A: every JSON-RPC call may stream or wait for a task (one URL for all), and
        # the HTTP+JSON binding's sends and subscriptions do.
        return path in ("/a2a", "/a2a/") or path.endswith((":send", ":stream", ":subscribe"))
    parts = path.strip("/").split("/")
    if len(parts) != 3 or parts[0] != "sessions":
        return False
    return (method, parts[2]) in (("POST", "messages"), ("GET", "events"))


class StreamLimitMiddleware:
    """Counts the event-stream requests in flight; one past ``max_streams`` is a 429.

    Counted here, around the whole response, rather than by the streams themselves:
    the check and the count happen in one step, so concurrent requests cannot all
    slip under the cap, and a stream counts until its response is over.
    """

    def __init__(self, app: ASGIApp, limits: ServerLimits) -> None:
        self.app = app
        self.limits = limits
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cap = self.limits.max_streams
        if (
            scope["type"] != "http"
            or cap is None
            or not _is_stream(scope["method"], scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        if self.open >= cap:
            error = StreamLimitError(cap)
            body = error_body(error.code, str(error))
            await send(
                {
                    "type": "http.response.start",
                    "status": 429,
                    "headers": [
                        (b"content-type", ERROR_MEDIA_TYPE.encode()),
                        (b"content-length", str(len(body)).encode()),
                        (b"retry-after", b"1"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        self.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
