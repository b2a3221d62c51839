"""Replay a recorded run of a durable session, catch a divergence, export it as a test.

A session is served from a durable SQLite store (in this process, as ``agentrt serve
--store sqlite:///...`` serves it) and answers one message with a tool call and a
streamed answer. Then, with the server gone:

1. ``replay`` runs it again from its recording alone: the recorded answers stand in
   for the model, the recorded results for the tool (which counts its calls);
2. an agent changed since (its tool renamed) replays to a ``ReplayDivergenceError``
   naming the step where it left the recording;
3. ``export_test`` writes the run as a pytest module (what ``agentrt replay
   --export-test SESSION_ID`` prints).

Run it: ``python examples/replay_run.py`` (offline; needs ``agentrt[server,durable]``).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import httpx

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall, tool
from agentrt.durable import (
    ReplayDivergenceError,
    export_test,
    read_recording,
    replay,
    replay_recording,
)
from agentrt.server import create_app

CALLS: list[str] = []


def convert(amount: float, currency: str) -> str:
    """Convert an amount of euros into another currency."""
    CALLS.append(currency)
    return f"{amount * 1.08:.2f} {currency}"


def decide(request: ModelRequest) -> str | ToolCall:
    """The stand-in model: convert first, then answer with the tool's result."""
    last = request.messages[-1]
    if last.role == "user":
        return ToolCall(name="convert", arguments={"amount": 100, "currency": "USD"})
    return f"100 EUR is {last.content} today."


def make_agent() -> Agent:
    """The agent the session is served with (the store records this factory's name)."""
    return Agent(model=ScriptedModel(decide), tools=[convert], name="exchange")


def make_changed_agent() -> Agent:
    """The same agent after a change: its tool is called ``to_currency`` now."""
    return Agent(
        model=ScriptedModel(decide), tools=[tool(name="to_currency")(convert)], name="exchange"
    )


async def serve_one_run(store: str) -> str:
    """One session, one run, served from ``store``; the session's id."""
    app = create_app(make_agent, storage=store, executor_id="example")
    transport = httpx.ASGITransport(app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost") as client,
    ):
        session: str = (await client.post("/sessions")).json()["id"]
        await client.post(f"/sessions/{session}/messages", json={"message": "100 EUR in USD?"})
    return session


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = f"sqlite:///{Path(folder) / 'runs.sqlite'}"
        session = await serve_one_run(store)
        print(f"served: the tool ran {len(CALLS)} time(s)")

        replayed = await replay(store, session)
        types = [event.type for event in replayed.events]
        print(f"replayed {len(types)} events, the same as recorded: {replayed.matches}")
        print(f"answer: {replayed.result.output if replayed.result else None}")
        print(f"the tool ran {len(CALLS)} time(s): the replay used its recorded result")

        recording = await read_recording(store, session)
        try:
            await replay_recording(recording, make_changed_agent)
        except ReplayDivergenceError as error:
            print(f"changed agent: {error}")

        test = export_test(recording, f"{__file__}:make_agent")
        print(f"exported: {next(line for line in test.splitlines() if line.startswith('def'))}")


if __name__ == "__main__":
    asyncio.run(main())
