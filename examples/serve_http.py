"""Serve an agent over HTTP and talk to it as a client would: sessions and SSE.

The server (``agentrt[server]``: Starlette + uvicorn) makes one agent per session.
This example starts it on a free loopback port, creates a session, has a conversation
of two messages in it, reading each run as Server-Sent Events, and stops the server.
Run the same server for a browser with ``agentrt serve examples/serve_http.py:make_agent``
and open http://127.0.0.1:8000/: the agent answers any number of messages.

Run: ``python examples/serve_http.py``
"""

import json
import re

import anyio
import httpx

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall, tool
from agentrt.messages import AssistantMessage, ToolMessage
from agentrt.server import make_server
from agentrt.stream import AgentChoiceEvent, SSEEventDecoder


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def adder(request: ModelRequest) -> str | ToolCall:
    """The model, offline: each turn decided from the conversation, however long it is.

    A question with two numbers is a call of ``add``; the call's result is the answer;
    anything else gets a line saying what this agent does.
    """
    *before, last = request.messages
    if isinstance(last, ToolMessage) and isinstance(before[-1], AssistantMessage):
        call = json.loads(before[-1].tool_calls[0].arguments)  # the call it answers
        return f"{call['a']} + {call['b']} = {last.content}."
    match = re.search(r"(-?\d+)\s*\+\s*(-?\d+)", last.content)
    if match is None:
        return "I add two numbers: ask me, for instance, what 2 + 3 is."
    return ToolCall(name="add", arguments={"a": int(match[1]), "b": int(match[2])})


def make_agent() -> Agent:
    """One agent per session: sessions never share a conversation."""
    return Agent(model=ScriptedModel(adder, record=False), tools=[add], name="adder")


async def main() -> None:
    server = make_server(make_agent, port=0, log_level="warning")
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await server.ready.wait()
        base = f"http://127.0.0.1:{server.port}"
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            session = (await client.post("/sessions", json={})).json()["id"]
            print(f"session created ({len(session)}-character id)")
            for message in ("What is 2 + 3?", "And 40 + 2?"):
                print(f"> {message}")
                decoder = SSEEventDecoder()
                answer = ""
                async with client.stream(
                    "POST", f"/sessions/{session}/messages", json={"message": message}
                ) as response:
                    async for piece in response.aiter_bytes():
                        for sequence, event in decoder.feed(piece):
                            if isinstance(event, AgentChoiceEvent):
                                answer += event.content  # the answer comes in pieces
                            detail = getattr(event, "response", "")
                            print(f"  #{sequence} {event.type} {detail}".rstrip())
                print(f"< {answer}")
            messages = (await client.get(f"/sessions/{session}/messages")).json()["messages"]
            print(f"the session holds {len(messages)} messages")
        server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
