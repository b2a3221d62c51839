"""The cost of tracing a run: bench_agent's run, untraced and traced with the OpenTelemetry SDK.

One run is bench_agent's (prompt -> one tool call -> answer, a hook on
``tool:call:before``, a zero-latency ScriptedModel, the agent reused), which makes four
spans when traced: ``invoke_agent``, two ``chat`` and one ``execute_tool``. The traced
rows use the SDK's ``TracerProvider`` with a ``SimpleSpanProcessor`` handing each ended
span to an exporter that does nothing: what is measured is agentrt's handlers and the
SDK's span bookkeeping, not an export. Rows, all in the same rounds:

* the floor (``bench_agent.floor_run``), the untraced run, the traced run, and the traced
  run with ``capture_content=True`` (messages and tool arguments rendered as JSON);
* the SDK alone: the floor plus four bare spans with the same attributes and parents,
  started and ended by hand (what any instrumentation of this run pays the SDK), so
  that traced minus this row is about what agentrt's handlers add;
* each figure's ratio to the floor and to the untraced run.

Run with ``nox -s bench`` or ``python benches/bench_tracing.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Sequence

from _harness import machine, measure_many
from bench_agent import floor_run, new_agent
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from agentrt import Agent
from agentrt.tracing import instrument

PROMPT = "What is 1 + 2?"
ANSWER = "The answer is 3."


class NoOpExporter(SpanExporter):
    """Takes every span and does nothing with it (counts them, to check the runs)."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def traced_agent(exporter: NoOpExporter, *, capture_content: bool) -> Agent:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = new_agent()
    instrument(agent, tracer_provider=provider, capture_content=capture_content)
    return agent


async def figures(n: int, rounds: int) -> dict[str, float]:
    plain = new_agent()
    exporter, content_exporter = NoOpExporter(), NoOpExporter()
    traced = traced_agent(exporter, capture_content=False)
    content = traced_agent(content_exporter, capture_content=True)

    async def floor(count: int) -> None:
        for _ in range(count):
            await floor_run(PROMPT)

    sdk_exporter = NoOpExporter()
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(sdk_exporter))
    tracer = sdk.get_tracer("bench")
    common = {"gen_ai.provider.name": "agentrt.scripted", "gen_ai.request.model": "scripted"}

    async def floor_with_spans(count: int) -> None:
        for _ in range(count):
            run = tracer.start_span(
                "invoke_agent agent",
                attributes={"gen_ai.operation.name": "invoke_agent", **common},
            )
            parent = trace.set_span_in_context(run)
            for name, operation in (("chat scripted", "chat"), ("execute_tool add", "tool")):
                span = tracer.start_span(
                    name, context=parent, attributes={"gen_ai.operation.name": operation}
                )
                span.set_attributes({"gen_ai.usage.input_tokens": 1, **common})
                span.end()
            await floor_run(PROMPT)
            chat = tracer.start_span(
                "chat scripted", context=parent, attributes={"gen_ai.operation.name": "chat"}
            )
            chat.set_attributes({"gen_ai.usage.input_tokens": 1, **common})
            chat.end()
            run.set_attributes({"gen_ai.usage.input_tokens": 1})
            run.end()

    def runs(agent: Agent) -> Callable[[int], Awaitable[None]]:
        async def run(count: int) -> None:
            for _ in range(count):
                await agent.reset()
                result = await agent.execute(PROMPT)
                assert result.output == ANSWER

        return run

    medians = await measure_many(
        {
            "floor": floor,
            "floor + 4 bare SDK spans": floor_with_spans,
            "untraced": runs(plain),
            "traced": runs(traced),
            "traced, capture_content": runs(content),
        },
        n=n,
        rounds=rounds,
    )
    # Every traced run exported its four spans: the figure is of complete traces.
    for spans in (exporter.spans, content_exporter.spans, sdk_exporter.spans):
        assert spans > 0
        assert spans % 4 == 0, spans
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    n, rounds = (200, 5) if args.quick else (2_000, 11)
    medians = asyncio.run(figures(n, rounds))
    floor, untraced = medians["floor"], medians["untraced"]
    print("### Tracing: one run (prompt -> tool call -> answer), OpenTelemetry SDK, no-op export")
    print()
    print("| case | µs per run | x floor | x untraced |")
    print("|---|---:|---:|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:.1f} | {value / floor:.2f} | {value / untraced:.2f} |")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
