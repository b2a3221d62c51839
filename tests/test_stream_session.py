"""Session events (issue 5): session_title, compaction, and Agent.compact underneath."""

import logging
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from agentrt import (
    Agent,
    AssistantMessage,
    Message,
    ModelResponse,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentrt.control import SKIP_ITERATION
from agentrt.models.scripted import estimate_tokens
from agentrt.stream._adapter import StreamAdapter
from agentrt.stream.events import (
    ErrorEvent,
    SessionCompactionEvent,
    SessionSummaryEvent,
    SessionTitleEvent,
    StreamEvent,
    TokenUsageEvent,
)
from agentrt.stream.session import (
    DEFAULT_SUMMARY_PROMPT,
    DEFAULT_TITLE_PROMPT,
    SUMMARY_PREFIX,
    CompactionError,
    Compactor,
    TitleError,
    context_length,
    ensure_title,
    estimate_message_tokens,
    generate_title,
    session_state,
    transcript,
)
from agentrt.stream.validate import validate
from agentrt.testing import EventRecorder
from tests.conftest import AgentFactory

ADD = ToolCall(id="call_add", name="add", arguments={"a": 1, "b": 2})
COMPACTION = ["start", "started", "completed"]


class Down(Exception):
    pass


def big(content: str = "", *, tokens: int = 900, **fields: Any) -> ModelResponse:
    """A model answer that reports ``tokens`` input tokens (the context it was given)."""
    return ModelResponse(
        content=content, usage=Usage(input_tokens=tokens, output_tokens=10, requests=1), **fields
    )


async def collect(agent: Agent, prompt: str | None, **options: Any) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with agent.stream(prompt, **options) as stream:
        async for event in stream:
            events.append(event)
    assert validate(events) == [], validate(events)
    return events


def types(events: Sequence[StreamEvent]) -> list[str]:
    return [
        f"session_compaction:{e.status}" if isinstance(e, SessionCompactionEvent) else e.type
        for e in events
    ]


def roles(messages: Sequence[Message]) -> list[str]:
    return [message.role for message in messages]


# -- session_title ---------------------------------------------------------------------------


async def test_title_is_made_once_per_session_by_the_model(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["Hello!", '"Title: Greeting the user."\nmore', "Again."])
    agent = make_agent(model, name="greeter")
    first = await collect(agent, "hi", title=True)
    assert types(first) == [
        "user_message",
        "stream_started",
        "agent_choice",
        "token_usage",
        "session_title",
        "token_usage",  # the title call's tokens
        "stream_stopped",
    ]
    (titled,) = [e for e in first if isinstance(e, SessionTitleEvent)]
    assert titled.title == "Greeting the user"
    assert titled.agent_name == "greeter"
    assert titled.session_id == agent.session_id
    assert session_state(agent).title == "Greeting the user"
    # A one-off request: the default prompt and a transcript, no tools; nothing appended.
    request = model.requests[1]
    assert request.messages[0] == SystemMessage(content=DEFAULT_TITLE_PROMPT)
    assert request.messages[1].content == "User: hi\n\nAssistant: Hello!"
    assert request.tools == []
    assert roles(agent.messages) == ["user", "assistant"]
    # The second stream of the session has no title and no extra model call.
    second = await collect(agent, "again", title=True)
    assert "session_title" not in types(second)
    assert len(model.requests) == 3


async def test_title_with_a_prompt_of_ones_own(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["Paris is sunny.", "Weather in Paris"])
    agent = make_agent(model)
    events = await collect(agent, "Weather in Paris?", title="Name this chat in French.")
    assert [e.title for e in events if isinstance(e, SessionTitleEvent)] == ["Weather in Paris"]
    assert model.requests[1].messages[0].content == "Name this chat in French."


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_title_by_a_callable_makes_no_model_call(
    make_agent: AgentFactory, asynchronous: bool
) -> None:
    seen: list[tuple[Message, ...]] = []

    def name_it(messages: tuple[Message, ...]) -> str:
        seen.append(messages)
        return f"About {messages[0].content}"

    async def name_it_async(messages: tuple[Message, ...]) -> str:
        return name_it(messages)

    model = ScriptedModel(["sure"])
    agent = make_agent(model)
    events = await collect(agent, "cats", title=name_it_async if asynchronous else name_it)
    assert types(events)[-3:] == ["token_usage", "session_title", "stream_stopped"]
    assert [e.title for e in events if isinstance(e, SessionTitleEvent)] == ["About cats"]
    assert seen == [agent.messages]
    assert len(model.requests) == 1


async def test_no_title_by_default_and_no_extra_model_call(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["one", "two"])
    agent = make_agent(model)
    events = await collect(agent, "hi")
    events += await collect(agent, "hi again", title=False)
    assert "session_title" not in types(events)
    assert len(model.requests) == 2
    assert session_state(agent).title is None


async def test_failed_title_is_an_error_event_and_the_next_stream_tries_again(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(["answer", Down("no titles today"), "answer 2", "Second try"])
    agent = make_agent(model)
    async with agent.stream("hi", title=True) as stream:
        events = [event async for event in stream]
    assert validate(events) == []
    assert types(events)[-3:] == ["token_usage", "error", "stream_stopped"]
    assert isinstance(events[-2], ErrorEvent)
    assert events[-2].error == "the session title could not be made: Down: no titles today"
    assert stream.result is not None
    assert stream.result.output == "answer"
    events = await collect(agent, "again", title=True)
    assert [e.title for e in events if isinstance(e, SessionTitleEvent)] == ["Second try"]


async def test_no_title_when_the_run_fails(make_agent: AgentFactory) -> None:
    model = ScriptedModel([Down("model is down")])
    agent = make_agent(model)
    events: list[StreamEvent] = []
    with pytest.raises(Down):
        async with agent.stream("hi", title=True) as stream:
            events.extend([event async for event in stream])
    assert types(events) == ["user_message", "stream_started", "error", "stream_stopped"]
    assert len(model.requests) == 1


async def test_ensure_title_without_a_stream(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["hello", "A greeting", "unused"])
    agent = make_agent(model)
    await agent.execute("hi")
    assert await ensure_title(agent) == "A greeting"
    assert await ensure_title(agent) == "A greeting"
    assert len(model.requests) == 2


async def test_generate_title_cleans_caps_and_rejects_empty(make_agent: AgentFactory) -> None:
    agent = make_agent(ScriptedModel(["x" * 200, "  \n ''  "]))
    title, usage = await generate_title(agent)
    assert len(title) == 80
    assert title.endswith("…")
    assert usage.requests == 1
    with pytest.raises(TitleError, match="the title is empty"):
        await generate_title(agent)
    with pytest.raises(TitleError, match="a int, not a str"):
        await generate_title(agent, lambda messages: 3)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize(
    ("option", "error"), [("  ", ValueError), (3, TypeError), (b"prompt", TypeError)]
)
async def test_bad_title_options_are_clear_errors(
    make_agent: AgentFactory, option: object, error: type[Exception]
) -> None:
    agent = make_agent([])

    async def sink(event: StreamEvent) -> None:
        pass  # pragma: no cover

    with pytest.raises(error):
        StreamAdapter(agent, sink, title=option)  # type: ignore[arg-type]


# -- compaction in the stream ----------------------------------------------------------------


async def test_session_compaction_pattern_is_exact(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big("first answer"), "the summary", "answer 2"])
    agent = make_agent(model, instructions="Be brief.", name="keeper")
    compactor = Compactor(context_limit=1000, threshold=0.8, keep_recent=2)
    first = await collect(agent, "first question", compaction=compactor)
    assert "session_compaction" not in [e.type for e in first]
    before = agent.messages
    second = await collect(agent, "second question", compaction=compactor)
    assert types(second) == [
        "user_message",
        "stream_started",
        "session_compaction:start",
        "session_compaction:started",
        "session_summary",
        "token_usage",
        "session_compaction:completed",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    (summary,) = [e for e in second if isinstance(e, SessionSummaryEvent)]
    assert summary.summary == "the summary"
    assert summary.agent_name == "keeper"
    assert {e.agent_name for e in second if isinstance(e, SessionCompactionEvent)} == {"keeper"}
    # system + summary + the two most recent messages, then the new answer.
    messages = agent.messages
    assert messages[0] == SystemMessage(content="Be brief.")
    assert messages[1] == UserMessage(content=SUMMARY_PREFIX + "the summary")
    assert messages[2] is before[2]
    assert [m.content for m in messages[3:]] == ["second question", "answer 2"]
    # The summary request: its own prompt and a transcript of what it replaces.
    request = model.requests[1]
    assert request.messages[0] == SystemMessage(content=DEFAULT_SUMMARY_PROMPT)
    assert request.messages[1].content == "User: first question"
    assert request.tools == []
    # The model's next call already sees the compacted conversation.
    assert model.requests[2].messages == list(messages[:4])
    # token_usage (updated): the summary call's tokens, the new context length.
    usage = next(e.usage for e in second if isinstance(e, TokenUsageEvent))
    assert usage.last_message is not None
    assert usage.last_message.input_tokens == estimate_tokens(
        DEFAULT_SUMMARY_PROMPT + "User: first question"
    )
    assert usage.context_length == estimate_message_tokens(messages[:4])
    assert usage.context_limit == 0  # the stream was given none; the compactor has its own
    state = session_state(agent)
    assert (state.summary, state.compactions) == ("the summary", 1)


async def test_compaction_keeps_tool_calls_with_their_answers(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big(tool_calls=(ADD,)), "the summary", "3"])
    agent = make_agent(model, instructions="sys")
    # keep_recent=1 would keep only the tool message: the boundary moves back to its call.
    events = await collect(agent, "1+2?", compaction=Compactor(context_limit=1000, keep_recent=1))
    kinds = types(events)
    assert kinds.index("tool_call_response") < kinds.index("session_compaction:start")
    assert roles(agent.messages) == ["system", "user", "assistant", "tool", "assistant"]
    assert agent.messages[1].content == SUMMARY_PREFIX + "the summary"
    assistant, answer = agent.messages[2], agent.messages[3]
    assert isinstance(assistant, AssistantMessage)
    assert isinstance(answer, ToolMessage)
    assert assistant.tool_calls[0].id == answer.tool_call_id == "call_add"
    assert model.requests[1].messages[1].content == "User: 1+2?"


async def test_failed_compaction_keeps_the_conversation_and_the_stream_goes_on(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([big("first answer"), Down("summaries are down"), "answer 2"])
    agent = make_agent(model, instructions="sys")
    compactor = Compactor(context_limit=1000, keep_recent=2)
    await collect(agent, "first question", compaction=compactor)
    before = agent.messages
    version = agent.version
    events = await collect(agent, "second question", compaction=compactor)
    assert types(events) == [
        "user_message",
        "stream_started",
        "session_compaction:start",
        "session_compaction:started",
        "error",
        "session_compaction:completed",
        "agent_choice",
        "token_usage",
        "stream_stopped",
    ]
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.error == (
        "compaction failed, the conversation is unchanged: "
        "the summary call raised Down: summaries are down"
    )
    # Nothing lost: the old messages, the new question, the new answer.
    assert agent.messages[:3] == before
    assert [m.content for m in agent.messages[3:]] == ["second question", "answer 2"]
    assert agent.version == version + 2
    assert session_state(agent).compactions == 0


async def test_below_the_threshold_there_is_no_compaction(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big("a", tokens=700), "b"])
    agent = make_agent(model)
    compactor = Compactor(context_limit=1000, threshold=0.8, keep_recent=0)
    events = await collect(agent, "one", compaction=compactor)
    events += await collect(agent, "two", compaction=compactor)
    assert "session_compaction" not in [e.type for e in events]
    assert len(model.requests) == 2
    assert roles(agent.messages) == ["user", "assistant", "user", "assistant"]


async def test_without_a_known_limit_there_is_no_compaction(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big("a", tokens=10**6), "b"])
    agent = make_agent(model)
    await collect(agent, "one", compaction=True)
    events = await collect(agent, "two", compaction=True)
    assert "session_compaction" not in [e.type for e in events]


async def test_the_streams_context_limit_and_the_models_serve_the_compactor(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([big("a"), "summary one", "b", big("c", tokens=95), "summary 2", "d"])
    agent = make_agent(model)
    await collect(agent, "one", compaction=True)
    events = await collect(agent, "two", compaction=Compactor(keep_recent=1), context_limit=1000)
    assert "session_summary" in types(events)
    assert [e.usage.context_limit for e in events if isinstance(e, TokenUsageEvent)] == [1000] * 2
    model.context_limit = 100  # type: ignore[attr-defined]
    await collect(agent, "three", compaction=True)
    events = await collect(agent, "four", compaction=Compactor(keep_recent=1))
    assert "session_summary" in types(events)
    assert session_state(agent).summary == "summary 2"


async def test_a_handler_supplied_turn_is_not_compacted_for(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big("a"), "b"])
    agent = make_agent(model)
    compactor = Compactor(context_limit=1000, keep_recent=0)
    await collect(agent, "one", compaction=compactor)
    agent.hooks.on_execute_iteration_before(lambda ctx: "from a handler")
    events = await collect(agent, "two", compaction=compactor)
    assert "session_compaction" not in [e.type for e in events]
    assert len(model.requests) == 1


async def test_compaction_interrupted_by_a_replace_handler_still_validates(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([big("a"), "summary", "b"])
    agent = make_agent(model)
    compactor = Compactor(context_limit=1000, keep_recent=0)
    await collect(agent, "one", compaction=compactor)
    before = agent.messages

    def veto(ctx: Any) -> None:
        raise Down("no replacing here")

    agent.hooks.on_message_replace_before(veto)
    events: list[StreamEvent] = []
    with pytest.raises(Down):
        async with agent.stream("two", compaction=compactor) as stream:
            events.extend([event async for event in stream])
    assert validate(events) == []
    assert types(events)[2:] == [
        "session_compaction:start",
        "session_compaction:started",
        "session_compaction:completed",
        "error",
        "stream_stopped",
    ]
    assert agent.messages[:2] == before


async def test_title_and_compaction_in_one_strict_stream(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big(tool_calls=(ADD,)), "summary", "3", "Adding numbers"])
    agent = make_agent(model)
    events = await collect(
        agent,
        "1+2?",
        strict=True,
        title=True,
        compaction=Compactor(context_limit=1000, keep_recent=2),
    )
    kinds = types(events)
    assert kinds.count("session_compaction:completed") == 1
    assert kinds[-3:] == ["session_title", "token_usage", "stream_stopped"]


# -- compaction without a stream ---------------------------------------------------------------


async def test_attached_compactor_compacts_before_model_calls(make_agent: AgentFactory) -> None:
    model = ScriptedModel([big("a"), "summary", "b"])
    agent = make_agent(model, instructions="sys")
    compactor = Compactor(context_limit=1000, keep_recent=1)
    with compactor.attached(agent):
        await agent.execute("one")
        result = await agent.execute("two")
    assert result.output == "b"
    assert [m.content for m in agent.messages] == [
        "sys",
        SUMMARY_PREFIX + "summary",
        "two",
        "b",
    ]
    assert agent.events.handler_count() == 0
    assert not compactor.detach(agent)


async def test_attached_compactor_logs_a_failure_and_the_run_goes_on(
    make_agent: AgentFactory, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel([big("a"), Down("nope"), "b"])
    agent = make_agent(model)
    compactor = Compactor(context_limit=1000, keep_recent=1)
    compactor.attach(agent)
    await agent.execute("one")
    before = agent.messages
    with caplog.at_level(logging.WARNING, logger="agentrt"):
        result = await agent.execute("two")
    assert result.output == "b"
    assert agent.messages[:2] == before
    assert "compaction failed, the conversation is unchanged" in caplog.text


async def test_compact_now_and_again_summarizes_the_summary(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    for text in ("q1", "a1", "q2", "a2", "q3"):
        message: Message = (
            UserMessage(content=text) if text[0] == "q" else AssistantMessage(content=text)
        )
        await agent.append(message)
    seen: list[tuple[Message, ...]] = []

    async def summarize(messages: tuple[Message, ...]) -> str:
        seen.append(messages)
        return f"summary {len(seen)}"

    compactor = Compactor(keep_recent=2, summarizer=summarize)
    assert await compactor.compact(agent) is None  # no limit known: nothing to do
    done = await compactor.compact(agent, force=True)
    assert done is not None
    assert (done.start, done.removed, done.usage) == (0, 3, Usage())
    assert done.message == UserMessage(content=SUMMARY_PREFIX + "summary 1")
    assert [m.content for m in agent.messages] == [SUMMARY_PREFIX + "summary 1", "a2", "q3"]
    done = await compactor.compact(agent, force=True)
    assert done is not None
    assert seen[1] == (UserMessage(content=SUMMARY_PREFIX + "summary 1"),)
    assert session_state(agent).compactions == 2


async def test_a_conversation_changed_during_the_summary_is_left_alone(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    await agent.append(UserMessage(content="q1"))
    await agent.append(AssistantMessage(content="a1"))

    async def meddle(messages: tuple[Message, ...]) -> str:
        await agent.replace(0, UserMessage(content="q1, edited"))
        return "summary"

    with pytest.raises(CompactionError, match="changed while its summary was being made"):
        await Compactor(keep_recent=1, summarizer=meddle).compact(agent, force=True)
    assert [m.content for m in agent.messages] == ["q1, edited", "a1"]


@pytest.mark.parametrize(
    ("keep_recent", "expected"),
    [(0, (1, 7)), (1, (1, 6)), (2, (1, 5)), (3, (1, 2)), (4, (1, 2)), (5, (1, 2)), (6, None)],
)
async def test_plan_never_splits_a_tool_call_from_its_answers(
    make_agent: AgentFactory, keep_recent: int, expected: tuple[int, int] | None
) -> None:
    calls = (ToolCall(id="x", name="add"), ToolCall(id="y", name="add"))
    agent = make_agent([])
    for message in (
        SystemMessage(content="sys"),
        UserMessage(content="go"),
        AssistantMessage(tool_calls=calls),
        ToolMessage(content="1", tool_call_id="x"),
        ToolMessage(content="2", tool_call_id="y"),
        AssistantMessage(content="done"),
        UserMessage(content="next"),
    ):
        await agent.append(message)
    plan = Compactor(keep_recent=keep_recent).plan(agent, force=True)
    assert (plan and (plan.start, plan.end)) == expected


async def test_context_length_trusts_fresh_usage_and_estimates_the_rest(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    assert context_length(agent) == 0
    await agent.append(UserMessage(content="12345678"))
    assert context_length(agent) == 4 + 2
    reported = AssistantMessage(
        content="x", usage=Usage(input_tokens=500, output_tokens=20, requests=1)
    )
    await agent.append(reported)
    await agent.append(UserMessage(content="1234"))
    assert context_length(agent) == 520 + 4 + 1
    # After a compaction kept it, its figures describe the old conversation.
    session_state(agent).compacted_usage = reported
    assert context_length(agent) == estimate_message_tokens(agent.messages)


def test_transcript_reads_every_role() -> None:
    text = transcript(
        [
            SystemMessage(content="be nice"),
            UserMessage(content="1+2?"),
            AssistantMessage(content="Let me add.", tool_calls=(ADD,)),
            ToolMessage(content="3", tool_call_id="call_add", name="add"),
            AssistantMessage(content="3"),
        ]
    )
    assert text == (
        "System: be nice\n\nUser: 1+2?\n\nAssistant: Let me add.\n\n"
        'Assistant called add({"a": 1, "b": 2})\n\nTool add answered: 3\n\nAssistant: 3'
    )


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"threshold": 0}, ValueError),
        ({"threshold": 1.5}, ValueError),
        ({"threshold": "high"}, TypeError),
        ({"context_limit": 0}, ValueError),
        ({"keep_recent": -1}, ValueError),
        ({"prompt": ""}, ValueError),
        ({"summarizer": "no"}, TypeError),
        ({"estimator": None}, TypeError),
    ],
)
def test_bad_compactor_options_are_clear_errors(
    options: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        Compactor(**options)


# -- Agent.compact ---------------------------------------------------------------------------


async def conversation(agent: Agent) -> None:
    for message in (
        SystemMessage(content="sys"),
        UserMessage(content="q1"),
        AssistantMessage(tool_calls=(ADD,)),
        ToolMessage(content="3", tool_call_id="call_add"),
        AssistantMessage(content="a1"),
        UserMessage(content="q2"),
    ):
        await agent.append(message)


async def test_agent_compact_replaces_a_range_with_the_usual_events(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent([])
    await conversation(agent)
    agent.events.on("message:*", recorder)
    agent.events.on("agent:version:change", recorder)
    version = agent.version
    summary = UserMessage(content="they added 1 and 2")
    stored = await agent.compact(5, summary)
    assert stored is summary
    assert [m.content for m in agent.messages] == ["sys", "they added 1 and 2", "q2"]
    assert agent.version == version + 1
    assert recorder.names() == [
        "message:replace:before",
        "message:replace:after",
        "agent:version:change",
    ]
    after = recorder.events[1].parameters
    assert (after["index"], after["old_message"], after["message"]) == (
        1,
        UserMessage(content="q1"),
        summary,
    )


async def test_agent_compact_stores_what_a_replace_handler_decides(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    await conversation(agent)
    agent.hooks.on_message_replace_before(
        lambda ctx: ctx.parameters["message"].model_copy(update={"content": "edited"})
    )
    stored = await agent.compact(3 + 2, UserMessage(content="summary"), start=1)
    assert stored.content == "edited"
    assert agent.messages[1] == stored


@pytest.mark.parametrize(
    ("end", "start", "summary", "error", "match"),
    [
        (1, 1, UserMessage(content="s"), IndexError, r"no messages to compact in \[1, 1\)"),
        (9, 1, UserMessage(content="s"), IndexError, "the conversation has 6"),
        (2, 0, UserMessage(content="s"), ValueError, "the system message"),
        (3, 1, UserMessage(content="s"), ValueError, "separate the tool message at 3"),
        (5, 3, UserMessage(content="s"), ValueError, "separate the tool message at 3"),
        (2, 1, ToolMessage(content="s", tool_call_id="z"), ValueError, "not a tool message"),
        (2, 1, AssistantMessage(tool_calls=(ADD,)), ValueError, "with tool calls"),
        ("2", 1, UserMessage(content="s"), TypeError, "end must be an int"),
        (2, 1, "summary", TypeError, "Message"),
    ],
)
async def test_agent_compact_refuses_what_would_break_the_conversation(
    make_agent: AgentFactory,
    end: Any,
    start: int,
    summary: Any,
    error: type[Exception],
    match: str,
) -> None:
    agent = make_agent([])
    await conversation(agent)
    before = agent.messages
    with pytest.raises(error, match=match):
        await agent.compact(end, summary, start=start)
    assert agent.messages == before


async def test_skipped_iterations_do_not_compact(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    calls = 0

    def skip_once(ctx: Any) -> Any:
        nonlocal calls
        calls += 1
        return SKIP_ITERATION if calls == 1 else "done"

    agent.hooks.on_execute_iteration_before(skip_once)
    summarized: list[tuple[Message, ...]] = []

    def summarize(messages: tuple[Message, ...]) -> str:
        summarized.append(messages)  # pragma: no cover
        return "summary"  # pragma: no cover

    compactor = Compactor(context_limit=1, keep_recent=0, summarizer=summarize)
    with compactor.attached(agent):
        assert (await agent.execute("hi")).output == "done"
    assert summarized == []


async def test_cancelled_during_the_summary_the_stream_still_validates(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([big("a"), "never used"])
    agent = make_agent(model)
    asked = anyio.Event()

    async def slow(messages: tuple[Message, ...]) -> str:
        asked.set()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    compactor = Compactor(context_limit=1000, keep_recent=0, summarizer=slow)
    await collect(agent, "one", compaction=compactor)
    before = agent.messages
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        events.append(event)

    adapter = StreamAdapter(agent, sink, compaction=compactor)
    async with anyio.create_task_group() as group:
        group.start_soon(adapter.run, "two")
        await asked.wait()
        group.cancel_scope.cancel()
    assert validate(events) == []
    assert types(events)[-3:] == [
        "session_compaction:start",
        "session_compaction:started",
        "stream_stopped",
    ]
    assert agent.messages == (*before, UserMessage(content="two"))


async def test_compaction_option_must_be_a_compactor(make_agent: AgentFactory) -> None:
    async def sink(event: StreamEvent) -> None:
        pass  # pragma: no cover

    with pytest.raises(TypeError, match="compaction must be a Compactor"):
        StreamAdapter(make_agent([]), sink, compaction=0.8)  # type: ignore[arg-type]
