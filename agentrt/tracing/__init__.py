"""OpenTelemetry traces of agent runs: :func:`instrument`.

``pip install 'agentrt[otel]'`` (``opentelemetry-api``), set up a tracer provider and
exporter as the application does for everything else, then one call::

    from agentrt.tracing import instrument

    instrument(agent)  # this agent; instrument() for every agent, made before or after

Each run becomes a trace following the OpenTelemetry GenAI semantic conventions
(development status)::

    invoke_agent {agent name}          INTERNAL   gen_ai.operation.name=invoke_agent
    ├── chat {model}                   CLIENT (INTERNAL for in-process models)
    ├── execute_tool {tool name}       INTERNAL   one per tool call, also when parallel
    └── chat {model}

Attributes: ``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.agent.name``
(run), ``gen_ai.request.model``, ``gen_ai.response.model`` (when the model reports it),
``gen_ai.usage.input_tokens`` / ``output_tokens`` (model calls; the run's total on the
run span), ``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.response.finish_reasons``,
``gen_ai.request.temperature`` / ``max_tokens`` / ``top_p`` / ``seed`` / ... (from the
request's settings), ``server.address`` / ``server.port`` (models behind a URL),
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type`` (``function``),
``gen_ai.tool.description``. With ``capture_content=True`` only:
``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``
(JSON in the conventions' message format), ``gen_ai.tool.call.arguments`` and
``gen_ai.tool.call.result``.

``gen_ai.provider.name`` comes from the model: a model with a ``base_url``
(``OpenAIChatModel``) is named after its host when the conventions know it
(``api.openai.com``: ``openai``, ``api.groq.com``: ``groq``, ``api.mistral.ai``:
``mistral_ai``, ``*.openai.azure.com``: ``azure.ai.openai``, ...) and ``openai`` (the
API it speaks) otherwise; ``LocalModel`` is ``llama_cpp``; ``ScriptedModel`` is
``agentrt.scripted``; any other model is its class, ``module.QualName``.

Errors: a failed model call or tool call ends its span with status ERROR, the
exception recorded and ``error.type`` set to the exception's name (``module.QualName``,
builtins bare; a tool's own exception rather than agentrt's ``ToolExecutionError``);
a tool call answered with an error response (``is_error``) has ``error.type``
``tool_error``. A run that raises, or is cancelled, ends the same way (a cancelled run
has ``error.type`` of the cancellation exception), and so do the calls it cut short:
no span stays open. An error an ``execute:error`` handler recovered from is recorded
on the run span as an exception event; the run's status stays unset.

A structured-output run's model calls are ``chat`` spans too; they end at
``llm:extract:after`` / ``llm:extract:error``, so when such an answer calls tools the
``chat`` span covers them as well (the ``execute_tool`` spans are still the run's
children). Spans start before any user handler of the event that opens them (a
``tool:call:before`` handler that asks for approval counts in ``execute_tool``).

The spans are made by handlers on the agent's events only (``agent.events``); while a
run, a model call or a tool runs, its span is the current OpenTelemetry context, so a
tool's own spans nest under ``execute_tool``. Without :func:`instrument`, agentrt does
not import OpenTelemetry and a run costs what it did.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

try:
    from opentelemetry import trace
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is installed in tests
    raise ModuleNotFoundError(
        "agentrt.tracing needs OpenTelemetry: pip install 'agentrt[otel]'", name=exc.name
    ) from exc

import agentrt
from agentrt.agent import Agent, observe_runs
from agentrt.tracing._spans import bus_tracer

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ("Instrumentation", "instrument")

TRACER_NAME = "agentrt"

_GLOBAL: Instrumentation | None = None


class Instrumentation:
    """Tracing turned on by :func:`instrument`, for one agent or for every agent.

    Call :meth:`uninstrument` (or leave a ``with instrument(...):`` block) to turn it
    off. Not made directly.

    Attributes:
        tracer_provider: The provider given, or ``None`` for the global one.
        capture_content: Whether messages, tool arguments and results are recorded.
        tracer: The OpenTelemetry tracer the spans come from.
    """

    __slots__ = (
        "_active",
        "_agent",
        "_agents",
        "_stop_observing",
        "capture_content",
        "tracer",
        "tracer_provider",
    )

    def __init__(
        self,
        agent: Agent | None,
        tracer_provider: trace.TracerProvider | None,
        capture_content: bool,
    ) -> None:
        # Weakly: the agent's bus holds the handlers that hold this instrumentation.
        self._agent = None if agent is None else weakref.ref(agent)
        self.tracer_provider = tracer_provider
        self.capture_content = capture_content
        self.tracer = trace.get_tracer(
            TRACER_NAME, agentrt.__version__, tracer_provider=tracer_provider
        )
        self._active = True
        # The agents this instrumentation added, to take them back on uninstrument();
        # weakly: a global instrumentation sees every agent of a long-lived process.
        self._agents: weakref.WeakSet[Agent] = weakref.WeakSet()
        self._stop_observing: Callable[[], None] | None = None

    @property
    def agent(self) -> Agent | None:
        """The agent traced; ``None`` for every agent (or once the agent is gone)."""
        return None if self._agent is None else self._agent()

    @property
    def active(self) -> bool:
        """Whether runs are traced by this instrumentation (until :meth:`uninstrument`)."""
        return self._active

    def _same(self, tracer_provider: trace.TracerProvider | None, capture_content: bool) -> bool:
        return self.tracer_provider is tracer_provider and self.capture_content == capture_content

    def _trace(self, agent: Agent) -> None:
        bus_tracer(agent.events, create=True).add(agent, self)  # type: ignore[union-attr]
        self._agents.add(agent)

    def _observe(self, agent: Agent) -> None:
        # Each run of any agent: a new agent (or one untraced since) is traced from now on;
        # one instrumented on its own keeps its own instrumentation.
        tracer = bus_tracer(agent.events, create=False)
        if tracer is None or tracer.trace_of(agent) is None:
            self._trace(agent)

    def uninstrument(self) -> None:
        """Stop tracing: no span for later runs, handlers removed. Idempotent.

        Spans of a run in flight end at once.
        """
        global _GLOBAL
        if not self._active:
            return
        self._active = False
        if self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None
        if _GLOBAL is self:
            _GLOBAL = None
        agents, self._agents = list(self._agents), weakref.WeakSet()
        for agent in agents:
            tracer = bus_tracer(agent.events, create=False)
            record = None if tracer is None else tracer.trace_of(agent)
            if record is not None and record.owner is self:
                tracer.remove(agent)  # type: ignore[union-attr]

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.uninstrument()

    def __repr__(self) -> str:
        agent = self.agent
        scope = "every agent" if self._agent is None else repr(getattr(agent, "name", None))
        state = "active" if self._active else "uninstrumented"
        return f"<Instrumentation {scope} {state} capture_content={self.capture_content}>"


def instrument(
    agent: Agent | None = None,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    capture_content: bool = False,
) -> Instrumentation:
    """Trace the runs of ``agent``, or of every agent, as OpenTelemetry spans.

    ``instrument()`` traces every agent's runs from now on, agents made before the
    call included; an agent instrumented on its own keeps its own settings.
    Calling again with the same arguments returns the same :class:`Instrumentation`;
    with others, the new settings replace the old ones (for ``instrument()``, the
    previous instrumentation is uninstrumented).

    Args:
        agent: The agent to trace; ``None`` for every agent.
        tracer_provider: Where spans go; the global provider by default (the one
            ``opentelemetry.trace.set_tracer_provider`` set, even later).
        capture_content: Record messages, instructions, tool arguments and tool
            results on the spans. Off by default: they may be sensitive and large.

    Returns:
        The instrumentation; its :meth:`~Instrumentation.uninstrument` turns it off.

    Raises:
        TypeError: ``agent`` is not an Agent, ``tracer_provider`` has no
            ``get_tracer`` or ``capture_content`` is not a bool.
    """
    global _GLOBAL
    if agent is not None and not isinstance(agent, Agent):
        raise TypeError(f"instrument() takes an Agent or None, got {type(agent).__name__}")
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        raise TypeError(
            "tracer_provider must be an OpenTelemetry TracerProvider, "
            f"got {type(tracer_provider).__name__}"
        )
    if not isinstance(capture_content, bool):
        raise TypeError(f"capture_content must be a bool, got {type(capture_content).__name__}")
    if agent is None:
        current = _GLOBAL
        if current is not None:
            if current._same(tracer_provider, capture_content):
                return current
            current.uninstrument()
        instrumentation = _GLOBAL = Instrumentation(None, tracer_provider, capture_content)
        instrumentation._stop_observing = observe_runs(instrumentation._observe)
        return instrumentation
    tracer = bus_tracer(agent.events, create=False)
    record = None if tracer is None else tracer.trace_of(agent)
    if record is not None and record.owner.agent is agent:
        if record.owner._same(tracer_provider, capture_content):
            return record.owner
        record.owner._active = False
    instrumentation = Instrumentation(agent, tracer_provider, capture_content)
    instrumentation._trace(agent)
    return instrumentation
