"""openai-agents set up for the peer benches, on its public ``Model`` interface.

Two minimal implementations of ``agents.models.interface.Model``: ``AddingModel``
plays the tool conversation (or the lead's of the team workload: ``new_team``, the
workload's agent as the lead's tool through ``Agent.as_tool``), ``ChunkingModel``
streams a text one character per ``ResponseTextDeltaEvent``. Output items come from
the SDK's own public helpers (``agents.testing.assistant_message`` and
``function_call``). The SDK also ships
``agents.testing.ScriptedModel``; it deep-copies and records every call for
assertions, a cost of the test double rather than of the runtime, so these
minimal models stand in for a zero-latency provider instead.

Tracing is off (``RunConfig(tracing_disabled=True)``): on by default it exports
spans to OpenAI's backend, which needs a key and a network; agentrt traces nothing.
The hook is ``AgentHooks.on_tool_start`` on the agent (an observer; the SDK has no
interceptor before a function tool runs other than tool guardrails).

This module has no ``collect``: it is a helper of peer_runs.py, peer_streaming.py and
peer_teams.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agents import (
    Agent,
    AgentHooks,
    AgentOutputSchemaBase,
    Handoff,
    Model,
    ModelResponse,
    ModelSettings,
    ModelTracing,
    RunConfig,
    RunContextWrapper,
    Runner,
    Tool,
    TResponseInputItem,
    Usage,
    function_tool,
)
from agents.items import TResponseOutputItem, TResponseStreamEvent
from agents.testing import assistant_message, function_call
from openai.types.responses import Response, ResponseCompletedEvent, ResponseTextDeltaEvent
from openai.types.responses.response_prompt_param import ResponsePromptParam
from peer_common import (
    ARGUMENTS,
    CALL_ID,
    HOOKED,
    LEAD_CALL_ID,
    PROMPT,
    SUB_AGENT,
    add,
    answer_to,
)

ADD = function_tool(add)
RUN_CONFIG = RunConfig(tracing_disabled=True)


def reply(items: str | list[TResponseInputItem]) -> list[TResponseOutputItem]:
    """The script: call ``add`` on the user's prompt, answer once the result is back."""
    last = items[-1] if isinstance(items, list) else None
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        return [assistant_message(answer_to(last.get("output")))]
    return [function_call("add", ARGUMENTS, call_id=CALL_ID)]


def lead_reply(items: str | list[TResponseInputItem]) -> list[TResponseOutputItem]:
    """The lead's script: give the prompt to the sub-agent's tool, pass its answer on."""
    last = items[-1] if isinstance(items, list) else None
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        return [assistant_message(str(last.get("output")))]
    return [function_call(SUB_AGENT, {"input": PROMPT}, call_id=LEAD_CALL_ID)]


Script = Callable[[str | list[TResponseInputItem]], list[TResponseOutputItem]]


def completed(output: list[TResponseOutputItem], sequence_number: int) -> ResponseCompletedEvent:
    """The stream's last event, carrying the whole response as the Responses API sends it."""
    response = Response(
        id="resp_1",
        created_at=0,
        model="scripted",
        object="response",
        output=output,
        tool_choice="auto",
        tools=[],
        top_p=None,
        parallel_tool_calls=False,
        status="completed",
    )
    return ResponseCompletedEvent(
        type="response.completed", response=response, sequence_number=sequence_number
    )


class AddingModel(Model):
    """Plays ``script`` with no network, sleeping ``latency`` seconds per call if > 0."""

    def __init__(self, latency: float = 0.0, script: Script = reply) -> None:
        self.latency = latency
        self.script = script

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        if self.latency:
            await asyncio.sleep(self.latency)
        return ModelResponse(output=self.script(input), usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        if self.latency:
            await asyncio.sleep(self.latency)
        yield completed(self.script(input), 0)


class ChunkingModel(Model):
    """Answers ``n`` characters of text, streamed one ``ResponseTextDeltaEvent`` each.

    The events are built here, once: a zero-latency provider hands them over
    ready-made, so their construction is no part of the framework's cost.
    """

    def __init__(self, n: int) -> None:
        self.text = "x" * n
        self.events: Sequence[TResponseStreamEvent] = [
            *(
                ResponseTextDeltaEvent(
                    type="response.output_text.delta",
                    item_id="msg_1",
                    output_index=0,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                    sequence_number=i,
                )
                for i, piece in enumerate(self.text)
            ),
            completed([assistant_message(self.text)], n),
        ]

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        return ModelResponse(
            output=[assistant_message(self.text)], usage=Usage(requests=1), response_id=None
        )

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        for event in self.events:
            yield event


class Audit(AgentHooks[Any]):
    """The one tool-call-before hook: counts the call."""

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        HOOKED.calls += 1


def new_agent(latency: float = 0.0) -> Agent[Any]:
    """A fresh agent: scripted model, the ``add`` tool, one on-tool-start hook."""
    return Agent(
        name="bench",
        instructions="You add numbers.",
        model=AddingModel(latency),
        tools=[ADD],
        hooks=Audit(),
    )


async def run(agent: Agent[Any]) -> str:
    """One run of the prompt; the final text. The agent keeps no conversation between runs."""
    result = await Runner.run(agent, PROMPT, run_config=RUN_CONFIG)
    return str(result.final_output)


def new_team(latency: float = 0.0) -> Agent[Any]:
    """A lead whose one tool is a fresh workload agent (``new_agent``) as a tool."""
    sub = new_agent(latency)
    return Agent(
        name="lead",
        instructions="You delegate.",
        model=AddingModel(latency, lead_reply),
        tools=[sub.as_tool(tool_name=SUB_AGENT, tool_description="Adds numbers.")],
    )


def stream_model(n: int) -> ChunkingModel:
    """A model streaming ``n`` one-character text deltas."""
    return ChunkingModel(n)


async def stream(model: ChunkingModel) -> int:
    """One streamed run on a new agent; how many text deltas reached the consumer."""
    agent: Agent[Any] = Agent(name="bench", model=model)
    result = Runner.run_streamed(agent, PROMPT, run_config=RUN_CONFIG)
    deltas = 0
    async for event in result.stream_events():
        if event.type == "raw_response_event":
            deltas += isinstance(event.data, ResponseTextDeltaEvent)
    return deltas
