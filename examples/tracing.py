"""Traces of agent runs with OpenTelemetry: one call to instrument(), spans in memory.

Offline: a ScriptedModel plays the model, and the OpenTelemetry SDK's in-memory exporter
stands in for a tracing backend (swap in an OTLP exporter to see the same spans in
Jaeger, Tempo, Honeycomb...). Three runs, three traces:

1. the model asks for the weather in two cities at once: two ``execute_tool`` spans
   under the run, each with the tool's own span nested inside;
2. the weather service times out: that tool span is an error, the run goes on;
3. the run passes its deadline mid-tool and is cancelled: its spans end anyway.

    pip install 'agentrt[otel]' opentelemetry-sdk
    python examples/tracing.py
"""

from __future__ import annotations

import anyio
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentrt import Agent, RunTimeoutError, ScriptedModel, ToolCall
from agentrt.tracing import instrument

tracer = trace.get_tracer("weather-service")


async def get_weather(city: str) -> str:
    """The current weather in a city."""
    # The tool's own span: it nests under the execute_tool span that runs the tool.
    with tracer.start_as_current_span(f"GET /weather/{city}"):
        if city == "Atlantis":
            raise TimeoutError("the weather service did not answer")
        if city == "Nowhere":
            await anyio.sleep(10)  # past the run's deadline
        await anyio.lowlevel.checkpoint()
        return {"Paris": "18°C, clear", "Oslo": "4°C, rain"}[city]


def weather(*cities: str) -> ToolCall | list[ToolCall]:
    calls = [ToolCall(name="get_weather", arguments={"city": city}) for city in cities]
    return calls[0] if len(calls) == 1 else calls


class OpenSpans(SpanProcessor):
    """Counts the spans started and not yet ended."""

    def __init__(self) -> None:
        self.open = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.open += 1

    def on_end(self, span: ReadableSpan) -> None:
        self.open -= 1


def describe(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    if span.status.status_code is StatusCode.ERROR:
        kind = attributes.get("error.type")
        return f"ERROR error.type={kind}" if kind else f"ERROR ({span.status.description})"
    tokens = attributes.get("gen_ai.usage.output_tokens")
    return "ok" if tokens is None else f"ok, {tokens} output tokens"


def print_traces(spans: tuple[ReadableSpan, ...]) -> None:
    """Each trace as a tree, children in the order they started."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda span: span.start_time or 0):
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        assert span.context is not None
        print(f"{'  ' * depth}{span.name}  {describe(span)}")
        for child in children.get(span.context.span_id, []):
            show(child, depth + 1)

    for number, root in enumerate(children[None], start=1):
        assert root.context is not None
        print(f"{root.name} (trace {number})  {describe(root)}")
        for child in children.get(root.context.span_id, []):
            show(child, 1)


async def main() -> None:
    exporter, watch = InMemorySpanExporter(), OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(watch)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    model = ScriptedModel(
        [
            weather("Paris", "Oslo"),
            "Paris: 18°C and clear; Oslo: 4°C with rain.",
            weather("Atlantis"),
            "The weather service is not answering for Atlantis.",
            weather("Nowhere"),
        ]
    )
    agent = Agent(model=model, tools=[get_weather], name="weather")
    # Every agent, with the global tracer provider; instrument(agent) traces one.
    # Messages and arguments stay out of the spans unless capture_content=True.
    with instrument():
        print("answer:", (await agent.execute("Weather in Paris and Oslo?")).output)
        print("answer:", (await agent.execute("And in Atlantis?")).output)
        try:
            await agent.execute("And in Nowhere?", deadline=0.05)
        except RunTimeoutError:
            print("answer: none, the run passed its deadline")
    print()
    spans = exporter.get_finished_spans()
    print_traces(spans)
    traces = {span.context.trace_id for span in spans if span.context is not None}
    print(f"\n{len(traces)} traces, {watch.open} spans left open")


if __name__ == "__main__":
    anyio.run(main)
