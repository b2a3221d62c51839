"""Forks: a session branched at one of its events into a new session.

``SessionStore.fork(session_id, at, message=None)`` (``POST /sessions/{id}/fork``)
makes a new session whose conversation is exactly what the original held at its
event ``at``; the original is not touched. The new session's event log starts with
the original's events up to that point, so that a reader (the web page) shows the
history it branched from.

A fork inside a run goes on from that point, without calling the model or the tools
for what the run had done by then:

- on a durable store (SQLite, Postgres), the run's recorded DBOS steps up to the
  event stand in for the model and the tools: the run is forked as a DBOS workflow
  (any server process on the store runs it), replays its recorded steps into the new
  session, and goes on live from the first step the original had not finished;
- in memory, the fork takes the conversation the process holds, as it was at the
  event, and a run goes on from there: a model answer whose tool calls were open
  stands in for the model, its calls run (asking for their confirmations again, as
  the original did), then the model answers.

With ``message``, the fork is *edited*: the last user message at the event is
replaced by ``message``, and a new run answers it (what followed the replaced
message is not part of the fork).

The backends implement :meth:`~agentrt.server.backend.Backend.fork`; what they
share is here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from agentrt.agent import Agent
from agentrt.bus import EventContext
from agentrt.events.names import EV as E
from agentrt.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from agentrt.server.session_errors import CannotForkError
from agentrt.server.sessions import RunRequest
from agentrt.stream._parse import parse_event

__all__ = (
    "CONTENT",
    "before_last_user_message",
    "go_on",
    "hold_messages",
    "nothing_to_edit",
    "renamed",
    "renamed_json",
)

M = TypeVar("M", bound=BaseModel)

CONTENT = frozenset(
    {
        "user_message",
        "agent_choice",
        "agent_choice_reasoning",
        "partial_tool_call",
        "tool_call",
        "tool_call_confirmation",
        "tool_call_response",
        "shell",
    }
)
"""The types of the events that change the conversation or show what will: after a
finished run's last one, a fork holds what the run left (its last answer included)."""


def renamed(event: M, session_id: str) -> M:
    """``event`` as the fork ``session_id``'s: a fork's log never names the session it
    branched from (whoever has the fork's id need not have the original's)."""
    return event.model_copy(update={"session_id": session_id})


def renamed_json(data: str, session_id: str) -> str:
    """A stored event's JSON as the fork ``session_id``'s (see :func:`renamed`)."""
    event = renamed(parse_event(data), session_id)
    return event.__pydantic_serializer__.to_json(event).decode()


async def hold_messages(agent: Agent, messages: Sequence[Message]) -> None:
    """Make ``messages`` the conversation of ``agent`` (a new agent from the factory).

    The agent's own system message stays in place of a recorded one.
    """
    conversation = agent.conversation
    await conversation.reset()
    for message in messages:
        if isinstance(message, SystemMessage) and len(conversation):
            continue
        await conversation.append(message)


def before_last_user_message(messages: Sequence[Message], at: int) -> list[Message]:
    """``messages`` up to (without) their last user message: what an edited fork keeps.

    Raises:
        CannotForkError: No user message is there to replace.
    """
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return list(messages[:index])
    raise nothing_to_edit(at)


def nothing_to_edit(at: int) -> CannotForkError:
    """The error of an edited fork at ``at`` that finds no user message to replace."""
    return CannotForkError(
        f"no user message at or before event {at} to replace: fork without a message"
    )


async def go_on(agent: Agent, held: Sequence[Message]) -> RunRequest | None:
    """Give ``agent`` the conversation ``held`` (a fork's, in memory); the run that goes
    on from it, if any.

    A model answer whose tool calls are left open stands in for the model: the run
    begins with it (a response instead of the model's, ``execute:iteration:before``),
    so that its calls run as a turn's calls do, each asking for its confirmation again
    if it needs one. A user message or tool results are answered by the model; a
    conversation that ends with an answer has nothing to go on with.
    """
    answer = _open_answer(held)
    if answer is None:
        await hold_messages(agent, held)
        if held and held[-1].role in ("user", "tool"):
            return RunRequest(None)
        return None
    await hold_messages(agent, held[:answer])
    recorded = held[answer]

    async def stand_in(ctx: EventContext[Any, Any]) -> None:
        agent.events.off(E.EXECUTE_ITERATION_BEFORE, stand_in)
        if ctx.output is None:
            ctx.output = recorded

    agent.events.on(E.EXECUTE_ITERATION_BEFORE, stand_in, transient=True)
    return RunRequest(None)


def _open_answer(held: Sequence[Message]) -> int | None:
    """The index of the last model answer of ``held`` if tool calls of it are open."""
    index = len(held) - 1
    answered: set[str] = set()
    while index >= 0 and isinstance(held[index], ToolMessage):
        answered.add(cast("ToolMessage", held[index]).tool_call_id)
        index -= 1
    if index < 0:
        return None
    last = held[index]
    if not isinstance(last, AssistantMessage) or not last.tool_calls:
        return None
    return index if any(call.id not in answered for call in last.tool_calls) else None
