"""OpenTelemetry traces of runs (agentrt.tracing), read from the SDK's in-memory exporter.

Every span a provider starts is watched (tests.tracing_support.OpenSpans), so a test can
say that none was left open, whatever path the run took.
"""

import json
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import httpx
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from agentrt import (
    RETRY,
    Agent,
    AgentEvents,
    AssistantMessage,
    MaxIterationsExceededError,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolCall,
    ToolResponse,
    tool,
)
from agentrt.messages import Usage
from agentrt.models.base import StreamChunk
from agentrt.models.openai import OpenAIChatModel
from agentrt.tracing import Instrumentation, instrument
from tests.conftest import AgentFactory
from tests.openai_fixtures import OPENAI_COMPLETION
from tests.tracing_support import (
    Traces,
    attrs,
    content_keys,
    parent_of,
    span_id,
    trace_id,
    traces_fixture,
)

__all__ = ("traces_fixture",)  # used by name: the traces fixture


ADD_THEN_ANSWER = [ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2}), "1 + 2 = 3"]


# -- one run -------------------------------------------------------------------------------------


async def test_a_run_is_a_trace_of_invoke_agent_chat_execute_tool_chat(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(ADD_THEN_ANSWER, name="calc")
    instrument(agent, tracer_provider=traces.provider)

    result = await agent.execute("1 + 2?")

    assert result.output == "1 + 2 = 3"
    assert traces.names() == [
        "chat scripted",
        "execute_tool add",
        "chat scripted",
        "invoke_agent calc",
    ]
    run = traces.one("invoke_agent calc")
    first_chat, tool, second_chat = traces.spans[:3]
    assert run.parent is None
    assert {trace_id(span) for span in traces.spans} == {trace_id(run)}
    assert [parent_of(span) for span in traces.spans[:3]] == [span_id(run)] * 3
    assert run.kind is SpanKind.INTERNAL
    assert attrs(run) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "agentrt.scripted",
        "gen_ai.agent.name": "calc",
        "gen_ai.request.model": "scripted",
        "gen_ai.usage.input_tokens": result.usage.input_tokens,
        "gen_ai.usage.output_tokens": result.usage.output_tokens,
    }
    first_answer = agent.messages[1]
    assert isinstance(first_answer, AssistantMessage)
    first_usage = first_answer.usage
    assert first_usage is not None
    assert attrs(first_chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "agentrt.scripted",
        "gen_ai.request.model": "scripted",
        "gen_ai.response.model": "scripted",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": first_usage.input_tokens,
        "gen_ai.usage.output_tokens": first_usage.output_tokens,
    }
    assert attrs(second_chat)["gen_ai.response.finish_reasons"] == ("stop",)
    assert first_chat.kind is SpanKind.INTERNAL  # a model in this process
    assert attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
    }
    assert all(span.status.status_code is StatusCode.UNSET for span in traces.spans)
    assert traces.watch.open == set()
    # The spans follow one another: the tool ran between the two model calls.
    assert first_chat.end_time <= tool.start_time  # type: ignore[operator]
    assert tool.end_time <= second_chat.start_time  # type: ignore[operator]


async def test_message_content_is_not_recorded_unless_asked(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(ADD_THEN_ANSWER, instructions="You add.")
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("1 + 2?")

    assert len(traces.spans) == 4
    assert content_keys(traces.spans) == set()
    assert "1 + 2" not in repr([attrs(span) for span in traces.spans])


async def test_capture_content_records_messages_instructions_arguments_and_results(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(ADD_THEN_ANSWER, instructions="You add.")
    instrument(agent, tracer_provider=traces.provider, capture_content=True)

    await agent.execute("1 + 2?")

    run = traces.one("invoke_agent agent")
    first_chat, tool, second_chat = traces.spans[:3]
    user = {"role": "user", "parts": [{"type": "text", "content": "1 + 2?"}]}
    call = {"type": "tool_call", "id": "call_1", "name": "add", "arguments": {"a": 1, "b": 2}}
    assert json.loads(attrs(run)["gen_ai.input.messages"]) == [user]
    assert json.loads(attrs(run)["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "1 + 2 = 3"}],
            "finish_reason": "stop",
        }
    ]
    assert json.loads(attrs(first_chat)["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "You add."}
    ]
    assert json.loads(attrs(first_chat)["gen_ai.input.messages"]) == [user]
    assert json.loads(attrs(first_chat)["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}
    ]
    assert json.loads(attrs(tool)["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}
    assert attrs(tool)["gen_ai.tool.call.result"] == "3"
    assert json.loads(attrs(second_chat)["gen_ai.input.messages"]) == [
        user,
        {"role": "assistant", "parts": [call]},
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": "3"}],
        },
    ]


async def test_request_settings_become_request_attributes(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(
        ["hi"], settings={"temperature": 0.2, "max_tokens": 50, "seed": 7, "stop": ["END"]}
    )
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("hello")

    chat = traces.one("chat scripted")
    assert {key: value for key, value in attrs(chat).items() if ".request." in key} == {
        "gen_ai.request.model": "scripted",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 50,
        "gen_ai.request.seed": 7,
        "gen_ai.request.stop_sequences": ("END",),
    }


async def test_a_model_behind_a_url_names_its_provider_server_and_response_model(
    traces: Traces,
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=OPENAI_COMPLETION)

    model = OpenAIChatModel(
        "gpt-4o-mini",
        base_url="https://api.groq.com/openai/v1",
        api_key="sk-test",
        transport=httpx.MockTransport(answer),
    )
    async with Agent(model=model, max_iterations=1) as agent:
        instrument(agent, tracer_provider=traces.provider)
        with pytest.raises(MaxIterationsExceededError):
            await agent.execute("Weather in Paris?")
        await model.aclose()

    chat = traces.one("chat gpt-4o-mini")
    assert chat.kind is SpanKind.CLIENT
    assert {
        key: value
        for key, value in attrs(chat).items()
        if key.startswith(("gen_ai.provider", "gen_ai.response", "server.", "gen_ai.usage"))
    } == {
        "gen_ai.provider.name": "groq",
        "server.address": "api.groq.com",
        "server.port": 443,
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 82,
        "gen_ai.usage.output_tokens": 17,
    }
    assert attrs(traces.one("invoke_agent agent"))["gen_ai.provider.name"] == "groq"


@pytest.mark.parametrize(
    ("base_url", "provider", "address", "port"),
    [
        ("https://api.openai.com/v1", "openai", "api.openai.com", 443),
        (
            "https://my-res.openai.azure.com/openai",
            "azure.ai.openai",
            "my-res.openai.azure.com",
            443,
        ),
        ("https://api.mistral.ai/v1", "mistral_ai", "api.mistral.ai", 443),
        ("http://127.0.0.1:8080/v1", "openai", "127.0.0.1", 8080),
    ],
)
async def test_the_provider_is_the_well_known_name_of_the_host_else_openai(
    traces: Traces, base_url: str, provider: str, address: str, port: int
) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, content=b"{}")

    model = OpenAIChatModel(
        "m", base_url=base_url, api_key="k", transport=httpx.MockTransport(fail), max_retries=0
    )
    async with Agent(model=model) as agent:
        instrument(agent, tracer_provider=traces.provider)
        with pytest.raises(Exception):  # noqa: B017, PT011 - the answer is not the point
            await agent.execute("hi")
        await model.aclose()

    chat = traces.one("chat m")
    assert attrs(chat)["gen_ai.provider.name"] == provider
    assert attrs(chat)["server.address"] == address
    assert attrs(chat)["server.port"] == port


async def test_a_streamed_run_and_a_structured_run_have_their_chat_spans(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent([*ADD_THEN_ANSWER, '{"total": 3}'])
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("1 + 2?", stream=True)
    streamed = traces.names()
    result = await agent.execute("as JSON", output_type=dict)

    assert streamed == ["chat scripted", "execute_tool add", "chat scripted", "invoke_agent agent"]
    assert result.value == {"total": 3}
    assert traces.names()[4:] == ["chat scripted", "invoke_agent agent"]
    assert attrs(traces.spans[2])["gen_ai.usage.output_tokens"] > 0  # streamed usage
    assert traces.watch.open == set()


# -- errors --------------------------------------------------------------------------------------


async def test_a_tool_error_marks_the_tool_span_with_the_tools_exception(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(
        [ToolCall(id="call_1", name="divide", arguments={"a": 1, "b": 0}), "cannot divide"]
    )
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("1 / 0?")

    tool = traces.one("execute_tool divide")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "ZeroDivisionError"
    assert [event.name for event in tool.events] == ["exception"]
    assert "ToolExecutionError" in str((tool.events[0].attributes or {})["exception.type"])
    # The model read the error and answered: the run itself succeeded.
    assert traces.one("invoke_agent agent").status.status_code is StatusCode.UNSET


async def test_a_call_to_an_unknown_tool_is_a_failed_tool_span(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent([ToolCall(id="call_x", name="nope", arguments={}), "sorry"])
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("go")

    tool = traces.one("execute_tool nope")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "agentrt.exceptions.ToolNotFoundError"
    assert attrs(tool)["gen_ai.tool.call.id"] == "call_x"
    assert parent_of(tool) == span_id(traces.one("invoke_agent agent"))


async def test_a_model_error_marks_the_chat_span_and_the_failed_run(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent([ConnectionError("model down")])
    instrument(agent, tracer_provider=traces.provider)

    with pytest.raises(ConnectionError):
        await agent.execute("hi")

    assert traces.names() == ["chat scripted", "invoke_agent agent"]
    chat, run = traces.spans
    for span in (chat, run):
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"] == "ConnectionError"
    assert chat.status.description == "model down"
    assert [event.name for event in run.events] == ["exception"]
    assert traces.watch.open == set()


async def test_an_error_a_handler_recovered_from_is_an_event_of_a_successful_run(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent([ConnectionError("blip"), "fine"])
    agent.events.on(AgentEvents.EXECUTE_ERROR, lambda ctx: RETRY)
    instrument(agent, tracer_provider=traces.provider)

    result = await agent.execute("hi")

    assert result.output == "fine"
    assert traces.names() == ["chat scripted", "chat scripted", "invoke_agent agent"]
    failed, answered, run = traces.spans
    assert failed.status.status_code is StatusCode.ERROR
    assert answered.status.status_code is StatusCode.UNSET
    assert run.status.status_code is StatusCode.UNSET
    assert [event.name for event in run.events] == ["exception"]


async def test_a_tool_answered_with_an_error_response_is_an_error_span(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(ADD_THEN_ANSWER)
    # A hook that answers instead of the tool (as a rejected approval does), then a
    # signal handler that stops propagation: neither keeps the span open.
    agent.events.on(
        AgentEvents.TOOL_CALL_BEFORE, lambda ctx: ToolResponse("denied", is_error=True)
    )
    agent.events.on(AgentEvents.TOOL_CALL_AFTER, lambda ctx: ctx.stop(), priority=10**12)
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("1 + 2?")

    tool = traces.one("execute_tool add")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "tool_error"
    assert traces.watch.open == set()


# -- cancellation ----------------------------------------------------------------------------


async def test_a_run_cancelled_in_a_tool_leaves_no_span_open(
    make_agent: AgentFactory, traces: Traces
) -> None:
    started = anyio.Event()

    async def wait_forever() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent = make_agent(
        [ToolCall(name="wait_forever", arguments={}), "unreachable"], tools=[wait_forever]
    )
    instrument(agent, tracer_provider=traces.provider)

    async with anyio.create_task_group() as group:
        group.start_soon(agent.execute, "wait")
        await started.wait()
        assert traces.watch.open != set()  # the run and its tool call are in flight
        group.cancel_scope.cancel()

    assert traces.watch.open == set()
    assert traces.names() == ["chat scripted", "execute_tool wait_forever", "invoke_agent agent"]
    _, tool, run = traces.spans
    cancelled = anyio.get_cancelled_exc_class()
    for span in (tool, run):
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"].endswith(cancelled.__qualname__)
    assert run.status.description == "cancelled"


async def test_a_run_cancelled_in_a_model_call_leaves_no_span_open_nor_current(
    traces: Traces,
) -> None:
    calling = anyio.Event()

    async def hang(request: object) -> str:
        calling.set()
        await anyio.sleep_forever()
        return "never"

    async with Agent(model=ScriptedModel(hang)) as agent:
        instrument(agent, tracer_provider=traces.provider)
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(agent.execute, "hi")
                await calling.wait()
                scope.cancel()
        # The same task, cancelled in the model call: what the run attached is detached.
        with anyio.move_on_after(0) as direct:
            await agent.execute("again")

    assert direct.cancelled_caught
    assert traces.watch.open == set()
    assert traces.names() == ["chat scripted", "invoke_agent agent"] * 2
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_after_a_run_the_callers_current_span_is_its_own_again(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(ADD_THEN_ANSWER)
    instrument(agent, tracer_provider=traces.provider)
    tracer = traces.provider.get_tracer("app")

    with tracer.start_as_current_span("request") as outer:
        await agent.execute("1 + 2?")
        assert trace.get_current_span() is outer

    assert trace.get_current_span() is trace.INVALID_SPAN
    run = traces.one("invoke_agent agent")
    assert parent_of(run) == span_id(traces.one("request"))
    assert trace_id(run) == trace_id(traces.one("request"))


# -- context ---------------------------------------------------------------------------------


async def test_a_tools_own_spans_nest_under_execute_tool_also_in_parallel(
    make_agent: AgentFactory, traces: Traces
) -> None:
    tracer = traces.provider.get_tracer("tools")

    async def lookup(key: str) -> str:
        """Look a key up."""
        with tracer.start_as_current_span(f"db {key}"):
            await anyio.lowlevel.checkpoint()  # the other calls run meanwhile
        return key.upper()

    calls = [ToolCall(id=f"call_{key}", name="lookup", arguments={"key": key}) for key in "xabc"]
    agent = make_agent([calls[:1], calls[1:], "done"], tools=[lookup])
    instrument(agent, tracer_provider=traces.provider)

    await agent.execute("look up")

    run = traces.one("invoke_agent agent")
    tools = {
        attrs(span)["gen_ai.tool.call.id"]: span for span in traces.named("execute_tool lookup")
    }
    assert sorted(tools) == ["call_a", "call_b", "call_c", "call_x"]
    for key in "xabc":
        tool = tools[f"call_{key}"]
        assert parent_of(tool) == span_id(run)
        assert parent_of(traces.one(f"db {key}")) == span_id(tool)
    assert {trace_id(span) for span in traces.spans} == {trace_id(run)}
    # The three calls of the second turn ran at once, each in its own worker task.
    b, c = tools["call_b"], tools["call_c"]
    assert b.start_time < c.start_time < b.end_time  # type: ignore[operator]


# -- handlers that fail, models of every kind ---------------------------------------------------


async def test_a_tool_hook_that_raises_ends_the_tool_span_and_a_retry_goes_on_cleanly(
    make_agent: AgentFactory, traces: Traces
) -> None:
    agent = make_agent(ADD_THEN_ANSWER, strict=False)
    raised: list[str] = []

    def refuse_once(ctx: object) -> None:
        if not raised:
            raised.append("once")
            raise PermissionError("not now")

    agent.events.on(AgentEvents.TOOL_CALL_BEFORE, refuse_once)
    agent.events.on(AgentEvents.EXECUTE_ERROR, lambda ctx: RETRY)
    current_at_render: list[int] = []
    agent.events.on(
        AgentEvents.MESSAGE_RENDER_AFTER,
        lambda ctx: current_at_render.append(trace.get_current_span().get_span_context().span_id),
    )
    instrument(agent, tracer_provider=traces.provider)

    result = await agent.execute("1 + 2?")

    assert result.output == "1 + 2 = 3"
    assert traces.names() == [
        "chat scripted",
        "execute_tool add",
        "chat scripted",
        "invoke_agent agent",
    ]
    _, tool, _, run = traces.spans
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "PermissionError"
    assert run.status.status_code is StatusCode.UNSET
    # The retried turn runs in the run's context again, not in the failed tool's.
    assert current_at_render == [span_id(run), span_id(run)]
    assert trace.get_current_span() is trace.INVALID_SPAN
    assert traces.watch.open == set()


async def test_uninstrument_during_a_run_ends_its_spans(traces: Traces) -> None:
    handle_box: list[Instrumentation] = []

    def stop_tracing(a: int, b: int) -> int:
        """Turn tracing off from inside the run."""
        handle_box[0].uninstrument()
        return a + b

    async with Agent(
        model=ScriptedModel([ToolCall(name="stop_tracing", arguments={"a": 1, "b": 2}), "3"]),
        tools=[stop_tracing],
    ) as agent:
        handle_box.append(instrument(agent, tracer_provider=traces.provider))
        await agent.execute("go")

    assert traces.watch.open == set()
    assert sorted(traces.names()) == [
        "chat scripted",
        "execute_tool stop_tracing",
        "invoke_agent agent",
    ]
    assert agent.events.handler_count() == 0


async def test_content_of_a_failed_call_reasoning_and_garbled_arguments(
    make_agent: AgentFactory, traces: Traces
) -> None:
    answer = ModelResponse(
        content="",
        reasoning="add them",
        tool_calls=(ToolCall(id="call_g", name="add", arguments="{not json"),),
        usage=Usage(input_tokens=10, output_tokens=5, cached_tokens=4),
    )
    agent = make_agent([answer, ConnectionError("down")])
    instrument(agent, tracer_provider=traces.provider, capture_content=True)

    with pytest.raises(ConnectionError):
        await agent.execute("1 + 2?")

    first, tool, failed, _ = traces.spans
    assert json.loads(attrs(first)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "reasoning", "content": "add them"},
        {"type": "tool_call", "id": "call_g", "name": "add", "arguments": "{not json"},
    ]
    assert attrs(first)["gen_ai.usage.cache_read.input_tokens"] == 4
    assert attrs(tool)["error.type"] == "agentrt.exceptions.ToolArgumentsError"
    assert json.loads(attrs(failed)["gen_ai.input.messages"])[1]["parts"][0] == {
        "type": "reasoning",
        "content": "add them",
    }
    assert failed.status.status_code is StatusCode.ERROR


class EchoModel:
    """A model of the application's own: neither scripted nor behind a URL."""

    name = "echo-1"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=request.messages[-1].content)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        raise NotImplementedError


async def test_a_model_of_the_applications_own_is_named_after_its_class(traces: Traces) -> None:
    async with Agent(model=EchoModel()) as agent:
        instrument(agent, tracer_provider=traces.provider)
        await agent.execute("echo")

    chat = traces.one("chat echo-1")
    assert attrs(chat)["gen_ai.provider.name"] == "tests.test_tracing.EchoModel"
    assert chat.kind is SpanKind.INTERNAL
    assert "gen_ai.response.model" not in attrs(chat)


async def test_a_streamed_run_with_a_rejected_and_an_approved_confirmation(
    traces: Traces,
) -> None:
    @tool(requires_confirmation=True)
    def delete_file(path: str) -> str:
        """Delete a file (pretend)."""
        return f"deleted {path}"

    model = ScriptedModel(
        [
            ToolCall(id="call_etc", name="delete_file", arguments={"path": "/etc/passwd"}),
            ToolCall(id="call_tmp", name="delete_file", arguments={"path": "/tmp/x"}),
            "done",
        ]
    )
    async with Agent(model=model, tools=[delete_file]) as agent:
        instrument(agent, tracer_provider=traces.provider)
        async with agent.stream("clean up") as events:
            async for event in events:
                if event.type == "tool_call_confirmation":
                    refuse = event.tool_call.id == "call_etc"
                    await events.confirm(event.tool_call.id, "reject" if refuse else "approve")

    assert traces.names() == [
        "chat scripted",
        "execute_tool delete_file",
        "chat scripted",
        "execute_tool delete_file",
        "chat scripted",
        "invoke_agent agent",
    ]
    rejected, approved = traces.named("execute_tool delete_file")
    assert attrs(rejected)["gen_ai.tool.call.id"] == "call_etc"
    assert rejected.status.status_code is StatusCode.ERROR
    assert attrs(rejected)["error.type"] == "tool_error"
    assert approved.status.status_code is StatusCode.UNSET
    run = traces.one("invoke_agent agent")
    assert {parent_of(span) for span in traces.spans if span is not run} == {span_id(run)}
    assert traces.watch.open == set()
