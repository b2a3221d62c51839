"""agentrt/testing.py: EventRecorder, contract_violations and the cancellation kit."""

import asyncio
import os
from collections.abc import Callable
from types import MappingProxyType
from typing import Any, Literal

import anyio
import pytest

from agentrt import Agent, ScriptedModel
from agentrt import _loop as loop
from agentrt._state import RunResult
from agentrt.bus import EventBus, EventContext
from agentrt.events._registry import (
    EVENT_PARAMS,
    EVENT_SEMANTICS,
    EXTENSION_POINTS,
    EventSemantics,
)
from agentrt.events.names import AgentEvents
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentrt.server.sessions import NoRunError, Session
from agentrt.stream import (
    StreamEvent,
    StreamStartedEvent,
    StreamStoppedEvent,
    TokenUsage,
    TokenUsageEvent,
    UserMessageEvent,
)
from agentrt.testing import (
    EventRecorder,
    RecordedEvent,
    cancellation_violations,
    contract_violations,
    run_violations,
    server_cancellation_violations,
)

E = AgentEvents
AGENT = object()  # parameters are only checked for their keys


def tool_call_before_params() -> dict[str, Any]:
    return {
        "agent": AGENT,
        "tool_name": "add",
        "tool_call": ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),
        "arguments": {"a": 1, "b": 2},
    }


@pytest.fixture
def bus() -> EventBus:
    return EventBus(strict=True)


@pytest.fixture
def recorder(bus: EventBus) -> EventRecorder:
    recorder = EventRecorder()
    bus.on("*", recorder, priority=10_000)
    return recorder


# -- EventRecorder ------------------------------------------------------------------------------


async def test_records_event_semantics_and_parameters(
    bus: EventBus, recorder: EventRecorder
) -> None:
    params = tool_call_before_params()
    await bus.apply(E.TOOL_CALL_BEFORE, output=None, **params)
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)
    assert recorder.events == [
        RecordedEvent(E.TOOL_CALL_BEFORE, EventSemantics.INTERCEPTABLE, MappingProxyType(params)),
        RecordedEvent(
            E.AGENT_INIT_AFTER, EventSemantics.SIGNAL, MappingProxyType({"agent": AGENT})
        ),
    ]
    first = recorder.events[0]
    assert first.event is E.TOOL_CALL_BEFORE
    assert first.semantics is EventSemantics.INTERCEPTABLE
    assert first.parameters["tool_name"] == "add"


async def test_string_names_of_core_events_are_recorded_as_members(
    bus: EventBus, recorder: EventRecorder
) -> None:
    await bus.do("agent:init:after", agent=AGENT)
    assert recorder.events[0].event is E.AGENT_INIT_AFTER


async def test_parameters_are_a_read_only_snapshot(bus: EventBus, recorder: EventRecorder) -> None:
    contexts: list[EventContext[Any, Any]] = []
    bus.on(E.AGENT_INIT_AFTER, contexts.append)
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)
    parameters = recorder.events[0].parameters
    assert isinstance(parameters, MappingProxyType)
    assert dict(parameters) == {"agent": AGENT}
    with pytest.raises(TypeError):
        parameters["agent"] = None  # type: ignore[index]
    # A copy, not a view of the dispatch's own parameters.
    assert parameters is not contexts[0].parameters
    assert parameters == contexts[0].parameters


def test_parameters_do_not_follow_later_changes_of_the_dispatch_dict() -> None:
    params: dict[str, Any] = {"agent": AGENT}
    recorder = EventRecorder()
    recorder(EventContext(E.AGENT_INIT_AFTER, params, None, EventSemantics.SIGNAL))
    params["late"] = 1
    del params["agent"]
    assert dict(recorder.events[0].parameters) == {"agent": AGENT}


def test_recorded_event_is_frozen() -> None:
    recorded = RecordedEvent("x", EventSemantics.SIGNAL, MappingProxyType({}))
    with pytest.raises(AttributeError):
        recorded.event = "y"  # type: ignore[misc]


async def test_recorder_does_not_change_the_output(bus: EventBus, recorder: EventRecorder) -> None:
    ctx = await bus.apply(E.TOOL_CALL_BEFORE, output={"a": 1}, **tool_call_before_params())
    assert ctx.output == {"a": 1}


async def test_plain_string_events_are_recorded(bus: EventBus, recorder: EventRecorder) -> None:
    await bus.do("custom:thing", value=1)
    recorded = recorder.events[0]
    assert recorded.event == "custom:thing"
    assert not isinstance(recorded.event, AgentEvents)
    assert dict(recorded.parameters) == {"value": 1}


async def test_names_of_clear(bus: EventBus, recorder: EventRecorder) -> None:
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)
    await bus.apply(E.TOOL_CALL_BEFORE, **tool_call_before_params())
    await bus.do("custom:thing")
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)

    names = recorder.names()
    assert names == ["agent:init:after", "tool:call:before", "custom:thing", "agent:init:after"]
    assert all(type(name) is str for name in names)

    assert recorder.of(E.AGENT_INIT_AFTER) == [recorder.events[0], recorder.events[3]]
    assert recorder.of("agent:init:after") == recorder.of(E.AGENT_INIT_AFTER)
    assert recorder.of("custom:thing") == [recorder.events[2]]
    assert recorder.of(E.EXECUTE_AFTER) == []

    recorder.clear()
    assert recorder.events == []
    assert recorder.names() == []
    await bus.do("custom:thing")
    assert recorder.names() == ["custom:thing"]


def test_a_new_recorder_is_empty() -> None:
    recorder = EventRecorder()
    assert recorder.events == []
    assert recorder.names() == []
    assert contract_violations(recorder) == []


# -- contract_violations ------------------------------------------------------------------------


async def test_no_violations_for_a_proper_recording(
    bus: EventBus, recorder: EventRecorder
) -> None:
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)
    await bus.apply(E.EXECUTE_BEFORE, output=5, agent=AGENT, prompt="hi", max_iterations=5)
    await bus.apply(E.TOOL_CALL_BEFORE, **tool_call_before_params())
    await bus.apply(E.TOOLS_PROVIDE, output=[], agent=AGENT, tools=[])
    # A NotRequired key may be absent or present.
    await bus.apply(E.AGENT_CLOSE_BEFORE, agent=AGENT)
    await bus.do(E.AGENT_CLOSE_AFTER, agent=AGENT, reason="done")
    assert len(recorder.events) == 6
    assert contract_violations(recorder) == []


async def test_interceptable_event_dispatched_as_a_signal(
    bus: EventBus, recorder: EventRecorder
) -> None:
    await bus.do(E.TOOL_CALL_BEFORE, **tool_call_before_params())
    assert contract_violations(recorder) == [
        "#0 tool:call:before: dispatched as SIGNAL, declared INTERCEPTABLE"
    ]


async def test_signal_dispatched_as_interceptable(bus: EventBus, recorder: EventRecorder) -> None:
    await bus.apply(E.AGENT_INIT_AFTER, agent=AGENT)
    assert contract_violations(recorder) == [
        "#0 agent:init:after: dispatched as INTERCEPTABLE, declared SIGNAL"
    ]


async def test_missing_required_key(bus: EventBus, recorder: EventRecorder) -> None:
    params = tool_call_before_params()
    del params["arguments"]
    await bus.apply(E.TOOL_CALL_BEFORE, **params)
    assert contract_violations(recorder) == [
        "#0 tool:call:before: missing keys ['arguments'], unknown keys []"
    ]


async def test_unknown_key(bus: EventBus, recorder: EventRecorder) -> None:
    await bus.apply(E.TOOL_CALL_BEFORE, **tool_call_before_params(), extra=1)
    assert contract_violations(recorder) == [
        "#0 tool:call:before: missing keys [], unknown keys ['extra']"
    ]


async def test_missing_and_unknown_keys_are_sorted(bus: EventBus, recorder: EventRecorder) -> None:
    await bus.apply(E.EXECUTE_BEFORE, agent=AGENT, zeta=1, alpha=2)
    assert contract_violations(recorder) == [
        "#0 execute:before: missing keys ['max_iterations', 'prompt'], "
        "unknown keys ['alpha', 'zeta']"
    ]


async def test_extension_point_dispatched(bus: EventBus, recorder: EventRecorder) -> None:
    assert E.CACHE_HIT in EXTENSION_POINTS
    await bus.do(E.CACHE_HIT, key="k")
    assert contract_violations(recorder) == [
        "#0 cache:hit: an extension point was dispatched by core"
    ]


async def test_extension_point_with_wrong_semantics_reports_both(
    bus: EventBus, recorder: EventRecorder
) -> None:
    assert EVENT_SEMANTICS[E.STORAGE_SAVE_BEFORE] is EventSemantics.INTERCEPTABLE
    await bus.do(E.STORAGE_SAVE_BEFORE)
    assert contract_violations(recorder) == [
        "#0 storage:save:before: dispatched as SIGNAL, declared INTERCEPTABLE",
        "#0 storage:save:before: an extension point was dispatched by core",
    ]


@pytest.mark.parametrize("event", sorted(EXTENSION_POINTS))
async def test_every_extension_point_is_reported(
    bus: EventBus, recorder: EventRecorder, event: AgentEvents
) -> None:
    if EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE:
        await bus.apply(event)
    else:
        await bus.do(event)
    assert contract_violations(recorder) == [
        f"#0 {event}: an extension point was dispatched by core"
    ]


async def test_plain_string_events_are_ignored(bus: EventBus, recorder: EventRecorder) -> None:
    await bus.do("custom:thing", anything=1)
    await bus.apply("my:event:before", output=1)
    await bus.do("tool:call:before:custom")
    assert len(recorder.events) == 3
    assert contract_violations(recorder) == []


async def test_violations_are_numbered_by_position_in_the_recording(
    bus: EventBus, recorder: EventRecorder
) -> None:
    await bus.do("custom:thing")  # 0: ignored but counted
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)  # 1: fine
    await bus.do(E.TOOL_CALL_BEFORE, **tool_call_before_params())  # 2: wrong semantics
    await bus.do(E.AGENT_INIT_AFTER)  # 3: missing key
    await bus.do(E.CACHE_MISS)  # 4: extension point
    assert contract_violations(recorder) == [
        "#2 tool:call:before: dispatched as SIGNAL, declared INTERCEPTABLE",
        "#3 agent:init:after: missing keys ['agent'], unknown keys []",
        "#4 cache:miss: an extension point was dispatched by core",
    ]


async def test_wrong_semantics_and_wrong_keys_are_both_reported(
    bus: EventBus, recorder: EventRecorder
) -> None:
    await bus.do(E.EXECUTE_BEFORE, agent=AGENT)
    assert contract_violations(recorder) == [
        "#0 execute:before: dispatched as SIGNAL, declared INTERCEPTABLE",
        "#0 execute:before: missing keys ['max_iterations', 'prompt'], unknown keys []",
    ]


@pytest.mark.parametrize("event", sorted(e for e, params in EVENT_PARAMS.items() if params))
async def test_every_core_event_with_exact_keys_keeps_the_contract(
    bus: EventBus, recorder: EventRecorder, event: AgentEvents
) -> None:
    params_type = EVENT_PARAMS[event]
    assert params_type is not None
    params = dict.fromkeys(params_type.__required_keys__ | params_type.__optional_keys__)
    if EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE:
        await bus.apply(event, **params)
    else:
        await bus.do(event, **params)
    assert contract_violations(recorder) == []


async def test_a_recorder_registered_for_a_prefix(bus: EventBus) -> None:
    recorder = EventRecorder()
    bus.on("tool:*", recorder)
    await bus.apply(E.TOOL_CALL_BEFORE, **tool_call_before_params())
    await bus.do(E.AGENT_INIT_AFTER, agent=AGENT)
    assert recorder.names() == ["tool:call:before"]
    assert contract_violations(recorder) == []


# -- the cancellation kit -------------------------------------------------------------------


def _agent_factory(script: list[Any]) -> Callable[[], Agent]:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def make() -> Agent:
        return Agent(model=ScriptedModel(list(script)), tools=[add])

    return make


TOOL_SCRIPT: list[Any] = [ToolCall(id="c", name="add", arguments={"a": 1, "b": 2}), "3"]


@pytest.mark.parametrize(
    "stream", [False, True, "consumer"], ids=["execute", "adapter", "consumer"]
)
@pytest.mark.parametrize(
    "script",
    [
        ["Hello"],
        TOOL_SCRIPT,
        [
            [
                ToolCall(id="p", name="add", arguments={"a": 1, "b": 2}),
                ToolCall(id="q", name="add", arguments={"a": 3, "b": 4}),
            ],
            "3 and 7",
        ],
    ],
    ids=["text", "tool", "parallel"],
)
async def test_cancellation_kit_finds_no_violation_in_standard_runs(
    script: list[Any], stream: bool | Literal["consumer"]
) -> None:
    problems = await cancellation_violations(
        _agent_factory([*script, "again"]), "go", stream=stream, then="again"
    )
    assert problems == []


async def test_cancellation_kit_reports_a_broken_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break the contract on purpose: tool calls cut short are no longer answered.
    async def forget(self: Any, calls: Any, responses: Any) -> None:
        return None

    monkeypatch.setattr(loop.Run, "_append_tool_messages", forget)
    problems = await cancellation_violations(_agent_factory(TOOL_SCRIPT), "go")
    assert any("tool calls without an answer: ['c']" in problem for problem in problems)


async def test_cancellation_kit_reports_a_run_that_swallows_its_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    execute = loop.Run.execute

    async def swallow(self: loop.Run) -> RunResult[Any]:
        try:
            return await execute(self)
        except anyio.get_cancelled_exc_class():
            return RunResult(output="", messages=[], usage=Usage(), iterations=0, value="")

    monkeypatch.setattr(loop.Run, "execute", swallow)
    problems = await cancellation_violations(_agent_factory(["Hello"]), "go")
    assert len(problems) > 10
    assert all(problem.endswith(": the run reported success") for problem in problems)


async def test_cancellation_kit_reports_a_next_run_that_fails() -> None:
    # The script has no answer left for the run after the cancelled one.
    problems = await cancellation_violations(_agent_factory(["Hello"]), "go", then="again")
    # Each run cancelled after its model call: the next one finds the script empty.
    assert problems
    assert all(
        ": the run after it failed: ScriptExhaustedError: " in problem for problem in problems
    )


@pytest.mark.skipif(
    os.environ.get("AGENTRT_BACKEND", "asyncio") != "asyncio",
    reason="leaks a task with asyncio's create_task: trio has no task outside a nursery",
)
async def test_cancellation_kit_reports_tasks_left_running() -> None:
    never = anyio.Event()
    leaked: list[asyncio.Task[None]] = []

    def make() -> Agent:
        agent = _agent_factory(["Hello"])()

        def leak(ctx: EventContext[Any, Any]) -> None:
            leaked.append(asyncio.get_running_loop().create_task(never.wait(), name="leak"))

        agent.events.on(AgentEvents.EXECUTE_AFTER, leak)
        return agent

    problems = await cancellation_violations(make, "go", checkpoint=False)
    never.set()
    await asyncio.gather(*leaked)
    assert problems
    assert all(
        problem.endswith(": tasks of the run are left running: ['leak']") for problem in problems
    )


async def test_cancellation_kit_reports_runs_that_differ_from_the_counted_one() -> None:
    made: list[Agent] = []

    def make() -> Agent:
        # The counted run calls a tool; the later ones answer at once.
        agent = _agent_factory(TOOL_SCRIPT if not made else ["Hello"])()
        made.append(agent)
        return agent

    problems = await cancellation_violations(make, "go")
    assert problems[-1].endswith(": the dispatch never came: the run is not the one counted")


# -- run_violations -------------------------------------------------------------------------

CALL = ToolCall(id="a", name="add", arguments={"a": 1, "b": 2})
SPENT = Usage(3, 4, requests=1)
CONVERSATION: list[Message] = [
    UserMessage(content="go"),
    AssistantMessage(tool_calls=(CALL,), usage=SPENT),
    ToolMessage(content="3", tool_call_id="a"),
]


def stream_events(*, input_tokens: int = 3, output_tokens: int = 4) -> list[StreamEvent]:
    return [
        UserMessageEvent(session_id="s", message="go"),
        StreamStartedEvent(session_id="s"),
        TokenUsageEvent(
            session_id="s",
            agent_name="agent",
            usage=TokenUsage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                context_length=7,
                context_limit=0,
                cost=0.0,
            ),
        ),
        StreamStoppedEvent(session_id="s"),
    ]


def test_a_consistent_run_has_no_violation() -> None:
    assert run_violations(CONVERSATION, stream_events(), prompt="go") == []
    assert run_violations([], [], partial=True) == []


def test_an_unanswered_tool_call_is_reported() -> None:
    assert run_violations(CONVERSATION[:2]) == ["tool calls without an answer: ['a']"]


def test_an_answer_after_the_next_turn_is_no_answer() -> None:
    late = [*CONVERSATION[:2], UserMessage(content="more"), CONVERSATION[2]]
    assert run_violations(late) == [
        "tool calls without an answer: ['a']",
        "tool messages that answer no open tool call: ['a']",
    ]


def test_a_repeated_tool_call_id_and_a_second_answer_are_reported() -> None:
    twice = [*CONVERSATION, AssistantMessage(tool_calls=(CALL,)), *CONVERSATION[2:] * 2]
    assert run_violations(twice) == [
        "tool call id 'a' is used twice",
        "tool messages that answer no open tool call: ['a']",
    ]


def test_messages_held_before_the_run_must_stay() -> None:
    before: list[Message] = [SystemMessage(content="v1"), UserMessage(content="earlier")]
    assert run_violations(CONVERSATION, before=before) == [
        "the conversation lost or changed messages it held before the run"
    ]
    # Instructions may be rendered again: system messages are not compared.
    after = [SystemMessage(content="v2"), UserMessage(content="earlier"), *CONVERSATION]
    assert run_violations(after, before=before, prompt="go") == []


def test_the_runs_first_message_must_be_its_prompt() -> None:
    assert run_violations(CONVERSATION[1:], prompt="go") == [
        "the run's first message is not its prompt 'go': assistant ''"
    ]
    assert run_violations(CONVERSATION, prompt="hi") == [
        "the run's first message is not its prompt 'hi': user 'go'"
    ]
    # A run cancelled before it added its prompt added nothing.
    assert run_violations(CONVERSATION, before=CONVERSATION, prompt="hi") == []


def test_the_stream_must_be_a_whole_session_unless_partial() -> None:
    cut = stream_events()[:-1]
    assert run_violations(CONVERSATION, cut) == [
        "event 3: the stream ended without a stream_stopped event [stream_stopped_missing]"
    ]
    # What a cancelled consumer read: a beginning, whose usage is not checked.
    assert run_violations(CONVERSATION, cut[1:2], partial=True) == []


def test_the_stream_must_report_the_usage_spent() -> None:
    assert run_violations(CONVERSATION, stream_events(output_tokens=2)) == [
        "the conversation's model calls spent 3 input and 4 output tokens; "
        "the latest token_usage says 3 and 2"
    ]
    without = stream_events()[:2] + stream_events()[3:]
    assert run_violations(CONVERSATION, without) == [
        "the run's model calls spent 3 input and 4 output tokens; its stream has no token_usage"
    ]
    # A run that spent nothing may have no token_usage, whatever earlier runs spent.
    later = [*CONVERSATION, UserMessage(content="hi")]
    assert run_violations(later, without, before=CONVERSATION) == []
    assert run_violations(CONVERSATION, stream_events(output_tokens=2), usage=False) == []


# -- server_cancellation_violations --------------------------------------------------------


@pytest.mark.parametrize("script", [["Hello"], TOOL_SCRIPT], ids=["text", "tool"])
async def test_server_kit_finds_no_violation_in_standard_runs(script: list[Any]) -> None:
    factory = _agent_factory([*script, "again"])
    assert await server_cancellation_violations(factory, "go", then="again") == []


async def test_server_kit_reports_a_cancel_endpoint_that_does_not_cancel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def accept(self: Session, reason: str = "") -> None:
        if self.run is None:
            raise NoRunError(self.id)
        # ...but nothing is cancelled

    monkeypatch.setattr(Session, "cancel", accept)
    problems = await server_cancellation_violations(_agent_factory(["Hello"]), "go")
    # Held after each event but the last (the run had ended), and never cancelled.
    assert problems == [
        f"cancelled after event {k}/5 ({kind}, held at {held}): "
        "the cancelled run's stream does not end with error, stream_stopped"
        for k, kind, held in [
            (1, "user_message", "agent:init:after"),
            (2, "stream_started", "agent:init:after"),
            (3, "agent_choice", "llm:stream:chunk"),
            (4, "token_usage", "message:append:after"),
        ]
    ]


async def test_server_kit_reports_an_inconsistent_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def forget(self: Any, calls: Any, responses: Any) -> None:
        return None

    monkeypatch.setattr(loop.Run, "_append_tool_messages", forget)
    problems = await server_cancellation_violations(_agent_factory(TOOL_SCRIPT), "go")
    assert any("tool calls without an answer: ['c']" in problem for problem in problems)


async def test_server_kit_reports_a_next_run_that_fails() -> None:
    problems = await server_cancellation_violations(_agent_factory(["Hello"]), "go", then="again")
    # Each run cancelled after its model call: the next one finds the script empty.
    assert problems == [
        f"cancelled after event {k}/5 ({kind}): the run after it: an error: "
        "ScriptExhaustedError: ScriptedModel ran out of responses: its script had 1, and "
        "the agent asked for response 2"
        for k, kind in [
            (3, "agent_choice, held at llm:stream:chunk"),
            (4, "token_usage, held at message:append:after"),
            (5, "stream_stopped"),
        ]
    ]


async def test_cancellation_kit_rejects_an_unknown_stream_mode() -> None:
    with pytest.raises(ValueError, match="stream must be False, True, 'adapter' or 'consumer'"):
        await cancellation_violations(
            _agent_factory(["hi"]),
            "go",
            stream="socket",  # type: ignore[arg-type]
        )
