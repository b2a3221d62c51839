"""Issue 17, points 1-3: who may talk to the server, and what its logs may say.

Authentication (a bearer token, compared in constant time; 401 otherwise), the refusal
to listen beyond loopback without one, Host and Origin checks (a DNS-rebinding-shaped
request and a cross-site form POST are both refused, before any route runs), JSON-only
bodies (415), CORS only for named origins, and logs of a real ``agentrt serve`` that
carry no session id, token or confirmation payload.
"""

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrt.server import create_app, make_server
from agentrt.server._redact import RedactingFilter, redact
from agentrt.server.app import InsecureBindError
from agentrt.server.security import SecurityPolicy
from tests.cli.support import cli, serving, write
from tests.server_support import ADD_SCRIPT, factory_of, in_process, real_server

TOKEN = "s3cret-t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


# -- 1. authentication ------------------------------------------------------------------------


async def test_with_a_token_every_route_but_health_needs_it() -> None:
    async with real_server(factory_of(ADD_SCRIPT), token=TOKEN) as (server, client):
        missing = await client.post("/sessions")
        wrong = await client.post("/sessions", headers={"Authorization": f"Bearer {TOKEN}x"})
        prefix = await client.post("/sessions", headers={"Authorization": f"Bearer {TOKEN[:-1]}"})
        basic = await client.post("/sessions", headers={"Authorization": f"Basic {TOKEN}"})
        listing = await client.get("/sessions/" + "A" * 32 + "/messages")
        health = await client.get("/healthz")
        page = await client.get("/")
        page_with_header = await client.get("/", headers=AUTH)
        created = await client.post("/sessions", headers=AUTH)
        assert not server.sessions.sessions or len(server.sessions.sessions) == 1
    for refused in (missing, wrong, prefix, basic, listing):
        assert refused.status_code == 401
        assert code(refused) == "unauthorized"
        assert refused.headers["www-authenticate"] == 'Bearer realm="agentrt"'
        assert TOKEN not in refused.text
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    # The page too is a 401 without the token; it holds no data (every route it calls
    # needs the token), so it is the page all the same, and asks with its own form.
    assert page.status_code == 401
    assert page.headers["www-authenticate"] == 'Bearer realm="agentrt"'
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert '<form id="token-form"' in page.text
    assert TOKEN not in page.text
    assert page_with_header.status_code == 200
    assert "authFetch" in page_with_header.text
    assert created.status_code == 201


async def test_the_one_time_url_lets_the_page_in_and_its_cookie_lets_it_in_again() -> None:
    async with real_server(factory_of(ADD_SCRIPT), token=TOKEN) as (_, client):
        wrong = await client.get("/", params={"token": TOKEN + "x"})
        first = await client.get("/", params={"token": TOKEN})
        cookie = first.headers["set-cookie"]
        key = cookie.split(";", 1)[0]
        again = await client.get("/", headers={"Cookie": key})
        forged = await client.get("/", headers={"Cookie": "agentrt_page=" + "A" * 43})
        # The cookie admits the page only, never an API route.
        api = await client.post("/sessions", headers={"Cookie": key})
    assert wrong.status_code == 401
    assert "set-cookie" not in wrong.headers
    assert first.status_code == 200
    assert "authFetch" in first.text
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in cookie.split(";")}
    assert TOKEN not in cookie
    assert again.status_code == 200
    assert forged.status_code == 401
    assert api.status_code == 401


async def test_the_page_takes_the_token_from_the_address_or_asks_with_its_form() -> None:
    async with real_server(factory_of(ADD_SCRIPT), token=TOKEN) as (_, client):
        page = (await client.get("/", headers=AUTH)).text
    # The page moves the token from the address (?token=, the one way) to sessionStorage,
    # removes it from the address bar, and every request carries it as a bearer token;
    # a 401 shows its form (tests/test_server_browser_token.py drives it in a browser).
    for needed in (
        'query.get("token")',
        "history.replaceState",
        "sessionStorage",
        "Bearer ${token}",
        "status !== 401",
        '<form id="token-form"',
    ):
        assert needed in page
    assert "window.prompt" not in page
    assert "location.hash.match" not in page


def test_binding_beyond_loopback_without_a_token_refuses_to_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(
        InsecureBindError, match=r"refusing to listen on '0\.0\.0\.0' without a token"
    ):
        make_server(factory_of(ADD_SCRIPT), host="0.0.0.0", port=0)
    make_server(factory_of(ADD_SCRIPT), host="0.0.0.0", port=0, token=TOKEN)
    with caplog.at_level(logging.WARNING, logger="agentrt.server"):
        make_server(factory_of(ADD_SCRIPT), host="0.0.0.0", port=0, insecure=True)
    assert "WITHOUT authentication (--insecure)" in caplog.text


def test_the_cli_refuses_a_public_address_without_a_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = cli(capsys, "serve", "json:dumps", "--host", "0.0.0.0")
    assert result.code == 2
    assert "refusing to listen on '0.0.0.0' without a token" in result.err
    short = cli(capsys, "serve", "json:dumps", "--token", "short")
    assert short.code == 2
    assert "at least 8 characters" in short.err
    no_runs = cli(capsys, "serve", "json:dumps", "--max-runs", "0")
    assert no_runs.code == 2
    assert "max_runs must be a positive int, got 0" in no_runs.err


# -- 2. Host, Origin, CORS, JSON only ---------------------------------------------------------


async def test_a_dns_rebinding_request_is_refused_before_any_route() -> None:
    async with real_server(factory_of(ADD_SCRIPT)) as (server, client):
        rebound = await client.post("/sessions", headers={"Host": f"evil.example:{server.port}"})
        health = await client.get("/healthz", headers={"Host": "evil.example"})
        own = await client.post("/sessions", headers={"Host": f"localhost:{server.port}"})
        sessions = len(server.sessions.sessions)
    assert (rebound.status_code, code(rebound)) == (403, "host_not_allowed")
    assert health.status_code == 403
    assert own.status_code == 201
    assert sessions == 1  # the refused request made none


async def test_a_cross_site_form_post_is_refused() -> None:
    async with real_server(factory_of(ADD_SCRIPT)) as (server, client):
        session_id = (await client.post("/sessions")).json()["id"]
        foreign = {"Origin": "https://evil.example", **FORM}
        form = await client.post("/sessions", headers=foreign, content=b"a=1")
        message = await client.post(
            f"/sessions/{session_id}/messages", headers=foreign, content=b"message=rm+-rf"
        )
        # A browser that sends no Origin still sends the form's type.
        no_origin = await client.post(
            f"/sessions/{session_id}/messages", headers=FORM, content=b"message=hi"
        )
        text = await client.post(
            f"/sessions/{session_id}/messages",
            headers={"Content-Type": "text/plain"},
            content=b'{"message": "hi"}',
        )
        null_origin = await client.delete(f"/sessions/{session_id}", headers={"Origin": "null"})
        same_origin = await client.post(
            f"/sessions/{session_id}/messages",
            headers={"Origin": f"http://127.0.0.1:{server.port}"},
            json={"message": "1+2?"},
        )
    assert [(r.status_code, code(r)) for r in (form, message, null_origin)] == [
        (403, "origin_not_allowed")
    ] * 3
    assert [(r.status_code, code(r)) for r in (no_origin, text)] == [
        (415, "unsupported_media_type")
    ] * 2
    assert same_origin.status_code == 200
    assert "stream_stopped" in same_origin.text


async def test_cors_is_off_unless_origins_are_named() -> None:
    origin = {"Origin": "https://app.example"}
    closed = create_app(factory_of(ADD_SCRIPT))
    async with in_process(closed) as client:
        plain = await client.post("/sessions", headers=origin)
    policy = SecurityPolicy(cors_origins=("https://app.example",))
    async with in_process(create_app(factory_of(ADD_SCRIPT), security=policy)) as client:
        preflight = await client.options(
            "/sessions",
            headers={**origin, "Access-Control-Request-Method": "POST"},
        )
        allowed = await client.post("/sessions", headers=origin)
        other = await client.post("/sessions", headers={"Origin": "https://evil.example"})
    assert plain.status_code == 403
    assert "access-control-allow-origin" not in plain.headers
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "Authorization" in preflight.headers["access-control-allow-headers"]
    assert allowed.status_code == 201
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert other.status_code == 403


async def test_off_loopback_only_the_allowed_names_are_answered() -> None:
    policy = SecurityPolicy.for_bind("10.1.2.3", token=TOKEN, allowed_hosts=["agent.example"])
    assert policy.allowed_hosts == ("10.1.2.3", "agent.example")
    app = create_app(factory_of(ADD_SCRIPT), security=policy)
    async with in_process(app) as client:
        named = await client.post("/sessions", headers={**AUTH, "Host": "agent.example"})
        address = await client.post("/sessions", headers={**AUTH, "Host": "10.1.2.3:8000"})
        loopback = await client.post("/sessions", headers=AUTH)  # Host: localhost
    assert (named.status_code, address.status_code, loopback.status_code) == (201, 201, 403)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"token": "short"}, ValueError),
        ({"allowed_hosts": "localhost"}, TypeError),
        ({"cors_origins": ("",)}, TypeError),
    ],
)
def test_an_unusable_policy_is_a_clear_error(
    options: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        SecurityPolicy(**options)


# -- 3. no secrets in logs --------------------------------------------------------------------


def test_redact_keeps_a_short_prefix_of_session_ids_and_no_token() -> None:
    session_id = "a1b2c3" + "d" * 26
    line = f'127.0.0.1:5 - "GET /sessions/{session_id}/events?after=0&token={TOKEN} HTTP/1.1"'
    assert redact(line) == (
        '127.0.0.1:5 - "GET /sessions/a1b2c3…/events?after=0&token=[redacted] HTTP/1.1"'
    )
    assert redact(f"Authorization: Bearer {TOKEN}") == "Authorization: Bearer [redacted]"
    record = logging.LogRecord(
        "x", logging.INFO, "", 0, "%s %s", (f"/sessions/{'z' * 32}", 5), None
    )
    RedactingFilter().filter(record)
    assert record.getMessage() == "/sessions/zzzzzz… 5"


AGENT_FILE = """
from agentrt import Agent, ModelResponse, ScriptedModel, ToolCall, tool

@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    '''Delete a file.

    Args:
        path: The file.
    '''
    return "deleted"

def make() -> Agent:
    call = ToolCall(id="call-del", name="delete_file", arguments={"path": "/tmp/x"})
    return Agent(
        model=ScriptedModel([ModelResponse(tool_calls=(call,)), "done"]),
        tools=[delete_file],
    )
"""


def test_the_logs_of_a_real_server_run_hold_no_session_id_token_or_payload(
    tmp_path: Path,
) -> None:
    target = write(tmp_path / "agent_file.py", AGENT_FILE)
    with serving(f"{target}:make", env={"AGENTRT_TOKEN": TOKEN}) as served:
        reason = "CONFIDENTIAL-REASON-do-not-log"
        with httpx.Client(base_url=served.url, headers=AUTH, timeout=20) as client:
            session_id = client.post("/sessions").json()["id"]
            with client.stream(
                "POST", f"/sessions/{session_id}/messages", json={"message": "delete it"}
            ) as run:
                lines = run.iter_lines()
                for text in lines:
                    if text == "event: tool_call_confirmation":
                        break
                decision = {"decision": "reject", "reason": reason}
                answered = client.post(
                    f"/sessions/{session_id}/confirmations/call-del", json=decision
                )
                rest = "\n".join(lines)
            events = client.get(f"/sessions/{session_id}/events?after=0&token={TOKEN}")
            client.delete(f"/sessions/{session_id}")
            missing = client.get(f"/sessions/{session_id}/messages", headers={"Authorization": ""})
    text = "".join(served.log)
    assert answered.status_code == 200, answered.text
    assert reason in rest
    assert events.status_code == 200
    assert missing.status_code == 401
    assert f"/sessions/{session_id[:6]}…/messages" in text  # the access log was written
    assert session_id not in text
    assert session_id[6:] not in text
    assert TOKEN not in text
    assert reason not in text
    assert json.dumps(decision) not in text
