"""The session routes of the server's own API: a projection of the session core.

::

    POST   /sessions                                  201 {"id": ...}
    DELETE /sessions/{id}                             204, the session is closed
    POST   /sessions/{id}/messages  {"message": ...}  the run as SSE (409 if one runs)
    GET    /sessions/{id}/messages                    {"messages": [...]}
    GET    /sessions/{id}/events?after=N              SSE: replay, then live
    POST   /sessions/{id}/confirmations/{call_id}     {"decision": ..., "reason": ...}
    DELETE /sessions/{id}/run                         202, the run is cancelled (409 if none)
    POST   /sessions/{id}/fork  {"at": N, "message"?}  201 {"id": ...}, a new session
                                                      (422 unknown_event: no event N)

Each route is one method of :class:`SessionRoutes`, over a
:class:`~agentrt.server.store.SessionStore`: whatever keeps the sessions (memory,
SQLite, Postgres), the routes are the same.
"""

from typing import Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentrt.server._http import (
    EventStream,
    HTTPError,
    after_of,
    endpoint,
    frames,
    read_json,
    validate,
)
from agentrt.server.limits import ServerLimits
from agentrt.server.sessions import Session
from agentrt.server.store import SessionStore
from agentrt.stream.confirm import DECISIONS

__all__ = ("BODIES", "SessionRoutes")

M = TypeVar("M", bound=BaseModel)


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


def _whole(value: object) -> object:
    # JSON has one number type: 3.0 is the integer 3 to a client (and to the schema).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class _Fork(_Body):
    at: Annotated[int, BeforeValidator(_whole)] = Field(
        ge=1, description="The id of one of the session's events."
    )
    message: str | None = Field(
        default=None,
        min_length=1,
        description="Replaces the last user message at that event (an edited fork).",
    )


BODIES: dict[str, type[BaseModel]] = {
    "NewSession": _NewSession,
    "NewMessage": _NewMessage,
    "Answer": _Answer,
    "Fork": _Fork,
}
"""The request bodies, by the names the OpenAPI document gives them."""


class SessionRoutes:
    """The session routes over ``store`` (see the module docstring).

    Args:
        store: The server's sessions.
        limits: The server's caps (runs at once, message size).
        heartbeat: Seconds without an event before an event stream sends a
            ``: heartbeat`` comment.
        max_body_size: Bytes a request body may hold.
    """

    def __init__(
        self, store: SessionStore, *, limits: ServerLimits, heartbeat: float, max_body_size: int
    ) -> None:
        self.store = store
        self.limits = limits
        self.heartbeat = heartbeat
        self.max_body_size = max_body_size

    def routes(self) -> list[Route]:
        """The routes, each wrapped so that its failures are JSON error answers."""
        return [
            Route("/sessions", endpoint(self.create_session), methods=["POST"]),
            Route("/sessions/{session_id}", endpoint(self.delete_session), methods=["DELETE"]),
            # One route for both methods, so that a 405 lists both in its Allow header.
            Route(
                "/sessions/{session_id}/messages",
                endpoint(self.messages),
                methods=["GET", "POST"],
            ),
            Route("/sessions/{session_id}/events", endpoint(self.get_events), methods=["GET"]),
            Route(
                "/sessions/{session_id}/confirmations/{tool_call_id}",
                endpoint(self.answer),
                methods=["POST"],
            ),
            Route("/sessions/{session_id}/run", endpoint(self.cancel_run), methods=["DELETE"]),
            Route("/sessions/{session_id}/fork", endpoint(self.fork), methods=["POST"]),
        ]

    async def _session(self, request: Request) -> Session:
        return await self.store.open(request.path_params["session_id"])

    async def _body(self, request: Request, model: type[M]) -> M:
        return validate(model, await read_json(request, self.max_body_size))

    async def create_session(self, request: Request) -> Response:
        """``POST /sessions``: a new session, 201 with its id."""
        await self._body(request, _NewSession)
        session = await self.store.create()
        return JSONResponse(
            {"id": session.id}, status_code=201, headers={"Location": f"/sessions/{session.id}"}
        )

    async def delete_session(self, request: Request) -> Response:
        """``DELETE /sessions/{id}``: the session closed (its run cancelled), 204."""
        await self.store.remove(request.path_params["session_id"])
        return Response(status_code=204)

    async def messages(self, request: Request) -> Response:
        """``/sessions/{id}/messages``: POST a message, GET the conversation."""
        if request.method == "POST":
            return await self.post_message(request)
        return await self.get_messages(request)

    async def post_message(self, request: Request) -> Response:
        """``POST /sessions/{id}/messages``: a run of the message, its events as SSE."""
        session = await self._session(request)
        body = await self._body(request, _NewMessage)
        self.limits.check_message(body.message)
        self.limits.check_run(self.store.runs)
        run = await session.start(body.message)
        return EventStream(
            frames(session.follow_encoded(run.after, run=run, heartbeat=self.heartbeat))
        )

    async def get_messages(self, request: Request) -> Response:
        """``GET /sessions/{id}/messages``: the conversation so far."""
        session = await self._session(request)
        messages = await session.messages()
        return JSONResponse({"messages": [m.model_dump(mode="json") for m in messages]})

    async def get_events(self, request: Request) -> Response:
        """``GET /sessions/{id}/events``: the events after ``Last-Event-ID``, then live."""
        session = await self._session(request)
        after = after_of(request)
        try:
            await session.check_after(after)
        except ValueError as error:
            raise HTTPError(422, "invalid_after", str(error)) from None
        return EventStream(frames(session.follow_encoded(after, heartbeat=self.heartbeat)))

    async def answer(self, request: Request) -> Response:
        """``POST /sessions/{id}/confirmations/{call_id}``: a confirmation answered."""
        session = await self._session(request)
        body = await self._body(request, _Answer)
        tool_call_id = request.path_params["tool_call_id"]
        await session.confirm(tool_call_id, body.decision, body.reason)
        return JSONResponse({"tool_call_id": tool_call_id, "decision": body.decision})

    async def cancel_run(self, request: Request) -> Response:
        """``DELETE /sessions/{id}/run``: the run cancelled wherever it runs, 202."""
        await (await self._session(request)).cancel()
        return JSONResponse({"status": "cancelling"}, status_code=202)

    async def fork(self, request: Request) -> Response:
        """``POST /sessions/{id}/fork``: the session branched at an event, 201 with the new id."""
        await self._session(request)
        body = await self._body(request, _Fork)
        if body.message is not None:
            self.limits.check_message(body.message)
        # A fork inside a run goes on with a run of its own, counted with the others.
        self.limits.check_run(self.store.runs)
        session = await self.store.fork(
            request.path_params["session_id"], body.at, message=body.message
        )
        return JSONResponse(
            {"id": session.id}, status_code=201, headers={"Location": f"/sessions/{session.id}"}
        )
