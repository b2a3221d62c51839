"""``POST /ag-ui``: the server's agents for AG-UI frontends (CopilotKit, ``@ag-ui/client``).

The body is AG-UI's ``RunAgentInput``; the answer is AG-UI's event stream (SSE ``data:``
frames), told by :class:`~agentrt.server.agui_events.AGUIProjection` from the same
events as the server's own streams. Both sides use the official ``ag-ui-protocol``
models. AG-UI is a projection of the session core: a thread is a session of the
server's store like any other, in memory or in a durable store.

Threads
    An AG-UI thread id names one server session (one agent, one conversation), whose
    id is derived from the thread id (:func:`thread_session_id`), so that every
    process on a durable store finds it; the first run of a thread makes it. Whoever
    knows a thread id drives it: frontends make them unguessable (``@ag-ui/client``
    uses UUIDs), and a token protects the server. What the thread's client holds
    already (the ids of the messages it has, the calls it was told about) is kept
    with the session, in the store when it is durable. A thread idle for the
    server's ``session_ttl`` is forgotten; a client that sends the whole history
    gets it back, one that sends only new messages starts over.

Messages
    Clients differ: some send the whole history every time, some only what is new.
    Both work: a message whose id the thread knows (one it was sent, or one its
    events made) is not added again. New messages join the conversation in order,
    and a trailing user message is the run's prompt. With no prompt the run goes on
    from the conversation as it is, if it waits for the model (it ends with tool
    results the model has not read); otherwise the run has nothing to do and
    finishes at once. ``system`` and ``developer`` messages and ``context`` entries
    are not stored: they are shown to the model, after the agent's own instructions,
    in every model call of the run (``message:render:before``). Messages are text: a
    content part other than text is refused.

Frontend tools
    The tools of ``RunAgentInput.tools`` run in the client: they are
    :class:`~agentrt.deferred.ExternalTool` offered to the model beside the agent's
    own (a name the agent has already is refused). When the model calls one, the
    agent's run ends *waiting* (nothing waits in memory: the conversation holds the
    open call, in the store when it is durable), and the AG-UI run ends with
    ``RUN_FINISHED`` whose success outcome names the calls in
    ``pendingToolCallIds``. The client runs them and starts the next run with their
    results (``tool`` messages, ``error`` set for a failure): a new agent run, in
    whichever process the request reaches, goes on with them. A next input that
    answers none of them but brings a new message leaves them unanswered: each gets
    an error result that says so, and the message is answered.

Confirmations
    A tool call that needs approval (see :mod:`agentrt.stream.confirm`) takes the
    same round trip as AG-UI's interrupts, and waits the same way (deferred, not in
    memory): the AG-UI run ends with ``RUN_FINISHED`` whose outcome is
    ``interrupt``, one interrupt per call waiting, its ``id`` and ``toolCallId`` the
    call's id, ``reason`` ``"tool_call_confirmation"``, and a ``responseSchema``.
    The next run answers with ``resume`` entries: ``{"interruptId": id, "status":
    "resolved", "payload": {"decision": "approve", "reason": "..."}}`` (a decision
    alone, ``"approve"``, is a payload too; decisions: ``approve``,
    ``approve-session``, ``approve-tool``, ``reject``), or ``"status":
    "cancelled"``, a rejection. The call is shown before the interrupt
    (TOOL_CALL_START, ARGS, END) and gets its TOOL_CALL_RESULT once it ran or was
    rejected.

Teams
    A sub-agent's call, at any depth, is asked and answered like the agent's own: a
    frontend (external) call of a sub-agent is in ``pendingToolCallIds``, a call of a
    sub-agent that waits for approval is an interrupt, each by its own id (not that of
    the ``transfer_task`` call that delegated to the sub-agent), and its answer resumes
    the sub-agent, then the agents above it (see :mod:`agentrt.team`). Its events carry
    ``subagentRunId`` (see :mod:`agentrt.server.agui_events`).
"""

import hashlib
import json
from base64 import urlsafe_b64encode
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
from ag_ui.core import AssistantMessage as AGUIAssistantMessage
from ag_ui.core import BaseEvent, Interrupt, ResumeEntry, RunAgentInput, TextPart
from ag_ui.core import DeveloperMessage as AGUIDeveloperMessage
from ag_ui.core import Message as AGUIMessage
from ag_ui.core import SystemMessage as AGUISystemMessage
from ag_ui.core import Tool as AGUITool
from ag_ui.core import ToolMessage as AGUIToolMessage
from ag_ui.core import UserMessage as AGUIUserMessage
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentrt.agent import Agent
from agentrt.bus import EventContext
from agentrt.deferred import DECISIONS, Approval, ExternalTool, ToolResult
from agentrt.events.names import EV
from agentrt.exceptions import ToolDefinitionError, ToolError
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentrt.server._http import EventStream, endpoint, read_json, validate
from agentrt.server.agui_events import AGUIProjection, ThreadMemory, encode
from agentrt.server.limits import ServerLimits
from agentrt.server.session_errors import AGUIInputError
from agentrt.server.sessions import Run, Session
from agentrt.server.store import SessionStore
from agentrt.stream.codec import sse_heartbeat
from agentrt.team import leaf_calls

__all__ = (
    "CONFIRMATION_REASON",
    "DECISION_SCHEMA",
    "MAX_THREAD_ID",
    "AGUIEndpoint",
    "AGUIInputError",
    "ClientToolError",
    "thread_session_id",
)

CONFIRMATION_REASON = "tool_call_confirmation"
"""The ``reason`` of the interrupt that asks to approve a tool call."""

DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"enum": list(DECISIONS)},
        "reason": {"type": "string"},
    },
    "required": ["decision"],
}
"""The ``responseSchema`` of a confirmation interrupt: what its resume payload holds."""

MAX_THREAD_ID = 256
"""The longest ``threadId`` accepted, in characters (AG-UI sets no bound)."""

# The name under which a thread's memory of its client is kept with its session.
_ATTACHMENT = "ag-ui"


def thread_session_id(thread_id: str) -> str:
    """The id of the session of the AG-UI thread ``thread_id``.

    Derived (a hash, so that any thread id fits the store's ids), not drawn: every
    process on a durable store finds the thread's session from its id alone.
    """
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).digest()
    return "ag-ui-" + urlsafe_b64encode(digest[:24]).decode()


class ClientToolError(ToolError):
    """The client reported that a frontend tool failed; the model reads its message.

    Attributes:
        tool_name: The frontend tool.
        error: What the client said.
    """

    def __init__(self, tool_name: str, error: str) -> None:
        self.tool_name = tool_name
        self.error = error
        super().__init__(f"tool {tool_name!r} failed in the client: {error}")


def _text(content: str | Sequence[Any], where: str) -> str:
    """A message's content as text; a part other than text is refused."""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if not isinstance(part, TextPart):
            kind = getattr(part, "type", type(part).__name__)
            raise AGUIInputError(f"{where}: only text content is supported, got a {kind!r} part")
        pieces.append(part.text)
    return "".join(pieces)


def _frontend_tool(declared: AGUITool) -> ExternalTool:
    """A tool of ``RunAgentInput.tools``: offered to the model, run by the client."""
    schema = declared.parameters
    parameters = dict(schema) if isinstance(schema, dict) else {"type": "object", "properties": {}}
    parameters.setdefault("type", "object")
    return ExternalTool(declared.name, declared.description, parameters)


@dataclass(eq=False, slots=True)
class _Thread:
    """One AG-UI thread in this process: its session and what its client holds and declared."""

    session: Session
    memory: ThreadMemory = field(default_factory=ThreadMemory)
    declared: list[dict[str, Any]] = field(default_factory=list)
    tools: dict[str, ExternalTool] = field(default_factory=dict)
    instructions: list[str] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    told: int = 0
    """The last event of the session's log an AG-UI run told."""

    async def load(self) -> None:
        """What the store keeps of the thread (the last request may have been another
        process's)."""
        kept = await self.session.store.backend.read_attachment(self.session, _ATTACHMENT)
        if kept is None:
            return
        self.memory = ThreadMemory.from_json(kept["memory"])
        self.told = int(kept["told"])
        self.instructions = list(kept["instructions"])
        self.declare([AGUITool.model_validate(tool) for tool in kept["tools"]])

    async def save(self) -> None:
        """Keep the thread's memory with its session, for its next request."""
        kept = {
            "memory": self.memory.to_json(),
            "told": self.told,
            "instructions": self.instructions,
            "tools": self.declared,
        }
        await self.session.store.backend.write_attachment(self.session, _ATTACHMENT, kept)

    def declare(self, tools: Sequence[AGUITool]) -> None:
        """The frontend tools offered from now on (a recovered run offers them too)."""
        self.tools = {tool.name: _frontend_tool(tool) for tool in tools}
        self.declared = [tool.model_dump(mode="json", by_alias=True) for tool in tools]

    # -- hooks on the session's agent -------------------------------------------------

    def offer_tools(self, ctx: EventContext[Any, Any]) -> None:
        offered = ctx.output
        if self.tools and isinstance(offered, list):
            ctx.output = [*offered, *self.tools.values()]

    def show_instructions(self, ctx: EventContext[Any, Any]) -> None:
        rendered = ctx.output
        if not self.instructions or not isinstance(rendered, list):
            return
        messages: list[Message] = list(rendered)
        at = 1 if messages and isinstance(messages[0], SystemMessage) else 0
        messages.insert(at, SystemMessage(content="\n\n".join(self.instructions)))
        ctx.output = messages


@dataclass(slots=True)
class _Plan:
    """What one input asks of its thread, checked before anything changes."""

    append: list[Message]
    prompt: str | None
    answers: dict[str, ToolResult]
    tools: list[AGUITool]
    instructions: list[str]


class AGUIEndpoint:
    """The AG-UI threads of one server, as sessions of its :class:`SessionStore`.

    Args:
        store: The server's sessions (a thread is one of them).
        limits: The server's caps (runs at once, message size).
        heartbeat: Seconds without an event before a ``: heartbeat`` comment.
        max_body_size: Bytes a request body may hold.
    """

    def __init__(
        self,
        store: SessionStore,
        *,
        limits: ServerLimits,
        heartbeat: float,
        max_body_size: int,
    ) -> None:
        self._store = store
        self._limits = limits
        self._heartbeat = heartbeat
        self._max_body_size = max_body_size

    def route(self) -> Route:
        """``POST /ag-ui``, wrapped so that its failures are JSON error answers."""
        return Route("/ag-ui", endpoint(self.handle), methods=["POST"])

    async def handle(self, request: Request) -> Response:
        """``POST /ag-ui``: a ``RunAgentInput`` in, the run's AG-UI events out (SSE)."""
        body = validate(RunAgentInput, await read_json(request, self._max_body_size))
        return EventStream(await self.open(body))

    async def open(self, body: RunAgentInput) -> AsyncGenerator[bytes, None]:
        """Start (or continue) the thread's run for ``body``; its AG-UI events as SSE.

        Everything that can be refused is refused here, before any event is sent.

        Raises:
            AGUIInputError: The input cannot be run (a bad thread id, a content part
                other than text, a frontend tool with the name of one of the agent's,
                a resume entry for nothing that waits, an unknown decision).
            RunInProgressError: The thread's run is busy (in any process).
            LimitError: A server limit (runs at once, message size).
            SessionLimitError, StoreNotRunningError: No session can be made.
        """
        thread_id = body.thread_id
        if not thread_id or len(thread_id) > MAX_THREAD_ID:
            raise AGUIInputError(f"threadId must be 1 to {MAX_THREAD_ID} characters")
        thread = await self._thread(thread_id)
        session = thread.session
        run: Run | None = None
        async with thread.lock:
            await session.refresh()
            await thread.load()
            plan = self._plan(thread, body)
            thread.declare(plan.tools)
            thread.instructions = plan.instructions
            if plan.answers:
                # The previous run waits for this client: its answers let it go on.
                self._limits.check_run(self._store.runs)
                run = await session.start(
                    None, tool_results=plan.answers, defer_confirmations=True
                )
            else:
                if plan.prompt is not None:
                    self._limits.check_message(plan.prompt)
                if plan.prompt is not None or plan.append:
                    self._limits.check_run(self._store.runs)
                await session.append(plan.append)
                if plan.prompt is not None or _awaits_model(session):
                    run = await session.start(plan.prompt, defer_confirmations=True)
            if run is not None:
                thread.told = run.after
            thread.memory.message_ids.update(message.id for message in body.messages)
            await thread.save()
        projection = AGUIProjection(
            thread_id,
            body.run_id,
            memory=thread.memory,
            model=getattr(session.agent.model, "name", None),
        )
        return self._events(thread, projection, run)

    # -- the input ----------------------------------------------------------------------

    async def _thread(self, thread_id: str) -> _Thread:
        session = await self._store.open_or_create(thread_session_id(thread_id))
        thread = session.attachments.get(_ATTACHMENT)
        if isinstance(thread, _Thread):
            return thread
        thread = session.attachments[_ATTACHMENT] = _Thread(session)
        bus = session.agent.events
        bus.on(EV.TOOLS_PROVIDE, thread.offer_tools)
        bus.on(EV.MESSAGE_RENDER_BEFORE, thread.show_instructions)
        return thread

    def _plan(self, thread: _Thread, body: RunAgentInput) -> _Plan:
        agent = thread.session.agent
        known = thread.memory.message_ids
        own = {tool.name for tool in agent.tools}
        tools: list[AGUITool] = []
        for declared in body.tools or ():
            if declared.name in own:
                raise AGUIInputError(
                    f"tools: {declared.name!r} is the name of one of the agent's own tools; "
                    "give the frontend tool another name"
                )
            try:
                _frontend_tool(declared)
            except (ToolDefinitionError, TypeError, ValueError) as error:
                raise AGUIInputError(f"tools: {error}") from None
            tools.append(declared)
        instructions = [f"{item.description}: {item.value}" for item in body.context or ()]
        new = [message for message in body.messages if message.id not in known]
        for message in new:
            if isinstance(message, AGUISystemMessage | AGUIDeveloperMessage):
                instructions.append(_text(message.content, f"message {message.id!r}"))
        waiting = {call.id: call for call in _waiting_calls(agent)}
        answers: dict[str, ToolResult] = {}
        for message in new:
            if isinstance(message, AGUIToolMessage) and message.tool_call_id in waiting:
                content = _text(message.content, f"message {message.id!r}")
                call = waiting[message.tool_call_id]
                answers[call.id] = (
                    content
                    if message.error is None
                    else ClientToolError(call.name, message.error or content)
                )
                thread.memory.client_results.add(call.id)
        answers.update(self._decisions(body.resume or (), waiting, thread.memory))
        if answers:
            ignored = [
                m.id
                for m in new
                if isinstance(m, AGUIUserMessage | AGUIAssistantMessage)
                or (isinstance(m, AGUIToolMessage) and m.tool_call_id not in waiting)
            ]
            if ignored:
                raise AGUIInputError(
                    "the thread's run waits for tool results and answers to its interrupts; "
                    f"send new messages once it finished (messages {ignored} came with them)"
                )
            return _Plan([], None, answers, tools, instructions)
        append, prompt = self._conversation(thread, new)
        return _Plan(append, prompt, {}, tools, instructions)

    @staticmethod
    def _decisions(
        entries: Sequence[ResumeEntry], waiting: dict[str, ToolCall], memory: ThreadMemory
    ) -> dict[str, ToolResult]:
        answers: dict[str, ToolResult] = {}
        for entry in entries:
            where = f"resume entry {entry.interrupt_id!r}"
            if entry.interrupt_id not in waiting or entry.interrupt_id not in memory.asked:
                raise AGUIInputError(f"{where}: no tool call of this thread waits for it")
            if entry.status == "cancelled":
                answers[entry.interrupt_id] = Approval("reject", "cancelled by the client")
                continue
            payload = entry.payload
            decision: object = payload
            reason: object = None
            if isinstance(payload, dict):
                decision, reason = payload.get("decision"), payload.get("reason")
            if decision not in DECISIONS or not (reason is None or isinstance(reason, str)):
                raise AGUIInputError(
                    f"{where}: the payload is a decision ({', '.join(DECISIONS)}) or "
                    f'{{"decision": ..., "reason": "..."}}, got {json.dumps(payload)[:200]}'
                )
            answers[entry.interrupt_id] = Approval(decision, reason)
        return answers

    @staticmethod
    def _conversation(thread: _Thread, new: list[AGUIMessage]) -> tuple[list[Message], str | None]:
        """The new messages as the conversation takes them, and the run's prompt."""
        conversation = thread.session.agent.conversation
        open_calls = {call.id for call in conversation.unanswered_calls()}
        append: list[Message] = []
        prompt: str | None = None
        for index, message in enumerate(new):
            where = f"message {message.id!r}"
            if isinstance(message, AGUIUserMessage):
                text = _text(message.content, where)
                if index == len(new) - 1:
                    prompt = text
                else:
                    append.append(UserMessage(content=text))
            elif isinstance(message, AGUIAssistantMessage):
                made = tuple(
                    ToolCall(
                        id=call.id, name=call.function.name, arguments=call.function.arguments
                    )
                    for call in message.tool_calls or ()
                )
                append.append(AssistantMessage(content=message.content or "", tool_calls=made))
                open_calls.update(call.id for call in made)
            elif isinstance(message, AGUIToolMessage) and message.tool_call_id in open_calls:
                # A result answers one open call once: a result for a call answered
                # already (left unanswered by a later message) or never made has no place.
                open_calls.discard(message.tool_call_id)
                append.append(
                    ToolMessage(
                        content=_text(message.content, where),
                        tool_call_id=message.tool_call_id,
                        is_error=message.error is not None,
                    )
                )
                thread.memory.client_results.add(message.tool_call_id)
            # system and developer messages are instructions; reasoning and activity
            # messages are what the client showed: neither is stored.
        return append, prompt

    # -- the answer ---------------------------------------------------------------------

    async def _events(
        self, thread: _Thread, projection: AGUIProjection, run: Run | None
    ) -> AsyncGenerator[bytes, None]:
        yield encode(projection.started())
        session = thread.session
        if run is None:
            # Nothing to run: told again what the thread waits for, if anything.
            waiting = [call.id for call in _waiting_calls(session.agent)]
            yield encode(self._end(thread, projection, waiting))
            return
        stopped = False
        try:
            batches = session.follow(thread.told, run=run, heartbeat=self._heartbeat)
            async with aclosing(batches):
                async for batch in batches:
                    if not batch:
                        yield sse_heartbeat()
                        continue
                    out: list[BaseEvent] = []
                    for sequence, event in batch:
                        thread.told = sequence
                        if event.type == "stream_stopped":
                            stopped = True
                        else:
                            out.extend(projection.feed(event))
                    if out:
                        yield encode(out)
        finally:
            # What the client was told is kept before it hears the end (its next request
            # may reach any process), and also when it left before the end.
            with anyio.CancelScope(shield=True):
                await thread.save()
        result = run.adapter.result
        if not stopped:
            # The server is shutting down: the run will not go on.
            yield encode(projection.failed("the server is shutting down", code="server_shutdown"))
        elif result is not None:
            waiting = [call.id for call in result.pending_tool_calls]
            yield encode(self._end(thread, projection, waiting))
        elif run.cancelled_because is not None:
            yield encode(projection.cancelled())
        else:
            yield encode(projection.failed())

    @staticmethod
    def _end(thread: _Thread, projection: AGUIProjection, waiting: list[str]) -> list[BaseEvent]:
        """The end of an AG-UI run: interrupts for the calls waiting for approval, the
        frontend's calls as pending, or a plain success."""
        interrupts = []
        pending = []
        for call_id in waiting:
            call = thread.memory.asked.get(call_id)
            if call is None:
                pending.append(call_id)
                continue
            interrupts.append(
                Interrupt(
                    id=call_id,
                    reason=CONFIRMATION_REASON,
                    message=f"Approve the call of {call.function.name} with "
                    f"{call.function.arguments}?",
                    tool_call_id=call_id,
                    response_schema=DECISION_SCHEMA,
                )
            )
        return projection.finished(interrupts=interrupts, pending=pending)


def _waiting_calls(agent: Agent) -> list[ToolCall]:
    """The calls the thread's client answers: the conversation's unanswered calls, a
    waiting sub-agent's own (at any depth) in place of the call that delegated to it."""
    return leaf_calls(agent, agent.conversation.unanswered_calls())


def _awaits_model(session: Session) -> bool:
    """Whether the conversation waits for the model: it ends with a user or tool message."""
    messages = session.agent.messages
    return bool(messages) and messages[-1].role in ("user", "tool")
