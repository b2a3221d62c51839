"""Cancelling a team's run at every event boundary of every agent, at any depth.

The cancellation kit (agentrt.testing) arms every agent of the team, so that members
(which run on copies of their sub-agents' buses) count and cancel too, and checks each
member's conversation: every tool call answered at every depth, the usage of the
whole team in the stream, every agent idle after, nothing left running.
"""

from collections.abc import Sequence
from typing import Any, Literal

import anyio.lowlevel
import pytest

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall
from agentrt._loop import Run
from agentrt.messages import Message, Usage
from agentrt.models.scripted import ScriptItem
from agentrt.stream import StreamAdapter
from agentrt.team import team_of
from agentrt.testing import (
    EventRecorder,
    cancellation_violations,
    run_violations,
    server_cancellation_violations,
)
from agentrt.tools import tool

AGAIN = "again"
AFTERWARDS = "answer after the cancelled run"


@tool
async def slow_add(a: int, b: int) -> int:
    """Add two integers, taking a checkpoint first (a tool that waits)."""
    await anyio.lowlevel.checkpoint()
    return a + b


def transfer(call_id: str, agent: str, task: str) -> ToolCall:
    return ToolCall(id=call_id, name="transfer_task", arguments={"agent": agent, "task": task})


Kind = Literal["two-level", "parallel", "handoff"]


class Team:
    """Makes a fresh team of the kind; each model answers its n-th turn from its script."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        self.afterwards = 0

    def model(self, script: Sequence[ScriptItem]) -> ScriptedModel:
        def answer(request: ModelRequest) -> ScriptItem:
            turn = 0
            for message in reversed(request.messages):
                if message.role == "user":
                    if message.content == AGAIN:
                        self.afterwards += 1
                        return AFTERWARDS
                    return script[turn]
                turn += message.role == "assistant"
            raise AssertionError(f"a model call without a user message: {request.messages}")

        return ScriptedModel(answer)

    def __call__(self) -> Agent:
        add = ToolCall(id="a1", name="slow_add", arguments={"a": 1, "b": 2})
        checker = Agent(
            model=self.model([add, "3"]), name="checker", tools=[slow_add], strict=True
        )
        if self.kind == "handoff":
            to_checker = ToolCall(id="h1", name="handoff", arguments={"agent": "checker"})
            return Agent(
                model=self.model([to_checker]), name="desk", handoffs=[checker], strict=True
            )
        writer = Agent(model=self.model(["Written."]), name="writer", strict=True)
        to_checker = transfer("t2", "checker", "1+2?")
        first: ScriptItem = to_checker
        if self.kind == "parallel":
            first = [to_checker, transfer("w1", "writer", "Write.")]
        researcher = Agent(
            model=self.model([first, "It is 3."]),
            name="researcher",
            sub_agents=[checker, writer],
            strict=True,
        )
        return Agent(
            model=self.model([transfer("t1", "researcher", "Sum?"), "3."]),
            name="lead",
            sub_agents=[researcher],
            strict=True,
        )


async def dispatches(team: Team) -> int:
    """The dispatches of one team run, at every depth: where the kit cancels it."""
    lead = team()
    recorder = EventRecorder()
    for agent in team_of(lead):
        agent.events.on("*", recorder)  # copied onto every member's bus
    await lead.execute("go")
    count = len(recorder.events)
    await lead.close()
    return count


KINDS = pytest.mark.parametrize("kind", ["two-level", "parallel", "handoff"])


@KINDS
async def test_a_team_run_cancelled_at_every_event_of_every_agent(kind: Kind) -> None:
    team = Team(kind)
    total = await dispatches(team)
    assert await cancellation_violations(team, "go", then=AGAIN) == []
    # One cancelled run per dispatch of every agent (each followed by one AGAIN run).
    assert team.afterwards == total


@KINDS
@pytest.mark.parametrize("stream", ["adapter", "consumer"])
async def test_a_team_stream_cancelled_at_every_event_of_every_agent(
    kind: Kind, stream: Literal["adapter", "consumer"]
) -> None:
    team = Team(kind)
    assert await cancellation_violations(team, "go", stream=stream, then=AGAIN) == []


async def test_the_kit_finds_a_call_left_unanswered_in_a_members_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A runtime that answered cancelled calls at the top only would be caught."""
    answer = Run._append_tool_messages

    async def top_only(self: Run, calls: Any, responses: Any) -> None:
        if self.agent.team_parent is not None and None in responses:
            return  # a member's cut-short calls left without an answer
        await answer(self, calls, responses)

    monkeypatch.setattr(Run, "_append_tool_messages", top_only)
    problems = await cancellation_violations(Team("two-level"), "go")
    assert problems
    assert all("a member's conversation: tool calls without an answer" in p for p in problems)


def test_run_violations_checks_the_members_conversations_and_their_usage() -> None:
    from agentrt.messages import AssistantMessage, UserMessage

    member: list[Message] = [
        UserMessage(content="task"),
        AssistantMessage(content="", tool_calls=(ToolCall(id="x", name="f"),)),
    ]
    assert run_violations([UserMessage(content="hi")], members=[member]) == [
        "a member's conversation: tool calls without an answer: ['x']"
    ]


@KINDS
async def test_a_team_run_on_a_server_cancelled_after_every_event_keeps_the_contract(
    kind: Kind,
) -> None:
    team = Team(kind)
    assert await server_cancellation_violations(team, "go", then=AGAIN) == []
    assert team.afterwards >= 10  # one answered run after each cancelled one


def delegating_every_time() -> Agent:
    """A lead that gives every message to its helper: the run after the cancelled one too."""

    def lead(request: ModelRequest) -> ScriptItem:
        last = request.messages[-1]
        if last.role == "tool":
            return "Done."
        turn = sum(message.role == "user" for message in request.messages)
        return transfer(f"t{turn}", "helper", last.content)

    helper = Agent(model=ScriptedModel(lambda request: "Helped."), name="helper")
    return Agent(model=ScriptedModel(lead), name="lead", sub_agents=[helper])


async def test_the_kits_count_what_the_members_of_the_run_after_the_cancelled_one_spent() -> None:
    assert (
        await cancellation_violations(delegating_every_time, "go", stream=True, then=AGAIN) == []
    )
    assert await server_cancellation_violations(delegating_every_time, "go", then=AGAIN) == []


async def test_the_kits_catch_a_stream_that_loses_a_sub_agents_usage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream whose team total left out what the sub-agents spent would be caught."""
    count = StreamAdapter._token_usage

    def members_lost(self: StreamAdapter, last: Usage, context_length: int | None = None) -> Any:
        state = self._session_agent.stream_state
        before = state.usage
        event = count(self, last, context_length)
        if self._parent_call_id is not None:
            state.usage = before  # reported, but lost from the team's total
        return event

    monkeypatch.setattr(StreamAdapter, "_token_usage", members_lost)
    on_server = await server_cancellation_violations(Team("two-level"), "go")
    in_library = await cancellation_violations(Team("two-level"), "go", stream=True)

    assert on_server[0] == (
        "the run without cancellation: the team's model calls spent 10 input and 36 output "
        "tokens; the latest token_usage says 4 and 14"
    )
    for problems in (on_server, in_library):
        assert problems
        assert all("tokens; the latest token_usage says" in p for p in problems)
