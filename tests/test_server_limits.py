"""Issue 17, point 6: each server cap answers a clear 4xx/429, and the server goes on.

Fast tests, one per cap, against a real uvicorn server on loopback: a run held open by a
confirmation fills ``max_runs`` (or ``max_streams``), the next one is refused with 429 and
``Retry-After``, while every other request is answered; once the run ends the refused
request goes through. The load test driving many clients past every cap is in
tests/soak/test_server_load.py (``nox -s soak``).
"""

from typing import Any

import pytest

from agentrt.server import create_app
from agentrt.server.limits import ServerLimits
from tests.server_support import (
    ADD_SCRIPT,
    SSEReader,
    confirm_script,
    factory_of,
    in_process,
    new_session,
    real_server,
)


def _code(response: Any) -> str:
    return str(response.json()["error"]["code"])


async def test_a_run_past_max_runs_is_429_and_everyone_else_is_answered() -> None:
    limits = ServerLimits(max_runs=1)
    async with real_server(factory_of(confirm_script()), limits=limits) as (_, client):
        holder, other = await new_session(client), await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{holder}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            refused = await client.post(f"/sessions/{other}/messages", json={"message": "hi"})
            history = await client.get(f"/sessions/{other}/messages")
            created = await client.post("/sessions")
            health = await client.get("/healthz")
            await client.post(
                f"/sessions/{holder}/confirmations/call-del", json={"decision": "reject"}
            )
            await reader.rest()
        # The run has ended: the refused session's message now starts a run.
        async with client.stream(
            "POST", f"/sessions/{other}/messages", json={"message": "hi"}
        ) as later:
            await SSEReader(later).until("tool_call_confirmation")
            await client.delete(f"/sessions/{other}/run")
    assert (refused.status_code, _code(refused)) == (429, "too_many_runs")
    assert refused.headers["retry-after"] == "1"
    assert [history.status_code, created.status_code, health.status_code] == [200, 201, 200]
    assert later.status_code == 200


async def test_a_stream_past_max_streams_is_429_and_everyone_else_is_answered() -> None:
    limits = ServerLimits(max_streams=1)
    async with real_server(factory_of(confirm_script()), limits=limits) as (_, client):
        holder, other = await new_session(client), await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{holder}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            follow = await client.get(f"/sessions/{holder}/events?after=0")
            run = await client.post(f"/sessions/{other}/messages", json={"message": "hi"})
            history = await client.get(f"/sessions/{holder}/messages")
            await client.post(
                f"/sessions/{holder}/confirmations/call-del", json={"decision": "approve"}
            )
            await reader.rest()
        later = await client.get(f"/sessions/{holder}/events?after=0")
    for refused in (follow, run):
        assert (refused.status_code, _code(refused)) == (429, "too_many_streams")
        assert refused.headers["retry-after"] == "1"
    assert history.status_code == 200
    assert later.status_code == 200
    assert "stream_stopped" in later.text


async def test_a_message_over_max_message_chars_is_413_and_starts_nothing() -> None:
    app = create_app(factory_of(ADD_SCRIPT), limits=ServerLimits(max_message_chars=10))
    async with in_process(app) as client:
        session_id = await new_session(client)
        too_long = await client.post(
            f"/sessions/{session_id}/messages", json={"message": "x" * 11}
        )
        fits = await client.post(f"/sessions/{session_id}/messages", json={"message": "x" * 10})
    assert (too_long.status_code, _code(too_long)) == (413, "message_too_large")
    assert fits.status_code == 200
    assert "stream_stopped" in fits.text


async def test_stored_events_past_retain_are_410_for_a_late_reader() -> None:
    app = create_app(factory_of(ADD_SCRIPT), retain=3)
    async with in_process(app) as client:
        session_id = await new_session(client)
        run = await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
        late = await client.get(f"/sessions/{session_id}/events?after=0")
    assert run.status_code == 200
    assert (late.status_code, _code(late)) == (410, "events_expired")


@pytest.mark.parametrize(
    "options",
    [{"max_runs": 0}, {"max_streams": -1}, {"max_message_chars": None}, {"max_runs": True}],
)
def test_an_unusable_limit_is_a_clear_error(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be a positive int"):
        ServerLimits(**options)
