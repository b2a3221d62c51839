"""The streaming adapter: an agent's internal events → the stream-event vocabulary.

:class:`StreamAdapter` is an ordinary subscriber of ``agent.events``: it holds no
private access to the loop. One :meth:`StreamAdapter.run` is one stream session::

    user_message (when there is a prompt) → stream_started
      agent_choice / agent_choice_reasoning per streamed delta, in generation order
      partial_tool_call per streamed tool-call fragment (id and name on every one)
      tool_call_confirmation (when the call needs approval) → tool_call → ... →
      tool_call_response (also for rejected, unknown, failing and cancelled calls)
      a deferred call (agentrt.deferred): an external tool's shows its tool_call, one
      deferred for approval its tool_call_confirmation; neither gets a response
      in this stream: the run ends waiting, and a later stream answers it
      token_usage after each assistant message
      shell per piece of output of the shell tool, while it runs
      session_compaction start → started → session_summary → token_usage →
      session_compaction completed (before a model call, when configured)
      session_title (after the first successful run of the session, when configured)
    error (when the run fails) → stream_stopped (always, exactly once; with
      pending_tool_call_ids when the run ended waiting)

A team's stream (an agent with sub-agents) adds ``team_info`` after
``stream_started``, and shows each sub-agent's run inside the call that delegated to
it, every event attributed to the sub-agent (see :mod:`agentrt.stream._team`).

A run that ends waiting on deferred calls says so in its ``stream_stopped``: the
event carries ``pending_tool_call_ids``, an extension field of agentrt's, the ids of
the open calls in the model's order; a finished run's ``stream_stopped`` has no such
field. The stream that continues the conversation
(``agent.stream(tool_results=...)``) shows each answered call's ``tool_call`` (when it
runs or is answered) and ``tool_call_response``.

Events go to a *sink*, an async callable; :meth:`Agent.stream
<agentrt.Agent.stream>` uses a bounded memory stream, so a slow consumer makes the
run wait instead of dropping or reordering anything.
"""

import functools
import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from agentrt._state import RunResult
from agentrt.bus import EventContext
from agentrt.control import DEFER
from agentrt.deferred import ToolResult
from agentrt.events.names import EV, AgentEvents
from agentrt.messages import AssistantMessage, ToolCall, ToolMessage, Usage
from agentrt.models.base import ReasoningDelta, TextDelta, ToolCallDelta
from agentrt.stream._pricing import ModelPrices, PriceTable, cost_of
from agentrt.stream.confirm import REJECTED_PREFIX, ConfirmationPolicy, Confirmations
from agentrt.stream.events import (
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    AgentSwitchingEvent,
    ErrorEvent,
    EventType,
    LastMessageUsage,
    PartialToolCallEvent,
    ShellOutputEvent,
    StreamEvent,
    StreamStartedEvent,
    StreamStoppedEvent,
    TokenUsage,
    TokenUsageEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    UserMessageEvent,
    WireFunction,
    WireToolCall,
    attributed,
    delta_builder,
)
from agentrt.stream.session import Compactor, SessionEvents, TitleOption
from agentrt.team import MEMBER_RUNNER

if TYPE_CHECKING:
    from agentrt._loop import Run
    from agentrt.agent import Agent

__all__ = ("REJECTED_PREFIX", "Sink", "StreamAdapter")

E = EV  # AgentEvents, read without the enum metaclass hook (see EV)
Sink = Callable[[StreamEvent], Awaitable[None]]
"""Where a :class:`StreamAdapter` sends its events."""

# Last, so the adapter sees arguments and outputs as every other handler left them.
_LAST = -sys.maxsize
# The confirmation gate: after every other handler but the adapter's own.
_GATE = _LAST + 2

# What a sink raises once its consumer has left.
_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError)

# The event types the adapter never makes; it makes every other (the title and the
# compaction through agentrt.stream.session): tests/test_stream_consumers.py checks
# that its streams make exactly those.
_IGNORED_EVENTS: frozenset[EventType] = frozenset()


def _dumps(arguments: dict[str, Any]) -> str:
    """Arguments a handler decided, as JSON text; never fails (a stream must not break)."""
    try:
        return json.dumps(arguments, default=repr)
    except (TypeError, ValueError):  # keys JSON cannot have, an int past the digit limit
        return f"<{len(arguments)} arguments that cannot be shown as JSON>"


def _hand_over_attributed(
    nowait: Callable[[StreamEvent], bool], tool_call_id: str, event: StreamEvent
) -> bool:
    """A member stream's no-wait hand-over: the event attributed to its run."""
    return nowait(attributed(event, tool_call_id))


def _wire(call: ToolCall, arguments: str | None = None) -> WireToolCall:
    return WireToolCall(
        id=call.id,
        function=WireFunction(
            name=call.name, arguments=call.arguments if arguments is None else arguments
        ),
    )


class StreamAdapter:
    """Translate one agent's events into stream events and send them to ``sink``.

    Args:
        agent: The agent to follow.
        sink: An async callable receiving each event in order; it may block (that
            is the backpressure). If it raises ``anyio.BrokenResourceError`` or
            ``anyio.ClosedResourceError`` the consumer is gone: later events are
            dropped and the run is not disturbed.
        sink_nowait: Optionally, hands an event over without waiting and says
            whether it could; the adapter then awaits ``sink`` only when it could
            not (the hot path of streamed deltas skips a coroutine per event).
        session_id: The ``session_id`` of every event (default: the agent's).
        auto_approve: Run tools that require confirmation without asking.
        confirmation_policy: Decide per call whether approval is needed.
        defer_confirmations: Do not wait in the run for a confirmation: the call
            is left open and the run ends waiting on it; a later :meth:`run` with
            ``tool_results={id: Approval(...)}`` decides it (see
            :mod:`agentrt.deferred`).
        prices: Prices by model name, for the ``cost`` of token usage (default:
            the model's own ``prices`` attribute, when it has one).
        context_limit: The model's context window in tokens (default: the
            model's ``context_limit`` attribute, else 0 = unknown).
        title: Make a session title once per session: ``True``, a prompt, or a
            callable of the messages (see :mod:`agentrt.stream.session`).
        compaction: Compact the conversation near the context limit: a
            :class:`~agentrt.stream.session.Compactor`, or ``True`` for a default one.
    """

    def __init__(
        self,
        agent: "Agent",
        sink: Sink,
        sink_nowait: Callable[[StreamEvent], bool] | None = None,
        *,
        session_id: str | None = None,
        auto_approve: bool = False,
        confirmation_policy: ConfirmationPolicy | None = None,
        prices: PriceTable | None = None,
        context_limit: int | None = None,
        title: TitleOption | None = None,
        compaction: Compactor | bool | None = None,
        defer_confirmations: bool = False,
    ) -> None:
        if not callable(sink):
            raise TypeError(f"sink must be an async callable, got {type(sink).__name__}")
        self.agent = agent
        self.sink = sink
        self._sink_nowait = sink_nowait
        self._session_id = session_id or agent.session_id
        self.confirmations = Confirmations(
            agent,
            auto_approve=auto_approve,
            policy=confirmation_policy,
            defer=defer_confirmations,
        )
        self.prices = prices
        self.context_limit = context_limit
        self.result: RunResult[Any] | None = None
        """The run's result once :meth:`run` returned."""
        self.consumer_gone = False
        self._partial: dict[int, tuple[str, str]] = {}
        self._announced: set[str] = set()
        self._calls: dict[str, ToolCall] = {}
        self._asked: dict[str, ToolCall] = {}  # calls the confirmation gate asked about
        self._stopped = False
        self._started = False
        self._before: set[int] = set()
        self._counted: set[int] = set()  # messages whose usage the session total holds
        self._undelivered: dict[int, TokenUsageEvent] = {}
        self._agent_name = agent.name
        if not self._agent_name:
            raise ValueError("the agent's name must not be empty: stream events carry it")
        # A member stream's (see run_member): the call its run answers, and the agent
        # whose stream state holds the session's usage (the stream's own otherwise).
        self._parent_call_id: str | None = None
        self._session_agent = agent
        # While another agent speaks on this stream's conversation (a hand-off), its
        # own stream reports the conversation's messages, not this one.
        self._handed_over = False
        self.session_events = SessionEvents(self, title=title, compaction=compaction)

    @property
    def session_id(self) -> str:
        """The ``session_id`` of every event; fixed, as the delta builders hold it."""
        return self._session_id

    # -- the session ------------------------------------------------------------------

    async def run(
        self,
        prompt: str | None = None,
        *,
        tool_results: Mapping[str, ToolResult] | None = None,
        **execute_options: Any,
    ) -> RunResult[Any]:
        """Run the agent once (streaming) as one stream session.

        Emits ``user_message`` and ``stream_started`` first, ``error`` when the run
        fails, and ``stream_stopped`` last from a shielded ``finally`` (so also on
        cancellation). Any ``execute`` option but ``stream`` may be passed.

        Args:
            prompt: The user's message; ``None`` continues the conversation.
            tool_results: Answers to the calls an earlier run left open, by call id
                (see :mod:`agentrt.deferred`): each answered call shows its
                ``tool_call`` and ``tool_call_response`` in this stream.
            **execute_options: Passed to :meth:`Agent.execute <agentrt.Agent.execute>`.

        Raises:
            Exception: Whatever the run raised, after the closing events.
        """
        if self._stopped:
            raise RuntimeError("a StreamAdapter runs one stream session; make a new one")
        if tool_results:
            # Decided in this run, asked in an earlier one: not asked again.
            self.confirmations.decided(tool_results)
            execute_options["tool_results"] = tool_results
        for call in self.agent.conversation.pending_calls():
            # Their assistant message is an earlier run's: its calls as the model made them.
            self._calls[call.id] = call
            self.confirmations.saw(call.id)
        # What the conversation held before: an assistant message appended during the
        # run whose usage no token_usage reported (a cancellation can land inside its
        # message:append:after dispatch, before this adapter's handler) is reported
        # at the end, so no spent token goes missing from the session's usage.
        self._before = {id(message) for message in self.agent.messages}
        try:
            if prompt is not None:
                await self._emit(self._user_message(prompt))
            await self._start()
            agent = self.agent
            if agent.sub_agents or agent.handoffs or agent.speaker is not agent:
                from agentrt.stream._team import team_info
                from agentrt.team import introduce

                await introduce(agent)  # a remote agent's card names it in the team
                await self._emit(team_info(agent, self.session_id))
            token = MEMBER_RUNNER.set(self)
            try:
                with self.attached():
                    self.result = await self.agent.execute(prompt, stream=True, **execute_options)
            finally:
                MEMBER_RUNNER.reset(token)
            return self.result
        except Exception as error:
            with anyio.CancelScope(shield=True):
                await self._report_unreported_usage()
                await self._emit(
                    ErrorEvent(
                        session_id=self.session_id,
                        agent_name=self.agent.name,
                        error=f"{type(error).__name__}: {error}",
                    )
                )
            raise
        finally:
            self._stopped = True
            with anyio.CancelScope(shield=True):
                if not self._started:  # cancelled while user_message was being sent
                    await self._start()
                await self._report_unreported_usage()
                await self._emit(self._stream_stopped())

    async def run_member(
        self,
        member: "Agent",
        prompt: str | None,
        tool_results: Mapping[str, ToolResult] | None = None,
    ) -> RunResult[Any]:
        """Run a team member for a call of this stream's run, its events in this stream.

        The :class:`~agentrt.team.MemberRunner` of the run (see
        :mod:`agentrt.stream._team`): a member stream follows ``member`` and sends its
        events, attributed, into this stream's sink; it is the runner of the
        member's own delegations. ``prompt`` is ``None`` and ``tool_results`` the
        answers to its open calls when a member that waited goes on.
        """
        parent = member.team_parent
        if parent is None:
            raise ValueError(f"{member.name!r} is not running a delegated task")
        stream = self._stream_of(member, parent.tool_call.id)
        # A member that waited goes on: its open calls as the model made them, and its
        # messages so far reported by the stream that ran it before.
        for call in member.conversation.pending_calls():
            stream._calls[call.id] = call
        stream._before = {id(message) for message in member.messages}
        token = MEMBER_RUNNER.set(stream)
        try:
            with stream.attached():
                return await member.execute(prompt, stream=True, tool_results=tool_results)
        except Exception as error:
            with anyio.CancelScope(shield=True):
                await stream._report_unreported_usage()
                await stream._emit(
                    ErrorEvent(
                        session_id=self.session_id,
                        agent_name=member.name,
                        error=f"{type(error).__name__}: {error}",
                    )
                )
            raise
        finally:
            MEMBER_RUNNER.reset(token)
            with anyio.CancelScope(shield=True):
                await stream._report_unreported_usage()

    async def switched(self, from_agent: str, to_agent: str) -> None:
        """Announce a hand-off: ``agent_switching`` (see :mod:`agentrt.stream._team`)."""
        await self._emit(
            AgentSwitchingEvent(
                session_id=self.session_id,
                from_agent=from_agent,
                to_agent=to_agent,
                agent_name=to_agent,
            )
        )

    async def run_speaker(self, speaker: "Agent", run: "Run") -> RunResult[Any]:
        """Run ``run``, whose agent speaks on this stream's conversation, in this stream.

        The :class:`~agentrt.team.MemberRunner` of a hand-off: a stream of the
        speaker's own reports its events (and the conversation's messages, meanwhile)
        with the speaker's name.
        """
        stream = self._stream_of(speaker, self._parent_call_id)
        # One conversation: what either reported, or had before, the other does not.
        stream._before, stream._counted = self._before, self._counted
        stream._undelivered = self._undelivered
        token = MEMBER_RUNNER.set(stream)
        self._handed_over = True
        try:
            with stream.attached():
                return await run.execute()
        finally:
            self._handed_over = False
            MEMBER_RUNNER.reset(token)

    def _stream_of(self, agent: "Agent", parent_call_id: str | None) -> "StreamAdapter":
        """A stream of ``agent``'s run inside this one: same sink, session, questions."""
        stream = StreamAdapter(
            agent, self.sink, self._sink_nowait, session_id=self.session_id, prices=self.prices
        )
        stream.confirmations = self.confirmations
        stream._parent_call_id = parent_call_id
        stream._session_agent = self._session_agent
        return stream

    def _stream_stopped(self) -> StreamStoppedEvent:
        result = self.result
        if result is None or not result.pending_tool_calls:
            return StreamStoppedEvent(session_id=self.session_id)
        return StreamStoppedEvent(
            session_id=self.session_id,
            pending_tool_call_ids=tuple(call.id for call in result.pending_tool_calls),
        )

    async def _start(self) -> None:
        self._started = True
        await self._emit(StreamStartedEvent(session_id=self.session_id))

    async def _report_unreported_usage(self) -> None:
        for message in self.agent.messages:
            key = id(message)
            if key in self._undelivered:  # counted, but its token_usage was cut off
                await self._emit(self._undelivered.pop(key))
            elif (
                type(message) is AssistantMessage
                and message.usage is not None
                and message.usage.requests
                and key not in self._before
                and key not in self._counted
            ):
                self._counted.add(key)
                await self._emit(self._token_usage(message.usage))

    def _user_message(self, prompt: str) -> UserMessageEvent:
        return UserMessageEvent(session_id=self.session_id, message=prompt)

    @contextmanager
    def attached(self) -> Any:
        """Subscribe to the agent's events for the duration of the block."""
        bus = self.agent.events
        handlers: list[tuple[AgentEvents, Callable[[EventContext[Any, Any]], Any]]] = [
            (E.LLM_STREAM_BEFORE, self._on_model_call),
            (E.LLM_EXTRACT_BEFORE, self._on_model_call),
            (E.LLM_STREAM_CHUNK, self._chunk_handler()),
            (E.LLM_COMPLETE_AFTER, self._on_complete),
            (E.TOOL_CALL_BEFORE, self._on_tool_call_before),
            (E.TOOL_CALL_ERROR, self._on_tool_call_error),
            (E.TOOL_CALL_OUTPUT, self._on_tool_output),
        ]
        handlers += self.session_events.handlers()
        for event, handler in handlers:
            bus.on(event, handler, priority=_LAST, transient=True)
        # The conversation's bus: another agent's, for an agent that speaks on another's
        # conversation (a hand-off).
        messages = self.agent.conversation.events
        on_message = self._on_message
        messages.on(E.MESSAGE_APPEND_AFTER, on_message, priority=_LAST, transient=True)
        # What changes the run (the confirmation gate may reject a call, the compactor
        # shortens the conversation) is not one of the adapter's handlers, which only
        # read: interceptable handlers of their owners, just before the adapter's (a
        # handler may still observe between the two).
        gates = [(E.TOOL_CALL_BEFORE, self.confirmations.gate(self._ask))]
        gates += self.session_events.gates()
        for event, handler in gates:
            bus.on(event, handler, priority=_GATE, transient=True)
        try:
            yield self
        finally:
            # Last registered, first removed: each is then the last registration its
            # bus scans for (a scan from the end per removal, a dozen a run).
            for event, handler in reversed(gates):
                bus.off(event, handler)
            messages.off(E.MESSAGE_APPEND_AFTER, on_message)
            for event, handler in reversed(handlers):
                bus.off(event, handler)

    async def _emit(self, event: StreamEvent) -> None:
        if self.consumer_gone:
            return
        if self._parent_call_id is not None:
            event = attributed(event, self._parent_call_id)
        try:
            await self.sink(event)
        except _GONE:
            # The consumer left: its events have nowhere to go. If that also cancelled
            # the run (agent.stream does), take the cancellation now: a run that
            # never waits would otherwise finish without ever noticing it.
            self.consumer_gone = True
            await anyio.lowlevel.checkpoint_if_cancelled()

    async def emit(self, event: StreamEvent) -> None:
        """Send ``event`` to the stream, in order with the adapter's own events.

        For components that add events to a stream (session titles, compaction);
        dropped when the consumer is gone.
        """
        await self._emit(event)

    def token_usage_event(
        self, last: Usage, *, context_length: int | None = None
    ) -> TokenUsageEvent:
        """A ``token_usage`` event that adds ``last`` to the session's cumulative usage.

        Args:
            last: What the latest model call spent.
            context_length: The conversation's context length now (default: the
                latest call's input plus output tokens).
        """
        return self._token_usage(last, context_length=context_length)

    # -- handlers ---------------------------------------------------------------------

    async def _on_tool_output(self, ctx: EventContext[Any, Any]) -> None:
        # Any tool's output (ToolContext.emit; the shell tool's lines) becomes the
        # stream's one tool-output event, ``shell``, with the id of the call.
        params = ctx.parameters
        await self._emit(
            ShellOutputEvent(
                session_id=self.session_id,
                agent_name=self._agent_name,
                output=params["output"],
                tool_call_id=params["tool_call"].id,
            )
        )

    def _on_model_call(self, ctx: EventContext[Any, Any]) -> None:
        self._partial.clear()

    def _chunk_handler(self) -> Callable[[EventContext[Any, Any]], Awaitable[None] | None]:
        """The ``llm:stream:chunk`` handler: one event per delta, so this is the hot path.

        A closure rather than a method (its names are cells, not attribute reads), a
        plain function (no coroutine unless the sink must wait), unvalidated event
        builders and a no-wait hand-over.
        """
        session_id, agent_name, partial = self.session_id, self._agent_name, self._partial
        choice = delta_builder(AgentChoiceEvent, session_id, agent_name)
        reasoning = None  # made at the first reasoning delta: most models send none
        nowait = self._sink_nowait
        emit = self._emit
        if nowait is not None and self._parent_call_id is not None:
            nowait = functools.partial(_hand_over_attributed, nowait, self._parent_call_id)

        def on_chunk(ctx: EventContext[Any, Any]) -> Awaitable[None] | None:
            nonlocal reasoning
            chunk = ctx._params["chunk"]  # the proxy of ctx.parameters costs a tenth here
            kind = type(chunk)
            event: StreamEvent
            if kind is TextDelta:
                text = chunk.text
                if not text:
                    return None
                event = choice(text)
            elif kind is ReasoningDelta:
                text = chunk.text
                if not text:
                    return None
                if reasoning is None:
                    reasoning = delta_builder(AgentChoiceReasoningEvent, session_id, agent_name)
                event = reasoning(text)
            elif isinstance(chunk, ToolCallDelta):
                known = partial.get(chunk.index)
                if known is None:
                    # Empty counts as missing: the assembler gives an empty id a fresh
                    # one, which a partial_tool_call shown under "" would not match.
                    if not chunk.id or not chunk.name:
                        return None  # the assembler reports this malformed stream
                    known = partial[chunk.index] = (chunk.id, chunk.name)
                    self.confirmations.saw(chunk.id)
                event = PartialToolCallEvent.fast(
                    session_id=session_id,
                    agent_name=agent_name,
                    tool_call_id=known[0],
                    name=known[1],
                    arguments=chunk.arguments,
                )
            else:
                return None
            if nowait is not None and not self.consumer_gone:
                try:
                    if nowait(event):
                        return None
                except _GONE:
                    pass  # _emit meets the same error and handles the departure
            return emit(event)

        return on_chunk

    async def _on_complete(self, ctx: EventContext[Any, Any]) -> None:
        # A non-streaming call (a hook-only setup running execute() without stream):
        # its whole text is one delta.
        response = ctx.parameters["response"]
        if response.reasoning:
            await self._emit(
                AgentChoiceReasoningEvent(
                    session_id=self.session_id,
                    agent_name=self.agent.name,
                    content=response.reasoning,
                )
            )
        if response.content:
            await self._emit(
                AgentChoiceEvent(
                    session_id=self.session_id,
                    agent_name=self.agent.name,
                    content=response.content,
                )
            )

    @staticmethod
    def _shown(ctx: EventContext[Any, Any]) -> ToolCall:
        """The call as the tool will really run it (arguments as handlers left them)."""
        call: ToolCall = ctx.parameters["tool_call"]
        decided = ctx.output
        if isinstance(decided, dict) and decided != ctx.parameters["arguments"]:
            return call.model_copy(update={"arguments": _dumps(decided)})
        return call

    async def _ask(self, ctx: EventContext[Any, Any]) -> None:
        """Put the confirmation gate's question on the stream."""
        shown = self._asked[ctx.parameters["tool_call"].id] = self._shown(ctx)
        await self._emit(
            ToolCallConfirmationEvent(
                session_id=self.session_id,
                agent_name=self.agent.name,
                tool_call=_wire(shown),
                tool_definition=self._definition(shown.name),
            )
        )

    async def _on_tool_call_before(self, ctx: EventContext[Any, Any]) -> None:
        call: ToolCall = ctx.parameters["tool_call"]
        self.confirmations.saw(call.id)
        if ctx.output is DEFER:
            # Left open, not started: its question (if any) is all this stream shows.
            self._asked.pop(call.id, None)
            return
        # A rejected call's output is its rejection: show it as it was asked about.
        shown = self._asked.pop(call.id, None) or self._shown(ctx)
        await self._announce(shown)

    async def _on_tool_call_error(self, ctx: EventContext[Any, Any]) -> None:
        await self._announce(ctx.parameters["tool_call"])

    async def _announce(self, call: ToolCall) -> None:
        if call.id in self._announced:
            return
        self._announced.add(call.id)
        self._calls[call.id] = call
        await self._emit(
            ToolCallEvent(
                session_id=self.session_id,
                agent_name=self.agent.name,
                tool_call=_wire(call),
                tool_definition=self._definition(call.name),
            )
        )

    def _definition(self, name: str) -> dict[str, Any] | None:
        """The definition of the tool ``name`` for its events, if it has annotations."""
        tool = self.agent.tool_table().get(name)
        if tool is None or tool.annotations is None:
            return None
        return {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "annotations": dict(tool.annotations),
        }

    async def _on_message(self, ctx: EventContext[Any, Any]) -> None:
        if self._handed_over:
            return  # the speaker's stream reports it
        message = ctx.parameters["message"]
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                self.confirmations.saw(call.id)
                self._calls.setdefault(call.id, call)
            if message.usage is not None and message.usage.requests:
                self._counted.add(id(message))
                event = self._undelivered[id(message)] = self._token_usage(message.usage)
                await self._emit(event)
                del self._undelivered[id(message)]
        elif isinstance(message, ToolMessage):
            call = self._calls.get(message.tool_call_id) or ToolCall(
                id=message.tool_call_id, name=message.name or "unknown"
            )
            await self._announce(call)
            await self._emit(
                ToolCallResponseEvent(
                    session_id=self.session_id,
                    agent_name=self.agent.name,
                    tool_call=_wire(self._calls.get(call.id, call)),
                    tool_definition=self._definition(call.name),
                    response=message.content,
                )
            )

    def _token_usage(self, last: Usage, context_length: int | None = None) -> TokenUsageEvent:
        agent = self.agent
        state = self._session_agent.stream_state  # a team's usage is one session's
        total = state.usage = state.usage + last
        prices = self._prices()
        limit = self.context_limit
        if limit is None:
            limit = getattr(agent.model, "context_limit", None) or 0
        return TokenUsageEvent(
            session_id=self.session_id,
            agent_name=agent.name,
            usage=TokenUsage(
                input_tokens=total.input_tokens,
                output_tokens=total.output_tokens,
                context_length=(
                    last.input_tokens + last.output_tokens
                    if context_length is None
                    else context_length
                ),
                context_limit=int(limit),
                cost=cost_of(total, prices),
                last_message=LastMessageUsage(
                    input_tokens=last.input_tokens,
                    output_tokens=last.output_tokens,
                    cost=cost_of(last, prices),
                ),
            ),
        )

    def _prices(self) -> ModelPrices | None:
        model = self.agent.model
        if self.prices is not None:
            return self.prices.get(getattr(model, "name", ""))
        prices = getattr(model, "prices", None)
        return prices if isinstance(prices, ModelPrices) else None
