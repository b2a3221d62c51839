"""The team the browser test of the page serves (tests/test_server_browser_team.py).

The desk hands the conversation to billing; billing gives two tasks at once, to the
ledger and to the mailer (whose answers stream side by side); the ledger delegates to the
auditor, whose ``refund`` asks for approval: two levels under billing's turn.
"""

from agentrt import Agent, AssistantMessage, ScriptedModel, ToolCall, tool


@tool(requires_confirmation=True)
def refund(order: int) -> str:
    """Refund an order (pretend; a person approves it).

    Args:
        order: The order number.
    """
    return f"order {order} refunded"


def _transfer(call_id: str, agent: str, task: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": task})


def make_team() -> Agent:
    """A new team for each session of the server."""
    auditor = Agent(
        model=ScriptedModel(
            [
                ToolCall(id="r1", name="refund", arguments={"order": 42}),
                "Refund of order 42 approved and done.",
            ],
            chunk_size=4,
        ),
        name="auditor",
        description="Checks and moves money.",
        tools=[refund],
    )
    ledger = Agent(
        model=ScriptedModel(
            [
                AssistantMessage(
                    content="Asking the auditor.",
                    tool_calls=(_transfer("t3", "auditor", "Refund order 42."),),
                ),
                "Order 42 is refunded.",
            ],
            chunk_size=4,
        ),
        name="ledger",
        description="Keeps the accounts.",
        sub_agents=[auditor],
    )
    mailer = Agent(
        model=ScriptedModel(["Email to the customer sent."], chunk_size=4),
        name="mailer",
        description="Writes to customers.",
    )
    billing = Agent(
        model=ScriptedModel(
            [
                AssistantMessage(
                    reasoning="The ledger refunds; the mailer tells the customer.",
                    tool_calls=(
                        _transfer("t1", "ledger", "Refund order 42."),
                        _transfer("t2", "mailer", "Tell the customer."),
                    ),
                ),
                "Done: order 42 is refunded and the customer knows.",
                "You are welcome.",
            ],
            chunk_size=4,
        ),
        name="billing",
        description="Payments and refunds.",
        sub_agents=[ledger, mailer],
    )
    return Agent(
        model=ScriptedModel(
            [
                AssistantMessage(
                    content="Billing will help you.",
                    tool_calls=(
                        ToolCall(id="h1", name="handoff", arguments={"agent": "billing"}),
                    ),
                )
            ],
            chunk_size=4,
        ),
        name="desk",
        description="Greets and routes.",
        handoffs=[billing],
    )
