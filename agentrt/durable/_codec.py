"""What a durable run records: model responses, tool outcomes and run results as plain data.

DBOS stores step outputs and workflow inputs with its serializer (pickle by default).
Everything here is reduced to dicts, lists and strings first, so that a record written by
one version of agentrt is read by the next one without depending on class layouts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from agentrt._state import RunResult
from agentrt.agent import Agent
from agentrt.deferred import Approval, as_answer
from agentrt.messages import Message, SystemMessage, ToolCall, ToolResponse, Usage
from agentrt.models.base import ModelResponse
from agentrt.team import member_for, team_of

__all__ = (
    "decode_messages",
    "decode_response",
    "decode_result",
    "decode_tool_results",
    "encode_messages",
    "encode_response",
    "encode_result",
    "encode_tool_results",
    "restore_conversation",
    "restore_speaker",
    "restore_waiting",
    "speaker_of",
    "waiting_of",
)

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def encode_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """``messages`` as JSON-compatible dicts."""
    encoded: list[dict[str, Any]] = _MESSAGES.dump_python(messages, mode="json")
    return encoded


def decode_messages(data: list[dict[str, Any]]) -> list[Message]:
    """The messages :func:`encode_messages` encoded."""
    return _MESSAGES.validate_python(data)


async def restore_conversation(agent: Agent, messages: list[Message]) -> None:
    """Make ``agent``'s conversation ``messages`` (a run recovered in another process).

    Nothing changes when it holds them already; otherwise it is reset (keeping the
    agent's own system message) and the messages are appended.
    """
    conversation = agent.conversation
    if list(conversation) == messages:
        return
    await conversation.reset()
    for message in messages:
        if isinstance(message, SystemMessage) and len(conversation):
            continue  # the agent's own, kept by reset()
        await conversation.append(message)


def speaker_of(agent: Agent) -> str | None:
    """The name of the agent a hand-off gave ``agent``'s conversation to (``None``: itself)."""
    speaker = agent._speaker
    return None if speaker is None else speaker.name


def restore_speaker(agent: Agent, name: str | None) -> None:
    """Give ``agent``'s conversation back to the agent of its team named ``name`` (see
    :func:`speaker_of`): the one that answers its next user message.

    An agent no longer in the team (the code changed) gives it back to ``agent``.
    """
    agent._speaker = None
    if name is not None and name != agent.name:
        agent._speaker = next((a for a in team_of(agent)[1:] if a.name == name), None)


def waiting_of(agent: Agent) -> dict[str, Any] | None:
    """The members whose calls ``agent``'s conversation waits on, at any depth, as plain
    data: each one's conversation, by the id of the call that delegated to it."""
    waiting = agent._waiting
    if not waiting:
        return None
    return {
        call_id: {
            "messages": encode_messages(list(member.conversation)),
            "waiting": waiting_of(member),
        }
        for call_id, member in waiting.items()
    }


async def restore_waiting(agent: Agent, data: Mapping[str, Any] | None) -> None:
    """Hold again the members :func:`waiting_of` recorded: fresh ones, on their conversations.

    Those of calls the conversation no longer leaves open, or whose agent is no longer in
    the team (the code changed), are dropped: answering such a call runs it afresh.
    """
    agent._waiting = None
    if not data:
        return
    calls = {call.id: call for call in agent.conversation.pending_calls()}
    waiting: dict[str, Agent] = {}
    for call_id, item in data.items():
        call = calls.get(call_id)
        member = None if call is None else await member_for(agent, call)
        if member is None:
            continue
        await restore_conversation(member, decode_messages(item["messages"]))
        await restore_waiting(member, item["waiting"])
        waiting[call_id] = member
    agent._waiting = waiting or None


def _call(call: ToolCall) -> dict[str, str]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _usage(data: dict[str, Any]) -> Usage:
    return Usage(**data)


def encode_response(response: ModelResponse) -> dict[str, Any]:
    """A model response as plain data (the output of a model-call step)."""
    return {
        "content": response.content,
        "reasoning": response.reasoning,
        "tool_calls": [_call(call) for call in response.tool_calls],
        "usage": dataclasses.asdict(response.usage),
        "finish_reason": response.finish_reason,
        "model_name": response.model_name,
    }


def decode_response(data: dict[str, Any]) -> ModelResponse:
    """The response :func:`encode_response` encoded."""
    return ModelResponse(
        content=data["content"],
        reasoning=data["reasoning"],
        tool_calls=tuple(ToolCall(**call) for call in data["tool_calls"]),
        usage=_usage(data["usage"]),
        finish_reason=data["finish_reason"],
        model_name=data["model_name"],
    )


def encode_result(result: RunResult[Any]) -> dict[str, Any]:
    """A run's result as plain data (the output of the run's workflow)."""
    return {
        "output": result.output,
        "messages": encode_messages(result.messages),
        "usage": dataclasses.asdict(result.usage),
        "iterations": result.iterations,
        "pending_tool_calls": [_call(call) for call in result.pending_tool_calls],
    }


def decode_result(data: dict[str, Any]) -> RunResult[str]:
    """The result :func:`encode_result` encoded (``value`` is the output text)."""
    return RunResult(
        output=data["output"],
        messages=decode_messages(data["messages"]),
        usage=_usage(data["usage"]),
        iterations=data["iterations"],
        value=data["output"],
        # Absent from the records of versions without deferred calls.
        pending_tool_calls=tuple(ToolCall(**call) for call in data.get("pending_tool_calls", ())),
    )


def encode_tool_results(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``tool_results`` (see :mod:`agentrt.deferred`) as plain data, for a workflow's input.

    Each answer is reduced to what the run reads of it: an approval's decision and
    reason, or the response a result gives (its text, and whether it is an error).

    Raises:
        ToolResultError: A value is none of the kinds a call takes.
    """
    encoded: dict[str, dict[str, Any]] = {}
    for call_id, value in results.items():
        answer = as_answer(call_id, value)
        if isinstance(answer, Approval):
            encoded[call_id] = {"decision": answer.decision, "reason": answer.reason}
        else:
            encoded[call_id] = {"content": answer.content, "is_error": answer.is_error}
    return encoded


def decode_tool_results(data: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The ``tool_results`` :func:`encode_tool_results` reduced."""
    decoded: dict[str, Any] = {}
    for call_id, item in data.items():
        if "decision" in item:
            decoded[call_id] = Approval(item["decision"], item["reason"])
        else:
            decoded[call_id] = ToolResponse(item["content"], is_error=bool(item["is_error"]))
    return decoded
