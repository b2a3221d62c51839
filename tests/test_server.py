"""The HTTP/SSE server in process: sessions and runs, every route's errors and codes.

These tests call the app through ``httpx.ASGITransport``, which returns a response once
the app has finished it. The tests that read a run while it waits (confirmations,
heartbeats, disconnects), the page and a slow reader are tests/test_server_real.py's.
"""

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest

from agentrt import Agent
from agentrt.server import (
    ServerLimits,
    create_app,
)
from agentrt.stream import (
    ErrorEvent,
    validate,
)
from tests.server_support import (
    ADD_SCRIPT,
    BASE,
    Gate,
    assert_consistent,
    assert_error,
    confirm_script,
    decode,
    error_code,
    factory_of,
    in_process,
    known,
    new_session,
    only,
    real_server,
    store_of,
    text_of,
    tool_responses,
    types,
)

# -- sessions and runs --------------------------------------------------------------------


async def test_create_session_returns_an_unguessable_id() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        first = await client.post("/sessions")
        second = await client.post("/sessions", json={})
    assert first.status_code == second.status_code == 201
    ids = {first.json()["id"], second.json()["id"]}
    assert len(ids) == 2
    # secrets.token_urlsafe(24): 32 URL-safe characters, 192 random bits.
    assert all(len(i) == 32 for i in ids)
    assert first.headers["location"] == f"/sessions/{first.json()['id']}"


async def test_post_message_streams_the_run_as_sse() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    events = decode(response.content)
    assert [item.sequence for item in events] == list(range(1, len(events) + 1))
    assert types(events)[:2] == ["user_message", "stream_started"]
    assert types(events)[-1] == "stream_stopped"
    assert "tool_call_response" in types(events)
    assert {event.session_id for event in known(events)} == {session_id}
    assert validate([item.event for item in events]) == []
    # Each frame names its type and sequence number.
    assert response.content.startswith(b"event: user_message\nid: 1\ndata: {")


async def test_async_agent_factories_are_awaited() -> None:
    async def make() -> Agent:
        return factory_of(["hello"])()

    app = create_app(make)
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", json={"message": "hi"})
    assert text_of(decode(response.content)) == "hello"


async def test_get_messages_returns_the_conversation() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        empty = await client.get(f"/sessions/{session_id}/messages")
        await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
        response = await client.get(f"/sessions/{session_id}/messages")
    assert empty.json() == {"messages": []}
    messages = response.json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == "1+2?"
    assert messages[1]["tool_calls"][0] == {
        "id": "call-add",
        "name": "add",
        "arguments": '{"a": 1, "b": 2}',
    }
    assert messages[2]["content"] == "3"
    assert messages[3]["content"] == "1 + 2 = 3"


async def test_events_replay_from_after_or_last_event_id_across_runs() -> None:
    app = create_app(factory_of([*ADD_SCRIPT, "again"]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        url = f"/sessions/{session_id}/events"
        nothing_yet = await client.get(url)
        first = decode(
            (await client.post(f"/sessions/{session_id}/messages", json={"message": "a"})).content
        )
        second = decode(
            (await client.post(f"/sessions/{session_id}/messages", json={"message": "b"})).content
        )
        everything = decode((await client.get(url)).content)
        after_3 = decode((await client.get(url, params={"after": 3})).content)
        # The header wins over the query: EventSource reconnects to its first URL.
        header = decode(
            (await client.get(url, params={"after": 1}, headers={"Last-Event-ID": "5"})).content
        )
        caught_up = await client.get(url, params={"after": everything[-1].sequence})
    assert nothing_yet.status_code == 200
    assert nothing_yet.content == b""
    # One numbering for the whole session: the second run goes on from the first.
    assert second[0].sequence == first[-1].sequence + 1
    assert everything == first + second
    assert after_3 == everything[3:]
    assert header == everything[5:]
    assert caught_up.status_code == 200
    assert caught_up.content == b""


async def test_a_failing_run_is_an_error_event_and_the_session_goes_on() -> None:
    app = create_app(factory_of([RuntimeError("the model broke"), "recovered"]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        failed = await client.post(f"/sessions/{session_id}/messages", json={"message": "a"})
        then = await client.post(f"/sessions/{session_id}/messages", json={"message": "b"})
    events = decode(failed.content)
    assert failed.status_code == 200
    assert types(events)[-2:] == ["error", "stream_stopped"]
    assert "the model broke" in only(events, ErrorEvent)[0].error
    assert types(decode(then.content))[-1] == "stream_stopped"
    assert "agent_choice" in types(decode(then.content))


async def test_stream_options_reach_each_runs_adapter() -> None:
    app = create_app(factory_of(confirm_script()), stream_options={"auto_approve": True})
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", json={"message": "rm"})
    events = decode(response.content)
    assert "tool_call_confirmation" not in types(events)
    assert tool_responses(events) == ["deleted notes.txt"]


async def test_post_while_a_run_is_in_progress_is_409_and_cancel_stops_it() -> None:
    gate = Gate()
    app = create_app(factory_of(gate.script(), extra_tools=[gate.tool]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(
                await client.post(f"/sessions/{session_id}/messages", json={"message": "go"})
            )

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            busy = await client.post(f"/sessions/{session_id}/messages", json={"message": "2"})
            cancel = await client.delete(f"/sessions/{session_id}/run")
        again = await client.delete(f"/sessions/{session_id}/run")
        unknown = await client.delete("/sessions/nope/run")
        agent = store_of(app).sessions[session_id].agent
        assert_consistent(agent)
    assert_error(busy, 409, "run_in_progress")
    assert cancel.status_code == 202
    assert cancel.json() == {"status": "cancelling"}
    assert_error(again, 409, "no_run")
    assert_error(unknown, 404, "session_not_found")
    events = decode(runs[0].content)
    # Cancelled: no final answer, and still a complete, valid stream.
    assert types(events)[-1] == "stream_stopped"
    assert "after the gate" not in text_of(events)
    assert validate([e.event for e in events]) == []


async def test_delete_session_closes_it_and_cancels_its_run() -> None:
    gate = Gate()
    app = create_app(factory_of(gate.script(), extra_tools=[gate.tool]))
    async with in_process(app) as client:
        session_id = await new_session(client)
        agent = store_of(app).sessions[session_id].agent
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(
                await client.post(f"/sessions/{session_id}/messages", json={"message": "go"})
            )

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            deleted = await client.delete(f"/sessions/{session_id}")
        gone = await client.get(f"/sessions/{session_id}/messages")
        twice = await client.delete(f"/sessions/{session_id}")
    assert deleted.status_code == 204
    assert agent.closed
    assert types(decode(runs[0].content))[-1] == "stream_stopped"
    assert_error(gone, 404, "session_not_found")
    assert twice.status_code == 404


# -- errors -------------------------------------------------------------------------------

SESSION_ROUTES = [
    ("POST", "/sessions/{id}/messages", {"json": {"message": "hi"}}),
    ("GET", "/sessions/{id}/messages", {}),
    ("GET", "/sessions/{id}/events", {}),
    ("POST", "/sessions/{id}/confirmations/call-1", {"json": {"decision": "approve"}}),
    ("DELETE", "/sessions/{id}/run", {}),
    ("DELETE", "/sessions/{id}", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), SESSION_ROUTES)
async def test_unknown_sessions_are_404(method: str, path: str, kwargs: dict[str, Any]) -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        await new_session(client)
        # A well-formed id that was never handed out.
        response = await client.request(method, path.format(id="A" * 32), **kwargs)
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"


async def test_an_unknown_session_under_a_memory_store_says_a_restart_loses_sessions() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        response = await client.get("/sessions/" + "A" * 32 + "/messages")
    assert_error(response, 404, "session_not_found")
    message = response.json()["error"]["message"]
    assert "in memory: they do not survive a restart" in message


async def test_every_refusal_has_one_error_format_whichever_layer_wrote_it() -> None:
    token = "s3cret-t0ken-for-tests"
    auth = {"Authorization": f"Bearer {token}"}
    limits = ServerLimits(max_message_chars=5)
    async with real_server(factory_of(ADD_SCRIPT), token=token, limits=limits) as (_, client):
        session_id = (await client.post("/sessions", headers=auth)).json()["id"]
        url = f"/sessions/{session_id}/messages"
        answers = {
            "unauthorized": await client.post("/sessions"),
            "host_not_allowed": await client.get("/sessions", headers={"Host": "evil.example"}),
            "origin_not_allowed": await client.post(
                "/sessions", headers={**auth, "Origin": "https://evil.example"}
            ),
            "unsupported_media_type": await client.post(
                url, headers={**auth, "Content-Type": "text/plain"}, content=b"hi"
            ),
            "not_found": await client.get("/nowhere", headers=auth),
            "session_not_found": await client.get(
                "/sessions/" + "A" * 32 + "/messages", headers=auth
            ),
            "method_not_allowed": await client.put("/sessions", headers=auth),
            "invalid_json": await client.post(url, headers=auth, content=b"{nope"),
            "invalid_body": await client.post(url, headers=auth, json={"message": 5}),
            "message_too_large": await client.post(url, headers=auth, json={"message": "123456"}),
        }
    # error_code checks the one format: {"error": {"code", "message"[, "details"]}} as
    # application/json, encoded byte for byte alike (agentrt.server._errors.error_body).
    assert {code: error_code(response) for code, response in answers.items()} == {
        code: code for code in answers
    }


BAD_BODIES: list[tuple[str, dict[str, Any], int, str]] = [
    ("not JSON", {"content": b"{not json"}, 400, "invalid_json"),
    ("not UTF-8", {"content": b'{"message": "\xff"}'}, 400, "invalid_json"),
    ("nested too deep", {"content": b"[" * 100_000}, 400, "invalid_json"),
    ("wrong type", {"json": {"message": 5}}, 422, "invalid_body"),
    ("unknown field", {"json": {"message": "hi", "stream": True}}, 422, "invalid_body"),
    ("missing field", {"json": {}}, 422, "invalid_body"),
    ("empty body", {}, 422, "invalid_body"),
    ("empty message", {"json": {"message": ""}}, 422, "invalid_body"),
    ("not an object", {"json": ["hi"]}, 422, "invalid_body"),
    ("a number", {"content": b"12"}, 422, "invalid_body"),
]


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [case[1:] for case in BAD_BODIES],
    ids=[case[0] for case in BAD_BODIES],
)
async def test_bad_message_bodies_are_4xx(kwargs: dict[str, Any], status: int, code: str) -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(f"/sessions/{session_id}/messages", **kwargs)
        # Nothing was started: the session still takes a message.
        after = await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
    assert response.status_code == status
    assert error_code(response) == code
    assert types(decode(after.content))[-1] == "stream_stopped"


async def test_validation_errors_list_every_problem_without_the_input() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        response = await client.post(
            f"/sessions/{session_id}/messages", json={"message": 5, "secret": "s3cr3t"}
        )
    error = response.json()["error"]
    assert error["details"] == [
        {"field": "message", "problem": "Input should be a valid string"},
        {"field": "secret", "problem": "Extra inputs are not permitted"},
    ]
    assert "s3cr3t" not in response.text


async def test_bad_session_bodies_are_4xx() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        unknown = await client.post("/sessions", json={"model": "gpt"})
        broken = await client.post("/sessions", content=b"nope")
    assert_error(unknown, 422, "invalid_body")
    assert_error(broken, 400, "invalid_json")


async def test_oversized_bodies_are_413() -> None:
    limit = 64
    app = create_app(factory_of(["ok", "ok"]), max_body_size=limit)
    fits = b'{"message": "' + b"x" * (limit - len(b'{"message": ""}')) + b'"}'
    assert len(fits) == limit

    async def chunked() -> AsyncIterator[bytes]:
        # No Content-Length: the limit is enforced on the bytes as they stream.
        for _ in range(10):
            yield b'{"message": "' + b"x" * 20 + b'", '

    async with in_process(app) as client:
        session_id = await new_session(client)
        url = f"/sessions/{session_id}/messages"
        declared = await client.post(url, content=b"{}", headers={"Content-Length": "65"})
        streamed = await client.post(url, content=chunked())
        lying = await client.post(url, content=fits + b" " * 10, headers={"Content-Length": "10"})
        invalid = await client.post(url, content=b"{}", headers={"Content-Length": "2x"})
        at_limit = await client.post(url, content=fits)
        huge_session = await client.post("/sessions", content=b" " * (limit + 1))
    for response in (declared, streamed, lying, huge_session):
        assert response.status_code == 413
        assert error_code(response) == "body_too_large"
    assert_error(invalid, 400, "invalid_content_length")
    assert at_limit.status_code == 200


async def test_routing_errors_are_json() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        put = await client.put("/sessions")
        patch = await client.patch(f"/sessions/{session_id}/messages")
        nowhere = await client.get("/nowhere")
    assert_error(put, 405, "method_not_allowed")
    assert put.headers["allow"] == "POST"
    assert patch.status_code == 405
    assert set(patch.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    assert_error(nowhere, 404, "not_found")


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        ({"after": "abc"}, {}),
        ({"after": "-1"}, {}),
        ({}, {"Last-Event-ID": "x"}),
        ({"after": "99"}, {}),
    ],
    ids=["not a number", "negative", "bad header", "beyond the latest event"],
)
async def test_bad_resume_positions_are_422(
    params: dict[str, str], headers: dict[str, str]
) -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        await client.post(f"/sessions/{session_id}/messages", json={"message": "1+2?"})
        response = await client.get(
            f"/sessions/{session_id}/events", params=params, headers=headers
        )
    assert response.status_code == 422
    assert error_code(response) == "invalid_after"


async def test_events_older_than_the_retained_window_are_410() -> None:
    app = create_app(factory_of(ADD_SCRIPT), retain=3)
    async with in_process(app) as client:
        session_id = await new_session(client)
        session = store_of(app).sessions[session_id]
        run = await client.post(f"/sessions/{session_id}/messages", json={"message": "a"})
        # The stream ended when its reader fell behind, maybe before the run did (its
        # tool runs in a worker thread): the last event is the run's last.
        if session.run is not None:
            await session.run.done.wait()
        last = session.log.last_sequence
        expired = await client.get(f"/sessions/{session_id}/events", params={"after": 0})
        kept = await client.get(f"/sessions/{session_id}/events", params={"after": last - 3})
    # The run wrote its events faster than its reader took them, and the log keeps
    # three: the stream says so and ends (too late for a status code)...
    assert run.status_code == 200
    assert run.content.endswith(
        b": events expired: this reader fell behind the events the server keeps\n\n"
    )
    # ...and resuming from there is a 410, while the kept window is readable.
    assert_error(expired, 410, "events_expired")
    assert [e.sequence for e in decode(kept.content)] == [last - 2, last - 1, last]
    assert types(decode(kept.content))[-1] == "stream_stopped"


@pytest.mark.parametrize(
    "factory",
    [
        pytest.param(lambda: (_ for _ in ()).throw(RuntimeError("no model")), id="raises"),
        pytest.param(lambda: "not an agent", id="returns a str"),
    ],
)
async def test_unexpected_errors_are_500_without_a_traceback(
    factory: Callable[[], Any], caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(factory)
    with caplog.at_level(logging.ERROR, logger="agentrt.server"):
        async with in_process(app) as client:
            response = await client.post("/sessions")
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "internal_error",
            "message": "the server failed to handle this request; the error was logged",
        }
    }
    [record] = [r for r in caplog.records if r.name == "agentrt.server"]
    assert record.exc_info is not None


async def test_session_limit_is_503() -> None:
    app = create_app(factory_of(ADD_SCRIPT), max_sessions=1)
    async with in_process(app) as client:
        await new_session(client)
        response = await client.post("/sessions")
    assert_error(response, 503, "session_limit")


async def test_without_the_lifespan_sessions_are_503() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client:
        response = await client.post("/sessions")
    assert_error(response, 503, "not_started")


def test_options_are_checked() -> None:
    factory = factory_of(ADD_SCRIPT)
    with pytest.raises(TypeError, match="agent_factory must be a callable"):
        create_app("agent")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"unknown stream options \['buffer_size'\]"):
        create_app(factory, stream_options={"buffer_size": 3})
    with pytest.raises(ValueError, match="max_body_size"):
        create_app(factory, max_body_size=0)
    with pytest.raises(ValueError, match="heartbeat_interval"):
        create_app(factory, heartbeat_interval=0)
    with pytest.raises(ValueError, match="retain"):
        create_app(factory, retain=0)
    with pytest.raises(ValueError, match="session_ttl"):
        create_app(factory, session_ttl=-1)
    with pytest.raises(ValueError, match="max_sessions"):
        create_app(factory, max_sessions=0)


async def test_hostile_input_leaves_a_running_session_unaffected() -> None:
    gate = Gate()
    app = create_app(factory_of(gate.script(), extra_tools=[gate.tool]), max_body_size=1024)
    async with in_process(app) as client:
        running = await new_session(client)
        other = await new_session(client)
        runs: list[httpx.Response] = []

        async def post() -> None:
            runs.append(await client.post(f"/sessions/{running}/messages", json={"message": "go"}))

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            statuses = [
                (await client.post(f"/sessions/{other}/messages", content=body)).status_code
                for body in (b"\x00\x01", b"[" * 1000, b"x" * 5000, b'{"message": null}')
            ]
            statuses.append(
                (
                    await client.post(f"/sessions/{running}/confirmations/gate-1", content=b"{")
                ).status_code
            )
            gate.opened.set()
    assert statuses == [400, 400, 413, 422, 400]
    events = decode(runs[0].content)
    assert validate([e.event for e in events]) == []
    assert text_of(events) == "after the gate"
