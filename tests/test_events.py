"""docs/events.md: the event registry (names, semantics, params types)."""

import re
import typing
from pathlib import Path

import pytest

from agentrt.events import (
    CATALOGUE,
    EVENT_PARAMS,
    EVENT_SEMANTICS,
    EXTENSION_POINTS,
    AgentCloseParams,
    AgentEvents,
    EventSemantics,
    ExecuteErrorParams,
    MessageAppendBeforeParams,
    ToolCallBeforeParams,
    check_output,
    get_event_semantics,
    get_params_type,
)
from agentrt.exceptions import HookOutputError
from agentrt.hooks import HooksAccessor

DEPRECATED_ALIASES = (
    "TOOL_RESPONSE",
    "TOOL_ERROR",
    "EXECUTE_START",
    "EXECUTE_COMPLETE",
    "EXECUTE_ITERATION",
    "EXECUTE_ITERATION_START",
    "EXECUTE_ITERATION_COMPLETE",
    "CONTEXT_PROVIDER_CALL",
    "CONTEXT_PROVIDER_RESPONSE",
    "TEMPLATE_COMPILE",
)
# The string values those aliases had, in case anyone passes the old wire names.
DEPRECATED_VALUES = (
    "tool:response",
    "tool:error",
    "execute:start",
    "execute:complete",
    "execute:iteration",
    "execute:iteration:start",
    "execute:iteration:complete",
    "context:provider:call",
    "context:provider:response",
    "template:compile",
)


# -- Requirement: Event Semantics Classification ---------------------------------------


def test_query_event_semantics() -> None:
    assert get_event_semantics(AgentEvents.TOOL_CALL_BEFORE) is EventSemantics.INTERCEPTABLE


def test_query_signal_event() -> None:
    assert get_event_semantics(AgentEvents.MESSAGE_APPEND_AFTER) is EventSemantics.SIGNAL


def test_semantics_lookup_by_string_value() -> None:
    assert get_event_semantics("tool:call:before") is EventSemantics.INTERCEPTABLE
    assert get_event_semantics("no:such:event") is None


def test_event_semantics_flag_has_exactly_two_values() -> None:
    assert {member.name for member in EventSemantics} == {"INTERCEPTABLE", "SIGNAL"}


# -- Requirement: EVENT_SEMANTICS Mapping ---------------------------------------------------


def test_all_events_classified() -> None:
    assert set(EVENT_SEMANTICS) == set(AgentEvents)
    for event, semantics in EVENT_SEMANTICS.items():
        assert semantics in (EventSemantics.INTERCEPTABLE, EventSemantics.SIGNAL), event


def test_before_events_are_interceptable_and_after_events_signals() -> None:
    for event in AgentEvents:
        if event.endswith(":before"):
            assert EVENT_SEMANTICS[event] is EventSemantics.INTERCEPTABLE, event
        if event.endswith(":after"):
            assert EVENT_SEMANTICS[event] is EventSemantics.SIGNAL, event


def test_error_events_semantics() -> None:
    assert EVENT_SEMANTICS[AgentEvents.TOOL_CALL_ERROR] is EventSemantics.INTERCEPTABLE
    assert EVENT_SEMANTICS[AgentEvents.EXECUTE_ERROR] is EventSemantics.INTERCEPTABLE
    assert EVENT_SEMANTICS[AgentEvents.LLM_COMPLETE_ERROR] is EventSemantics.SIGNAL
    assert EVENT_SEMANTICS[AgentEvents.LLM_ERROR] is EventSemantics.SIGNAL


def test_event_semantics_mapping_is_read_only() -> None:
    with pytest.raises(TypeError):
        EVENT_SEMANTICS[AgentEvents.LLM_ERROR] = EventSemantics.INTERCEPTABLE  # type: ignore[index]


# -- Requirement: EVENT_PARAMS Registry / get_params_type Helper --------------------------------


def test_get_parameter_type_for_event() -> None:
    assert get_params_type(AgentEvents.TOOL_CALL_BEFORE) is ToolCallBeforeParams


def test_event_with_no_typed_params() -> None:
    assert get_params_type(AgentEvents.CACHE_HIT) is None
    assert get_params_type("my_extension:custom") is None


def test_lookup_by_enum() -> None:
    assert get_params_type(AgentEvents.MESSAGE_APPEND_BEFORE) is MessageAppendBeforeParams


def test_lookup_by_string() -> None:
    assert get_params_type("message:append:before") is MessageAppendBeforeParams


def test_every_dispatched_event_has_params_and_extension_points_have_none() -> None:
    assert set(EVENT_PARAMS) == set(AgentEvents)
    for event, params_type in EVENT_PARAMS.items():
        if event in EXTENSION_POINTS:
            assert params_type is None, event
            continue
        assert params_type is not None, event
        assert typing.is_typeddict(params_type), event
        assert "agent" in params_type.__required_keys__, event


@pytest.mark.parametrize("bad", [None, 3, b"tool:call:before", AgentEvents])
def test_registry_helpers_reject_non_strings(bad: object) -> None:
    with pytest.raises(TypeError, match="an event is an AgentEvents member or its string value"):
        get_params_type(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="an event is an AgentEvents member or its string value"):
        get_event_semantics(bad)  # type: ignore[arg-type]


# -- Requirement: MessageAppendBeforeParams / AgentCloseParams / ExecuteErrorParams --------------


def test_type_safe_handler_registration() -> None:
    # The runtime half of the scenario; tests/typing/test_bus_types.py holds the static half.
    assert MessageAppendBeforeParams.__required_keys__ == frozenset({"message", "agent"})
    assert MessageAppendBeforeParams.__optional_keys__ == frozenset()


def test_type_safe_close_handler() -> None:
    assert AgentCloseParams.__required_keys__ == frozenset({"agent"})
    # NotRequired must survive at runtime: users introspect these keys.
    assert AgentCloseParams.__optional_keys__ == frozenset({"reason"})


def test_type_safe_error_handler() -> None:
    assert ExecuteErrorParams.__required_keys__ == frozenset({"agent", "error", "iteration"})


def test_only_declared_optional_keys_are_optional() -> None:
    optional = {
        name: params.__optional_keys__
        for name, params in EVENT_PARAMS.items()
        if params is not None and params.__optional_keys__
    }
    assert optional == {
        AgentEvents.AGENT_CLOSE_BEFORE: frozenset({"reason"}),
        AgentEvents.AGENT_CLOSE_AFTER: frozenset({"reason"}),
    }


# -- Requirement: Extension Point Events Documentation ---------------------------------------


def test_storage_events_documented() -> None:
    assert "extension point" in (AgentEvents.STORAGE_SAVE_BEFORE.__doc__ or "").lower()


def test_cache_events_documented() -> None:
    assert "extension point" in (AgentEvents.CACHE_HIT.__doc__ or "").lower()


def test_every_extension_point_says_so_and_no_core_event_does() -> None:
    domains = {event.split(":", 1)[0] for event in EXTENSION_POINTS}
    assert domains == {"storage", "cache", "validation", "summary"}
    for event in AgentEvents:
        doc = (event.__doc__ or "").lower()
        if event in EXTENSION_POINTS:
            assert "extension point, not dispatched by core" in doc, event
        else:
            assert "extension point" not in doc, event
            assert doc, event


# -- Requirement: Deprecated Event Aliases Removed ---------------------------------------------


def test_aliases_absent_from_agent_events() -> None:
    names = set(AgentEvents.__members__)
    for alias in DEPRECATED_ALIASES:
        assert alias not in names
        assert not hasattr(AgentEvents, alias)


def test_aliases_not_resolved_by_registries() -> None:
    for name in (*DEPRECATED_ALIASES, *DEPRECATED_VALUES):
        assert get_event_semantics(name) is None, name
        assert get_params_type(name) is None, name


def test_members_have_unique_values_and_no_aliases() -> None:
    # Enum aliases show up in __members__ but not in iteration.
    assert len(AgentEvents.__members__) == len(list(AgentEvents))
    assert len({event.value for event in AgentEvents}) == len(AgentEvents)


def test_values_are_domain_action_phase_strings() -> None:
    shape = re.compile(r"^[a-z]+(_[a-z]+)*(:[a-z]+(_[a-z]+)*){1,2}$")
    for event in AgentEvents:
        assert shape.match(event.value), event.value
        assert event == event.value
        assert AgentEvents(event.value) is event


def test_catalogue_holds_every_runtime_event() -> None:
    expected = {
        "message:create:before", "message:create:after",
        "message:append:before", "message:append:after",
        "message:replace:before", "message:replace:after",
        "message:set_system:before", "message:set_system:after",
        "message:render:before", "message:render:after",
        "tools:provide", "tools:generate_signature",
        "tool:call:before", "tool:call:after", "tool:call:error", "tool:call:output",
        "llm:complete:before", "llm:complete:after", "llm:complete:error",
        "llm:stream:before", "llm:stream:after", "llm:stream:error", "llm:stream:chunk",
        "llm:extract:before", "llm:extract:after", "llm:extract:error",
        "llm:error",
        "execute:before", "execute:after", "execute:error",
        "execute:iteration:before", "execute:iteration:after",
        "context:provider:before", "context:provider:after",
        "agent:init:after", "agent:close:before", "agent:close:after",
        "agent:state:change", "agent:version:change",
        "mode:entering", "mode:entered", "mode:exiting", "mode:exited",
    }  # fmt: skip
    assert {event.value for event in AgentEvents} - {e.value for e in EXTENSION_POINTS} == expected


def test_the_events_reference_is_generated_from_the_catalogue_and_current() -> None:
    from agentrt.events._reference import render_reference
    from agentrt.events.generate import ROOT

    text = render_reference()
    assert (ROOT / "docs" / "events.md").read_text(encoding="utf-8") == text, (
        "docs/events.md is stale: run python -m agentrt.events.generate"
    )
    for event in AgentEvents:
        assert f"### `{event.value}` (`AgentEvents.{event.name}`)" in text
    for decl in CATALOGUE:
        assert f"{decl.doc}\n" in text
        if decl.accepts is not None:
            assert f"Accepted: {decl.accepts.what}." in text
    for params in EVENT_PARAMS.values():
        for field in params.__annotations__ if params is not None else ():
            assert f"  - `{field}`: " in text
    assert "### `tool:call:before` (`AgentEvents.TOOL_CALL_BEFORE`)\n\ninterceptable:" in text
    assert "### `storage:error` (`AgentEvents.STORAGE_ERROR`)\n\nextension point:" in text


def test_regenerating_from_the_catalogue_changes_nothing() -> None:
    from agentrt.events.generate import ROOT, rendered_files, stale_files

    paths = [path.relative_to(ROOT).as_posix() for path, _ in rendered_files()]
    assert paths == ["agentrt/events/names.py", "agentrt/hooks/_generated.py", "docs/events.md"]
    assert stale_files() == [], "run python -m agentrt.events.generate"


def test_the_generator_reports_and_rewrites_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentrt.events import generate

    target = tmp_path / "agentrt" / "hooks" / "_generated.py"
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    only_hooks = [(target, generate.render_hooks)]
    monkeypatch.setattr(generate, "rendered_files", lambda: iter(only_hooks))
    assert generate._main(["--check"]) == 1
    assert "agentrt/hooks/_generated.py: stale" in capsys.readouterr().out
    assert not target.exists()
    assert generate._main([]) == 0
    assert target.read_text(encoding="utf-8") == generate.render_hooks()
    assert generate._main(["--check"]) == 0


def test_the_catalogue_declares_each_event_once_and_everything_comes_from_it() -> None:
    assert [decl.name for decl in CATALOGUE] == [event.value for event in AgentEvents]
    assert [decl.member for decl in CATALOGUE] == [event.name for event in AgentEvents]
    for decl in CATALOGUE:
        event = AgentEvents(decl.name)
        assert EVENT_SEMANTICS[event] is decl.semantics
        assert EVENT_PARAMS[event] is decl.params
        assert (event in EXTENSION_POINTS) is decl.extension
        assert decl.doc[:-1].lower() in str(event.__doc__).lower()
        # Every interceptable core dispatches says what its handlers may answer.
        dispatched = not decl.extension
        interceptable = decl.semantics is EventSemantics.INTERCEPTABLE
        assert (decl.accepts is not None) is (dispatched and interceptable), decl.name
    assert set(HooksAccessor.EVENTS.values()) == set(AgentEvents) - EXTENSION_POINTS


@pytest.mark.parametrize(
    ("event", "good", "bad", "expected"),
    [
        (AgentEvents.EXECUTE_BEFORE, 3, True, "a positive int (max_iterations)"),
        (AgentEvents.TOOLS_GENERATE_SIGNATURE, {}, [], "a dict (JSON schema)"),
        (AgentEvents.TOOL_CALL_ERROR, None, "oops", "a ToolResponse"),
        (AgentEvents.MESSAGE_RENDER_BEFORE, [], ["text"], "a list of messages"),
    ],
)
def test_check_output_accepts_what_the_catalogue_declares(
    event: AgentEvents, good: object, bad: object, expected: str
) -> None:
    assert check_output(event, good) is good
    cause = RuntimeError("the error the event was about")
    with pytest.raises(HookOutputError, match=re.escape(f"it must be {expected}")) as info:
        check_output(event, bad, cause)
    assert (info.value.event, info.value.expected, info.value.output) == (event, expected, bad)
    assert info.value.__cause__ is cause


def test_check_output_refuses_an_event_without_a_declared_output() -> None:
    with pytest.raises(ValueError, match="'tool:call:after' declares no output"):
        check_output(AgentEvents.TOOL_CALL_AFTER, None)


def test_a_handlers_output_is_checked_in_one_place() -> None:
    from agentrt.events.generate import ROOT

    for name in ("_loop.py", "conversation.py", "agent.py"):
        source = (ROOT / "agentrt" / name).read_text(encoding="utf-8")
        assert "HookOutputError" not in source, name


def test_the_hand_written_hooks_stay_small() -> None:
    from agentrt.events.generate import ROOT

    hooks = ROOT / "agentrt" / "hooks"
    written = [path for path in hooks.glob("*.py") if path.name != "_generated.py"]
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in written)
    assert lines <= 400, lines


def test_every_params_type_resolves_its_annotations_at_runtime() -> None:
    resolved = 0
    for event in AgentEvents:
        params = get_params_type(event)
        if params is None:
            continue
        hints = typing.get_type_hints(params)
        assert set(hints) == set(params.__annotations__)
        resolved += 1
    assert resolved == len([e for e in AgentEvents if e not in EXTENSION_POINTS])
    hints = typing.get_type_hints(get_params_type(AgentEvents.AGENT_CLOSE_BEFORE))
    from agentrt import Agent

    assert hints["agent"] is Agent
