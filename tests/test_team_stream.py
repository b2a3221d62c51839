"""A team's stream: every event of a sub-agent's run in the parent's stream, attributed.

The library side of teams is tests/test_team.py's.
"""

from typing import Any

import anyio

from agentrt import Agent, ModelRequest, ModelResponse, ScriptedModel, ToolCall
from agentrt.models.scripted import ScriptItem
from agentrt.stream import parse_event, validate
from agentrt.stream.events import (
    AgentChoiceEvent,
    ErrorEvent,
    StreamEvent,
    TeamInfoEvent,
    TokenUsageEvent,
    ToolCallConfirmationEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    parent_tool_call_id,
)
from agentrt.tools import tool
from tests.conftest import add


def transfer(call_id: str, agent: str, task: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": task})


def member(name: str, script: Any, **options: Any) -> Agent:
    # One chunk per text and per arguments: one agent_choice, one partial_tool_call.
    model = ScriptedModel(script, chunk_size=1000)
    return Agent(model=model, name=name, description=f"The {name}.", **options)


def shape(event: StreamEvent) -> tuple[Any, ...]:
    """What an exact sequence compares: type, agent, parent call, and the gist."""
    parent = parent_tool_call_id(event)
    match event.type:
        case "team_info":
            assert isinstance(event, TeamInfoEvent)
            return ("team_info", tuple(agent.name for agent in event.available_agents))
        case "agent_choice":
            assert isinstance(event, AgentChoiceEvent)
            return ("agent_choice", event.agent_name, parent, event.content)
        case "tool_call_response":
            assert isinstance(event, ToolCallResponseEvent)
            return ("tool_call_response", event.agent_name, parent, event.tool_call.id,
                    event.response)  # fmt: skip
        case "partial_tool_call" | "tool_call" | "tool_call_confirmation":
            return (event.type, event.agent_name, parent, event.tool_call.id)
        case "error":
            assert isinstance(event, ErrorEvent)
            return ("error", event.agent_name, parent, event.error)
        case "token_usage":
            return ("token_usage", event.agent_name, parent)
        case _:
            return (event.type,)


async def run(agent: Agent, prompt: str, **options: Any) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with agent.stream(prompt, strict=True, **options) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolCallConfirmationEvent):
                assert await stream.confirm(event.tool_call.id, "approve")
    assert validate(events) == []
    # Every event goes over the wire and back with its attribution.
    assert [parse_event(e.model_dump_json(), strict=True) for e in events] == events
    return events


def lead(script: list[ScriptItem], *sub_agents: Agent) -> Agent:
    return member("lead", script, sub_agents=list(sub_agents))


def publishing_team(published: list[str]) -> Agent:
    """lead -> researcher -> checker, whose ``publish`` (call ``p1``) asks for approval
    and appends each text it publishes to ``published``."""

    @tool(requires_confirmation=True)
    def publish(text: str) -> str:
        """Publish a text."""
        published.append(text)
        return "published"

    checker = member(
        "checker",
        [ToolCall(id="p1", name="publish", arguments={"text": "Paris"}), "Done."],
        tools=[publish],
    )
    researcher = member("researcher", [transfer("t2", "checker", "Publish."), "Ok."],
                        sub_agents=[checker])  # fmt: skip
    return lead([transfer("t1", "researcher", "Publish it."), "Published."], researcher)


async def test_a_two_level_team_streams_every_event_attributed_and_nested() -> None:
    checker = member("checker", [ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2}), "3"],
                     tools=[add])  # fmt: skip
    researcher = member(
        "researcher", [transfer("t2", "checker", "1+2?"), "Paris, checked."], sub_agents=[checker]
    )
    top = lead([transfer("t1", "researcher", "Capital?"), "Paris."], researcher)
    events = await run(top, "Where?")
    assert [shape(e) for e in events] == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("lead", "researcher", "checker")),
        ("partial_tool_call", "lead", None, "t1"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t1"),
        ("partial_tool_call", "researcher", "t1", "t2"),
        ("token_usage", "researcher", "t1"),
        ("tool_call", "researcher", "t1", "t2"),
        ("partial_tool_call", "checker", "t2", "a1"),
        ("token_usage", "checker", "t2"),
        ("tool_call", "checker", "t2", "a1"),
        ("tool_call_response", "checker", "t2", "a1", "3"),
        ("agent_choice", "checker", "t2", "3"),
        ("token_usage", "checker", "t2"),
        ("tool_call_response", "researcher", "t1", "t2", "3"),
        ("agent_choice", "researcher", "t1", "Paris, checked."),
        ("token_usage", "researcher", "t1"),
        ("tool_call_response", "lead", None, "t1", "Paris, checked."),
        ("agent_choice", "lead", None, "Paris."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]


async def test_a_parallel_delegation_streams_each_run_under_its_own_call() -> None:
    writer_done = anyio.Event()

    async def research(request: ModelRequest) -> str:
        # Answers only once the writer's whole run is over: both runs were under way
        # at once, and the order of their events is fixed.
        await writer_done.wait()
        return "A done"

    researcher = member("researcher", research)
    writer = member("writer", ["B done"])
    writer.events.on("execute:after", lambda ctx: writer_done.set())
    top = lead(
        [[transfer("t1", "researcher", "A"), transfer("t2", "writer", "B")], "Both done."],
        researcher,
        writer,
    )
    with anyio.fail_after(5):
        events = await run(top, "Go")
    assert [shape(e) for e in events] == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("lead", "researcher", "writer")),
        ("partial_tool_call", "lead", None, "t1"),
        ("partial_tool_call", "lead", None, "t2"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t1"),
        ("tool_call", "lead", None, "t2"),
        ("agent_choice", "writer", "t2", "B done"),
        ("token_usage", "writer", "t2"),
        ("agent_choice", "researcher", "t1", "A done"),
        ("token_usage", "researcher", "t1"),
        ("tool_call_response", "lead", None, "t1", "A done"),
        ("tool_call_response", "lead", None, "t2", "B done"),
        ("agent_choice", "lead", None, "Both done."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]


async def test_a_failing_sub_agent_reports_its_error_attributed_and_the_parent_goes_on() -> None:
    researcher = member("researcher", [RuntimeError("the model is down")])
    top = lead([transfer("t1", "researcher", "Capital?"), "Sorry."], researcher)
    events = await run(top, "Where?")
    failure = "Error: sub-agent 'researcher' failed: RuntimeError: the model is down"
    assert [shape(e) for e in events] == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("lead", "researcher")),
        ("partial_tool_call", "lead", None, "t1"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t1"),
        ("error", "researcher", "t1", "RuntimeError: the model is down"),
        ("tool_call_response", "lead", None, "t1", failure),
        ("agent_choice", "lead", None, "Sorry."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]


async def test_a_sub_agent_failing_two_levels_down_fails_its_parents_call_which_goes_on() -> None:
    checker = member("checker", [RuntimeError("the model is down")])
    researcher = member("researcher", [transfer("t2", "checker", "Check."), "Unchecked."],
                        sub_agents=[checker])  # fmt: skip
    top = lead([transfer("t1", "researcher", "Capital?"), "Paris, unchecked."], researcher)
    events = await run(top, "Where?")
    failure = "Error: sub-agent 'checker' failed: RuntimeError: the model is down"
    assert [shape(e) for e in events] == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("lead", "researcher", "checker")),
        ("partial_tool_call", "lead", None, "t1"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t1"),
        ("partial_tool_call", "researcher", "t1", "t2"),
        ("token_usage", "researcher", "t1"),
        ("tool_call", "researcher", "t1", "t2"),
        ("error", "checker", "t2", "RuntimeError: the model is down"),
        ("tool_call_response", "researcher", "t1", "t2", failure),
        ("agent_choice", "researcher", "t1", "Unchecked."),
        ("token_usage", "researcher", "t1"),
        ("tool_call_response", "lead", None, "t1", "Unchecked."),
        ("agent_choice", "lead", None, "Paris, unchecked."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]


async def test_a_failed_sub_agents_tokens_are_in_the_stream_as_spent_and_in_the_result() -> None:
    researcher = member(
        "researcher",
        [ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2}), RuntimeError("down")],
        tools=[add],
    )
    top = lead([transfer("t1", "researcher", "Sum?"), "Sorry."], researcher)
    async with top.stream("Where?", strict=True) as stream:
        events = [event async for event in stream]
    assert validate(events) == []
    usages = [(e.agent_name, parent_tool_call_id(e)) for e in events if e.type == "token_usage"]
    assert usages == [("lead", None), ("researcher", "t1"), ("lead", None)]
    result = stream.result
    assert result is not None
    assert {name: u.requests for name, u in result.agent_usage.items()} == {
        "lead": 2,
        "researcher": 1,
    }
    (*_, latest) = (e for e in events if isinstance(e, TokenUsageEvent))
    assert (latest.usage.input_tokens, latest.usage.output_tokens) == (
        result.usage.input_tokens,
        result.usage.output_tokens,
    )


async def test_a_confirmation_two_levels_down_is_asked_in_the_top_stream_and_answered_by_id() -> (
    None
):
    published: list[str] = []
    top = publishing_team(published)
    events = await run(top, "Go")
    shapes = [shape(e) for e in events]
    asked = shapes.index(("tool_call_confirmation", "checker", "t2", "p1"))
    assert shapes[asked : asked + 3] == [
        ("tool_call_confirmation", "checker", "t2", "p1"),
        ("tool_call", "checker", "t2", "p1"),
        ("tool_call_response", "checker", "t2", "p1", "published"),
    ]
    assert published == ["Paris"]


async def test_an_agent_used_as_a_tool_is_attributed_like_a_sub_agent() -> None:
    researcher = member("researcher", ["Paris."])
    top = member(
        "lead",
        [ToolCall(id="r1", name="research", arguments={"task": "Capital?"}), "Paris it is."],
        tools=[researcher.as_tool(name="research")],
    )
    events = await run(top, "Where?")
    assert [shape(e) for e in events][4:7] == [
        ("tool_call", "lead", None, "r1"),
        ("agent_choice", "researcher", "r1", "Paris."),
        ("token_usage", "researcher", "r1"),
    ]
    assert "team_info" not in [e.type for e in events]  # a tool, not a team


async def test_the_command_lines_renderer_labels_and_indents_a_sub_agents_run() -> None:
    import io

    from agentrt.cli._render import PlainRenderer

    researcher = member("researcher", [ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2}),
                                       "It is 3."], tools=[add])  # fmt: skip
    top = lead([transfer("t1", "researcher", "1+2?"), "3."], researcher)
    out = io.StringIO()
    renderer = PlainRenderer(out)
    for event in await run(top, "Sum?"):
        renderer.event(event)
    lines = [line for line in out.getvalue().splitlines() if "tokens:" not in line]
    assert lines == [
        "you: Sum?",
        "team: lead (answering), researcher",
        '-> transfer_task(agent="researcher", task="1+2?")',
        "   [researcher] -> add(a=1, b=2)",
        "   [researcher] <- add: 3",
        "   researcher: It is 3.",
        "<- transfer_task: It is 3.",
        "lead: 3.",
    ]


async def test_tool_call_ids_stay_unique_across_the_team_whatever_the_models_say() -> None:
    """Some servers number calls per answer: every agent of the team says "call_0"."""
    same = ToolCall(id="call_0", name="add", arguments={"a": 1, "b": 2})

    def research(request: ModelRequest) -> ScriptItem:
        return same if request.messages[-1].role == "user" else "3"

    researcher = member("researcher", research, tools=[add])
    top = member(
        "lead",
        [
            [
                ToolCall(id="call_0", name="transfer_task",
                         arguments={"agent": "researcher", "task": "A"}),
                ToolCall(id="call_1", name="transfer_task",
                         arguments={"agent": "researcher", "task": "B"}),
            ],
            same,
            "done",
        ],
        sub_agents=[researcher],
        tools=[add],
    )  # fmt: skip
    events = await run(top, "Go")  # validates: no id is shown for two calls
    calls = [e.tool_call.id for e in events if isinstance(e, ToolCallEvent)]
    assert len(calls) == len(set(calls)) == 5
    assert {"call_0", "call_1"} <= set(calls)  # the first to use an id keeps it


async def test_the_ag_ui_projection_keeps_the_attribution_in_subagent_run_id_and_name() -> None:
    from itertools import count

    from agentrt.server.agui_events import AGUIProjection

    researcher = member("researcher", [ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2}),
                                       "It is 3."], tools=[add])  # fmt: skip
    asks = ModelResponse(content="Let me ask.", tool_calls=(transfer("t1", "researcher", "1+2?"),))
    top = lead([asks, "3."], researcher)
    ids = count()
    projection = AGUIProjection("thread", "run", new_id=lambda: f"m{next(ids)}")
    told = []
    for event in await run(top, "Sum?"):
        told += projection.feed(event)
    shown = [
        (e.type.value, getattr(e, "name", None), getattr(e, "subagent_run_id", None))
        for e in told
        if e.type.value.startswith(("TEXT_MESSAGE_START", "TOOL_CALL_START", "TOOL_CALL_RESULT"))
    ]
    assert shown == [
        ("TEXT_MESSAGE_START", None, None),  # the lead's
        ("TOOL_CALL_START", None, None),  # transfer_task
        ("TOOL_CALL_START", None, "t1"),  # the researcher's add
        ("TOOL_CALL_RESULT", None, "t1"),
        ("TEXT_MESSAGE_START", "researcher", "t1"),
        ("TOOL_CALL_RESULT", None, None),  # transfer_task's
        ("TEXT_MESSAGE_START", None, None),  # the lead again
    ]
    contents = [e for e in told if e.type.value == "TEXT_MESSAGE_CONTENT"]
    assert [(e.delta, e.subagent_run_id) for e in contents] == [  # type: ignore[attr-defined]
        ("Let me ask.", None),
        ("It is 3.", "t1"),
        ("3.", None),
    ]


async def test_each_run_of_a_team_keeps_its_models_ids_apart_and_no_more() -> None:
    """The ids a team keeps apart are its current run's: a later run may use them again."""

    def research(request: ModelRequest) -> ScriptItem:
        if request.messages[-1].role == "user":
            return ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2})
        return "3"

    def direct(request: ModelRequest) -> ScriptItem:
        return (
            transfer("t1", "researcher", "1+2?") if request.messages[-1].role == "user" else "3."
        )

    top = member("lead", direct, sub_agents=[member("researcher", research, tools=[add])])
    for _ in range(3):
        await top.reset()
        events = await run(top, "Sum?")
        assert {e.tool_call.id for e in events if isinstance(e, ToolCallEvent)} == {"t1", "a1"}
