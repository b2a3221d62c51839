"""The :class:`Conversation`: an agent's messages, in order, with a version number.

Every change is announced on the agent's bus::

    message:create:before / after      a message the run produced is created
    message:append:before / after      a message joins the end
    message:replace:before / after     a message is replaced (also a compaction)
    message:set_system:before / after  the system message is set
    agent:version:change               after every change, with the new version

The ``:before`` events are interceptable: their handlers may store another message
instead. An agent owns one conversation (:attr:`Agent.conversation
<agentrt.Agent.conversation>`); the agent's own methods (``append``, ``replace``,
...) are the same operations. A runner, such as the execute loop, changes the
conversation only through the methods here.
"""

from __future__ import annotations

import weakref
from collections.abc import Coroutine, Iterator
from typing import TYPE_CHECKING, Any, overload

from agentrt.events._registry import check_output
from agentrt.events.names import EV
from agentrt.exceptions import AgentClosedError
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    is_message,
)

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.bus import EventBus

__all__ = ("Conversation",)

E = EV  # AgentEvents, read without the enum metaclass hook (see EV)
# append() tests the exact type first: the run's own messages pass without the two calls
# of _check_message() (eight a scripted run).
_MESSAGE_TYPES = frozenset((SystemMessage, UserMessage, AssistantMessage, ToolMessage))


def _check_message(message: object, method: str) -> Message:
    if not is_message(message):
        raise TypeError(
            f"Conversation.{method}() takes a Message (System/User/Assistant/ToolMessage), "
            f"got {type(message).__name__} ({message!r:.80})"
        )
    return message


class Conversation:
    """The messages of one agent, oldest first, and a version that counts their changes.

    Reading is synchronous and cheap (``len(conversation)``, ``conversation[i]``,
    iteration, :meth:`since`); every change is a coroutine that announces itself on
    the agent's bus (see the module docstring). A closed agent's conversation can be
    read but not changed.

    Args:
        agent: The agent that owns the conversation (``agent=`` of every event).
    """

    __slots__ = ("_bus", "_closed", "_messages", "_owner", "_version")

    def __init__(self, agent: Agent) -> None:
        # Weak: an agent and its conversation in a reference cycle would outlive their
        # last use until the cyclic GC ran, and a program making many short-lived agents
        # would pay for its collections (measured: a fresh agent's run 30% slower).
        self._owner = weakref.ref(agent)
        self._bus = agent.events
        self._closed = False
        self._messages: list[Message] = []
        self._version = 0

    def _agent(self) -> Agent:
        agent = self._owner()
        if agent is None:
            raise ReferenceError("the agent that owned this conversation is gone")
        return agent

    # -- reading ----------------------------------------------------------------------

    @property
    def events(self) -> EventBus:
        """The bus its changes are announced on: its owner's (``agent=`` is the owner).

        Another agent may speak on this conversation (a hand-off, see
        :mod:`agentrt.team`): the changes its run makes are still announced here.
        """
        return self._bus

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages, oldest first (a snapshot)."""
        return tuple(self._messages)

    @property
    def version(self) -> int:
        """A number that changes on every change to the conversation."""
        return self._version

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(tuple(self._messages))

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]

    def since(self, start: int) -> list[Message]:
        """The messages from index ``start`` on, as a new list."""
        return self._messages[start:]

    def tool_call_ids(self) -> set[str]:
        """The ids of every tool call an assistant message of the conversation made."""
        return {
            call.id
            for message in self._messages
            if message.role == "assistant"
            for call in message.tool_calls
        }

    def unanswered_calls(self, start: int = 0) -> list[ToolCall]:
        """The tool calls made from index ``start`` on that no tool message answers yet."""
        recent = self._messages[start:]
        answered = {m.tool_call_id for m in recent if m.role == "tool"}
        return [
            call
            for m in recent
            if m.role == "assistant"
            for call in m.tool_calls
            if call.id not in answered
        ]

    def pending_calls(self) -> list[ToolCall]:
        """The calls of the last assistant message that no tool message answers yet.

        Only tool messages may follow that message: these are the calls a run left
        open (see :mod:`agentrt.deferred`). Cheap when there are none: the scan stops
        at the first message from the end that is not a tool message.
        """
        messages = self._messages
        end = messages[-1] if messages else None
        if end is None or (end.role != "tool" and (end.role != "assistant" or not end.tool_calls)):
            return []  # every run starts here: the usual answer without a scan
        index = len(messages) - 1
        answered: set[str] = set()
        while index >= 0:
            message = messages[index]
            if message.role != "tool":
                break
            answered.add(message.tool_call_id)
            index -= 1
        if index < 0:
            return []
        last = messages[index]
        if last.role != "assistant" or not last.tool_calls:
            return []
        return [call for call in last.tool_calls if call.id not in answered]

    # -- changing ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran: the conversation can be read, not changed."""
        return self._closed

    def close(self) -> None:
        """Refuse every later change (the agent closes it when it closes)."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError(self._agent().name)

    async def create(self, message: Message) -> Message:
        """Announce a new message (``message:create:*``); return the one to use.

        Creating does not store the message: :meth:`append` does.
        """
        bus = self._bus
        # The has_handlers() tests skip dispatches nobody listens to: the hot path
        # of a run announces some forty events and most have no handler. The agent
        # (held weakly) is looked up only for a dispatch.
        if bus.has_handlers(E.MESSAGE_CREATE_BEFORE):
            ctx = await bus.apply(
                E.MESSAGE_CREATE_BEFORE, output=message, agent=self._agent(), message=message
            )
            message = check_output(E.MESSAGE_CREATE_BEFORE, ctx.output)
        if bus.has_handlers(E.MESSAGE_CREATE_AFTER):
            await bus.do(E.MESSAGE_CREATE_AFTER, agent=self._agent(), message=message)
        return message

    async def append(self, message: Message) -> Message:
        """Append ``message``; return the message stored.

        ``message:append:before`` handlers may store another message instead.

        Raises:
            AgentClosedError: The agent is closed.
            TypeError: ``message`` is not a message.
        """
        if self._closed:
            self._check_open()
        stored = message if type(message) in _MESSAGE_TYPES else _check_message(message, "append")
        bus = self._bus
        if bus.has_handlers(E.MESSAGE_APPEND_BEFORE):
            ctx = await bus.apply(
                E.MESSAGE_APPEND_BEFORE, output=stored, message=stored, agent=self._agent()
            )
            stored = check_output(E.MESSAGE_APPEND_BEFORE, ctx.output)
        messages = self._messages
        messages.append(stored)
        if bus.has_handlers(E.MESSAGE_APPEND_AFTER):
            await bus.do(
                E.MESSAGE_APPEND_AFTER,
                agent=self._agent(),
                message=stored,
                index=len(messages) - 1,
            )
        if self._next_version():
            await self._announce_version()
        return stored

    def add(self, message: Message) -> Coroutine[Any, Any, Message]:
        """Create and append a message a run produced: ``message:create:*``, then append.

        A coroutine function in effect: the coroutine returned is :meth:`append`'s when
        nobody listens to ``message:create:*``, which spares a coroutine per message.

        Raises:
            AgentClosedError: The agent is closed.
        """
        bus = self._bus
        if bus.has_handlers(E.MESSAGE_CREATE_BEFORE) or bus.has_handlers(E.MESSAGE_CREATE_AFTER):
            return self._create_and_append(message)
        return self.append(message)

    async def _create_and_append(self, message: Message) -> Message:
        return await self.append(await self.create(message))

    async def replace(self, index: int, message: Message) -> Message:
        """Replace the message at ``index``; return the message stored.

        Raises:
            AgentClosedError: The agent is closed.
            TypeError: ``message`` is not a message or ``index`` not an int.
            IndexError: No message at ``index``.
        """
        self._check_open()
        message = _check_message(message, "replace")
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be an int, got {type(index).__name__}")
        messages = self._messages
        if not -len(messages) <= index < len(messages):
            raise IndexError(f"no message at index {index}; the conversation has {len(messages)}")
        index %= len(messages)
        return await self._replace_range(index, index + 1, message)

    async def set_system(self, content: str | SystemMessage) -> Message:
        """Set the system message (the conversation's first); return the message stored.

        Raises:
            AgentClosedError: The agent is closed.
            TypeError: ``content`` is neither a str nor a :class:`SystemMessage`.
        """
        self._check_open()
        agent = self._agent()
        if isinstance(content, str):
            message: Message = SystemMessage(content=content)
        elif isinstance(content, SystemMessage):
            message = content
        else:
            raise TypeError(f"a system message is a str or SystemMessage, got {content!r:.60}")
        bus = self._bus
        stored = message
        if bus.has_handlers(E.MESSAGE_SET_SYSTEM_BEFORE):
            ctx = await bus.apply(
                E.MESSAGE_SET_SYSTEM_BEFORE, output=message, agent=agent, message=message
            )
            stored = check_output(E.MESSAGE_SET_SYSTEM_BEFORE, ctx.output)
        messages = self._messages
        if messages and isinstance(messages[0], SystemMessage):
            messages[0] = stored
        else:
            messages.insert(0, stored)
        if bus.has_handlers(E.MESSAGE_SET_SYSTEM_AFTER):
            await bus.do(E.MESSAGE_SET_SYSTEM_AFTER, agent=agent, message=stored)
        if self._next_version():
            await self._announce_version()
        return stored

    async def reset(self) -> None:
        """Forget every message except the system message.

        Raises:
            AgentClosedError: The agent is closed.
        """
        self._check_open()
        messages = self._messages
        keep = messages[:1] if messages and isinstance(messages[0], SystemMessage) else []
        if keep != messages:
            messages[:] = keep
            if self._next_version():
                await self._announce_version()

    async def compact(self, end: int, summary: Message, *, start: int | None = None) -> Message:
        """Replace the messages ``start`` to ``end`` (exclusive) by one; return the one stored.

        The primitive of context compaction: older messages give way to ``summary``.
        It is announced as a replace of the range's first message, then one version
        change::

            message:replace:before  (interceptable; index=start, old_message=messages[start],
                                     message=summary; ctx.output is the message to store)
            the range becomes the one stored message
            message:replace:after   (signal; index=start, old_message=messages[start],
                                     message=the stored one)
            agent:version:change    (once)

        so a handler that mirrors the conversation should re-read it on
        ``message:replace:after`` (it got shorter when ``end - start > 1``). Nothing
        changes when a ``message:replace:before`` handler raises.

        Args:
            end: The first message kept after the range.
            summary: What stands for the range; neither a tool message nor an
                assistant message with tool calls (their partners would be missing).
            start: The first message replaced; by default the first one after the
                system message. The system message is never part of the range.

        Raises:
            AgentClosedError: The agent is closed.
            TypeError: ``summary`` is not a message, or an index is not an int.
            IndexError: The range is empty or outside the conversation.
            ValueError: The range includes the system message, or would separate an
                assistant's tool calls from their tool messages, or ``summary`` is a
                tool message or makes tool calls.
        """
        self._check_open()
        summary = _check_message(summary, "compact")
        messages = self._messages
        head = 1 if messages and isinstance(messages[0], SystemMessage) else 0
        if start is None:
            start = head
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 0 <= start < end <= len(messages):
            raise IndexError(
                f"no messages to compact in [{start}, {end}); the conversation has {len(messages)}"
            )
        if start < head:
            raise ValueError("the system message (index 0) is never compacted; start at 1")
        if summary.role == "tool" or (summary.role == "assistant" and summary.tool_calls):
            what = (
                "a tool message"
                if summary.role == "tool"
                else "an assistant message with tool calls"
            )
            raise ValueError(
                "a summary is a user, system or assistant message without tool calls, "
                f"not {what}: its partner messages would be missing"
            )
        for index in (start, end):
            if index < len(messages) and messages[index].role == "tool":
                raise ValueError(
                    f"compacting [{start}, {end}) would separate the tool message at {index} "
                    "from the assistant message that called it; move the boundary"
                )
        return await self._replace_range(start, end, summary)

    async def _replace_range(self, start: int, end: int, message: Message) -> Message:
        """``message:replace:*`` around putting ``message`` in place of ``[start, end)``."""
        agent = self._agent()
        bus = self._bus
        old = self._messages[start]
        stored = message
        if bus.has_handlers(E.MESSAGE_REPLACE_BEFORE):
            ctx = await bus.apply(
                E.MESSAGE_REPLACE_BEFORE,
                output=message,
                agent=agent,
                index=start,
                old_message=old,
                message=message,
            )
            stored = check_output(E.MESSAGE_REPLACE_BEFORE, ctx.output)
        self._messages[start:end] = [stored]
        if bus.has_handlers(E.MESSAGE_REPLACE_AFTER):
            await bus.do(
                E.MESSAGE_REPLACE_AFTER, agent=agent, index=start, old_message=old, message=stored
            )
        if self._next_version():
            await self._announce_version()
        return stored

    def _next_version(self) -> bool:
        """Count a change; whether it must be announced (no coroutine when nobody listens)."""
        self._version += 1
        return self._bus.has_handlers(E.AGENT_VERSION_CHANGE)

    async def _announce_version(self) -> None:
        version = self._version
        await self._bus.do(
            E.AGENT_VERSION_CHANGE, agent=self._agent(), previous=version - 1, version=version
        )

    def __repr__(self) -> str:
        return f"<Conversation messages={len(self._messages)} version={self._version}>"
