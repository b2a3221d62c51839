"""docs/stream.md: what agent.stream() emits, in which order, under pressure."""

from collections.abc import Sequence
from types import AsyncGeneratorType
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentrt import Agent, ModelResponse, ScriptedModel, ToolCall, Usage, tool
from agentrt.stream._adapter import StreamAdapter
from agentrt.stream._pricing import ModelPrices
from agentrt.stream.confirm import Decision, InvalidDecisionError, UnknownToolCallError
from agentrt.stream.events import (
    AgentChoiceEvent,
    AgentChoiceReasoningEvent,
    ErrorEvent,
    PartialToolCallEvent,
    StreamEvent,
    TokenUsageEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
)
from agentrt.stream.validate import validate
from tests.conftest import AgentFactory

ADD = ToolCall(id="call_add", name="add", arguments={"a": 1, "b": 2})


class Down(Exception):
    pass


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def collect(agent: Agent, prompt: str | None, **options: Any) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with agent.stream(prompt, **options) as stream:
        async for event in stream:
            events.append(event)
    assert validate(events) == [], validate(events)
    return events


def types(events: Sequence[StreamEvent]) -> list[str]:
    return [event.type for event in events]


# -- Stream Session Lifecycle ------------------------------------------------------------------


async def test_stream_session_lifecycle(make_agent: AgentFactory) -> None:
    agent = make_agent([ModelResponse(content="Hello there", reasoning="Greet")], name="greeter")
    agent.model.chunk_size = 5  # type: ignore[attr-defined]
    events = await collect(agent, "hi")
    assert types(events) == [
        "user_message",
        "stream_started",
        "agent_choice_reasoning",
        "agent_choice",
        "agent_choice",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    assert events[0].message == "hi"  # type: ignore[union-attr]
    choices = [e.content for e in events if isinstance(e, AgentChoiceEvent)]
    assert choices == ["Hello", " ther", "e"]
    assert all(e.session_id == agent.session_id for e in events)
    assert {e.agent_name for e in events if isinstance(e, AgentChoiceEvent)} == {"greeter"}


async def test_without_a_prompt_there_is_no_user_message(make_agent: AgentFactory) -> None:
    agent = make_agent(["continued"])
    from agentrt import UserMessage

    await agent.append(UserMessage(content="earlier"))
    events = await collect(agent, None)
    assert types(events)[:2] == ["stream_started", "agent_choice"]


# -- Tool Execution Pattern ------------------------------------------------------------------


async def test_tool_execution_pattern(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "3"])
    agent.model.chunk_size = 4  # type: ignore[attr-defined]
    events = await collect(agent, "1+2?")
    kinds = types(events)
    first_partial = kinds.index("partial_tool_call")
    call = kinds.index("tool_call")
    response = kinds.index("tool_call_response")
    assert first_partial < call < response
    partials = [e for e in events if isinstance(e, PartialToolCallEvent)]
    assert all(
        p.tool_call.id == "call_add" and p.tool_call.function.name == "add" for p in partials
    )
    assert "".join(p.tool_call.function.arguments for p in partials) == ADD.arguments
    assert len(partials) == -(-len(ADD.arguments) // 4)  # one per 4-character fragment
    (done,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert done.tool_call.id == "call_add"
    assert done.response == "3"
    # token_usage after each assistant message: the tool-call turn and the answer.
    assert kinds.count("token_usage") == 2
    assert kinds.index("token_usage") < call


async def test_parallel_tool_calls_each_get_call_and_response(make_agent: AgentFactory) -> None:
    calls = [
        ToolCall(id="one", name="add", arguments={"a": 1, "b": 1}),
        ToolCall(id="two", name="add", arguments={"a": 2, "b": 2}),
    ]
    events = await collect(make_agent([calls, "2 and 4"]), "sums")
    responses = {
        e.tool_call.id: e.response for e in events if isinstance(e, ToolCallResponseEvent)
    }
    assert responses == {"one": "2", "two": "4"}


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (ToolCall(id="x", name="divide", arguments={"a": 1, "b": 0}), "ZeroDivisionError"),
        (ToolCall(id="x", name="nope", arguments={}), "unknown tool 'nope'"),
        (ToolCall(id="x", name="add", arguments="{not json"), "not valid JSON"),
    ],
)
async def test_failing_and_unknown_calls_still_have_call_then_response(
    make_agent: AgentFactory, call: ToolCall, text: str
) -> None:
    events = await collect(make_agent([call, "sorry"]), "go")
    (announced,) = [e for e in events if isinstance(e, ToolCallEvent)]
    (response,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert announced.tool_call.id == response.tool_call.id == "x"
    assert events.index(announced) < events.index(response)
    assert text in response.response


async def test_tool_call_shows_arguments_a_hook_changed(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "30"])
    agent.hooks.on_tool_call_before(lambda ctx: {"a": 10, "b": 20})
    events = await collect(agent, "go")
    (announced,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert announced.tool_call.function.arguments == '{"a": 10, "b": 20}'


# -- errors, cancellation, early exit -----------------------------------------------------------


async def test_fatal_error_emits_error_before_stream_stopped(make_agent: AgentFactory) -> None:
    agent = make_agent([Down("model is down")])
    events: list[StreamEvent] = []

    async def read_all() -> None:
        async with agent.stream("hi") as stream:
            async for event in stream:
                events.append(event)

    with pytest.raises(Down):
        await read_all()
    assert types(events) == ["user_message", "stream_started", "error", "stream_stopped"]
    assert isinstance(events[2], ErrorEvent)
    assert events[2].error == "Down: model is down"
    assert validate(events) == []


async def test_consumer_stopping_early_cancels_the_run(make_agent: AgentFactory) -> None:
    model = ScriptedModel([ADD, "3"])
    agent = make_agent(model)
    # No buffer: the run can get at most one event ahead of this consumer.
    async with agent.stream("go", buffer_size=0) as stream:
        async for event in stream:
            if event.type == "stream_started":
                break
    assert agent.state == "idle"
    assert len(model.requests) <= 1
    # The agent is still usable afterwards.
    model.reset(["again"])
    assert (await agent.execute("next")).output == "again"


async def test_async_for_resumes_where_it_left_and_its_iterator_closes_with_the_stream(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(["The answer."])
    async with agent.stream("go") as stream:
        async for event in stream:
            if event.type == "stream_started":
                break
        iterator = aiter(stream)
        rest = [event.type async for event in stream]  # a second loop goes on
    assert aiter(stream) is iterator
    assert rest[0] == "agent_choice"
    assert rest[-2:] == ["token_usage", "stream_stopped"]
    assert isinstance(iterator, AsyncGeneratorType)
    assert iterator.ag_frame is None  # closed


async def test_leaving_the_stream_early_closes_the_iterator(make_agent: AgentFactory) -> None:
    agent = make_agent(["The answer."])
    async with agent.stream("go", buffer_size=0) as stream:
        iterator = aiter(stream)
        assert (await anext(iterator)).type == "user_message"
    assert isinstance(iterator, AsyncGeneratorType)
    assert iterator.ag_frame is None  # closed


async def test_cancelled_run_still_ends_with_stream_stopped(make_agent: AgentFactory) -> None:
    started = anyio.Event()

    async def hangs() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    agent = make_agent([ToolCall(id="h", name="hangs"), "x"], tools=[hangs])
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        events.append(event)

    adapter = StreamAdapter(agent, sink)
    async with anyio.create_task_group() as group:
        group.start_soon(adapter.run, "go")
        await started.wait()
        group.cancel_scope.cancel()
    assert types(events)[-1] == "stream_stopped"
    assert types(events).count("stream_stopped") == 1
    # The cancelled call was answered, and the answer reached the stream.
    (response,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert "cancelled" in response.response
    assert validate(events) == []


async def test_hook_only_adapter_feeds_any_consumer(make_agent: AgentFactory) -> None:
    agent = make_agent(["hi"])
    received: list[str] = []

    async def sink(event: StreamEvent) -> None:
        received.append(event.type)

    result = await StreamAdapter(agent, sink).run("hello")
    assert result.output == "hi"
    assert received == [
        "user_message",
        "stream_started",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    assert agent.events.handler_count() == 0  # detached afterwards


# -- backpressure ------------------------------------------------------------------------------


async def test_slow_consumer_makes_the_run_wait_without_loss(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["a long answer in many chunks"], chunk_size=2)
    agent = make_agent(model)
    async with agent.stream("go", buffer_size=1) as stream:
        await anyio.wait_all_tasks_blocked()
        # user_message fills the buffer; the run waits before calling the model.
        assert model.requests == []
        events = [event async for event in stream]
    text = "".join(e.content for e in events if isinstance(e, AgentChoiceEvent))
    assert text == "a long answer in many chunks"
    assert validate(events) == []


async def test_buffer_size_must_be_a_non_negative_int(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    with pytest.raises(ValueError, match="buffer_size must be a non-negative int"):
        async with agent.stream("x", buffer_size=-1):
            pass  # pragma: no cover
    assert agent.messages == ()


# -- confirmations -----------------------------------------------------------------------------


async def run_with_answers(
    agent: Agent, answers: dict[str, tuple[str, str | None]], **options: Any
) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with agent.stream("go", **options) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolCallConfirmationEvent):
                decision, reason = answers[event.tool_call.id]
                assert await stream.confirm(event.tool_call.id, decision, reason)
    assert validate(events) == []
    return events


async def test_approved_call_runs_after_its_confirmation(make_agent: AgentFactory) -> None:
    call = ToolCall(id="d1", name="delete_file", arguments={"path": "/tmp/x"})
    agent = make_agent([call, "done"], tools=[delete_file])
    events = await run_with_answers(agent, {"d1": ("approve", None)})
    kinds = types(events)
    assert kinds.index("tool_call_confirmation") < kinds.index("tool_call")
    (response,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert response.response == "deleted /tmp/x"


async def test_rejected_call_does_not_run_and_says_why(make_agent: AgentFactory) -> None:
    call = ToolCall(id="d1", name="delete_file", arguments={"path": "/etc"})
    agent = make_agent([call, "ok, I will not"], tools=[delete_file])
    events = await run_with_answers(agent, {"d1": ("reject", "too dangerous")})
    (response,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert response.response == "rejected by the user: too dangerous"
    assert agent.messages[2].content == "rejected by the user: too dangerous"
    assert types(events)[-2:] == ["token_usage", "stream_stopped"]


async def test_approve_session_stops_asking(make_agent: AgentFactory) -> None:
    first = ToolCall(id="d1", name="delete_file", arguments={"path": "a"})
    second = ToolCall(id="d2", name="delete_file", arguments={"path": "b"})
    agent = make_agent(
        [
            first,
            second,
            "done",
            ToolCall(id="d3", name="delete_file", arguments={"path": "c"}),
            "done",
        ],
        tools=[delete_file],
    )
    events = await run_with_answers(agent, {"d1": ("approve-session", None)})
    assert types(events).count("tool_call_confirmation") == 1
    # ... also in the next stream of the same agent.
    events = await run_with_answers(agent, {})
    assert "tool_call_confirmation" not in types(events)


async def test_approve_tool_stops_asking_for_that_tool(make_agent: AgentFactory) -> None:
    @tool(requires_confirmation=True)
    def send_mail(to: str) -> str:
        """Send a mail."""
        return f"sent to {to}"

    script = [
        [ToolCall(id="d1", name="delete_file", arguments={"path": "a"})],
        [ToolCall(id="m1", name="send_mail", arguments={"to": "x"})],
        [ToolCall(id="d2", name="delete_file", arguments={"path": "b"})],
        [ToolCall(id="m2", name="send_mail", arguments={"to": "y"})],
        "done",
    ]
    agent = make_agent(script, tools=[delete_file, send_mail])
    events = await run_with_answers(
        agent, {"d1": ("approve-tool", None), "m1": ("approve", None), "m2": ("approve", None)}
    )
    asked = [e.tool_call.id for e in events if isinstance(e, ToolCallConfirmationEvent)]
    assert asked == ["d1", "m1", "m2"]


async def test_early_answer_is_kept_and_duplicates_ignored(make_agent: AgentFactory) -> None:
    call = ToolCall(id="d1", name="delete_file", arguments={"path": "a"})
    agent = make_agent([call, "done"], tools=[delete_file])
    events: list[StreamEvent] = []
    answered = False
    async with agent.stream("go") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, PartialToolCallEvent) and not answered:
                # Answered from the streamed output, before the question is asked.
                assert await stream.confirm("d1", "approve")
                assert not await stream.confirm("d1", "reject", "changed my mind")
                answered = True
    assert "tool_call_confirmation" in types(events)
    (response,) = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert response.response == "deleted a"


async def test_unknown_ids_and_bad_decisions_are_clear_errors(make_agent: AgentFactory) -> None:
    agent = make_agent(["hi"])
    async with agent.stream("go") as stream:
        with pytest.raises(UnknownToolCallError, match="no tool call 'nope'"):
            await stream.confirm("nope", "approve")
        with pytest.raises(InvalidDecisionError, match="invalid decision 'maybe'"):
            await stream.confirm("nope", "maybe")
        _ = [event async for event in stream]


async def test_auto_approve_skips_confirmation(make_agent: AgentFactory) -> None:
    call = ToolCall(id="d1", name="delete_file", arguments={"path": "a"})
    agent = make_agent([call, "done"], tools=[delete_file])
    events = await collect(agent, "go", auto_approve=True)
    assert "tool_call_confirmation" not in types(events)


# -- token usage -------------------------------------------------------------------------------


async def test_token_usage_is_cumulative_with_the_last_call_beside_it(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(
        [
            ModelResponse(
                content="a", usage=Usage(input_tokens=100, output_tokens=10, requests=1)
            ),
            ModelResponse(
                content="b",
                usage=Usage(input_tokens=200, output_tokens=20, cached_tokens=100, requests=1),
            ),
        ]
    )
    agent = make_agent(model)
    prices = {"scripted": ModelPrices(input=2.0, output=10.0, cached_input=1.0)}
    first = await collect(agent, "one", prices=prices, context_limit=8192)
    second = await collect(agent, "two", prices=prices, context_limit=8192)
    (u1,) = [e.usage for e in first if isinstance(e, TokenUsageEvent)]
    (u2,) = [e.usage for e in second if isinstance(e, TokenUsageEvent)]
    assert (u1.input_tokens, u1.output_tokens, u1.context_length, u1.context_limit) == (
        100,
        10,
        110,
        8192,
    )
    assert u1.cost == pytest.approx((100 * 2 + 10 * 10) / 1e6)
    assert (u2.input_tokens, u2.output_tokens, u2.context_length) == (300, 30, 220)
    assert u2.last_message is not None
    assert u2.last_message.input_tokens == 200
    assert u2.last_message.cost == pytest.approx((100 * 2 + 100 * 1 + 20 * 10) / 1e6)


async def test_token_usage_without_prices_or_limit_is_zero(make_agent: AgentFactory) -> None:
    events = await collect(make_agent(["x"]), "go")
    (usage,) = [e.usage for e in events if isinstance(e, TokenUsageEvent)]
    assert usage.cost == 0.0
    assert usage.context_limit == 0


async def test_strict_stream_validates_as_it_goes(make_agent: AgentFactory) -> None:
    events = await collect(make_agent([ADD, "3"]), "go", strict=True)
    assert types(events)[-1] == "stream_stopped"


async def test_reasoning_and_text_keep_generation_order(make_agent: AgentFactory) -> None:
    model = ScriptedModel([ModelResponse(content="xyz", reasoning="abc")], chunk_size=1)
    events = await collect(make_agent(model), "go")
    deltas = [
        ("r" if isinstance(e, AgentChoiceReasoningEvent) else "t", e.content)
        for e in events
        if isinstance(e, AgentChoiceEvent | AgentChoiceReasoningEvent)
    ]
    assert deltas == [("r", "a"), ("r", "b"), ("r", "c"), ("t", "x"), ("t", "y"), ("t", "z")]


# -- confirmation without a stream ----------------------------------------------------------


async def test_confirmation_works_without_a_stream(make_agent: AgentFactory) -> None:
    from agentrt.stream.confirm import confirm_with

    calls = [
        ToolCall(id="d1", name="delete_file", arguments={"path": "/etc"}),
        ToolCall(id="d2", name="delete_file", arguments={"path": "/tmp/x"}),
    ]
    agent = make_agent([calls, "done"], tools=[delete_file])
    asked: list[str] = []

    async def ask(call: ToolCall) -> tuple[Decision, str | None]:
        asked.append(call.id)
        if "/etc" in call.arguments:
            return ("reject", "not system files")
        return ("approve", None)

    remove = confirm_with(agent, ask)
    await agent.execute("clean up")
    assert sorted(asked) == ["d1", "d2"]
    contents = {m.tool_call_id: m.content for m in agent.messages if m.role == "tool"}
    assert contents == {"d1": "rejected by the user: not system files", "d2": "deleted /tmp/x"}
    assert remove() is True
    assert agent.events.handler_count() == 0


async def test_confirm_callback_may_be_sync_and_approve_for_the_session(
    make_agent: AgentFactory,
) -> None:
    from agentrt.stream.confirm import confirm_with

    script = [
        ToolCall(id="d1", name="delete_file", arguments={"path": "a"}),
        ToolCall(id="d2", name="delete_file", arguments={"path": "b"}),
        "done",
    ]
    agent = make_agent(script, tools=[delete_file])
    asked: list[str] = []

    def ask(call: ToolCall) -> Decision:
        asked.append(call.id)
        return "approve-session"

    confirm_with(agent, ask)
    await agent.execute("go")
    assert asked == ["d1"]  # approve-session: never asked again
    with pytest.raises(TypeError, match="callback must be callable"):
        confirm_with(agent, "yes")  # type: ignore[arg-type]


async def test_cancelled_while_user_message_is_sent_still_starts_and_stops_the_stream() -> None:
    agent = Agent(model=ScriptedModel(["Hello"]))
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:  # writes, then waits (as a socket would)
        events.append(event)
        await anyio.lowlevel.checkpoint()

    with anyio.CancelScope() as scope:
        scope.cancel()  # the caller cancels as the session opens
        await StreamAdapter(agent, sink).run("go")
    assert [event.type for event in events] == ["user_message", "stream_started", "stream_stopped"]
    assert validate(events) == []


async def test_the_adapters_session_id_is_fixed(make_agent: AgentFactory) -> None:
    agent = make_agent(["Hi."])

    async def sink(event: StreamEvent) -> None:
        pass

    adapter = StreamAdapter(agent, sink, session_id="s-1")
    assert adapter.session_id == "s-1"
    with pytest.raises(AttributeError):
        adapter.session_id = "s-2"  # type: ignore[misc]
    assert StreamAdapter(agent, sink).session_id == agent.session_id
