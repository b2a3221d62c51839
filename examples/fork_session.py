"""Fork a session at any of its events (``pip install 'agentrt[server,durable]'``).

A server session on a durable store (SQLite, in a temporary folder) charges and ships
an order. The script then forks it through the HTTP API:

- at the ``ship`` tool call: the fork replays the recorded steps before it (the model's
  answers and the ``charge`` result: the card is charged once), then ``ship`` runs
  again and the model answers, live;
- edited, at the user's message: the message is replaced by another order, which the
  fork answers from the start.

The original session is untouched.

Run: ``python examples/fork_session.py``
"""

import asyncio
import re
import tempfile
from pathlib import Path

import httpx

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall
from agentrt.server import create_app
from agentrt.stream import SSEEventDecoder

calls: list[str] = []


def charge(order: int) -> str:
    """Charge the customer for an order."""
    calls.append(f"charge {order}")
    return f"order {order} charged"


def ship(order: int) -> str:
    """Ship an order."""
    calls.append(f"ship {order}")
    return f"order {order} shipped"


def decide(request: ModelRequest) -> str | ToolCall:
    """A stand-in model that decides from the conversation alone, as a replay needs."""
    calls.append("model")
    asked = [m for m in request.messages if m.role == "user"][-1]
    order = int(re.findall(r"\d+", str(asked.content))[0])
    done = [m for m in request.messages if m.role == "tool"]
    if not done:
        return ToolCall(id=f"charge-{order}", name="charge", arguments={"order": order})
    if len(done) == 1:
        return ToolCall(id=f"ship-{order}", name="ship", arguments={"order": order})
    return f"Order {order} is charged and shipped."


def make_agent() -> Agent:
    return Agent(model=ScriptedModel(decide), tools=[charge, ship])


async def events_of(client: httpx.AsyncClient, session: str) -> list[tuple[int, str, str]]:
    """The session's events (id, type, tool), once its run has ended."""
    response = await client.get(f"/sessions/{session}/events")
    found = []
    for item in SSEEventDecoder().feed(response.content):
        call = getattr(item.event, "tool_call", None)
        found.append((item.sequence, item.event.type, call.function.name if call else ""))
    return found


async def answer_of(client: httpx.AsyncClient, session: str) -> str:
    messages = (await client.get(f"/sessions/{session}/messages")).json()["messages"]
    return str(messages[-1]["content"])


async def main(folder: Path) -> None:
    app = create_app(make_agent, storage=f"sqlite:///{folder / 'store.sqlite'}")
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app), base_url="http://localhost", timeout=60
        ) as client,
    ):
        original = (await client.post("/sessions")).json()["id"]
        message = {"message": "Charge and ship order 42"}
        await client.post(f"/sessions/{original}/messages", json=message)
        print("original:", calls, "->", await answer_of(client, original))
        events = await events_of(client, original)

        calls.clear()
        at = next(seq for seq, kind, tool in events if kind == "tool_call" and tool == "ship")
        fork = (await client.post(f"/sessions/{original}/fork", json={"at": at})).json()["id"]
        await events_of(client, fork)  # until the fork's run has ended
        print(f"fork at event {at}:", calls, "->", await answer_of(client, fork))

        calls.clear()
        body = {"at": 1, "message": "Charge and ship order 43"}
        edited = (await client.post(f"/sessions/{original}/fork", json=body)).json()["id"]
        await events_of(client, edited)
        print("edited fork:", calls, "->", await answer_of(client, edited))
        print("the original still says:", await answer_of(client, original))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(Path(folder)))
