"""A team's hooks: the parent's handlers observe every agent's signals, each named.

A member (a delegated task's agent, or an agent handed to) runs on a copy of its
agent's bus observed by the delegating agent's (``EventBus.copy(observed_by=...)``):
the parent's handlers run on the member's signals, ``ctx.parameters["agent"]`` being
the member, whose ``name`` is its agent's and whose ``team_parent`` names the call that
started it. Interceptable events stay the member's own: the parent's handlers never
change a sub-agent's step. A sub-agent's own hooks keep working.
"""

from typing import Any

from agentrt import Agent, EventBus, EventContext, ScriptedModel, ToolCall
from agentrt.events import EventSemantics
from agentrt.testing import EventRecorder
from tests.conftest import add


def transfer(call_id: str, agent: str, task: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": task})


SIGNAL = EventSemantics.SIGNAL
ADD = ToolCall(id="a1", name="add", arguments={"a": 1, "b": 2})


def two_levels() -> tuple[Agent, Agent, Agent]:
    """lead -> researcher (t1) -> checker (t2), whose ``add`` call is a1."""
    checker = Agent(model=ScriptedModel([ADD, "3"]), name="checker", tools=[add])
    researcher = Agent(
        model=ScriptedModel([transfer("t2", "checker", "1+2?"), "It is 3."]),
        name="researcher",
        sub_agents=[checker],
    )
    lead = Agent(
        model=ScriptedModel([transfer("t1", "researcher", "Sum?"), "3."]),
        name="lead",
        sub_agents=[researcher],
    )
    return lead, researcher, checker


def who(ctx: EventContext[Any, Any]) -> tuple[str, str | None]:
    """The agent an event came from, and the call that delegated to it (None: the top)."""
    agent = ctx.parameters["agent"]
    parent = agent.team_parent
    return agent.name, None if parent is None else parent.tool_call.id


async def test_the_parents_hooks_see_every_agents_tool_calls_at_any_depth_named() -> None:
    lead, _, _ = two_levels()
    seen: list[tuple[str, str | None, str]] = []
    lead.hooks.on_tool_call_after(
        lambda ctx: seen.append((*who(ctx), ctx.parameters["tool_name"]))
    )
    result = await lead.execute("Sum?")
    assert result.output == "3."
    assert seen == [
        ("checker", "t2", "add"),
        ("researcher", "t1", "transfer_task"),
        ("lead", None, "transfer_task"),
    ]


async def test_the_parents_hooks_see_the_signals_not_the_interceptables_of_a_member() -> None:
    lead, _, checker = two_levels()
    on_lead = EventRecorder()
    lead.events.on("*", on_lead)
    on_checker = EventRecorder()
    checker.events.on("*", on_checker)
    await lead.execute("Sum?")

    def of_the_member(recorder: EventRecorder) -> list[tuple[str, EventSemantics]]:
        return [
            (str(event.event), event.semantics)
            for event in recorder.events
            if (agent := event.parameters.get("agent")) is not None
            and agent.name == "checker"
            and agent.team_parent is not None
        ]

    checkers = of_the_member(on_lead)
    # Everything the checker's own recorder saw of its member's run but the interceptables.
    signals = [(name, kind) for name, kind in of_the_member(on_checker) if kind is SIGNAL]
    assert checkers == signals
    assert ("tool:call:after", SIGNAL) in checkers
    assert all(name != "tool:call:before" for name, _ in checkers)


async def test_the_parents_interceptors_do_not_change_a_sub_agents_step() -> None:
    lead, _, checker = two_levels()

    def tenfold(ctx: EventContext[Any, Any]) -> dict[str, int] | None:
        if ctx.parameters["tool_name"] != "add":
            return None
        return {"a": 10, "b": 20}

    lead.hooks.on_tool_call_before(tenfold)  # the lead has no add: only a sub-agent's
    await lead.execute("Sum?")
    _, after_add = checker.model.requests  # type: ignore[attr-defined]
    assert after_add.messages[-1].content == "3"


async def test_a_sub_agents_own_hooks_keep_working_and_a_handler_on_both_runs_once() -> None:
    lead, researcher, checker = two_levels()
    calls: list[tuple[str, str]] = []

    def on_call(ctx: EventContext[Any, Any]) -> None:
        calls.append((ctx.parameters["agent"].name, ctx.parameters["tool_name"]))

    checker.hooks.on_tool_call_before(lambda ctx: calls.append(("checker's own", "add")))
    for agent in (lead, researcher, checker):
        agent.hooks.on_tool_call_after(on_call)
    await lead.execute("Sum?")
    assert calls == [
        ("checker's own", "add"),
        ("checker", "add"),
        ("researcher", "transfer_task"),
        ("lead", "transfer_task"),
    ]


async def test_the_owners_hooks_see_an_agent_handed_to_named() -> None:
    billing = Agent(model=ScriptedModel([ADD, "Billed: 3."]), name="billing", tools=[add])
    desk = Agent(
        model=ScriptedModel([ToolCall(id="h1", name="handoff", arguments={"agent": "billing"})]),
        name="desk",
        handoffs=[billing],
    )
    seen: list[tuple[str, str]] = []
    desk.hooks.on_tool_call_after(
        lambda ctx: seen.append((ctx.parameters["agent"].name, ctx.parameters["tool_name"]))
    )
    result = await desk.execute("Bill me.")
    assert result.output == "Billed: 3."
    assert seen == [("desk", "handoff"), ("billing", "add")]


# -- the bus: a copy observed by another ---------------------------------------------------------


async def test_a_bus_copy_observed_by_another_runs_its_handlers_on_signals_only() -> None:
    parent, own = EventBus(), EventBus()
    seen: list[str] = []

    def shared(ctx: EventContext[Any, Any]) -> None:
        seen.append(f"shared {ctx.event}")

    parent.on("*", lambda ctx: seen.append(f"parent * {ctx.event}"), priority=200)
    parent.on("tool:call:before", lambda ctx: seen.append("parent's interceptor"))
    parent.on("x", lambda ctx: seen.append("parent transient"), transient=True)
    parent.on("x", shared)
    own.on("x", lambda ctx: seen.append("own x"), priority=100)
    own.on("x", shared)
    copy = own.copy(observed_by=parent)
    assert copy.handler_count("tool:call:before") == 0  # never a signal: not copied
    await copy.do("x")
    # By priority; the parent's transient handler is left out, the shared one runs once.
    assert seen == ["parent * x", "own x", "shared x"]
    seen.clear()
    ctx = await copy.apply("x", output=1)
    assert ctx.output == 1
    assert seen == ["own x", "shared x"]  # apply(): the observers do not run
    seen.clear()
    await copy.apply("tool:call:before", output={})
    assert seen == []
    # A copy of the copy keeps its observers as observers.
    await copy.copy().apply("y")
    assert seen == []
    await copy.copy().do("y")
    assert seen == ["parent * y"]
