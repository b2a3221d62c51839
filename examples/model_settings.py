"""Model settings: temperature, max tokens, tool choice, seed, without writing a hook.

The agent's settings apply to every model call; a run's are merged over them, key by
key; a ``llm:*:before`` hook still has the last word. A known setting of the wrong type
is an error before any request; keys agentrt does not know go to the provider as they
are. The scripted model records each request, so the example prints what was sent.

Run: ``python examples/model_settings.py``
"""

from typing import Any

import anyio

from agentrt import Agent, EventContext, ScriptedModel
from agentrt.models.base import ModelRequest
from agentrt.settings import ModelSettingsError


async def main() -> None:
    model = ScriptedModel(["A calm answer.", "A bolder answer.", "A capped answer."])
    agent = Agent(model=model, model_settings={"temperature": 0.2, "max_tokens": 256})

    await agent.execute("Describe the sea.")
    # This run only: hotter, seeded, and a provider-specific key passed through.
    await agent.execute(
        "Describe it again.",
        model_settings={"temperature": 0.9, "seed": 7, "top_k": 40},
    )

    @agent.hooks.on_llm_complete_before
    def cap(ctx: EventContext[Any, Any]) -> None:
        request = ctx.output
        assert isinstance(request, ModelRequest)
        request.settings["max_tokens"] = min(request.settings["max_tokens"], 32)

    await agent.execute("Once more, briefly.")
    for number, request in enumerate(model.requests, 1):
        print(f"request {number}: {request.settings}")

    try:
        await agent.execute("Too hot?", model_settings={"temperature": "hot"})
    except ModelSettingsError as error:
        print(f"refused before any request: {error}")
    print(f"requests sent: {len(model.requests)}")


if __name__ == "__main__":
    anyio.run(main)
