"""The spans of a run, made from an agent's events: :class:`BusTracer`.

One :class:`BusTracer` per :class:`~agentrt.EventBus` registers plain (sync) handlers
for the events that open and close spans, and keeps a trace record for each agent
instrumented on that bus (several agents may share one bus). Runs of one agent are
serialized, so an agent has at most one run in flight: its spans are found through
the ``agent`` parameter every event carries, and tool spans by their call's id.

Handlers run at the highest priority, before any user handler, on opening and on
closing events alike: a span then covers what ``:before`` handlers do (change the
arguments, answer instead, wait for an approval) and the operation itself, and a user
handler that stops propagation (``ctx.stop()``) cannot keep a span open. Every handler
returns ``None`` and changes nothing: on an interceptable ``:before`` event a non-None
return would replace the output (the request, the arguments); these handlers only
observe.

While a run, a model call or a tool runs, its span is the current OpenTelemetry
context of the task doing it (so the spans a tool or a model's HTTP client makes nest
under it). Handlers are called in the dispatching task, so attaching there is
attaching for the operation. What a task attached is listed in a context variable of
that task: a run that ends by an exception or a cancellation, which skips the closing
events, detaches what its task still holds when the agent goes back to idle; tool
calls running in worker tasks took their attachments with them when the task ended.
"""

from __future__ import annotations

import sys
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agentrt._state import AgentState
from agentrt.events.names import AgentEvents
from agentrt.tracing import _attributes as a

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.bus import EventBus, EventContext
    from agentrt.tracing import Instrumentation

__all__ = ("BusTracer", "bus_tracer")

# Before every user handler (see the module docstring); below sys.maxsize, which
# agentrt.testing's cancellation injector uses to act before anyone.
_FIRST = 1 << 40
_ENDED = frozenset((AgentState.IDLE, AgentState.CLOSED))


class _Frame:
    """One context attached by a handler, and the run it belongs to."""

    __slots__ = ("run", "token")

    def __init__(self, run: _RunTrace, token: object) -> None:
        self.run = run
        self.token = token


# What this task attached, oldest first (see the module docstring).
_ATTACHED: ContextVar[tuple[_Frame, ...]] = ContextVar("agentrt_tracing_attached", default=())


def _attach(run: _RunTrace, span: Span) -> _Frame:
    frame = _Frame(run, otel_context.attach(trace.set_span_in_context(span)))
    _ATTACHED.set((*_ATTACHED.get(), frame))
    return frame


def _unwind(frame: _Frame, *, keep: bool = False) -> None:
    """Detach ``frame`` (or, with ``keep``, only what is above it) and anything above it.

    Context tokens must be reset newest first: a frame left above (a call cut short)
    goes first. A frame this task did not attach (a worker task's) is not its to detach.
    """
    attached = _ATTACHED.get()
    for index in range(len(attached) - 1, -1, -1):
        if attached[index] is frame:
            break
    else:
        return
    stop = index + 1 if keep else index
    for above in reversed(attached[stop:]):
        otel_context.detach(above.token)  # type: ignore[arg-type]
    _ATTACHED.set(attached[:stop])


def _fail(span: Span, error: BaseException | None, description: str) -> None:
    """Mark ``span`` failed: status ERROR, ``error.type``, the exception recorded."""
    if error is None:
        span.set_attribute(a.ERROR_TYPE, "_OTHER")
    else:
        span.set_attribute(a.ERROR_TYPE, a.error_type(error))
        span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, description))


class _RunTrace:
    """The open spans of one run: the run's, the model call's, the tool calls' by id."""

    __slots__ = ("context", "error", "frame", "model", "model_frame", "span", "tools")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.context = trace.set_span_in_context(span)
        self.frame: _Frame | None = None
        self.model: Span | None = None
        self.model_frame: _Frame | None = None
        self.tools: dict[str, tuple[Span, _Frame]] = {}
        self.error: Exception | None = None


class _AgentTrace:
    """An instrumented agent: who traces it, its run in flight, its model's description."""

    __slots__ = ("agent", "info", "owner", "run")

    def __init__(self, agent: Agent, owner: Instrumentation) -> None:
        self.agent = weakref.ref(agent)
        self.owner = owner
        self.run: _RunTrace | None = None
        self.info: a.ModelInfo | None = None

    def model_info(self, model: object) -> a.ModelInfo:
        info = self.info
        if info is None or info.model is not model:
            info = self.info = a.model_info(model)
        return info


class BusTracer:
    """The tracing handlers of one bus, for the agents instrumented on it."""

    __slots__ = ("__weakref__", "_bus", "_handlers", "agents")

    def __init__(self, bus: EventBus) -> None:
        self._bus = weakref.ref(bus)
        self.agents: dict[int, _AgentTrace] = {}
        E = AgentEvents
        self._handlers = (
            (E.EXECUTE_BEFORE, self._run_started),
            (E.EXECUTE_ERROR, self._run_failed),
            (E.EXECUTE_AFTER, self._run_returned),
            (E.AGENT_STATE_CHANGE, self._state_changed),
            (E.LLM_COMPLETE_BEFORE, self._model_called),
            (E.LLM_STREAM_BEFORE, self._model_called),
            (E.LLM_EXTRACT_BEFORE, self._model_called),
            (E.LLM_COMPLETE_AFTER, self._model_answered),
            (E.LLM_STREAM_AFTER, self._model_answered),
            (E.LLM_EXTRACT_AFTER, self._model_answered),
            (E.LLM_ERROR, self._model_failed),
            (E.TOOL_CALL_BEFORE, self._tool_called),
            (E.TOOL_CALL_AFTER, self._tool_answered),
            (E.TOOL_CALL_ERROR, self._tool_failed),
        )
        for event, handler in self._handlers:
            # Transient: a copy of this bus (a team member's) gets a tracer of its own.
            bus.on(event, handler, priority=_FIRST, transient=True)

    # -- agents ------------------------------------------------------------------------------

    def trace_of(self, agent: Agent) -> _AgentTrace | None:
        """The trace record of ``agent`` on this bus, if it is instrumented."""
        record = self.agents.get(id(agent))
        if record is None or record.agent() is not agent:
            return None
        return record

    def add(self, agent: Agent, owner: Instrumentation) -> None:
        """Trace ``agent`` for ``owner`` (which replaces a previous owner)."""
        record = self.trace_of(agent)
        if record is not None:
            record.owner = owner
            return
        key = id(agent)
        record = _AgentTrace(agent, owner)
        self.agents[key] = record
        # Forget the agent when it goes (its id may be reused by another object).
        weakref.finalize(agent, self._forget, key, record)

    def _forget(self, key: int, record: _AgentTrace) -> None:
        if self.agents.get(key) is record:
            del self.agents[key]

    def remove(self, agent: Agent) -> None:
        """Stop tracing ``agent``: its open spans end; the handlers go with the last agent."""
        record = self.trace_of(agent)
        if record is None:
            return
        del self.agents[id(agent)]
        if record.run is not None:
            _finish(record, None, failed=False)
        bus = self._bus()
        if not self.agents and bus is not None:
            for event, handler in self._handlers:
                bus.off(event, handler)
            _TRACERS.pop(bus, None)

    def _record(self, ctx: EventContext[Any, Any]) -> _AgentTrace | None:
        agent = ctx.parameters["agent"]
        record = self.agents.get(id(agent))
        if record is None or record.agent() is not agent:
            return None
        return record

    def _run(self, ctx: EventContext[Any, Any]) -> tuple[_RunTrace, _AgentTrace] | None:
        record = self._record(ctx)
        if record is None or record.run is None:
            return None
        return record.run, record

    # -- the run -----------------------------------------------------------------------------

    def _run_started(self, ctx: EventContext[Any, Any]) -> None:
        record = self._record(ctx)
        if record is None:
            return
        if record.run is not None:  # a run cut short without reaching idle (closed agent)
            _finish(record, None, failed=True)
        agent: Agent = ctx.parameters["agent"]
        info = record.model_info(agent.model)
        owner = record.owner
        # The parent is the caller's current context: a run inside the application's own
        # span belongs to its trace; a run outside any span starts a trace of its own.
        span = owner.tracer.start_span(
            f"invoke_agent {agent.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                a.OPERATION: "invoke_agent",
                a.PROVIDER: info.provider,
                a.AGENT_NAME: agent.name,
                a.REQUEST_MODEL: info.name,
            },
        )
        prompt = ctx.parameters["prompt"]
        if owner.capture_content and prompt is not None:
            span.set_attribute(
                a.INPUT_MESSAGES,
                a.to_json([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]),
            )
        run = record.run = _RunTrace(span)
        run.frame = _attach(run, span)

    def _run_failed(self, ctx: EventContext[Any, Any]) -> None:
        # execute:error may still recover (a fallback answer, a retry): the run span
        # records the exception and goes on; the model or tool calls the failure cut
        # short end here, with it.
        found = self._run(ctx)
        if found is None:
            return
        run, _ = found
        error: Exception = ctx.parameters["error"]
        run.error = error
        run.span.record_exception(error)
        _end_children(run, error)

    def _run_returned(self, ctx: EventContext[Any, Any]) -> None:
        found = self._run(ctx)
        if found is None:
            return
        run, record = found
        result = ctx.parameters["result"]
        usage = result.usage
        run.span.set_attributes(
            {a.INPUT_TOKENS: usage.input_tokens, a.OUTPUT_TOKENS: usage.output_tokens}
        )
        if record.owner.capture_content:
            run.span.set_attribute(
                a.OUTPUT_MESSAGES,
                a.to_json(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": result.output}],
                            "finish_reason": "stop",
                        }
                    ]
                ),
            )
        _finish(record, None, failed=False)

    def _state_changed(self, ctx: EventContext[Any, Any]) -> None:
        # The run's last event on every path: a run that raised, or was cancelled, never
        # dispatches execute:after; it goes back to idle from the loop's exception
        # handler, so the exception being handled is what ended it.
        if ctx.parameters["state"] not in _ENDED:
            return
        record = self._record(ctx)
        if record is None or record.run is None:
            return
        _finish(record, sys.exc_info()[1] or record.run.error, failed=True)

    # -- model calls -------------------------------------------------------------------------

    def _model_called(self, ctx: EventContext[Any, Any]) -> None:
        found = self._run(ctx)
        if found is None:
            return
        run, record = found
        if run.model is not None:
            _end_model(run, None)
        info = record.model_info(ctx.parameters["agent"].model)
        span = record.owner.tracer.start_span(
            f"chat {info.name}",
            context=run.context,
            kind=SpanKind.CLIENT if info.remote else SpanKind.INTERNAL,
            attributes={
                a.OPERATION: "chat",
                a.PROVIDER: info.provider,
                a.REQUEST_MODEL: info.name,
                **info.server,
            },
        )
        run.model = span
        run.model_frame = _attach(run, span)

    def _open_model(
        self, ctx: EventContext[Any, Any]
    ) -> tuple[_RunTrace, Span, dict[str, Any], bool] | None:
        """What a model call's outcome closes: its run, its span, the request's attributes.

        The last item says whether content is captured (the request's is already in).
        """
        found = self._run(ctx)
        if found is None:
            return None
        run, record = found
        span = run.model
        if span is None:
            return None
        request = ctx.parameters["request"]
        attributes = a.request_attributes(request)
        capture = record.owner.capture_content
        if capture:
            attributes[a.INPUT_MESSAGES] = a.input_messages(request.messages)
            instructions = a.system_instructions(request.messages)
            if instructions is not None:
                attributes[a.SYSTEM_INSTRUCTIONS] = instructions
        return run, span, attributes, capture

    def _model_answered(self, ctx: EventContext[Any, Any]) -> None:
        opened = self._open_model(ctx)
        if opened is None:
            return
        run, span, attributes, capture = opened
        response = ctx.parameters["response"]
        usage = response.usage
        attributes[a.INPUT_TOKENS] = usage.input_tokens
        attributes[a.OUTPUT_TOKENS] = usage.output_tokens
        if usage.cached_tokens:
            attributes[a.CACHE_READ_TOKENS] = usage.cached_tokens
        if response.model_name:
            attributes[a.RESPONSE_MODEL] = response.model_name
        if response.finish_reason:
            attributes[a.FINISH_REASONS] = (response.finish_reason,)
        if capture:
            attributes[a.OUTPUT_MESSAGES] = a.output_message(response)
        span.set_attributes(attributes)
        _end_model(run, None)

    def _model_failed(self, ctx: EventContext[Any, Any]) -> None:
        opened = self._open_model(ctx)
        if opened is None:
            return
        run, span, attributes, _ = opened
        span.set_attributes(attributes)
        _end_model(run, ctx.parameters["error"])

    # -- tool calls --------------------------------------------------------------------------

    def _tool_called(self, ctx: EventContext[Any, Any]) -> None:
        found = self._run(ctx)
        if found is None:
            return
        run, record = found
        params = ctx.parameters
        span = _tool_span(run, record, params)
        if record.owner.capture_content:
            span.set_attribute(a.TOOL_ARGUMENTS, a.to_json(params["arguments"]))
        run.tools[params["tool_call"].id] = (span, _attach(run, span))

    def _tool_answered(self, ctx: EventContext[Any, Any]) -> None:
        found = self._run(ctx)
        if found is None:
            return
        run, record = found
        params = ctx.parameters
        opened = run.tools.pop(params["tool_call"].id, None)
        if opened is None:
            return
        span, frame = opened
        response = params["response"]
        if record.owner.capture_content:
            # The arguments the tool ran with, after any handler changed them.
            span.set_attribute(a.TOOL_ARGUMENTS, a.to_json(params["arguments"]))
            span.set_attribute(a.TOOL_RESULT, response.content)
        if response.is_error:
            # The call was answered with an error (a handler's answer, a rejection).
            span.set_attribute(a.ERROR_TYPE, "tool_error")
            span.set_status(Status(StatusCode.ERROR, response.content[:200]))
        span.end()
        _unwind(frame)

    def _tool_failed(self, ctx: EventContext[Any, Any]) -> None:
        found = self._run(ctx)
        if found is None:
            return
        run, record = found
        params = ctx.parameters
        opened = run.tools.pop(params["tool_call"].id, None)
        error: Exception = params["error"]
        if opened is None:
            # Failed before tool:call:before (an unknown tool, arguments that are not
            # JSON): still a tool call the model made, shown as one that failed at once.
            _fail(span := _tool_span(run, record, params), error, str(error))
            span.end()
            return
        span, frame = opened
        _fail(span, error, str(error))
        span.end()
        _unwind(frame)


def _tool_span(run: _RunTrace, record: _AgentTrace, params: Any) -> Span:
    call = params["tool_call"]
    agent = record.agent()
    tool = None if agent is None else agent.tool_table().get(call.name)
    attributes = {
        a.OPERATION: "execute_tool",
        a.TOOL_NAME: call.name,
        a.TOOL_CALL_ID: call.id,
        a.TOOL_TYPE: "function",
    }
    description = getattr(tool, "description", None)
    if isinstance(description, str) and description:
        attributes[a.TOOL_DESCRIPTION] = description
    return record.owner.tracer.start_span(
        f"execute_tool {call.name}",
        context=run.context,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
    )


def _end_model(run: _RunTrace, error: BaseException | None, *, cut: bool = False) -> None:
    span, frame = run.model, run.model_frame
    run.model = run.model_frame = None
    if span is None:
        return
    if error is not None or cut:
        _fail(span, error, "the model call was cut short" if cut else str(error))
    span.end()
    if frame is not None:
        _unwind(frame)


def _end_children(run: _RunTrace, error: BaseException | None) -> None:
    """End the model and tool calls still open: whatever ended the run cut them short."""
    if run.model is not None:
        _end_model(run, error, cut=True)
    tools, run.tools = run.tools, {}
    for span, _ in tools.values():
        _fail(span, error, "the tool call was cut short")
        span.end()
    if run.frame is not None:
        # What this task attached for them (a call in the run's own task).
        _unwind(run.frame, keep=True)


def _finish(record: _AgentTrace, error: BaseException | None, *, failed: bool) -> None:
    """End the run of ``record``: its open children, then its own span."""
    run = record.run
    if run is None:
        return
    record.run = None
    _end_children(run, error)
    span = run.span
    if failed:
        cancelled = error is not None and isinstance(error, anyio.get_cancelled_exc_class())
        recorded = run.error
        if recorded is not None and error is recorded:
            # The exception event was recorded when execute:error saw it.
            span.set_attribute(a.ERROR_TYPE, a.error_type(recorded))
            span.set_status(Status(StatusCode.ERROR, str(recorded)))
        else:
            _fail(
                span, error, "cancelled" if cancelled else str(error or "ended without a result")
            )
    span.end()
    if run.frame is not None:
        _unwind(run.frame)


_TRACERS: weakref.WeakKeyDictionary[EventBus, BusTracer] = weakref.WeakKeyDictionary()


def bus_tracer(bus: EventBus, *, create: bool) -> BusTracer | None:
    """The :class:`BusTracer` of ``bus``; made (and registered) when ``create`` and missing."""
    tracer = _TRACERS.get(bus)
    if tracer is None and create:
        tracer = _TRACERS[bus] = BusTracer(bus)
    return tracer
