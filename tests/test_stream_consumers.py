"""Every consumer of the stream handles each event type or deliberately ignores it.

The event types are declared once (``EventType`` and the ``StreamEvent`` union in
agentrt/stream/events.py). Each Python consumer (the adapter, which makes them, the
validator, the CLI's renderers, the AG-UI projection, the A2A task) lists the types it ignores on
purpose in ``_IGNORED_EVENTS`` and handles every other one: its dispatch has a branch
per type and ends in ``assert_never`` (mypy finds a type it misses), and the tests below
check by what each consumer does that it handles every type it does not list, and
nothing of those it lists. The web page's ``render(event)`` switch has a case per
type: one that only breaks ignores its types.
"""

import importlib
import io
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, get_args

import pytest
from google.protobuf.json_format import MessageToDict
from rich.console import Console

from agentrt import ModelResponse, ScriptedModel, ToolCall, Usage
from agentrt.cli._render import PlainRenderer, Renderer, RichRenderer
from agentrt.server.agui_events import AGUIProjection
from agentrt.stream import AnyStreamEvent, InvalidEvent, UnknownEvent, parse_event
from agentrt.stream.attribution import parent_tool_call_id
from agentrt.stream.codec import NDJSONDecoder, encode_ndjson
from agentrt.stream.events import (
    EVENT_TYPES,
    EventType,
    SessionCompactionEvent,
    StreamEvent,
    ToolCallConfirmationEvent,
)
from agentrt.stream.session import Compactor
from agentrt.stream.validate import StreamValidator
from agentrt.tools import current_tool_context, tool
from tests.conftest import AgentFactory
from tests.test_stream_events import SAMPLES, SID, T0

# By name: agentrt.stream's attribute `validate` is the function, not the module.
adapter = importlib.import_module("agentrt.stream._adapter")
validate = importlib.import_module("agentrt.stream.validate")
render = importlib.import_module("agentrt.cli._render")
agui_events = importlib.import_module("agentrt.server.agui_events")
a2a_task = importlib.import_module("agentrt.a2a._task")

PAGE = Path(__file__).resolve().parent.parent / "agentrt" / "server" / "page.html"

CONSUMERS: dict[str, ModuleType] = {
    "the stream adapter": adapter,
    "the validator": validate,
    "the CLI renderers": render,
    "the AG-UI projection": agui_events,
    "the A2A task": a2a_task,
}


def undecided(handled: Iterable[str], ignored: Iterable[str]) -> list[str]:
    """What is wrong with a consumer's lists of handled and ignored event types."""
    handled, ignored = set(handled), set(ignored)
    problems = [
        f"{kind}: neither handled nor ignored"
        for kind in EVENT_TYPES
        if kind not in handled and kind not in ignored
    ]
    problems += [f"{kind}: both handled and ignored" for kind in sorted(handled & ignored)]
    unknown = (handled | ignored) - set(EVENT_TYPES)
    problems += [f"{kind}: not an event type" for kind in sorted(unknown)]
    return problems


# -- the declaration --------------------------------------------------------------------------


def test_the_event_types_are_declared_once_in_the_spec_order() -> None:
    assert tuple(EVENT_TYPES) == get_args(EventType)
    for kind, model in EVENT_TYPES.items():
        assert model.model_fields["type"].default == kind


def test_a_list_that_misses_a_type_or_names_an_unknown_one_is_reported() -> None:
    every = set(EVENT_TYPES)
    assert undecided(every - {"shell"}, ()) == ["shell: neither handled nor ignored"]
    assert undecided(every, {"shell"}) == ["shell: both handled and ignored"]
    assert undecided(every, {"shel"}) == ["shel: not an event type"]


# -- each consumer's lists ----------------------------------------------------------------------


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_each_consumer_ignores_only_event_types_that_exist(consumer: str) -> None:
    ignored = CONSUMERS[consumer]._IGNORED_EVENTS
    assert ignored <= set(EVENT_TYPES)


def page_cases() -> tuple[set[str], set[str]]:
    """The event types of the page's ``render(event)`` switch: handled, and ignored.

    An ignored type is a case that only breaks (alone or with others falling into it).
    """
    script = PAGE.read_text()
    body = re.search(r"\nfunction render\(event\) \{\n(.*?)\n\}\n", script, re.DOTALL)
    assert body is not None, "the page has no render(event) function"
    code = body.group(1)
    labels = list(re.finditer(r'case "(\w+)":', code))
    handled: set[str] = set()
    ignored: set[str] = set()
    waiting: list[str] = []  # cases that fall through to the next one's code
    for i, label in enumerate(labels):
        end = labels[i + 1].start() if i + 1 < len(labels) else len(code)
        arm = code[label.end() : end].strip()
        waiting.append(label.group(1))
        if not arm:
            continue
        (ignored if arm.startswith("break;") else handled).update(waiting)
        waiting.clear()
    return handled, ignored


def test_the_web_page_handles_or_deliberately_ignores_every_event_type() -> None:
    handled, ignored = page_cases()
    assert handled  # the switch was found and read
    assert undecided(handled, ignored) == []


# -- what they do is what they list -------------------------------------------------------------


def plain(out: io.StringIO) -> Renderer:
    return PlainRenderer(out)


def colored(out: io.StringIO) -> Renderer:
    return PlainRenderer(out, color=True)


def rich(out: io.StringIO) -> Renderer:
    return RichRenderer(Console(file=out, width=80, no_color=True, highlight=False))


@pytest.mark.parametrize("make", [plain, colored, rich], ids=["plain", "colored", "rich"])
@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_a_renderer_shows_every_type_it_does_not_list_and_nothing_of_the_others(
    kind: str, make: Callable[[io.StringIO], Renderer]
) -> None:
    out = io.StringIO()
    renderer = make(out)
    renderer.event(SAMPLES["agent_choice"])  # a line of text left open: even ending it shows
    before = out.getvalue()
    renderer.event(SAMPLES[kind])
    assert (out.getvalue() != before) == (kind not in render._IGNORED_EVENTS)


def told(events: Iterable[AnyStreamEvent]) -> list[dict[str, Any]]:
    """The AG-UI events of a run told from ``events`` (without the clock's timestamps)."""
    ids = iter(range(100))
    projection = AGUIProjection("thread", "run", new_id=lambda: f"id-{next(ids)}")
    out = projection.started()
    for event in events:
        out += projection.feed(event)
    out += projection.finished()
    return [event.model_dump(exclude={"timestamp"}) for event in out]


@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_the_agui_projection_tells_every_type_it_does_not_list_and_nothing_of_the_others(
    kind: str,
) -> None:
    assert (told([SAMPLES[kind]]) != told([])) == (kind not in agui_events._IGNORED_EVENTS)


def told_a2a(events: Iterable[AnyStreamEvent]) -> list[dict[str, Any]]:
    """The A2A updates of a task told from ``events``, then the task (without the times)."""
    fold = a2a_task.TaskFold("task", "context", "run", 0)
    out = [update for n, event in enumerate(events, 1) for update in fold.feed(n, event)]
    told = [MessageToDict(update) for update in [*out, fold.task()]]
    for item in told:
        item.get("status", {}).pop("timestamp", None)
    return told


@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_the_a2a_task_tells_every_type_it_does_not_list_and_nothing_of_the_others(
    kind: str,
) -> None:
    assert (told_a2a([SAMPLES[kind]]) != told_a2a([])) == (kind not in a2a_task._IGNORED_EVENTS)


# What a lenient read of another producer's stream gives besides events: consumers that
# read streams (the AG-UI projection and the A2A task relay one, the validator checks
# one, the encoders pass one on) take them too.
OTHER_RECORDS: list[AnyStreamEvent] = [
    UnknownEvent(type="plan_updated"),
    parse_event('{"type":"agent_choice","content":5}'),  # another shape: an InvalidEvent
]


def test_the_agui_projection_tells_nothing_of_unknown_events_and_unread_records() -> None:
    assert isinstance(OTHER_RECORDS[1], InvalidEvent)
    for record in OTHER_RECORDS:
        assert told([SAMPLES["agent_choice"], record]) == told([SAMPLES["agent_choice"]])


def test_the_a2a_task_tells_nothing_of_unknown_events_and_unread_records() -> None:
    for record in OTHER_RECORDS:
        assert told_a2a([SAMPLES["agent_choice"], record]) == told_a2a([SAMPLES["agent_choice"]])


def test_unknown_events_and_unread_records_belong_to_no_delegated_run() -> None:
    assert [parent_tool_call_id(record) for record in OTHER_RECORDS] == [None, None]


def test_the_validator_skips_unknown_events_and_reports_unread_records() -> None:
    found = validate.validate([SAMPLES["stream_started"], *OTHER_RECORDS])
    assert [(v.index, v.rule) for v in found] == [
        (2, "invalid_event"),
        (3, "stream_stopped_missing"),
    ]


def test_the_encoders_pass_unknown_events_and_unread_records_on() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b"".join(encode_ndjson(record) for record in OTHER_RECORDS)) == (
        OTHER_RECORDS
    )


def rules_broken_by(event: StreamEvent) -> list[list[str]]:
    """The rules ``event`` breaks in five places of a stream (its own violations only)."""
    started, stopped = SAMPLES["stream_started"], SAMPLES["stream_stopped"]
    compacting = SessionCompactionEvent(
        session_id=SID, timestamp=T0, status="start", agent_name="root"
    )
    places: list[tuple[list[StreamEvent], set[int]]] = [
        ([event], {0}),  # before stream_started
        ([started, stopped, event], {2}),  # after stream_stopped
        ([started, compacting, event], {2}),  # inside a compaction
        ([started, event, event], {1, 2}),  # twice
        ([started, SAMPLES["tool_call"], event], {2}),  # after the tool_call of its call
    ]
    broken: list[list[str]] = []
    for stream, probed in places:
        validator = StreamValidator()
        rules: list[str] = []
        for position, item in enumerate(stream):
            found = validator.check(item)
            if position in probed:
                rules += [violation.rule for violation in found]
        broken.append(rules)
    return broken


# What an event with no rule of its own breaks in those five places.
ONLY_THE_COMMON_RULES = [
    ["stream_started_first"],
    ["event_after_stream_stopped"],
    ["compaction_interleaved"],
    [],
    [],
]


@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_the_validator_has_rules_of_their_own_for_every_type_it_does_not_list(kind: str) -> None:
    common = rules_broken_by(SAMPLES[kind]) == ONLY_THE_COMMON_RULES
    assert common == (kind in validate._IGNORED_EVENTS)


async def test_the_adapters_streams_make_every_type_it_does_not_list(
    make_agent: AgentFactory,
) -> None:
    @tool(requires_confirmation=True)
    async def report(text: str) -> str:
        """Report progress, then answer."""
        context = current_tool_context()
        assert context is not None
        await context.emit(text)
        return "reported"

    big = Usage(input_tokens=900, output_tokens=10, requests=1)
    model = ScriptedModel(
        [
            ModelResponse(content="first answer", reasoning="thinking", usage=big),
            "the summary",
            ToolCall(id="r1", name="report", arguments={"text": "half way"}),
            "done",
            "A title",
            RuntimeError("the model is down"),
        ],
        chunk_size=4,
    )
    agent = make_agent(model, tools=[report])
    made: set[str] = set()

    async def stream(prompt: str, **options: Any) -> None:
        async with agent.stream(prompt, **options) as events:
            async for event in events:
                made.add(event.type)
                if isinstance(event, ToolCallConfirmationEvent):
                    assert await events.confirm(event.tool_call.id, "approve")

    await stream("first")
    await stream("second", compaction=Compactor(context_limit=1000, keep_recent=2), title=True)
    agent.sub_agents.append(make_agent(["unused"], name="helper"))  # a team: team_info
    with pytest.raises(RuntimeError, match="the model is down"):
        await stream("third")
    # A hand-off: agent_switching.
    desk = make_agent([ToolCall(id="h1", name="handoff", arguments={"agent": "agent"}), "ok"],
                      name="desk", handoffs=[agent], tools=[])  # fmt: skip
    agent.model = ScriptedModel(["from the agent"])
    async with desk.stream("hand over") as events:
        made.update([event.type async for event in events])
    assert made == set(EVENT_TYPES) - adapter._IGNORED_EVENTS
