"""Hooks: priority, predicates, and changing the outcome of interceptable events.

* ``tool:call:before`` at priority 200 with a predicate: only ``transfer`` calls are
  audited, and amounts above a limit are capped (the handler changes the arguments).
* ``message:append:before``: a handler redacts card numbers before anything is stored.
* ``tool:call:after`` is a signal: its handler observes; its return value is ignored.

Run: ``python examples/hooks.py``
"""

import re
from typing import Any

import anyio

from agentrt import Agent, EventContext, Message, ScriptedModel, ToolCall, tool
from agentrt.events import MessageAppendBeforeParams, ToolCallAfterParams, ToolCallBeforeParams

LIMIT = 100


@tool
def transfer(to: str, amount: int) -> str:
    """Transfer money.

    Args:
        to: The recipient.
        amount: The amount in euros.
    """
    return f"sent {amount} EUR to {to}"


@tool
def balance() -> int:
    """The account balance in euros."""
    return 1234


model = ScriptedModel(
    [
        [
            ToolCall(name="balance"),
            ToolCall(name="transfer", arguments={"to": "Ada", "amount": 5000}),
        ],
        "Done. Your card 4111 1111 1111 1111 was charged.",
    ]
)


async def main() -> None:
    async with Agent(model=model, tools=[transfer, balance]) as agent:

        @agent.hooks.on_tool_call_before(
            priority=200, predicate=lambda ctx: ctx.parameters["tool_name"] == "transfer"
        )
        def cap(ctx: EventContext[ToolCallBeforeParams, dict[str, Any]]) -> dict[str, Any]:
            arguments = dict(ctx.output or {})
            if arguments.get("amount", 0) > LIMIT:
                print(f"audit: capping {arguments['amount']} to {LIMIT}")
                arguments["amount"] = LIMIT
            return arguments

        @agent.hooks.on_message_append_before
        def redact(ctx: EventContext[MessageAppendBeforeParams, Message]) -> Message:
            message = ctx.parameters["message"]
            cleaned = re.sub(r"\b(?:\d{4} ){3}\d{4}\b", "[card]", message.content)
            return message.model_copy(update={"content": cleaned})

        @agent.hooks.on_tool_call_after
        def log(ctx: EventContext[ToolCallAfterParams, None]) -> None:
            print(f"tool {ctx.parameters['tool_name']}: {ctx.parameters['response'].content}")

        result = await agent.execute("Check my balance and send Ada 5000.")
        print(f"answer: {result.output}")


if __name__ == "__main__":
    anyio.run(main)
