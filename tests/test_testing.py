"""agentrt/testing.py: EventRecorder and contract_violations."""

from types import MappingProxyType
from typing import Any

import pytest

from agentrt.bus import EventBus, EventContext
from agentrt.events.names import AgentEvents
from agentrt.events.registry import EVENT_PARAMS, EVENT_SEMANTICS, EXTENSION_POINTS, EventSemantics
from agentrt.messages import ToolCall
from agentrt.testing import EventRecorder, RecordedEvent, contract_violations

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


@pytest.mark.parametrize("event", sorted(EVENT_PARAMS))
async def test_every_core_event_with_exact_keys_keeps_the_contract(
    bus: EventBus, recorder: EventRecorder, event: AgentEvents
) -> None:
    params_type = EVENT_PARAMS[event]
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


def _agent_factory(script: list[Any]) -> Any:
    from agentrt import Agent, ScriptedModel

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def make() -> Agent:
        return Agent(model=ScriptedModel(list(script)), tools=[add])

    return make


@pytest.mark.parametrize("stream", [False, True], ids=["execute", "stream"])
@pytest.mark.parametrize(
    "script",
    [
        ["Hello"],
        [ToolCall(id="c", name="add", arguments={"a": 1, "b": 2}), "3"],
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
    script: list[Any], stream: bool
) -> None:
    from agentrt.testing import cancellation_violations

    assert await cancellation_violations(_agent_factory(script), "go", stream=stream) == []


async def test_cancellation_kit_reports_a_broken_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentrt import loop
    from agentrt.testing import cancellation_violations

    # Break the contract on purpose: tool calls cut short are no longer answered.
    async def forget(self: Any, calls: Any, responses: Any) -> None:
        return None

    monkeypatch.setattr(loop.Run, "_append_tool_messages", forget)
    script = [ToolCall(id="c", name="add", arguments={"a": 1, "b": 2}), "3"]
    problems = await cancellation_violations(_agent_factory(script), "go")
    assert any("tool calls without an answer: ['c']" in problem for problem in problems)
