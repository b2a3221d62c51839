"""``POST /ag-ui``: the server's agents for AG-UI frontends (CopilotKit, ``@ag-ui/client``).

The body is AG-UI's ``RunAgentInput``; the answer is AG-UI's event stream (SSE ``data:``
frames), told by :class:`~agentrt.server.agui_events.AGUIProjection` from the same
events as the server's own streams. Both sides use the official ``ag-ui-protocol``
models.

Threads
    An AG-UI thread id names one server session (one agent, one conversation); the
    first run of a thread makes it. Whoever knows a thread id drives it: frontends
    make them unguessable (``@ag-ui/client`` uses UUIDs), and a token protects the
    server. A session idle for the server's ``session_ttl`` is forgotten, a run
    that waits for the client's tool results or answers to its interrupts included
    (the run is cancelled); a client that sends the whole history gets it back, one
    that sends only new messages starts over.

Messages
    Clients differ: some send the whole history every time, some only what is new.
    Both work: a message whose id the thread knows (one it was sent, or one its
    events made) is not added again. New messages join the conversation in order,
    and a trailing user message is the run's prompt. With no prompt the run goes on
    from the conversation as it is, if it waits for an answer (tool results the
    model has not read); otherwise the run has nothing to do and finishes at once.
    ``system`` and ``developer`` messages and ``context`` entries are not stored:
    they are shown to the model, after the agent's own instructions, in every model
    call of the run (``message:render:before``). Messages are text: a content part
    other than text is refused.

Frontend tools
    The tools of ``RunAgentInput.tools`` run in the client. They are offered to the
    model beside the agent's own (a name the agent has already is refused). When the
    model calls one, the AG-UI run ends, once nothing else is running, with
    ``RUN_FINISHED`` whose success outcome names the calls in
    ``pendingToolCallIds``; the client runs them and starts the next run with their
    results (``tool`` messages, ``error`` set for a failure). The agent's run waits
    for them meanwhile, and the next AG-UI run tells how it goes on. A next input
    that answers none of them but brings a new message cancels the waiting run (its
    open calls are answered as cancelled) and answers the message.

Confirmations
    A tool call that needs approval (see :mod:`agentrt.stream.confirm`) takes the
    same round trip as AG-UI's interrupts: once nothing else runs, the AG-UI run
    ends with ``RUN_FINISHED`` whose outcome is ``interrupt``, one interrupt per call
    waiting, its ``id`` and ``toolCallId`` the call's id, ``reason``
    ``"tool_call_confirmation"``, and a ``responseSchema``. The next run answers
    with ``resume`` entries: ``{"interruptId": id, "status": "resolved", "payload":
    {"decision": "approve", "reason": "..."}}`` (a decision alone, ``"approve"``, is
    a payload too; decisions: ``approve``, ``approve-session``, ``approve-tool``,
    ``reject``), or ``"status": "cancelled"``, a rejection. The call is shown before
    the interrupt (TOOL_CALL_START, ARGS, END) and gets its TOOL_CALL_RESULT once it
    ran or was rejected.
"""

import json
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

from agentrt.bus import EventContext
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
from agentrt.server.agui_events import AGUIProjection, ThreadMemory, encode
from agentrt.server.http import EventStream, endpoint, read_json, validate
from agentrt.server.limits import ServerLimits
from agentrt.server.session_errors import AGUIInputError
from agentrt.server.sessions import (
    Run,
    RunInProgressError,
    Session,
)
from agentrt.server.store import SessionStore
from agentrt.stream.codec import sse_heartbeat
from agentrt.stream.confirm import DECISIONS
from agentrt.tools import Tool, current_tool_context

__all__ = (
    "CONFIRMATION_REASON",
    "DECISION_SCHEMA",
    "AGUIEndpoint",
    "AGUIInputError",
    "ClientToolError",
    "MAX_THREAD_ID",
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


def _runs_in_the_client() -> None:
    """A tool the client declared; it runs in the client application."""


class _FrontendTool(Tool[[], Any]):
    """A tool of ``RunAgentInput.tools``: offered to the model, run by the client.

    Its arguments are the client's to check (it declared their schema); running it
    waits for the result the client sends in a later input.
    """

    __slots__ = ("_thread",)

    def __init__(self, declared: AGUITool, thread: "_Thread") -> None:
        super().__init__(_runs_in_the_client, name=declared.name, description=declared.description)
        schema = declared.parameters
        self.parameters = (
            dict(schema) if isinstance(schema, dict) else {"type": "object", "properties": {}}
        )
        self._thread = thread

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    async def run(self, arguments: dict[str, Any]) -> Any:
        context = current_tool_context()
        if context is None:  # called outside a run: nothing to wait for
            raise ClientToolError(self.name, "a frontend tool runs only within a run")
        return await self._thread.result_of(context.tool_call)


@dataclass(slots=True)
class _ClientCall:
    """A frontend tool call waiting for the client's result."""

    call: ToolCall
    answered: anyio.Event = field(default_factory=anyio.Event)
    content: str = ""
    error: str | None = None


@dataclass(eq=False, slots=True)
class _Thread:
    """One AG-UI thread: its session and what its client holds and declared."""

    session: Session
    memory: ThreadMemory = field(default_factory=ThreadMemory)
    tools: dict[str, _FrontendTool] = field(default_factory=dict)
    instructions: list[str] = field(default_factory=list)
    waiting: dict[str, _ClientCall] = field(default_factory=dict)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    told: int = 0
    """The last event of the session's log an AG-UI run told."""

    async def result_of(self, call: ToolCall) -> str:
        waiter = self.waiting[call.id] = _ClientCall(call)
        # The run is now blocked on the client: an AG-UI run following it may end.
        self.session.notify()
        try:
            await waiter.answered.wait()
        finally:
            self.waiting.pop(call.id, None)
        if waiter.error is not None:
            raise ClientToolError(call.name, waiter.error)
        return waiter.content

    def deliver(self, tool_call_id: str, content: str, error: str | None) -> None:
        # Taken out now, not when the tool wakes: the next check of "waiting for the
        # client" must already see that this call is not.
        waiter = self.waiting.pop(tool_call_id)
        waiter.content = content
        waiter.error = error
        self.memory.client_results.add(tool_call_id)
        waiter.answered.set()

    def waits_for_client(self, run: Run) -> bool:
        """Whether ``run`` can go on only with the client: every open call is the client's."""
        if run.finished:
            return False
        pending = set(self.waiting).union(run.adapter.confirmations.pending)
        conversation = self.session.agent.conversation
        open_calls = {call.id for call in conversation.unanswered_calls()}
        return bool(open_calls) and open_calls <= pending

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
    results: list[tuple[str, str, str | None]]
    answers: list[tuple[str, str, str | None]]
    tools: dict[str, _FrontendTool]
    instructions: list[str]


class AGUIEndpoint:
    """The AG-UI threads of one server, over its :class:`SessionStore`.

    Args:
        store: The sessions of the threads (one per thread).
        limits: The server's caps (runs at once, message size).
        heartbeat: Seconds without an event before a ``: heartbeat`` comment.
        counted: Every session of the server, for the cap on runs at once, when
            ``store`` does not hold them all (default: ``store``'s).
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
        self._threads: dict[str, _Thread] = {}

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
            RunInProgressError: The thread's run is busy and does not wait for this
                client.
            LimitError: A server limit (runs at once, message size).
            SessionLimitError, StoreNotRunningError: No session can be made.
        """
        thread_id = body.thread_id
        if not thread_id or len(thread_id) > MAX_THREAD_ID:
            raise AGUIInputError(f"threadId must be 1 to {MAX_THREAD_ID} characters")
        thread = await self._thread(thread_id)
        async with thread.lock:
            session = thread.session
            run = session.run
            if run is not None and not thread.waits_for_client(run):
                raise RunInProgressError(session.id)
            plan = self._plan(thread, body, run)
            thread.tools = plan.tools
            thread.instructions = plan.instructions
            if run is not None and (
                plan.results or plan.answers or (not plan.append and plan.prompt is None)
            ):
                # The run waits for this client: its answers let it go on (and an input
                # with nothing new is told again what the run waits for).
                for call_id, decision, reason in plan.answers:
                    await session.confirm(call_id, decision, reason)
                for call_id, content, error in plan.results:
                    thread.deliver(call_id, content, error)
            else:
                if plan.prompt is not None:
                    self._limits.check_message(plan.prompt)
                if run is not None:
                    # The client moved on without answering: the waiting run ends (its
                    # open calls answered as cancelled) before the new message runs.
                    run.stop(
                        "cancelled: the AG-UI client sent a new message instead of the "
                        "answers the run waited for"
                    )
                    await run.done.wait()
                run = None
                if plan.prompt is not None or plan.append:
                    self._limits.check_run(self._store)
                for message in plan.append:
                    await session.agent.append(message)
                if plan.prompt is not None or _awaits_model(session):
                    run = await session.start(plan.prompt)
                thread.told = (await session.log.bounds())[1] if run is None else run.after
            thread.memory.message_ids.update(message.id for message in body.messages)
        projection = AGUIProjection(
            thread_id,
            body.run_id,
            memory=thread.memory,
            model=getattr(session.agent.model, "name", None),
        )
        return self._events(thread, projection, run)

    # -- the input ----------------------------------------------------------------------

    async def _thread(self, thread_id: str) -> _Thread:
        thread = self._threads.get(thread_id)
        if thread is not None and not thread.session.closed:
            thread.session.touch()
            return thread
        # Forget the threads whose sessions expired or were deleted.
        for key in [key for key, known in self._threads.items() if known.session.closed]:
            del self._threads[key]
        session = await self._store.create()
        thread = self._threads.setdefault(thread_id, _Thread(session))
        if thread.session is not session:  # another request made it meanwhile
            await self._store.remove(session.id)
            return thread
        bus = session.agent.events
        bus.on(EV.TOOLS_PROVIDE, thread.offer_tools)
        bus.on(EV.MESSAGE_RENDER_BEFORE, thread.show_instructions)
        return thread

    def _plan(self, thread: _Thread, body: RunAgentInput, run: Run | None) -> _Plan:
        agent = thread.session.agent
        known = thread.memory.message_ids
        own = {tool.name for tool in agent.tools}
        tools: dict[str, _FrontendTool] = {}
        for declared in body.tools or ():
            if declared.name in own:
                raise AGUIInputError(
                    f"tools: {declared.name!r} is the name of one of the agent's own tools; "
                    "give the frontend tool another name"
                )
            try:
                tools[declared.name] = _FrontendTool(declared, thread)
            except ToolDefinitionError as error:
                raise AGUIInputError(f"tools: {error}") from None
        instructions = [f"{item.description}: {item.value}" for item in body.context or ()]
        new = [message for message in body.messages if message.id not in known]
        for message in new:
            if isinstance(message, AGUISystemMessage | AGUIDeveloperMessage):
                instructions.append(_text(message.content, f"message {message.id!r}"))
        waiting = thread.waiting if run is not None else {}
        results = [
            (
                message.tool_call_id,
                _text(message.content, f"message {message.id!r}"),
                message.error,
            )
            for message in new
            if isinstance(message, AGUIToolMessage) and message.tool_call_id in waiting
        ]
        answers = self._answers(body.resume or (), run)
        if run is not None and (results or answers):
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
            return _Plan([], None, results, answers, tools, instructions)
        append, prompt = self._conversation(thread, new)
        return _Plan(append, prompt, [], [], tools, instructions)

    @staticmethod
    def _answers(
        entries: Sequence[ResumeEntry], run: Run | None
    ) -> list[tuple[str, str, str | None]]:
        pending = set(run.adapter.confirmations.pending) if run is not None else set()
        answers: list[tuple[str, str, str | None]] = []
        for entry in entries:
            where = f"resume entry {entry.interrupt_id!r}"
            if entry.interrupt_id not in pending:
                raise AGUIInputError(f"{where}: no tool call of this thread waits for it")
            if entry.status == "cancelled":
                answers.append((entry.interrupt_id, "reject", "cancelled by the client"))
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
            answers.append((entry.interrupt_id, str(decision), reason))
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
                # already (cancelled while it waited) or never made has no place.
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
        if run is None:
            yield encode(projection.finished())
            return
        session = thread.session
        stopped = False
        current: Run = run
        batches = session.follow(
            thread.told,
            run=run,
            heartbeat=self._heartbeat,
            until=lambda: thread.waits_for_client(current),
        )
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
        if stopped:
            if run.adapter.result is not None:
                yield encode(projection.finished())
            elif run.cancelled_because is not None:
                yield encode(projection.cancelled())
            else:
                yield encode(projection.failed())
        elif thread.waits_for_client(run):
            yield encode(self._pause(thread, projection, run))
        else:
            # The server is shutting down: the run will not go on.
            yield encode(projection.failed("the server is shutting down", code="server_shutdown"))

    @staticmethod
    def _pause(thread: _Thread, projection: AGUIProjection, run: Run) -> list[BaseEvent]:
        """The end of an AG-UI run whose agent run waits for the client."""
        interrupts = []
        for call_id in run.adapter.confirmations.pending:
            call = thread.memory.asked.get(call_id)
            name = call.function.name if call is not None else "a tool"
            arguments = call.function.arguments if call is not None else "{}"
            interrupts.append(
                Interrupt(
                    id=call_id,
                    reason=CONFIRMATION_REASON,
                    message=f"Approve the call of {name} with {arguments}?",
                    tool_call_id=call_id,
                    response_schema=DECISION_SCHEMA,
                )
            )
        return projection.finished(interrupts=interrupts, pending=list(thread.waiting))


def _awaits_model(session: Session) -> bool:
    """Whether the conversation waits for the model: it ends with a user or tool message."""
    messages = session.agent.messages
    return bool(messages) and messages[-1].role in ("user", "tool")
