"""Sessions expire when nobody uses them, a run waiting for an absent client included.

A run that can go on only with a client's answer (a confirmation, an AG-UI frontend's
tool result) holds its session and a place under the cap on runs; a client that walked
away must not hold them forever. A run at work, however long and silent, is not idle.
"""

import anyio
import httpx

from agentrt.server import ServerLimits, create_app
from agentrt.server.sessions import Session
from agentrt.stream.events import ErrorEvent
from tests.server_support import (
    ADD_SCRIPT,
    BASE,
    Gate,
    assert_error,
    confirm_script,
    decode,
    factory_of,
    in_process,
    new_session,
    store_of,
    text_of,
)
from tests.test_server_agui import COLOR, ag_ui, assemble, make_agent, story_of_ag_ui, user


async def until_it_waits_for_the_client(session: Session) -> None:
    """Read the session's log until its run waits for a client (a reader that then leaves)."""
    async for _ in session.follow(0, until=session.waits_for_client):
        pass
    assert session.waits_for_client()


async def test_a_run_waiting_for_a_confirmation_nobody_answers_expires_with_its_session() -> None:
    now = [1000.0]
    gate = Gate()
    # One script per session, in the order the sessions are made.
    scripts = iter([confirm_script(), gate.script(), ADD_SCRIPT, ADD_SCRIPT])
    app = create_app(
        factory_of(lambda: next(scripts), extra_tools=[gate.tool]),
        session_ttl=60,
        clock=lambda: now[0],
        limits=ServerLimits(max_runs=2),
    )
    store = store_of(app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        waiting_id, working_id = await new_session(client), await new_session(client)
        waiting, working = store.sessions[waiting_id], store.sessions[working_id]
        # Started as a request that disconnected at once leaves them: nobody reads.
        run = await waiting.start("delete notes")
        await until_it_waits_for_the_client(waiting)
        await working.start("wait for the gate")
        await gate.entered.wait()
        assert not working.waits_for_client()
        third = await new_session(client)
        full = await client.post(f"/sessions/{third}/messages", json={"message": "1 + 2"})
        now[0] += 59
        assert await store.expire_idle() == []
        now[0] += 1
        # The waiting run was idle for the whole ttl (as was the session that never ran);
        # the working one is not idle at all.
        assert await store.expire_idle() == [waiting_id, third]
        assert run.done.is_set()
        assert waiting.agent.closed
        (tool_message,) = [m for m in waiting.agent.messages if m.role == "tool"]
        assert "cancelled" in tool_message.content
        logged = [item.event for item in (await waiting.log.read(0, 10**6))]
        assert [event.type for event in logged[-2:]] == ["error", "stream_stopped"]
        assert isinstance(logged[-2], ErrorEvent)
        assert logged[-2].error == (
            "cancelled: nobody answered what the run waited for in 60 s (session_ttl); "
            "the session expired"
        )
        gone = await client.get(f"/sessions/{waiting_id}/messages")
        # Its place under the cap on runs is free again.
        fourth = await new_session(client)
        answered = await client.post(f"/sessions/{fourth}/messages", json={"message": "1 + 2"})
        now[0] += 600
        assert await store.expire_idle() == [fourth]  # the gate still holds the working run
        gate.opened.set()
        assert working.run is not None
        await working.run.done.wait()
    assert_error(full, 429, "too_many_runs")
    assert_error(gone, 404, "session_not_found")
    assert answered.status_code == 200
    assert text_of(decode(answered.content)) == "1 + 2 = 3"


async def test_an_ag_ui_thread_waiting_for_its_frontend_expires_and_its_history_starts_over() -> (
    None
):
    now = [1000.0]
    app = create_app(make_agent, session_ttl=60, clock=lambda: now[0])
    store = store_of(app)
    tools = [COLOR.model_dump(by_alias=True)]
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        history = [user("u1", "Change the color.")]
        first = await ag_ui(client, "t", history, tools=tools)
        (call_id,) = first[-1]["outcome"]["pendingToolCallIds"]
        (session,) = store
        # The frontend has the call; nothing runs or waits in memory: the thread is idle.
        assert session.run is None
        assert session.idle
        now[0] += 60
        assert await store.expire_idle() == [session.id]
        assert session.agent.closed
        # The frontend comes back with the whole history and its result, as
        # @ag-ui/client sends it: a new session takes it and the run goes on.
        result = {"id": "r1", "role": "tool", "toolCallId": call_id, "content": "teal now"}
        second = await ag_ui(client, "t", [*history, *assemble(first), result], tools=tools)
        (fresh,) = store
    assert fresh is not session
    assert story_of_ag_ui(second) == [("text", "Done: teal now")]
    assert [(m.role, m.content) for m in fresh.agent.messages] == [
        ("user", "Change the color."),
        ("assistant", ""),
        ("tool", "teal now"),
        ("assistant", "Done: teal now"),
    ]
    # The expired session was forgotten as it was: its call never answered.
    assert [call.id for call in session.agent.conversation.unanswered_calls()] == [call_id]


async def test_idle_sessions_expire_and_busy_ones_do_not() -> None:
    now = [1000.0]
    gate = Gate()
    app = create_app(
        factory_of(gate.script(), extra_tools=[gate.tool]), session_ttl=60, clock=lambda: now[0]
    )
    store = store_of(app)
    async with in_process(app) as client:
        idle = await new_session(client)
        busy = await new_session(client)
        busy_agent = store.sessions[busy].agent
        idle_agent = store.sessions[idle].agent

        async def post() -> None:
            await client.post(f"/sessions/{busy}/messages", json={"message": "go"})

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await gate.entered.wait()
            now[0] += 59
            assert await store.expire_idle() == []
            now[0] += 1
            # Idle for the whole ttl; the other has a run (and a reader) going.
            assert await store.expire_idle() == [idle]
            gate.opened.set()
        assert idle_agent.closed
        assert not busy_agent.closed
        gone = await client.get(f"/sessions/{idle}/messages")
        now[0] += 60
        assert await store.expire_idle() == [busy]
    assert_error(gone, 404, "session_not_found")
    assert busy_agent.closed
