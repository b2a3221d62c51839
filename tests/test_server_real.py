"""The HTTP/SSE server on loopback (uvicorn): runs read while they wait, the page, a slow reader.

Confirmations answered while the run waits, heartbeats, a resume after a disconnect, two
sessions at once, shutdown; nothing sleeps to synchronize.
"""

import gc
import hashlib
import re
import threading
from base64 import b64encode
from typing import Any

import anyio
import pytest
import sniffio

from agentrt import AgentEvents, Tool, ToolCall
from agentrt.messages import ToolMessage
from agentrt.models.scripted import ScriptItem
from agentrt.server import (
    SessionNotFoundError,
    SessionStore,
    StoreNotRunningError,
    create_app,
    make_server,
)
from agentrt.server.sessions import Run
from agentrt.stream import (
    StreamAdapter,
    ToolCallConfirmationEvent,
    UserMessageEvent,
    validate,
)
from tests.server_support import (
    ADD_SCRIPT,
    SSEReader,
    assert_error,
    confirm_script,
    decode,
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

# -- the page -----------------------------------------------------------------------------


async def test_the_web_page_is_one_self_contained_file() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    # No external resource: the libraries it uses (marked, DOMPurify) are inlined, and
    # its markup outside the scripts has no URL to another origin, no src= or href= but
    # data:.
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.DOTALL)
    markup = re.sub(r"<script>.*?</script>", "", page, flags=re.DOTALL)
    assert "http://" not in markup
    assert "https://" not in markup
    assert "src=" not in markup
    assert 'href="data:,"' in markup
    assert scripts[0].startswith("/**\n * marked v18.2.1 - a markdown parser")
    assert scripts[1].startswith("/*! @license DOMPurify 3.4.18 ")
    for needed in ("getReader()", "Last-Event-ID", "/confirmations/", '"details"', "token_usage"):
        assert needed in scripts[-1]
    # Every script is allowed by its hash, and nothing else is.
    policy = response.headers["content-security-policy"]
    allowed = re.search(r"script-src ([^;]*);", policy)
    assert allowed is not None
    assert allowed.group(1).split() == [
        f"'sha256-{b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts
    ]
    assert "unsafe-inline" not in policy
    assert "connect-src 'self'" in policy


async def test_the_page_can_be_left_out() -> None:
    app = create_app(factory_of(ADD_SCRIPT), page=False)
    async with in_process(app) as client:
        response = await client.get("/")
    assert response.status_code == 404


# -- a slow reader ------------------------------------------------------------------------


async def test_a_reader_that_stops_reading_blocks_neither_its_run_nor_other_sessions() -> None:
    long_answer = "word " * 2000
    app = create_app(factory_of([long_answer], chunk_size=4))
    async with in_process(app) as client:
        stalled = await new_session(client)
        other = await new_session(client)
        first_chunk = anyio.Event()
        never = anyio.Event()
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if not sent:
                return {"type": "http.request", "body": b'{"message": "talk"}', "more_body": False}
            await never.wait()
            raise AssertionError("unreachable")

        async def send(message: Any) -> None:
            sent.append(message)
            if message["type"] == "http.response.body":
                first_chunk.set()
                await never.wait()  # this client reads nothing more

        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": f"/sessions/{stalled}/messages",
            "raw_path": f"/sessions/{stalled}/messages".encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"content-type", b"application/json"), (b"host", b"localhost")],
            "client": ("127.0.0.1", 1),
            "server": ("agentrt.test", 80),
        }
        async with anyio.create_task_group() as group:
            group.start_soon(app, scope, receive, send)
            await first_chunk.wait()
            # Another session runs to the end meanwhile...
            response = await client.post(f"/sessions/{other}/messages", json={"message": "hi"})
            assert types(decode(response.content))[-1] == "stream_stopped"
            # ...and the stalled session's run finishes too: a second reader gets it all.
            replay = await client.get(f"/sessions/{stalled}/events")
            group.cancel_scope.cancel()
    events = decode(replay.content)
    assert types(events)[-1] == "stream_stopped"
    assert text_of(events) == long_answer
    assert store_of(app).retain >= len(events)


# -- against a real server ----------------------------------------------------------------


async def test_confirmations_are_answered_through_the_endpoint_while_the_run_waits() -> None:
    async with real_server(factory_of(confirm_script())) as (_, client):
        session_id = await new_session(client)
        url = f"/sessions/{session_id}/confirmations/call-del"
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            asked = await reader.until("tool_call_confirmation")
            assert isinstance(asked.event, ToolCallConfirmationEvent)
            assert asked.event.tool_call.id == "call-del"
            busy = await client.post(f"/sessions/{session_id}/messages", json={"message": "2"})
            unknown = await client.post(
                f"/sessions/{session_id}/confirmations/nope", json={"decision": "approve"}
            )
            invalid = await client.post(url, json={"decision": "maybe"})
            approved = await client.post(url, json={"decision": "approve"})
            twice = await client.post(url, json={"decision": "reject"})
            events = await reader.rest()
        after_the_run = await client.post(url, json={"decision": "approve"})
    assert_error(busy, 409, "run_in_progress")
    assert_error(unknown, 404, "unknown_tool_call")
    assert_error(invalid, 422, "invalid_decision")
    assert approved.status_code == 200
    assert approved.json() == {"tool_call_id": "call-del", "decision": "approve"}
    assert_error(twice, 409, "already_answered")
    assert_error(after_the_run, 409, "already_answered")
    assert tool_responses(events) == ["deleted notes.txt"]
    assert validate([e.event for e in events]) == []


async def test_a_rejection_carries_its_reason_to_the_model() -> None:
    async with real_server(factory_of(confirm_script())) as (server, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            rejected = await client.post(
                f"/sessions/{session_id}/confirmations/call-del",
                json={"decision": "reject", "reason": "I still need it"},
            )
            events = await reader.rest()
        agent = server.sessions.sessions[session_id].agent
    assert rejected.status_code == 200
    assert tool_responses(events) == ["rejected by the user: I still need it"]
    assert isinstance(agent.messages[2], ToolMessage)
    assert agent.messages[2].is_error


async def test_heartbeats_flow_while_a_run_waits_for_a_confirmation() -> None:
    async with real_server(factory_of(confirm_script()), heartbeat_interval=0.01) as (_, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            await reader.until_raw(b"\n: heartbeat\n\n", start=len(reader.raw))
            await client.post(
                f"/sessions/{session_id}/confirmations/call-del", json={"decision": "approve"}
            )
            events = await reader.rest()
    # Comments are not events: the decoder skipped them, the stream is intact.
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert validate([e.event for e in events]) == []


@pytest.mark.parametrize("leave_after", ["tool_call_confirmation", "partial_tool_call"])
async def test_resume_after_a_disconnect_mid_run_loses_and_repeats_nothing(
    leave_after: str,
) -> None:
    async with real_server(factory_of(confirm_script(), chunk_size=2)) as (server, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until(leave_after)
            await reader.aclose()
        # Everything read before the connection dropped, complete frames only.
        before = list(reader.events)
        # The run outlived its client: it still waits for (and accepts) the answer.
        approved = await client.post(
            f"/sessions/{session_id}/confirmations/call-del", json={"decision": "approve"}
        )
        async with client.stream(
            "GET",
            f"/sessions/{session_id}/events",
            headers={"Last-Event-ID": str(before[-1].sequence)},
        ) as response:
            rest = await SSEReader(response).rest()
        full = await server.sessions.sessions[session_id].log.read(0, 10**6)
    assert approved.status_code == 200
    assert before + rest == full
    assert [e.sequence for e in before + rest] == list(range(1, len(full) + 1))
    assert types(rest)[-1] == "stream_stopped"
    assert validate([e.event for e in before + rest]) == []


async def test_two_sessions_run_at_once_in_isolation() -> None:
    async with real_server(factory_of(confirm_script())) as (_, client):
        first = await new_session(client)
        second = await new_session(client)
        async with (
            client.stream("POST", f"/sessions/{first}/messages", json={"message": "one"}) as a,
            client.stream("POST", f"/sessions/{second}/messages", json={"message": "two"}) as b,
        ):
            reader_a, reader_b = SSEReader(a), SSEReader(b)
            # Both runs wait for an answer at the same time.
            await reader_a.until("tool_call_confirmation")
            await reader_b.until("tool_call_confirmation")
            # The same call id exists in both sessions; each answer reaches its own.
            rejected = await client.post(
                f"/sessions/{second}/confirmations/call-del",
                json={"decision": "reject", "reason": "not this one"},
            )
            approved = await client.post(
                f"/sessions/{first}/confirmations/call-del", json={"decision": "approve"}
            )
            events_a, events_b = await reader_a.rest(), await reader_b.rest()
    assert rejected.status_code == approved.status_code == 200
    for events, session_id, message in ((events_a, first, "one"), (events_b, second, "two")):
        assert {event.session_id for event in known(events)} == {session_id}
        assert [e.message for e in only(events, UserMessageEvent)] == [message]
        assert validate([e.event for e in events]) == []
    assert tool_responses(events_a) == ["deleted notes.txt"]
    assert tool_responses(events_b) == ["rejected by the user: not this one"]


async def test_ids_of_another_session_are_unknown_and_of_an_ended_run_conflict() -> None:
    async with real_server(factory_of(lambda: confirm_script())) as (_, client):
        first = await new_session(client)
        second = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{first}/messages", json={"message": "one"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            # Session two never ran: first's call id means nothing there.
            foreign = await client.post(
                f"/sessions/{second}/confirmations/call-del", json={"decision": "approve"}
            )
            await client.delete(f"/sessions/{first}/run")
            events = await reader.rest()
        # Cancelled unanswered: the call is known, but nothing waits for it any more.
        late = await client.post(
            f"/sessions/{first}/confirmations/call-del", json={"decision": "approve"}
        )
    assert_error(foreign, 404, "unknown_tool_call")
    assert types(events)[-1] == "stream_stopped"
    assert_error(late, 409, "run_ended")


async def test_a_plain_def_tool_that_blocks_leaves_the_server_answering() -> None:
    entered = threading.Event()
    released = threading.Event()

    def wait_for_release() -> str:
        """Block this thread until the test releases the call."""
        entered.set()
        # Bounded: on the event loop, this would block the test (and its release) too.
        return "released" if released.wait(10) else "never released"

    script: list[ScriptItem] = [ToolCall(id="call-block", name="wait_for_release"), "after"]
    factory = factory_of(script, extra_tools=[Tool.of(wait_for_release)])
    async with real_server(factory) as (_, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "block"}
        ) as response:
            reader = SSEReader(response)
            assert await anyio.to_thread.run_sync(entered.wait, 10)
            # The tool blocks its thread now; the server answers at once (a bound for
            # a loaded machine, far above the milliseconds it takes).
            with anyio.fail_after(5):
                health = await client.get("/healthz")
            released.set()
            events = await reader.rest()
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    assert tool_responses(events) == ["released"]
    assert text_of(events) == "after"


async def test_shutdown_ends_open_streams_and_cancels_waiting_runs() -> None:
    async with real_server(factory_of(confirm_script())) as (server, client):
        session_id = await new_session(client)
        session = server.sessions.sessions[session_id]
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "delete notes"}
        ) as response:
            reader = SSEReader(response)
            await reader.until("tool_call_confirmation")
            server.should_exit = True
            with anyio.fail_after(5):
                events = await reader.rest()
    # The server is down; its stream ended before the run did, at the shutdown.
    assert types(events)[-1] == "tool_call_confirmation"
    assert session.closed
    assert session.agent.closed
    logged = [item.event for item in (await session.log.read(0, 10**6))]
    assert logged[-1].type == "stream_stopped"
    assert validate(logged) == []


async def test_sessions_expire_on_their_own() -> None:
    # A real clock and a tiny ttl: the store's own sweep (every ttl / 4) removes it.
    app = create_app(factory_of(ADD_SCRIPT), session_ttl=0.04)
    store = store_of(app)
    async with in_process(app) as client:
        session_id = await new_session(client)
        assert session_id in store
        closed = anyio.Event()
        store.sessions[session_id].agent.events.on(
            AgentEvents.AGENT_CLOSE_AFTER, lambda _: closed.set()
        )
        with anyio.fail_after(5):
            await closed.wait()
        assert session_id not in store
        response = await client.get(f"/sessions/{session_id}/messages")
    assert_error(response, 404, "session_not_found")


async def test_the_store_runs_once_and_closes_everything_on_exit() -> None:
    store = SessionStore(factory_of(ADD_SCRIPT))
    assert not store.running
    with pytest.raises(StoreNotRunningError, match="lifespan"):
        await store.create()
    async with store:
        assert store.running
        with pytest.raises(RuntimeError, match="entered once"):
            await store.__aenter__()
        session = await store.create()
        assert len(store) == 1
        await store.remove(session.id)
        # A request that found the session before it was removed cannot run it.
        with pytest.raises(SessionNotFoundError):
            await session.start("hi")
        kept = await store.create()
    assert not store.running
    assert len(store) == 0
    assert kept.agent.closed
    with pytest.raises(StoreNotRunningError):
        await kept.start("hi")


async def test_a_server_runs_full_garbage_collections_less_often_while_it_serves() -> None:
    # Its idle sessions are what a full collection walks (bench_server.py); the young
    # generations keep their thresholds, and everything is as before once it stops.
    before = gc.get_threshold()
    async with real_server(factory_of(ADD_SCRIPT)) as (_, client):
        assert gc.get_threshold() == (before[0], before[1], max(before[2], 100))
        assert (await client.post("/sessions")).status_code == 201
    assert gc.get_threshold() == before


async def test_a_server_names_asyncio_for_sniffio_in_the_tasks_it_makes() -> None:
    # uvicorn's plain asyncio loop names no library: every anyio call would have sniffio
    # guess it (asyncio.current_task(), a system call). The server names it, as
    # anyio.run() does, for its own tasks only.
    seen: list[str | None] = []

    async def probe() -> str:
        """Report the library sniffio is told runs here."""
        seen.append(sniffio.current_async_library_cvar.get())
        return "probed"

    script: list[ScriptItem] = [ToolCall(id="call-probe", name="probe"), "done"]
    async with real_server(factory_of(script, extra_tools=[Tool.of(probe)])) as (_, client):
        session_id = await new_session(client)
        async with client.stream(
            "POST", f"/sessions/{session_id}/messages", json={"message": "probe"}
        ) as response:
            events = await SSEReader(response).rest()
    assert tool_responses(events) == ["probed"]
    assert seen == ["asyncio"]
    assert sniffio.current_async_library_cvar.get() is None


def test_a_server_knows_its_port_only_once_listening() -> None:
    server = make_server(factory_of(ADD_SCRIPT), port=0)
    with pytest.raises(RuntimeError, match="not listening"):
        _ = server.port


async def test_an_ended_run_goes_with_its_last_reference_not_the_cyclic_collector() -> None:
    # A server keeps many sessions: an ended run (its adapter, scope, events, result)
    # must go when nothing refers to it any more, not wait in every generation of the
    # garbage collector for a full collection (bench_server.py).
    store = SessionStore(factory_of(ADD_SCRIPT))
    async with store:
        session = await store.create()
        run = await session.start("What is 2 + 3?")
        with anyio.fail_after(5):
            await run.done.wait()
    assert session.run is None
    adapter = run.adapter
    del run
    # Whatever still refers to them (a context of the event loop's, for a while), they
    # are no garbage cycle: the collector finds neither the run nor its adapter.
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        del adapter
        gc.collect()
        cyclic = [type(o).__name__ for o in gc.garbage if type(o) in (Run, StreamAdapter)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert cyclic == []
