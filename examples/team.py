"""A team of agents: a hand-off, a delegation, and an approval asked two levels down.

The front desk hands the conversation to billing; billing delegates the refund to the
ledger agent (``transfer_task``), whose ``refund`` tool needs a person's approval. One
stream shows it all: each event names its agent, and a delegated run's events name the
call that started it (``parent_tool_call_id``), so they are printed indented under it.

Run: ``python examples/team.py``
"""

import anyio

from agentrt import Agent, ScriptedModel, ToolCall, tool
from agentrt.stream.events import parent_tool_call_id


@tool(requires_confirmation=True)
def refund(order: int) -> str:
    """Refund an order (pretend).

    Args:
        order: The order number.
    """
    return f"order {order} refunded"


def model(*script: str | ToolCall) -> ScriptedModel:
    return ScriptedModel(list(script), chunk_size=1000)


ledger = Agent(
    model=model(ToolCall(id="r1", name="refund", arguments={"order": 42}), "Refunded order 42."),
    name="ledger",
    description="Moves money: refunds, credits.",
    tools=[refund],
)
billing = Agent(
    model=model(
        ToolCall(
            id="t1", name="transfer_task", arguments={"agent": "ledger", "task": "Refund 42."}
        ),
        "Done: order 42 is refunded.",
    ),
    name="billing",
    description="Payments and refunds.",
    sub_agents=[ledger],
)
desk = Agent(
    model=model(ToolCall(id="h1", name="handoff", arguments={"agent": "billing"})),
    name="desk",
    description="Greets and routes.",
    handoffs=[billing],
)


async def main() -> None:
    depth: dict[str, int] = {}  # tool call id -> how deep its agent runs
    async with desk.stream("Please refund order 42.") as events:
        async for event in events:
            parent = parent_tool_call_id(event)
            indent = "  " * (depth[parent] + 1 if parent else 0)
            match event.type:
                case "team_info":
                    print("team:", ", ".join(agent.name for agent in event.available_agents))
                case "agent_switching":
                    print(f"{indent}-- {event.from_agent} hands over to {event.to_agent}")
                case "tool_call":
                    depth[event.tool_call.id] = len(indent) // 2
                    call = event.tool_call.function
                    print(f"{indent}{event.agent_name} calls {call.name} {call.arguments}")
                case "tool_call_confirmation":
                    print(
                        f"{indent}{event.agent_name} asks to run {event.tool_call.function.name}"
                    )
                    await events.confirm(event.tool_call.id, "approve")
                case "tool_call_response":
                    print(f"{indent}{event.tool_call.function.name} -> {event.response}")
                case "agent_choice":
                    print(f"{indent}{event.agent_name}: {event.content}")
    print("now speaking:", desk.speaker.name)


if __name__ == "__main__":
    anyio.run(main)
