"""Error recovery: a tool fallback (tool:call:error) and a run recovery (execute:error).

* ``flaky_lookup`` raises; a ``tool:call:error`` handler answers with a cached value
  instead, so the model reads a useful result rather than the error.
* The model then fails (a scripted outage); an ``execute:error`` handler answers
  ``RETRY`` once, and the retried turn succeeds.

Run: ``python examples/error_recovery.py``
"""

from typing import Any

import anyio

from agentrt import (
    RETRY,
    Agent,
    EventContext,
    ModelError,
    Recovery,
    ScriptedModel,
    ToolCall,
    ToolResponse,
    tool,
)
from agentrt.events import ExecuteErrorParams, ToolCallErrorParams

CACHE = {"EUR/USD": 1.08}


@tool
def flaky_lookup(pair: str) -> float:
    """Look up an exchange rate.

    Args:
        pair: A currency pair such as "EUR/USD".
    """
    raise ConnectionError("rates service unreachable")


model = ScriptedModel(
    [
        ToolCall(name="flaky_lookup", arguments={"pair": "EUR/USD"}),
        ModelError("the model service is overloaded (scripted)"),
        "1 EUR is about 1.08 USD (cached rate).",
    ]
)


async def main() -> None:
    async with Agent(model=model, tools=[flaky_lookup]) as agent:

        @agent.hooks.on_tool_call_error
        def from_cache(ctx: EventContext[ToolCallErrorParams, ToolResponse]) -> ToolResponse:
            print(f"tool failed: {ctx.parameters['error']}")
            pair = ctx.parameters["tool_call"].parse_arguments().get("pair", "")
            return ToolResponse(f"{CACHE[pair]} (cached)")

        retried: list[Any] = []

        @agent.hooks.on_execute_error
        def retry_once(ctx: EventContext[ExecuteErrorParams, Recovery]) -> Recovery | None:
            print(f"run failed at turn {ctx.parameters['iteration']}: {ctx.parameters['error']}")
            if retried:
                return None  # a second failure propagates
            retried.append(ctx.parameters["error"])
            return RETRY

        result = await agent.execute("What is 1 EUR in USD?")
        print(f"answer: {result.output}")
        print(f"tool message: {agent.messages[2].content}")


if __name__ == "__main__":
    anyio.run(main)
