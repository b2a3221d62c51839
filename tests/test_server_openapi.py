"""Issue 17, point 4: GET /openapi.json, generated from the request and response models.

The fuzzing itself (schemathesis against a real server, every route, with and without a
token) is ``nox -s fuzz`` (tests/fuzz/run.py).
"""

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import RunAgentInput

from agentrt.messages import UserMessage
from agentrt.server import create_app
from agentrt.server.openapi import MessageList, SessionCreated
from agentrt.server.security import SecurityPolicy
from tests.server_support import ADD_SCRIPT, factory_of, in_process, new_session

TOKEN = "openapi-token-123"


async def _document(app_options: dict[str, object], headers: dict[str, str]) -> httpx.Response:
    app = create_app(factory_of(ADD_SCRIPT), **app_options)  # type: ignore[arg-type]
    async with in_process(app) as client:
        return await client.get("/openapi.json", headers=headers)


async def test_the_document_lists_every_route_with_schemas_from_the_models() -> None:
    response = await _document({}, {})
    document = response.json()
    assert response.status_code == 200
    assert document["openapi"] == "3.1.0"
    assert set(document["paths"]) == {
        "/",
        "/healthz",
        "/openapi.json",
        "/sessions",
        "/sessions/{session_id}",
        "/sessions/{session_id}/messages",
        "/sessions/{session_id}/events",
        "/sessions/{session_id}/confirmations/{tool_call_id}",
        "/sessions/{session_id}/run",
        "/sessions/{session_id}/fork",
        "/ag-ui",
    }
    schemas = document["components"]["schemas"]
    # The models' own schemas: a field added to a model appears here by itself.
    assert schemas["SessionCreated"]["required"] == list(SessionCreated.model_fields)
    assert schemas["NewMessage"]["properties"]["message"] == {
        "minLength": 1,
        "title": "Message",
        "type": "string",
    }
    assert schemas["Answer"]["properties"]["decision"]["enum"] == [
        "approve",
        "approve-session",
        "approve-tool",
        "reject",
    ]
    assert "UserMessage" in schemas
    assert "MessageList" in schemas
    MessageList(messages=[UserMessage(content="hi")])  # the model the route answers with
    assert "security" not in document
    post = document["paths"]["/sessions/{session_id}/messages"]["post"]
    assert set(post["responses"]) >= {"200", "404", "409", "413", "415", "422", "429"}
    assert "401" not in post["responses"]
    fork = document["paths"]["/sessions/{session_id}/fork"]["post"]
    assert fork["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Fork"
    }
    assert set(schemas["Fork"]["properties"]) == {"at", "message"}
    assert schemas["Fork"]["required"] == ["at"]
    assert set(fork["responses"]) >= {"201", "404", "409", "410", "422"}


def refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


async def test_ag_ui_takes_run_agent_input_from_the_official_models_beside_our_own() -> None:
    document = (await _document({}, {})).json()
    schemas = document["components"]["schemas"]
    post = document["paths"]["/ag-ui"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ag-ui.RunAgentInput"}
    # The official model's own schema, field for field (a field AG-UI adds appears here).
    official = RunAgentInput.model_json_schema(mode="validation")
    assert set(schemas["ag-ui.RunAgentInput"]["properties"]) == set(official["properties"])
    assert {"threadId", "runId", "messages"} <= set(schemas["ag-ui.RunAgentInput"]["required"])
    # Same names, different messages: AG-UI's do not replace agentrt's.
    assert "reasoning" in schemas["AssistantMessage"]["properties"]
    assert "toolCalls" in schemas["ag-ui.AssistantMessage"]["properties"]
    assert set(post["responses"]) >= {"200", "409", "413", "422", "429", "503"}
    frame = post["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert frame == {"$ref": "#/components/schemas/AGUIFrame"}
    assert schemas["AGUIFrame"]["required"] == ["data"]
    prefix = "#/components/schemas/"
    dangling = {ref for ref in refs(document) if ref.removeprefix(prefix) not in schemas}
    assert dangling == set()


async def test_with_a_token_the_document_needs_it_and_declares_bearer_auth() -> None:
    options: dict[str, object] = {"security": SecurityPolicy(token=TOKEN)}
    refused = await _document(options, {})
    document = (await _document(options, {"Authorization": f"Bearer {TOKEN}"})).json()
    assert refused.status_code == 401
    assert document["security"] == [{"bearer": []}]
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    health = document["paths"]["/healthz"]["get"]
    assert health["security"] == []
    assert "401" in document["paths"]["/sessions"]["post"]["responses"]


async def test_a_json_null_body_is_not_an_empty_object() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        null = await client.post("/sessions", content=b"null")
        empty = await client.post("/sessions")
    assert null.status_code == 422
    assert empty.status_code == 201


async def test_an_empty_after_is_422_and_an_empty_last_event_id_is_the_start() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
        empty = await client.get(f"/sessions/{session_id}/events?after=")
        header = await client.get(f"/sessions/{session_id}/events", headers={"Last-Event-ID": ""})
    assert (empty.status_code, empty.json()["error"]["code"]) == (422, "invalid_after")
    assert header.status_code == 200
    assert "stream_stopped" in header.text


def _required_schemes(document: dict[str, Any], operation: dict[str, Any]) -> list[set[str]]:
    """The alternatives of an operation's security (OpenAPI: the operation's, else global)."""
    security = operation.get("security", document.get("security", []))
    return [set(requirement) for requirement in security]


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no token", "token"])
async def test_the_document_says_what_get_page_needs_and_the_server_does_that(
    token: str | None,
) -> None:
    app = create_app(factory_of(ADD_SCRIPT), security=SecurityPolicy(token=token))
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    async with in_process(app) as client:
        document = (await client.get("/openapi.json", headers=auth)).json()
        anonymous = await client.get("/")
        by_scheme = {
            "bearer": await client.get("/", headers=auth),
            "pageToken": await client.get("/", params={"token": token or ""}),
        }
        cookie = by_scheme["pageToken"].headers.get("set-cookie", "").split(";", 1)[0]
        by_scheme["pageCookie"] = await client.get("/", headers={"Cookie": cookie})
    page = document["paths"]["/"]["get"]
    alternatives = _required_schemes(document, page)
    # What the document says an anonymous request gets is what it gets.
    assert (anonymous.status_code == 200) == (alternatives in ([], [set()]))
    documented = page["responses"][str(anonymous.status_code)]
    assert anonymous.headers["content-type"].split(";")[0] in documented["content"]
    # Each way in that the document names lets the page in.
    schemes = document["components"].get("securitySchemes", {})
    for alternative in alternatives:
        for name in alternative:
            assert name in schemes
            assert by_scheme[name].status_code == 200, name
    if token:
        assert anonymous.status_code == 401
        assert {frozenset(a) for a in alternatives} == {frozenset({n}) for n in by_scheme}
        assert schemes["pageCookie"]["name"] == cookie.split("=", 1)[0]
