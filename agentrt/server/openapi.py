"""The server's OpenAPI document, generated from its request and response models.

Request bodies are the app's own validation models (passed in by
:func:`~agentrt.server.app.create_app`); responses are the models below, which describe
exactly what the routes send. Nothing here is written as JSON by hand: every schema comes
from pydantic (``models_json_schema``), so the document cannot drift from the models.
``POST /ag-ui`` takes AG-UI's ``RunAgentInput``: its schemas come from the official
``ag-ui-protocol`` models, named ``ag-ui.*`` (AG-UI has message types of the same names
as agentrt's).
"""

from collections.abc import Mapping
from typing import Any, Literal

from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import models_json_schema

from agentrt.messages import Message
from agentrt.server.agui import MAX_THREAD_ID
from agentrt.server.security import _PAGE_COOKIE

__all__ = (
    "AGUIFrame",
    "AnswerAccepted",
    "CancelAccepted",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "MessageList",
    "SSEFrame",
    "SessionCreated",
    "openapi_document",
)

_CLOSED = ConfigDict(extra="forbid")


class Health(BaseModel):
    """``GET /healthz``."""

    model_config = _CLOSED
    status: Literal["ok"]


class SessionCreated(BaseModel):
    """``POST /sessions``: the new session's id (a secret: whoever has it drives it)."""

    model_config = _CLOSED
    id: str


class MessageList(BaseModel):
    """``GET /sessions/{session_id}/messages``: the conversation so far."""

    model_config = _CLOSED
    messages: list[Message]


class AnswerAccepted(BaseModel):
    """``POST /sessions/{session_id}/confirmations/{tool_call_id}``."""

    model_config = _CLOSED
    tool_call_id: str
    decision: str


class CancelAccepted(BaseModel):
    """``DELETE /sessions/{session_id}/run``."""

    model_config = _CLOSED
    status: Literal["cancelling"]


class SSEFrame(BaseModel):
    """One Server-Sent Event of a run's stream: its type, sequence number and JSON."""

    event: str
    id: str
    data: str


class AGUIFrame(BaseModel):
    """One Server-Sent Event of ``POST /ag-ui``: ``data`` is one AG-UI event's JSON."""

    data: str


class ErrorProblem(BaseModel):
    """One problem of a 422 body."""

    model_config = _CLOSED
    field: str
    problem: str


class ErrorDetail(BaseModel):
    """What went wrong: a stable ``code`` and a sentence."""

    model_config = _CLOSED
    code: str
    message: str
    details: list[ErrorProblem] | None = None


class ErrorBody(BaseModel):
    """Every error answer: ``{"error": {"code": ..., "message": ...}}``."""

    model_config = _CLOSED
    error: ErrorDetail


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_SESSION = {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}
_CALL = {"name": "tool_call_id", "in": "path", "required": True, "schema": {"type": "string"}}
_AFTER = {
    "name": "after",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 0},
}
_EVENT_STREAM = {"text/event-stream": {"schema": _ref("SSEFrame")}}
_AG_UI_STREAM = {"text/event-stream": {"schema": _ref("AGUIFrame")}}
_AG_UI = "ag-ui."
_REASONS = {
    400: "Bad request (not JSON, bad Content-Length)",
    401: "No or wrong bearer token",
    403: "Host or Origin not allowed",
    404: "No such session, tool call or route",
    405: "Method not allowed",
    409: "Conflicts with the session's run",
    410: "The events asked for are no longer kept",
    413: "Body or message too large",
    415: "The body is not JSON",
    422: "The body or a parameter is invalid",
    429: "A server limit is reached (see Retry-After)",
    503: "Too many sessions, or the server is not running",
}


def _json(name: str) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(name)}}


def _operation(
    operation_id: str,
    summary: str,
    ok: tuple[int, dict[str, Any] | None],
    errors: tuple[int, ...],
    *,
    parameters: tuple[dict[str, Any], ...] = (),
    body: str | None = None,
    body_required: bool = True,
    public: bool = False,
) -> dict[str, Any]:
    status, content = ok
    responses: dict[str, Any] = {str(status): {"description": "OK"}}
    if content is not None:
        responses[str(status)]["content"] = content
    common = (403,) if public else (401, 403)
    for code in sorted({*errors, *common}):
        responses[str(code)] = {"description": _REASONS[code], "content": _json("ErrorBody")}
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "responses": responses,
    }
    if parameters:
        operation["parameters"] = list(parameters)
    if body is not None:
        operation["requestBody"] = {"required": body_required, "content": _json(body)}
    if public:
        operation["security"] = []
    return operation


# How a browser, which sends no headers when it loads a page, opens the page of a server
# with a token (see agentrt.server.security): the one-time URL, then the page's cookie.
_PAGE_SCHEMES = {
    "pageToken": {"type": "apiKey", "in": "query", "name": "token"},
    "pageCookie": {"type": "apiKey", "in": "cookie", "name": _PAGE_COOKIE},
}
_HTML = {"text/html": {"schema": {"type": "string"}}}


def _page_operation(token: bool) -> dict[str, Any]:
    """``GET /``: open without a token; with one, a 401 form asks for it."""
    if not token:
        return _operation("page", "The web page", (200, _HTML), (), public=True)
    operation = _operation(
        "page",
        "The web page: with the bearer token, the one-time URL /?token=TOKEN or the "
        "cookie that URL sets; without them a 401 whose HTML form asks for the token",
        (200, _HTML),
        (),
    )
    operation["responses"]["401"] = {
        "description": "No token: an HTML form that asks for it",
        "content": _HTML,
    }
    operation["security"] = [{"bearer": []}, *({name: []} for name in _PAGE_SCHEMES)]
    return operation


def openapi_document(
    requests: Mapping[str, type[BaseModel]], *, token: bool, page: bool, version: str
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the routes of :func:`~agentrt.server.create_app`.

    Args:
        requests: The request body models, by schema name (``NewSession``,
            ``NewMessage``, ``Answer``, ``Fork``).
        token: Whether the server requires a bearer token.
        page: Whether ``GET /`` serves the web page.
        version: The API's version (agentrt's).
    """
    responses = (
        Health,
        SessionCreated,
        MessageList,
        AnswerAccepted,
        CancelAccepted,
        ErrorBody,
        SSEFrame,
        AGUIFrame,
    )
    pairs = [(model, "validation") for model in requests.values()]
    pairs += [(model, "serialization") for model in responses]
    _, schemas = models_json_schema(pairs, ref_template="#/components/schemas/{model}")  # type: ignore[arg-type]
    components: dict[str, Any] = dict(schemas.get("$defs", {}))
    for name, model in requests.items():
        # The request models are private classes: publish them under their API names.
        components[name] = components.pop(model.__name__)
    _, ag_ui = models_json_schema(
        [(RunAgentInput, "validation")], ref_template=f"#/components/schemas/{_AG_UI}{{model}}"
    )
    components.update({_AG_UI + name: schema for name, schema in ag_ui["$defs"].items()})
    # The one bound the server adds to AG-UI's input, said where clients read it.
    thread_id = components[f"{_AG_UI}RunAgentInput"]["properties"]["threadId"]
    thread_id.update(minLength=1, maxLength=MAX_THREAD_ID)
    session_errors = (404, 429)
    paths: dict[str, Any] = {
        "/healthz": {
            "get": _operation(
                "health", "Health check (no token needed)", (200, _json("Health")), (), public=True
            )
        },
        "/openapi.json": {
            "get": _operation(
                "openapi",
                "This document",
                (200, {"application/json": {"schema": {"type": "object"}}}),
                (),
            )
        },
        "/sessions": {
            "post": _operation(
                "createSession",
                "Create a session",
                (201, _json("SessionCreated")),
                (400, 413, 415, 422, 503),
                body="NewSession",
                body_required=False,
            )
        },
        "/sessions/{session_id}": {
            "delete": _operation(
                "deleteSession", "Close a session", (204, None), (404,), parameters=(_SESSION,)
            )
        },
        "/sessions/{session_id}/messages": {
            "post": _operation(
                "sendMessage",
                "Send a message: the run as Server-Sent Events",
                (200, _EVENT_STREAM),
                (*session_errors, 400, 409, 413, 415, 422, 503),
                parameters=(_SESSION,),
                body="NewMessage",
            ),
            "get": _operation(
                "getMessages",
                "The conversation",
                (200, _json("MessageList")),
                (404,),
                parameters=(_SESSION,),
            ),
        },
        "/sessions/{session_id}/events": {
            "get": _operation(
                "getEvents",
                "The session's events after a sequence number, then live ones (SSE)",
                (200, _EVENT_STREAM),
                (*session_errors, 410, 422),
                parameters=(_SESSION, _AFTER),
            )
        },
        "/sessions/{session_id}/confirmations/{tool_call_id}": {
            "post": _operation(
                "answerConfirmation",
                "Approve or reject a tool call waiting for confirmation",
                (200, _json("AnswerAccepted")),
                (404, 400, 409, 413, 415, 422),
                parameters=(_SESSION, _CALL),
                body="Answer",
            )
        },
        "/sessions/{session_id}/fork": {
            "post": _operation(
                "forkSession",
                "Branch the session at one of its events into a new session (with "
                "message: the last user message there replaced, and answered)",
                (201, _json("SessionCreated")),
                (*session_errors, 400, 409, 410, 413, 415, 422, 503),
                parameters=(_SESSION,),
                body="Fork",
            )
        },
        "/sessions/{session_id}/run": {
            "delete": _operation(
                "cancelRun",
                "Cancel the session's run",
                (202, _json("CancelAccepted")),
                (404, 409),
                parameters=(_SESSION,),
            )
        },
        "/ag-ui": {
            "post": _operation(
                "runAgUi",
                "Run an AG-UI thread: the run as AG-UI events (Server-Sent Events)",
                (200, _AG_UI_STREAM),
                (400, 404, 409, 413, 415, 422, 429, 503),
                body=f"{_AG_UI}RunAgentInput",
            )
        },
    }
    # Links: a stateful fuzzer (and a reader) learns where a session id goes.
    created = paths["/sessions"]["post"]["responses"]["201"]
    created["links"] = {
        target: {"operationId": target, "parameters": {"session_id": "$response.body#/id"}}
        for target in (
            "sendMessage",
            "getMessages",
            "getEvents",
            "forkSession",
            "cancelRun",
            "deleteSession",
        )
    }
    # A fork's answer is a session like any other.
    paths["/sessions/{session_id}/fork"]["post"]["responses"]["201"]["links"] = created["links"]
    if page:
        paths["/"] = {"get": _page_operation(token)}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "agentrt server", "version": version},
        "paths": paths,
        "components": {"schemas": components},
    }
    if token:
        document["components"]["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"},
            **_PAGE_SCHEMES,
        }
        document["security"] = [{"bearer": []}]
    else:
        for item in paths.values():
            for operation in item.values():
                operation["responses"].pop("401", None)
                operation.pop("security", None)
    return document
