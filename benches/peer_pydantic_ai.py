"""pydantic-ai set up for the peer benches, from its public test-model API only.

The scripted model is a ``FunctionModel`` with an ``async`` function (a plain
``def`` would be run in a worker thread); the tool-call-before hook is the
``Hooks`` capability's ``before_tool_execute``. Streaming uses
``agent.run_stream_events``: it yields one event per text delta (``run_stream``'s
``stream_text`` debounces deltas into groups, so it cannot count them).

This module has no ``collect``: it is a helper of peer_runs.py and peer_streaming.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from peer_common import ARGUMENTS, CALL_ID, HOOKED, PROMPT, add, answer_to
from pydantic_ai import Agent, RunContext, ToolDefinition
from pydantic_ai.capabilities import Hooks, ValidatedToolArgs
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel


def reply(messages: list[ModelMessage]) -> ModelResponse:
    """The script: call ``add`` on the user's prompt, answer once the result is back."""
    last = messages[-1]
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                return ModelResponse(parts=[TextPart(answer_to(part.content))])
    return ModelResponse(parts=[ToolCallPart("add", dict(ARGUMENTS), tool_call_id=CALL_ID)])


def scripted_model(latency: float) -> FunctionModel:
    """A FunctionModel playing the script, sleeping ``latency`` seconds per call if > 0."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if latency:
            await asyncio.sleep(latency)
        return reply(messages)

    return FunctionModel(respond)


async def audit(
    ctx: RunContext[None],
    /,
    *,
    call: ToolCallPart,
    tool_def: ToolDefinition,
    args: ValidatedToolArgs,
) -> ValidatedToolArgs:
    """The one tool-call-before hook: counts the call and lets the arguments through."""
    HOOKED.calls += 1
    return args


def new_agent(latency: float = 0.0) -> Agent[None, str]:
    """A fresh agent: scripted model, the ``add`` tool, one before-tool-execute hook."""
    return Agent(
        scripted_model(latency),
        tools=[add],
        instructions="You add numbers.",
        capabilities=[Hooks(before_tool_execute=audit)],
    )


async def run(agent: Agent[None, str]) -> str:
    """One run of the prompt; the final text. The agent keeps no conversation between runs."""
    result = await agent.run(PROMPT)
    return result.output


def stream_model(n: int) -> FunctionModel:
    """A model streaming ``n`` one-character text chunks: bench_stream's floor generator."""
    # Imported here: bench_stream imports agentrt, which has no place in the
    # pydantic-ai process of peer_runs' concurrent runs (its peak RSS).
    from bench_stream import chunks

    def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        return chunks(n)

    return FunctionModel(stream_function=stream)


async def stream(model: FunctionModel) -> int:
    """One streamed run on a new agent; how many text deltas reached the consumer.

    The first chunk arrives as the ``PartStartEvent`` of the text part, the others
    as ``PartDeltaEvent``s: both count.
    """
    agent = Agent(model)
    deltas = 0
    async with agent.run_stream_events(PROMPT) as events:
        async for event in events:
            if isinstance(event, PartDeltaEvent):
                deltas += isinstance(event.delta, TextPartDelta)
            elif isinstance(event, PartStartEvent):
                deltas += isinstance(event.part, TextPart)
    return deltas
