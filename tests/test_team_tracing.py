"""Traces of a team: a sub-agent's run is a span under the call that delegated to it."""

from opentelemetry.sdk.trace import ReadableSpan

from agentrt import Agent, ScriptedModel, ToolCall
from agentrt.tracing import instrument
from tests.tracing_support import Traces, parent_of, span_id, trace_id, traces_fixture

__all__ = ("traces_fixture",)  # used by name: the traces fixture


def transfer(call_id: str, agent: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": "Go."})


def parent_name(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> str | None:
    by_id = {span_id(each): each.name for each in spans}
    parent = parent_of(span)
    return None if parent is None else by_id.get(parent)


async def test_a_sub_agents_invoke_agent_span_nests_under_the_execute_tool_span(
    traces: Traces,
) -> None:
    checker = Agent(model=ScriptedModel(["ok"]), name="checker")
    researcher = Agent(
        model=ScriptedModel([transfer("t2", "checker"), "checked"]),
        name="researcher",
        sub_agents=[checker],
    )
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher"), "done"]),
        name="lead",
        sub_agents=[researcher],
    )
    # The sub-agent ran before, traced on its own bus: its members still get one tracer.
    handle = instrument(tracer_provider=traces.provider)
    try:
        await checker.execute("warm up")
        checker.model = ScriptedModel(["ok"])
        traces.exporter.clear()
        await lead.execute("Go.")
    finally:
        handle.uninstrument()
    spans = traces.spans
    nesting = sorted(
        (span.name, parent_name(span, spans)) for span in spans if "chat" not in span.name
    )
    assert nesting == [
        ("execute_tool transfer_task", "invoke_agent lead"),
        ("execute_tool transfer_task", "invoke_agent researcher"),
        ("invoke_agent checker", "execute_tool transfer_task"),
        ("invoke_agent lead", None),
        ("invoke_agent researcher", "execute_tool transfer_task"),
    ]
    assert len({trace_id(span) for span in spans}) == 1  # one trace for the whole team
    assert traces.watch.open == set()
