"""Structured output: the answer is a validated pydantic model, with one correction.

The scripted model first answers with JSON missing a field; agentrt sends the
validation error back, and the second answer validates.

Run: ``python examples/structured_output.py``
"""

import anyio
from pydantic import BaseModel

from agentrt import Agent, AgentEvents, EventContext, ScriptedModel


class City(BaseModel):
    name: str
    country: str
    population: int


model = ScriptedModel(
    [
        '{"name": "Paris", "country": "France"}',
        '{"name": "Paris", "country": "France", "population": 2102650}',
    ]
)


async def main() -> None:
    async with Agent(model=model, instructions="Answer with facts about cities.") as agent:

        @agent.events.on(AgentEvents.LLM_EXTRACT_ERROR)
        def show_error(ctx: EventContext[dict[str, object], None]) -> None:
            print(f"invalid answer, sent back: {ctx.parameters['error']}")

        result = await agent.execute("Largest city of France?", output_type=City)
        city = result.value
        print(f"{city.name}, {city.country}: {city.population:,} people")
        print(f"after {result.iterations} model turns")


if __name__ == "__main__":
    anyio.run(main)
