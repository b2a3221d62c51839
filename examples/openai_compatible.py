"""An agent on any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio...).

Set the server by environment::

    export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 AGENTRT_MODEL=my-model
    python examples/openai_compatible.py

(``OPENAI_API_KEY`` too when the server wants one.) Without ``OPENAI_BASE_URL`` and
``AGENTRT_MODEL`` the example falls back to a ScriptedModel, says so, and runs offline.

Run: ``python examples/openai_compatible.py``
"""

import os

import anyio

from agentrt import Agent, Model, OpenAIChatModel, ScriptedModel, ToolCall, tool


@tool
def get_weather(city: str) -> dict[str, object]:
    """Report the current weather in a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return {"city": city, "sky": "sunny", "celsius": 22}


def choose_model() -> Model:
    base_url = os.environ.get("OPENAI_BASE_URL")
    name = os.environ.get("AGENTRT_MODEL")
    if base_url and name:
        print(f"model: {name} at {base_url}")
        return OpenAIChatModel(name, base_url=base_url)
    print("OPENAI_BASE_URL / AGENTRT_MODEL not set: using a ScriptedModel (offline).")
    return ScriptedModel(
        [
            ToolCall(name="get_weather", arguments={"city": "Paris"}),
            "It is sunny and 22 °C in Paris.",
        ]
    )


async def main() -> None:
    async with Agent(
        model=choose_model(),
        tools=[get_weather],
        instructions="Answer weather questions with the get_weather tool. Be brief.",
    ) as agent:
        async with agent.stream("What's the weather in Paris?") as events:
            async for event in events:
                if event.type == "agent_choice":
                    print(event.content, end="", flush=True)
                elif event.type == "tool_call":
                    call = event.tool_call
                    print(f"\n[tool] {call.function.name}({call.function.arguments})")
                elif event.type == "tool_call_response":
                    print(f"[result] {event.response}")
                elif event.type == "token_usage":
                    usage = event.usage
                    print(f"\n[usage] {usage.input_tokens} in, {usage.output_tokens} out")
        print()


if __name__ == "__main__":
    anyio.run(main)
