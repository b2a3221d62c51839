"""An AG-UI endpoint: agentrt's agents for CopilotKit and other AG-UI frontends.

``agentrt serve`` answers AG-UI at ``POST /ag-ui``: the body is AG-UI's
``RunAgentInput``, the answer AG-UI's event stream. This example starts the server on
a free loopback port and plays an AG-UI client with the official ``ag-ui-protocol``
models: a question answered with a server-side tool, then a frontend tool (one the
client declares and runs itself) in two runs. The scripted model answers offline.

Serve it to a real frontend with ``agentrt serve examples/agui_endpoint.py:make_agent``
and point the frontend's AG-UI agent at ``http://127.0.0.1:8000/ag-ui`` (see the
README). The test suite drives the same target with ``@ag-ui/client``.

Run: ``python examples/agui_endpoint.py``
"""

import json
import uuid
from typing import Any

import anyio
import httpx
from ag_ui.core import RunAgentInput, Tool, ToolMessage, UserMessage

from agentrt import Agent
from agentrt.messages import AssistantMessage, ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptedModel, ScriptItem
from agentrt.server import make_server
from agentrt.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call).

    Args:
        path: The file.
    """
    return f"deleted {path}"


def answer(request: ModelRequest) -> ScriptItem:
    """The scripted model: answers from the conversation's last messages, offline."""
    last = request.messages[-1]
    if last.role == "tool":
        if last.name == "add" or last.content.isdigit():
            return f"The sum is {last.content}."
        if last.content.startswith("rejected by the user"):
            return "Fine, I kept it."
        return f"Done: {last.content}"
    question = last.content.lower() if last.role == "user" else ""
    offered = {schema["function"]["name"] for schema in request.tools}
    if "add" in question:
        return AssistantMessage(
            content="Let me add them.",
            reasoning="Two numbers: the add tool.",
            tool_calls=(ToolCall(name="add", arguments={"a": 2, "b": 3}),),
        )
    if "color" in question and "change_color" in offered:
        return ToolCall(name="change_color", arguments={"color": "teal"})
    if "delete" in question:
        return ToolCall(name="delete_file", arguments={"path": "notes.txt"})
    if "fail" in question:
        return RuntimeError("the model is unavailable")
    return "Hello from agentrt."


def make_agent() -> Agent:
    """One agent per session (an AG-UI thread is a session)."""
    model = ScriptedModel(answer, chunk_size=6, record=False)
    return Agent(model=model, tools=[add, delete_file], name="assistant")


def _events(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


async def _run(client: httpx.AsyncClient, run: RunAgentInput) -> list[dict[str, Any]]:
    body = run.model_dump(mode="json", by_alias=True)
    response = await client.post("/ag-ui", json=body)
    response.raise_for_status()
    events = _events(response.text)
    for event in events:
        detail = event.get("delta") or event.get("toolCallName") or event.get("content") or ""
        outcome = event.get("outcome", {}).get("type", "")
        if event["type"] not in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            print(f"  {event['type']} {detail}{outcome}".rstrip())
    said = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    print(f"  said: {said}")
    return events


async def main() -> None:
    server = make_server(make_agent, port=0, log_level="warning")
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await server.ready.wait()
        base = f"http://127.0.0.1:{server.port}"
        thread = str(uuid.uuid4())
        color = Tool(
            name="change_color",
            description="Change the page's color.",
            parameters={"type": "object", "properties": {"color": {"type": "string"}}},
        )
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            print("run 1: a question the agent answers with its add tool")
            question = UserMessage(id="m1", content="Please add 2 and 3.")
            await _run(client, RunAgentInput(thread_id=thread, run_id="r1", messages=[question]))

            print("run 2: the model calls the client's change_color tool; the run ends")
            ask = UserMessage(id="m2", content="Change the color, please.")
            events = await _run(
                client,
                RunAgentInput(thread_id=thread, run_id="r2", messages=[ask], tools=[color]),
            )
            finished = events[-1]["outcome"]
            pending = finished["pendingToolCallIds"]
            print(f"the client runs {pending} itself")

            print("run 3: the client's result; the agent goes on")
            result = ToolMessage(id="m3", tool_call_id=pending[0], content="the page is teal")
            await _run(
                client,
                RunAgentInput(thread_id=thread, run_id="r3", messages=[result], tools=[color]),
            )
        server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
