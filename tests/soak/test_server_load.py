"""Load (issue 17, point 6): many clients drive a real server past every cap at once.

A uvicorn server on loopback with small caps (4 runs, 6 event streams, 1,000-character
messages, 50 retained events). 60 sessions, whose runs are held by a gate, all send a
message at the same moment; two readers follow held runs, so every stream slot is
taken; then every session opens another event stream, reads its history and polls the
health check, all at once; oversized messages follow. Then:

* no more runs than ``max_runs`` started, every other run request is a 429;
* every extra stream is a 429, every oversized message a 413; nothing is a 5xx;
* every history read and health check was answered 200 while the server was full;
* once the gate opens, every session runs to its end (clients retry after a 429),
  each stream ends in ``stream_stopped``.

Bounded: 60 sessions, each request once (plus retries), 120 seconds at most.
"""

from collections import Counter
from typing import Any

import anyio
import pytest

from agentrt.server.limits import ServerLimits
from tests.server_support import Gate, factory_of, real_server

pytestmark = pytest.mark.slow

SESSIONS = 60
RUNS, STREAMS = 4, 6
LIMITS = ServerLimits(max_runs=RUNS, max_streams=STREAMS, max_message_chars=1_000)


async def test_a_server_driven_past_every_cap_still_answers_everyone() -> None:
    gate = Gate()
    factory = factory_of(gate.script, extra_tools=[gate.tool])
    statuses: Counter[tuple[str, int]] = Counter()
    with anyio.fail_after(120):
        async with real_server(factory, limits=LIMITS, retain=50) as (_, client):
            ids = [(await client.post("/sessions")).json()["id"] for _ in range(SESSIONS)]
            started: list[str] = []

            async def run(session_id: str) -> None:
                async with client.stream(
                    "POST", f"/sessions/{session_id}/messages", json={"message": "go"}
                ) as response:
                    statuses["run", response.status_code] += 1
                    if response.status_code == 200:
                        started.append(session_id)
                        await response.aread()

            async def other(session_id: str) -> None:
                history = await client.get(f"/sessions/{session_id}/messages")
                statuses["history", history.status_code] += 1
                health = await client.get("/healthz")
                statuses["health", health.status_code] += 1
                follow = await client.get(f"/sessions/{session_id}/events?after=0")
                statuses["follow", follow.status_code] += 1

            followers_open = anyio.Event()

            async def hold_stream(session_id: str, opened: list[None]) -> None:
                # A reader of a held run: its stream stays open until the run ends.
                async with client.stream("GET", f"/sessions/{session_id}/events") as response:
                    statuses["held follow", response.status_code] += 1
                    opened.append(None)
                    if len(opened) == STREAMS - RUNS:
                        followers_open.set()
                    await response.aread()

            async with anyio.create_task_group() as group:
                for session_id in ids:
                    group.start_soon(run, session_id)
                # Everyone else, while the held runs fill the server.
                while len(started) < RUNS or not gate.entered.is_set():
                    await anyio.lowlevel.checkpoint()
                # Every stream slot taken: the held runs, and readers of two of them.
                opened: list[None] = []
                for session_id in started[: STREAMS - RUNS]:
                    group.start_soon(hold_stream, session_id, opened)
                await followers_open.wait()
                async with anyio.create_task_group() as others:
                    for session_id in ids:
                        others.start_soon(other, session_id)
                gate.opened.set()
            # Oversized messages, once streams are free again: each a 413.
            for session_id in ids:
                big = await client.post(
                    f"/sessions/{session_id}/messages", json={"message": "x" * 1_001}
                )
                statuses["big", big.status_code] += 1
            refused_runs = statuses["run", 429]
            # The refused sessions run now, retrying while the server is full.
            finished: list[int] = []

            async def retry(session_id: str) -> None:
                while True:
                    response = await client.post(
                        f"/sessions/{session_id}/messages", json={"message": "again"}
                    )
                    if response.status_code != 429:
                        finished.append(response.status_code)
                        assert "stream_stopped" in response.text
                        return
                    await anyio.sleep(float(response.headers["retry-after"]) / 20)

            async with anyio.create_task_group() as group:
                for session_id in ids:
                    if session_id not in started:
                        group.start_soon(retry, session_id)
    summary: dict[str, Any] = dict(statuses)
    assert statuses["run", 200] == RUNS, summary
    assert refused_runs == SESSIONS - RUNS, summary
    assert statuses["history", 200] == statuses["health", 200] == SESSIONS, summary
    assert statuses["held follow", 200] == STREAMS - RUNS, summary
    assert statuses["follow", 429] == SESSIONS, summary
    assert statuses["big", 413] == SESSIONS, summary
    assert not [key for key in statuses if key[1] >= 500], summary
    assert finished == [200] * (SESSIONS - RUNS)
