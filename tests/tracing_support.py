"""Shared by the tracing tests: a tracer provider recording to memory, and span helpers."""

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = (
    "OpenSpans",
    "Traces",
    "attrs",
    "content_keys",
    "parent_of",
    "span_id",
    "trace_id",
    "traces_fixture",
)


class OpenSpans(SpanProcessor):
    """The spans started and not yet ended."""

    def __init__(self) -> None:
        self.open: set[int] = set()
        self.started = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.open.add(span.context.span_id)
        self.started += 1

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.open.discard(span.context.span_id)


class Traces:
    """A tracer provider exporting to memory, and what it recorded."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.watch = OpenSpans()
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.watch)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """Finished spans, in the order they ended."""
        return self.exporter.get_finished_spans()

    def names(self) -> list[str]:
        return [span.name for span in self.spans]

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span


@pytest.fixture(name="traces")
def traces_fixture() -> Iterator[Traces]:
    recorded = Traces()
    yield recorded
    recorded.provider.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.trace_id)


def content_keys(spans: Sequence[ReadableSpan]) -> set[str]:
    content = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    return {key for span in spans for key in attrs(span) if key in content}
