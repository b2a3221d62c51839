"""The cap on the body of a request to the A2A routes (the server's ``max_body_size``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

__all__ = ("BodyLimit",)


class BodyLimit:
    """The SDK's routes with the server's cap on request bodies.

    Without ``buffered``, a body that grows beyond it fails the read (the JSON-RPC
    binding answers "Payload too large"). With it, the body is read here first, and
    one over the cap is a 413 before the route runs, whether its ``Content-Length``
    says so or it comes in chunks: the HTTP+JSON binding's own handler would take a
    failed read for a 500. Its body is that binding's error (AIP-193: ``{"error":
    {"code": 413, "status": "INVALID_ARGUMENT", "message": ...}}``).
    """

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Any], limit: int, *, buffered: bool
    ) -> None:
        self.app = app
        self.limit = limit
        self.buffered = buffered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.buffered and scope["type"] == "http":
            await self._buffered(scope, receive, send)
            return
        limit = self.limit
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise HTTPException(413, f"the body is over {limit} bytes")
            return message

        await self.app(scope, limited, send)

    async def _buffered(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limit
        length = Headers(scope=scope).get("content-length", "")
        too_large = length.isdigit() and int(length) > limit
        chunks: list[bytes] = []
        seen = 0
        more = not too_large
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            seen += len(chunk)
            too_large = seen > limit
            if too_large:
                break
            chunks.append(chunk)
            more = message.get("more_body", False)
        if too_large:
            # In the binding's error form (AIP-193, as the SDK answers its own errors).
            error = {
                "code": 413,
                "status": "INVALID_ARGUMENT",
                "message": f"the request body is over the server's {limit} bytes",
            }
            await JSONResponse({"error": error}, status_code=413)(scope, receive, send)
            return
        body: bytes | None = b"".join(chunks)

        async def replay() -> Any:
            nonlocal body
            if body is None:
                return await receive()
            message = {"type": "http.request", "body": body, "more_body": False}
            body = None
            return message

        await self.app(scope, replay, send)
