"""A team across servers: a lead agent here, its researcher an agentrt agent served over A2A.

The researcher is served the way ``agentrt serve`` serves it (A2A is on with
``agentrt[a2a]``): here that app runs on a free loopback port of this process. The lead
reaches it with ``RemoteAgent(url)``, which reads the researcher's agent card, and
delegates to it as to a local sub-agent (``transfer_task``). The lead's stream shows what
the researcher streams, under its name, and the researcher's tool that needs a person's
approval asks in the lead's stream: the answer goes back to the researcher's task.

Run: ``python examples/a2a_team.py``
"""

import json

import anyio

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall, tool
from agentrt.a2a import RemoteAgent
from agentrt.messages import ToolMessage
from agentrt.server import make_server
from agentrt.stream.events import (
    AgentChoiceEvent,
    ToolCallConfirmationEvent,
    ToolCallResponseEvent,
)


@tool(requires_confirmation=True)
def book(city: str) -> str:
    """Book a train ticket (pretend).

    Args:
        city: Where to.
    """
    return f"ticket to {city} booked"


def researcher_model(request: ModelRequest) -> str | ToolCall:
    """The researcher's model, offline: it books when asked to, and knows one fact."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return f"Done: {last.content}."
    if "book" in last.content.lower():
        return ToolCall(name="book", arguments={"city": "Lyon"})
    return "Lyon has 522,250 inhabitants."


def make_researcher() -> Agent:
    """The served agent: one per A2A context (a session of the server)."""
    return Agent(
        model=ScriptedModel(researcher_model, record=False, chunk_size=8),
        name="researcher",
        description="Finds facts and books trips.",
        tools=[book],
    )


def transfer(task: str) -> ToolCall:
    return ToolCall(name="transfer_task", arguments={"agent": "researcher", "task": task})


async def main() -> None:
    server = make_server(make_researcher, port=0, log_level="warning")
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await server.ready.wait()
        researcher = RemoteAgent(f"http://127.0.0.1:{server.port}")
        lead = Agent(
            model=ScriptedModel(
                [
                    transfer("How many people live in Lyon?"),
                    transfer("Book a ticket to Lyon."),
                    "About half a million people live in Lyon; your ticket is booked.",
                ]
            ),
            name="lead",
            sub_agents=[researcher],
        )
        async with lead.stream("Tell me about Lyon and book me a ticket.") as events:
            async for event in events:
                if isinstance(event, AgentChoiceEvent) and event.agent_name == "researcher":
                    print(f"  researcher: {event.content!r}")
                elif isinstance(event, ToolCallConfirmationEvent):
                    call = event.tool_call
                    question = json.loads(call.function.arguments)["question"]
                    print(f"{event.agent_name} asks: {question} approve")
                    await events.confirm(call.id, "approve")
                elif isinstance(event, ToolCallResponseEvent) and event.agent_name == "lead":
                    print(f"lead got: {event.response}")
        print(f"lead: {lead.messages[-1].content}")
        await lead.close()
        await researcher.close()
        server.should_exit = True


if __name__ == "__main__":
    anyio.run(main)
