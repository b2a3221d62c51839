"""Serve an agent over HTTP and talk to it as a client would: sessions and SSE.

The server (``agentrt[server]``: Starlette + uvicorn) makes one agent per session.
This example starts it on a free loopback port, creates a session, posts a
message, reads the run as Server-Sent Events, and stops the server. Run the same
server for a browser with ``agentrt serve examples/serve_http.py:make_agent`` and
open http://127.0.0.1:8000/.

Run: ``python examples/serve_http.py``
"""

import anyio
import httpx

from agentrt import Agent, ScriptedModel, ToolCall, tool
from agentrt.server import make_server
from agentrt.stream import SSEEventDecoder


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def make_agent() -> Agent:
    """One agent per session: sessions never share a conversation."""
    model = ScriptedModel(
        [ToolCall(name="add", arguments={"a": 2, "b": 3}), "2 + 3 = 5."], record=False
    )
    return Agent(model=model, tools=[add], name="adder")


async def main() -> None:
    server = make_server(make_agent, port=0, log_level="warning")
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await server.ready.wait()
        base = f"http://127.0.0.1:{server.port}"
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            session = (await client.post("/sessions", json={})).json()["id"]
            print(f"session created ({len(session)}-character id)")
            decoder = SSEEventDecoder()
            async with client.stream(
                "POST", f"/sessions/{session}/messages", json={"message": "What is 2 + 3?"}
            ) as response:
                async for piece in response.aiter_bytes():
                    for sequence, event in decoder.feed(piece):
                        detail = getattr(event, "content", "") or getattr(event, "response", "")
                        print(f"  #{sequence} {event.type} {detail}".rstrip())
            messages = (await client.get(f"/sessions/{session}/messages")).json()["messages"]
            print(f"the session holds {len(messages)} messages")
        server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
