"""A small agent, end to end, on the scripted model: no network, no API key.

The model asks for two tool calls at once, reads their results, and answers.
Hooks print every step and one of them changes the outcome: an audit hook
rewrites the arguments of one call before the tool runs.

Run: ``python examples/quickstart.py``
"""

from typing import Any

import anyio

from agentrt import (
    Agent,
    AgentEvents,
    EventContext,
    ScriptedModel,
    ToolCall,
    tool,
)
from agentrt.events import ToolCallAfterParams, ToolCallBeforeParams


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(timeout=5)
async def weather(city: str) -> dict[str, Any]:
    """Report the weather in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "sky": "clear", "celsius": 21}


model = ScriptedModel(
    [
        [
            ToolCall(name="add", arguments={"a": 1, "b": 2}),
            ToolCall(name="weather", arguments='{"city": "Pariss"}'),
        ],
        "1 + 2 = 3, and it is clear and 21 °C in Paris.",
    ]
)


async def main() -> None:
    async with Agent(
        model=model, tools=[add, weather], instructions="You add numbers and know the weather."
    ) as agent:

        @agent.hooks.on_tool_call_before(priority=200)
        def fix_city(
            ctx: EventContext[ToolCallBeforeParams, dict[str, Any]],
        ) -> dict[str, Any] | None:
            arguments = ctx.parameters["arguments"]
            if ctx.parameters["tool_name"] == "weather" and arguments["city"] == "Pariss":
                print("  hook: correcting the city 'Pariss' -> 'Paris'")
                return {**arguments, "city": "Paris"}
            return None

        @agent.hooks.on_tool_call_after
        def show_result(ctx: EventContext[ToolCallAfterParams, None]) -> None:
            p = ctx.parameters
            print(f"  tool {p['tool_name']}({p['arguments']}) -> {p['response'].content}")

        @agent.events.on(AgentEvents.EXECUTE_ITERATION_BEFORE)
        def turn(ctx: EventContext[Any, Any]) -> None:
            print(f"turn {ctx.parameters['iteration']}")

        result = await agent.execute("What is 1 + 2, and the weather in Paris?")

        print(f"answer: {result.output}")
        print(f"{result.iterations} turns, {result.usage.total_tokens} tokens (estimated)")
        for message in agent.messages:
            print(f"  [{message.role}] {message.content}")


if __name__ == "__main__":
    anyio.run(main)
