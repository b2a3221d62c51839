"""Stream an agent's events to the terminal and approve a tool call by hand.

``delete_file`` requires confirmation: the stream emits ``tool_call_confirmation``
and the run waits until the consumer answers (here: rejects the first, approves
the second for the rest of the tool).

Run: ``python examples/streaming_with_approval.py``
"""

import anyio

from agentrt import Agent, ScriptedModel, ToolCall, tool


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (pretend).

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


model = ScriptedModel(
    [
        ToolCall(name="delete_file", arguments={"path": "/etc/passwd"}),
        ToolCall(name="delete_file", arguments={"path": "/tmp/cache.db"}),
        "Deleted /tmp/cache.db; /etc/passwd was refused.",
    ],
    chunk_size=6,
)


async def main() -> None:
    agent = Agent(model=model, tools=[delete_file], name="janitor")
    async with agent, agent.stream("Clean up the disk.") as events:
        async for event in events:
            match event.type:
                case "agent_choice":
                    print(event.content, end="", flush=True)
                case "tool_call_confirmation":
                    call = event.tool_call
                    path = call.function.arguments
                    if "/etc" in path:
                        print(f"[ask] {call.function.name} {path} -> reject")
                        await events.confirm(call.id, "reject", "system files stay")
                    else:
                        print(f"[ask] {call.function.name} {path} -> approve-tool")
                        await events.confirm(call.id, "approve-tool")
                case "tool_call_response":
                    print(f"[result] {event.response}")
                case "stream_stopped":
                    print("\n[stream stopped]")


if __name__ == "__main__":
    anyio.run(main)
