"""strands-agents set up for the peer benches, on its public ``Model`` base class.

``ScriptedModel`` implements ``strands.models.model.Model``: ``stream`` yields the
Bedrock-style stream events a provider yields (``messageStart``,
``contentBlockDelta``, ``messageStop``, ...) for the script, or ``n`` one-character
text deltas; it also plays the lead of the team workload (``new_team``: the
workload's agent as the lead's tool through ``Agent.as_tool``, which resets the
sub-agent's conversation before each call). The hook is a ``HookProvider`` on
``BeforeToolCallEvent``. The agent has ``callback_handler=None``: the default one
prints every delta to stdout.

This module has no ``collect``: it is a helper of peer_runs.py, peer_streaming.py and
peer_teams.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

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
from pydantic import BaseModel
from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

ADD = tool(add)
T = TypeVar("T", bound=BaseModel)
ARGUMENTS_JSON = json.dumps(ARGUMENTS)


def text_events(pieces: Sequence[str]) -> list[StreamEvent]:
    """An assistant message of text, one ``contentBlockDelta`` per piece."""
    deltas: list[StreamEvent] = [{"contentBlockDelta": {"delta": {"text": p}}} for p in pieces]
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {}}},
        *deltas,
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


def call_events(name: str, arguments_json: str, call_id: str) -> list[StreamEvent]:
    """An assistant message that calls one tool."""
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": call_id}}}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments_json}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


CALL_EVENTS = call_events("add", ARGUMENTS_JSON, CALL_ID)
LEAD_CALL_EVENTS = call_events(SUB_AGENT, json.dumps({"input": PROMPT}), LEAD_CALL_ID)


def tool_result_text(messages: Messages) -> str | None:
    """The text of the tool result the last message carries; None when it carries none."""
    for block in messages[-1]["content"]:
        if "toolResult" in block:
            result = block["toolResult"]["content"]
            return str(result[0].get("text")) if result else ""
    return None


def reply(messages: Messages) -> list[StreamEvent]:
    """The script: call ``add`` on the user's prompt, answer once the result is back."""
    result = tool_result_text(messages)
    return CALL_EVENTS if result is None else text_events([answer_to(result or None)])


def lead_reply(messages: Messages) -> list[StreamEvent]:
    """The lead's script: give the prompt to the sub-agent's tool, pass its answer on.

    strands' agent tool returns the sub-agent's text with a line break after it (the
    ``str`` of its result): the lead passes on the text.
    """
    result = tool_result_text(messages)
    return LEAD_CALL_EVENTS if result is None else text_events([result.strip()])


class ScriptedModel(Model):
    """Plays the script (sleeping ``latency`` seconds per call if > 0) or streams ``chunks``.

    With ``chunks`` the stream events are built here, once: a zero-latency provider
    hands them over ready-made, so their construction is no part of the framework's cost.
    """

    def __init__(
        self,
        latency: float = 0.0,
        chunks: int = 0,
        script: Callable[[Messages], list[StreamEvent]] = reply,
    ) -> None:
        self.latency = latency
        self.script = script
        self.chunks = text_events("x" * chunks) if chunks else None
        self.config: dict[str, Any] = {}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError("the scripted model answers in text only")

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        if self.latency:
            await asyncio.sleep(self.latency)
        for event in self.chunks if self.chunks is not None else self.script(messages):
            yield event


class Audit(HookProvider):
    """The one tool-call-before hook: counts the call."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        HOOKED.calls += 1


def new_agent(latency: float = 0.0) -> Agent:
    """A fresh agent: scripted model, the ``add`` tool, one before-tool-call hook."""
    return Agent(
        model=ScriptedModel(latency),
        tools=[ADD],
        system_prompt="You add numbers.",
        callback_handler=None,
        hooks=[Audit()],
    )


async def run(agent: Agent) -> str:
    """One run of the prompt on a cleared conversation; the final text."""
    agent.messages.clear()
    result = await agent.invoke_async(PROMPT)
    return "".join(block.get("text", "") for block in result.message["content"])


def new_team(latency: float = 0.0) -> Agent:
    """A lead whose one tool is a fresh workload agent (``new_agent``) as a tool."""
    sub = new_agent(latency)
    return Agent(
        model=ScriptedModel(latency, script=lead_reply),
        tools=[sub.as_tool(name=SUB_AGENT, description="Adds numbers.")],
        system_prompt="You delegate.",
        callback_handler=None,
    )


def stream_model(n: int) -> ScriptedModel:
    """A model streaming ``n`` one-character text deltas."""
    return ScriptedModel(chunks=n)


async def stream(model: ScriptedModel) -> int:
    """One streamed run on a new agent; how many text deltas reached the consumer."""
    agent = Agent(model=model, callback_handler=None)
    deltas = 0
    async for event in agent.stream_async(PROMPT):
        deltas += "data" in event
    return deltas
