"""Event scenarios (docs/events.md) that need the execute loop, run against ScriptedModel.

Dispatch, messages, the model call, execute and its errors, context providers, closing.
Tool calls and the rest of the loop are tests/test_agent_tools_and_loop.py's.
"""

from typing import Any

import pytest

from agentrt import (
    RETRY,
    SKIP_ITERATION,
    Agent,
    AgentClosedError,
    AgentState,
    AssistantMessage,
    EventContext,
    HookOutputError,
    MaxIterationsExceededError,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ScriptExhaustedError,
    SystemMessage,
    TemplateError,
    ToolCall,
    ToolMessage,
    ToolResponse,
    UserMessage,
)
from agentrt.events import (
    AgentCloseParams,
    ContextProviderAfterParams,
    ContextProviderBeforeParams,
    ExecuteErrorParams,
    ExecuteIterationAfterParams,
    ExecuteIterationBeforeParams,
    LLMCallBeforeParams,
    LLMCallErrorParams,
    MessageAppendBeforeParams,
)
from agentrt.messages import Message
from agentrt.testing import EventRecorder
from tests.conftest import AgentFactory

ADD = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})


class ModelDown(Exception):
    pass


# -- Requirement: Event Dispatch Semantics --------------------------------------------------


async def test_before_event_allows_interception(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "done"])

    @agent.hooks.on_tool_call_before
    def double(ctx: EventContext[Any, Any]) -> dict[str, int]:
        return {"a": 10, "b": 20}

    await agent.execute("add")
    tool_message = agent.messages[2]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.content == "30"


async def test_after_event_ignores_output(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "done"])

    @agent.hooks.on_tool_call_after
    def try_to_change(ctx: EventContext[Any, Any]) -> ToolResponse:
        ctx.output = ToolResponse("changed")
        return ToolResponse("changed")

    await agent.execute("add")
    assert agent.messages[2].content == "3"


# -- Requirement: MESSAGE_APPEND_BEFORE Event -----------------------------------------------


async def test_message_interception_before_append(make_agent: AgentFactory) -> None:
    agent = make_agent(["secret answer"])

    @agent.hooks.on_message_append_before
    def redact(ctx: EventContext[MessageAppendBeforeParams, Message]) -> Message | None:
        message = ctx.parameters["message"]
        if isinstance(message, AssistantMessage):
            return message.model_copy(update={"content": "[redacted]"})
        return None

    result = await agent.execute("tell me")
    assert agent.messages[-1] == AssistantMessage(
        content="[redacted]",
        usage=agent.messages[-1].usage,  # type: ignore[union-attr]
    )
    assert result.output == "[redacted]"


async def test_message_passes_through_unchanged(make_agent: AgentFactory) -> None:
    agent = make_agent(["hello"])
    seen: list[Message] = []
    agent.hooks.on_message_append_before(lambda ctx: seen.append(ctx.parameters["message"]))
    await agent.execute("hi")
    assert list(agent.messages) == seen
    assert [m.content for m in agent.messages] == ["hi", "hello"]


async def test_append_dispatches_after_and_version_change(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent([])
    agent.events.on("*", recorder)
    stored = await agent.append(UserMessage(content="x"))
    assert recorder.names() == [
        "message:append:before",
        "message:append:after",
        "agent:version:change",
    ]
    assert recorder.events[1].parameters["index"] == 0
    assert recorder.events[2].parameters["version"] == 1
    assert stored is agent.messages[0]
    assert agent.version == 1


async def test_replace_and_set_system_dispatch_and_bump_the_version(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent([])
    await agent.append(UserMessage(content="first"))
    agent.events.on("*", recorder)

    @agent.hooks.on_message_replace_before
    def shout(ctx: EventContext[Any, Any]) -> Message:
        return UserMessage(content=ctx.parameters["message"].content.upper())

    await agent.replace(0, UserMessage(content="second"))
    await agent.set_system("Be brief.")
    await agent.set_system(SystemMessage(content="Be briefer."))
    assert [m.content for m in agent.messages] == ["Be briefer.", "SECOND"]
    assert recorder.names() == [
        "message:replace:before",
        "message:replace:after",
        "agent:version:change",
        "message:set_system:before",
        "message:set_system:after",
        "agent:version:change",
        "message:set_system:before",
        "message:set_system:after",
        "agent:version:change",
    ]
    assert recorder.events[1].parameters["old_message"] == UserMessage(content="first")
    assert agent.version == 4


async def test_conversation_methods_reject_bad_input(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    with pytest.raises(TypeError, match=r"Conversation.append\(\) takes a Message"):
        await agent.append("not a message")  # type: ignore[arg-type]
    with pytest.raises(IndexError, match="no message at index 3; the conversation has 0"):
        await agent.replace(3, UserMessage(content="x"))
    with pytest.raises(TypeError, match="index must be an int"):
        await agent.replace("0", UserMessage(content="x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a system message is a str or SystemMessage"):
        await agent.set_system(UserMessage(content="x"))  # type: ignore[arg-type]
    assert agent.messages == ()
    assert agent.version == 0


async def test_a_handler_output_that_is_not_a_message_is_a_clear_error(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    agent.hooks.on_message_append_before(lambda ctx: "text")
    with pytest.raises(HookOutputError, match=r"'message:append:before'.*must be a Message"):
        await agent.append(UserMessage(content="x"))
    assert agent.messages == ()


# -- Requirement: LLM_STREAM_BEFORE Interceptable -------------------------------------------


async def test_modify_streaming_parameters(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["streamed answer"], chunk_size=4)
    agent = make_agent(model)

    @agent.hooks.on_llm_stream_before
    def lower_temperature(ctx: EventContext[LLMCallBeforeParams, ModelRequest]) -> ModelRequest:
        request = ctx.parameters["request"]
        return ModelRequest(
            messages=request.messages, tools=[], settings={**request.settings, "temperature": 0}
        )

    chunks: list[str] = []
    agent.hooks.on_llm_stream_chunk(
        lambda ctx: chunks.append(getattr(ctx.parameters["chunk"], "text", "<usage>"))
    )
    result = await agent.execute("hi", stream=True)
    assert model.requests[0].settings == {"temperature": 0}
    assert model.requests[0].tools == []
    assert result.output == "streamed answer"
    assert chunks == ["stre", "amed", " ans", "wer", "<usage>"]


async def test_execute_uses_complete_unless_streaming_is_asked_for(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent(["a", "b"])
    agent.events.on("llm:*", recorder)
    await agent.execute("one")
    assert recorder.names() == ["llm:complete:before", "llm:complete:after"]
    recorder.clear()
    await agent.execute("two", stream=True)
    # One text chunk, then the usage chunk.
    assert recorder.names() == [
        "llm:stream:before",
        "llm:stream:chunk",
        "llm:stream:chunk",
        "llm:stream:after",
    ]


# -- Requirement: EXECUTE_BEFORE Interceptable ----------------------------------------------


async def test_modify_max_iterations(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, ADD, ADD, "never reached"], max_iterations=10)
    seen: list[int] = []

    @agent.hooks.on_execute_before
    def limit(ctx: EventContext[Any, int]) -> int:
        seen.append(ctx.parameters["max_iterations"])
        assert ctx.output == 10
        return 2

    with pytest.raises(MaxIterationsExceededError, match="max_iterations=2") as info:
        await agent.execute("loop")
    assert info.value.max_iterations == 2
    assert seen == [10]
    assert len(agent.model.requests) == 2  # type: ignore[attr-defined]


async def test_execute_before_output_must_be_a_positive_int(make_agent: AgentFactory) -> None:
    agent = make_agent(["x"])
    agent.hooks.on_execute_before(lambda ctx: "three")
    with pytest.raises(HookOutputError, match="positive int"):
        await agent.execute("hi")
    assert agent.state is AgentState.IDLE


# -- Requirement: EXECUTE_ITERATION_BEFORE Interceptable ------------------------------------


async def test_intercept_iteration_start(make_agent: AgentFactory) -> None:
    model = ScriptedModel(["from the model"])
    agent = make_agent(model)

    @agent.hooks.on_execute_iteration_before
    def supply(ctx: EventContext[ExecuteIterationBeforeParams, Any]) -> Any:
        if ctx.parameters["iteration"] == 1:
            return SKIP_ITERATION
        if ctx.parameters["iteration"] == 2:
            return ModelResponse(tool_calls=(ADD,))
        return None

    result = await agent.execute("go")
    assert result.output == "from the model"
    assert result.iterations == 3
    assert len(model.requests) == 1  # turn 1 skipped, turn 2 supplied by the handler
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "assistant"]


async def test_iteration_override_as_text_or_message(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    agent.hooks.on_execute_iteration_before(lambda ctx: "canned")
    assert (await agent.execute("a")).output == "canned"
    other = make_agent([])
    other.hooks.on_execute_iteration_before(lambda ctx: AssistantMessage(content="message"))
    assert (await other.execute("b")).output == "message"


async def test_iteration_override_of_wrong_type_is_a_clear_error(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([])
    agent.hooks.on_execute_iteration_before(lambda ctx: 42)
    with pytest.raises(HookOutputError, match="SKIP_ITERATION, a str"):
        await agent.execute("a")


# -- Requirement: EXECUTE_ITERATION_AFTER Event ---------------------------------------------


async def test_iteration_completion_notification(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, "three"])
    seen: list[tuple[int, list[str]]] = []

    @agent.hooks.on_execute_iteration_after
    def note(ctx: EventContext[ExecuteIterationAfterParams, None]) -> None:
        seen.append((ctx.parameters["iteration"], [m.role for m in ctx.parameters["messages"]]))

    await agent.execute("add")
    assert seen == [(1, ["assistant", "tool"]), (2, ["assistant"])]


# -- Requirement: EXECUTE_ERROR Event -------------------------------------------------------


async def test_execute_error_with_recovery(make_agent: AgentFactory) -> None:
    agent = make_agent([ModelDown("503")])
    seen: list[tuple[str, int]] = []

    @agent.hooks.on_execute_error
    def recover(ctx: EventContext[ExecuteErrorParams, Any]) -> str:
        seen.append((repr(ctx.parameters["error"]), ctx.parameters["iteration"]))
        return "Sorry, the model is unavailable."

    result = await agent.execute("hi")
    assert result.output == "Sorry, the model is unavailable."
    assert seen == [("ModelDown('503')", 1)]
    assert agent.messages[-1].content == "Sorry, the model is unavailable."
    assert [m.role for m in result.messages] == ["user", "assistant"]


async def test_execute_error_recovery_with_retry(make_agent: AgentFactory) -> None:
    agent = make_agent([ModelDown("once"), "second try"])
    agent.hooks.on_execute_error(lambda ctx: RETRY)
    result = await agent.execute("hi")
    assert result.output == "second try"
    assert result.iterations == 2


async def test_retry_is_bounded_by_max_retries(make_agent: AgentFactory) -> None:
    agent = make_agent([ModelDown("1"), ModelDown("2"), "never"], max_retries=1)
    agent.hooks.on_execute_error(lambda ctx: RETRY)
    with pytest.raises(ModelDown, match="2"):
        await agent.execute("hi")


async def test_execute_error_recovery_with_a_message(make_agent: AgentFactory) -> None:
    agent = make_agent([ModelDown("x")])
    agent.hooks.on_execute_error(lambda ctx: AssistantMessage(content="fallback"))
    assert (await agent.execute("hi")).output == "fallback"


async def test_execute_error_recovery_of_wrong_type_is_a_clear_error(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([ModelDown("x")])
    agent.hooks.on_execute_error(lambda ctx: 42)
    with pytest.raises(HookOutputError, match="RETRY, a str or an AssistantMessage") as info:
        await agent.execute("hi")
    assert isinstance(info.value.__cause__, ModelDown)


async def test_execute_error_propagates(make_agent: AgentFactory) -> None:
    error = ModelDown("down")
    agent = make_agent([error])
    calls: list[str] = []
    agent.hooks.on_execute_error(lambda ctx: calls.append("observed"))
    with pytest.raises(ModelDown) as info:
        await agent.execute("hi")
    assert info.value is error
    assert calls == ["observed"]
    # The user message accepted before the failure is kept.
    assert [m.content for m in agent.messages] == ["hi"]
    assert agent.state is AgentState.IDLE


async def test_max_iterations_goes_through_execute_error(make_agent: AgentFactory) -> None:
    agent = make_agent([ADD, ADD], max_iterations=1)
    errors: list[Exception] = []

    @agent.hooks.on_execute_error
    def note(ctx: EventContext[ExecuteErrorParams, Any]) -> str:
        errors.append(ctx.parameters["error"])
        return "gave up"

    result = await agent.execute("loop")
    assert isinstance(errors[0], MaxIterationsExceededError)
    assert result.output == "gave up"


# -- Requirement: CONTEXT_PROVIDER_BEFORE / CONTEXT_PROVIDER_AFTER --------------------------


async def test_intercept_context_provider_call(make_agent: AgentFactory) -> None:
    calls: list[str] = []

    def user_name() -> str:
        calls.append("provider")
        return "Ada"

    model = ScriptedModel(["hi"])
    agent = make_agent(
        model, instructions="Greet {{ user }}.", context_providers={"user": user_name}
    )

    @agent.hooks.on_context_provider_before
    def override(ctx: EventContext[ContextProviderBeforeParams, Any]) -> str | None:
        return "Grace" if ctx.parameters["name"] == "user" else None

    await agent.execute("hello")
    assert calls == []
    assert model.requests[0].messages[0] == SystemMessage(content="Greet Grace.")


async def test_context_provider_completion(make_agent: AgentFactory) -> None:
    async def today() -> str:
        return "Monday"

    model = ScriptedModel(["ok", "ok"])
    agent = make_agent(
        model, instructions="Today is {{today}}. {{ today }}!", context_providers={"today": today}
    )
    results: list[tuple[str, Any]] = []

    @agent.hooks.on_context_provider_after
    def seen(ctx: EventContext[ContextProviderAfterParams, None]) -> None:
        results.append((ctx.parameters["name"], ctx.parameters["value"]))

    await agent.execute("what day?")
    await agent.execute("again?")
    # Called once per model call (repeated variables share one value), both runs.
    assert results == [("today", "Monday")] * 4
    assert agent.messages[0] == SystemMessage(content="Today is Monday. Monday!")
    # The system message did not change, so it was set only once.
    assert agent.version == 1 + 2 + 2


async def test_missing_context_provider_is_a_template_error(make_agent: AgentFactory) -> None:
    agent = make_agent(["x"], instructions="Hi {{ who }}")
    with pytest.raises(TemplateError, match=r"no context provider for \{\{ who \}\}"):
        await agent.execute("a")


# -- Requirement: LLM_COMPLETE_ERROR Event --------------------------------------------------


async def test_llm_completion_error(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    error = ModelDown("boom")
    agent = make_agent([error])
    agent.events.on("llm:*", recorder)
    seen: list[tuple[Exception, ModelRequest]] = []

    @agent.hooks.on_llm_complete_error
    def failed(ctx: EventContext[LLMCallErrorParams, None]) -> None:
        seen.append((ctx.parameters["error"], ctx.parameters["request"]))

    with pytest.raises(ModelDown):
        await agent.execute("hi")
    assert recorder.names() == ["llm:complete:before", "llm:complete:error", "llm:error"]
    assert seen[0][0] is error
    assert seen[0][1] is agent.model.requests[0]  # type: ignore[attr-defined]
    assert recorder.events[2].parameters["operation"] == "complete"


async def test_stream_error_dispatches_stream_error_then_llm_error(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent([ModelDown("stream broke")])
    agent.events.on("llm:*", recorder)
    with pytest.raises(ModelDown):
        await agent.execute("hi", stream=True)
    assert recorder.names() == ["llm:stream:before", "llm:stream:error", "llm:error"]
    assert recorder.events[2].parameters["operation"] == "stream"


async def test_script_exhausted_says_so(make_agent: AgentFactory) -> None:
    agent = make_agent(["one"])
    await agent.execute("a")
    with pytest.raises(ScriptExhaustedError, match="its script had 1"):
        await agent.execute("b")


# -- Requirement: Agent Close Lifecycle Events ----------------------------------------------


async def test_close_before_event(make_agent: AgentFactory) -> None:
    agent = make_agent([])
    seen: list[tuple[AgentState, bool, str | None]] = []

    @agent.hooks.on_agent_close_before
    def before(ctx: EventContext[AgentCloseParams, None]) -> None:
        seen.append((agent.state, agent.closed, ctx.parameters.get("reason")))

    await agent.close("shutdown")
    assert seen == [(AgentState.IDLE, False, "shutdown")]


async def test_close_after_event(make_agent: AgentFactory, recorder: EventRecorder) -> None:
    agent = make_agent([])
    agent.events.on("*", recorder)
    seen: list[tuple[AgentState, bool, bool]] = []

    @agent.hooks.on_agent_close_after
    def after(ctx: EventContext[AgentCloseParams, None]) -> None:
        seen.append((agent.state, agent.closed, "reason" in ctx.parameters))

    await agent.close()
    await agent.close()  # idempotent
    assert seen == [(AgentState.CLOSED, True, False)]
    assert recorder.names() == [
        "agent:init:after",
        "agent:close:before",
        "agent:state:change",
        "agent:state:change",
        "agent:close:after",
    ]


async def test_async_with_closes_with_the_exception_as_reason() -> None:
    reasons: list[str | None] = []
    agent = Agent(model=ScriptedModel([]))
    agent.hooks.on_agent_close_after(lambda ctx: reasons.append(ctx.parameters.get("reason")))
    with pytest.raises(ValueError, match="bad"):
        async with agent:
            raise ValueError("bad")
    assert reasons == ["ValueError: bad"]
    assert agent.closed


async def test_using_a_closed_agent_raises_a_clear_error(make_agent: AgentFactory) -> None:
    agent = make_agent(["x"], name="helper")
    await agent.close()
    with pytest.raises(AgentClosedError, match="agent 'helper' is closed"):
        await agent.execute("hi")
    with pytest.raises(AgentClosedError):
        await agent.append(UserMessage(content="x"))
    with pytest.raises(AgentClosedError):
        async with agent:
            pass  # pragma: no cover
