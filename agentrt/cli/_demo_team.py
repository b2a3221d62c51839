"""The team of ``agentrt demo --team``: a lead, two specialists it delegates to, a scribe.

* ``lead`` answers the user. It gives arithmetic to the ``mathematician`` and the
  weather to the ``forecaster`` (``transfer_task``: both at once when the question asks
  for both), and hands the conversation to the ``scribe`` (``handoff``) when the user
  wants a note saved;
* ``mathematician`` has ``calculate``, ``forecaster`` has ``get_weather``: each runs
  on a conversation of its own, whose user message is the lead's task, and its answer
  is the ``transfer_task`` call's result;
* ``scribe`` has ``write_note`` (which asks first): it writes what the team found and
  answers the user, on the lead's conversation.

Every event names the agent it comes from, and a specialist's events the
``transfer_task`` call that started its run: the terminal shows them indented and
labelled under that call.

On the scripted model (:func:`scripted_team_model`) the team is deterministic; on the
local SmolLM2 model each agent is steered as the single demo agent is
(:func:`~agentrt.cli._demo.guide_small_model`): each member calls its tool, then
answers in words; the lead delegates to the specialist each step of its plan
(:func:`lead_plan`) names, one per turn (the ``agent`` argument can only be that one,
and the task has a fixed form, ``What is 6 * 7?``, in which the model writes the
arithmetic or the city), hands off when the question asks for a note, and answers in
words once the plan is done. A 135M model's final answer may still leave out one of
two findings: tests/live/test_demo_team_live.py checks the questions it answers whole.
"""

import copy
import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from agentrt.agent import Agent
from agentrt.cli._demo import (
    DEMO_NOTE,
    demo_directory,
    demo_tools,
    guide_small_model,
    guided_plan,
    on_each_model_call,
    question_parts,
    since_last_user_message,
    steer,
)
from agentrt.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from agentrt.models.base import Model, ModelRequest
from agentrt.models.local import LocalModel
from agentrt.models.scripted import ScriptedModel, ScriptItem
from agentrt.stream._adapter import REJECTED_PREFIX
from agentrt.team import HANDOFF, TRANSFER_TASK

__all__ = (
    "LEAD",
    "SCRIBE",
    "SPECIALISTS",
    "TEAM_SUMMARY",
    "build_demo_team",
    "delegated_answers",
    "lead_plan",
    "scripted_team_model",
)

LEAD = "lead"
"""The name of the agent that answers the user."""
SCRIBE = "scribe"
"""The name of the agent the lead hands off to for a note."""
SPECIALISTS = {"calculate": "mathematician", "get_weather": "forecaster"}
"""The specialist each demo tool belongs to."""

TEAM_SUMMARY = (
    "lead -> mathematician (calculate), forecaster (get_weather); "
    "hands off to scribe (write_note, asks first)"
)
"""The team in one line, for the demo's banner."""

# Worded as the single demo's instructions are: SmolLM2-135M states what its team found
# when told this much, and only the last of it after longer instructions.
_LEAD_INSTRUCTIONS = (
    "You are a concise assistant. Use transfer_task to give arithmetic to the mathematician "
    "and the weather to the forecaster, and handoff to the scribe to save a note. Answer in "
    "one or two sentences."
)
_SCRIBE_INSTRUCTIONS = (
    "You are a concise assistant. Use write_note to save what the team found in a file. "
    "Answer in one or two sentences."
)


def _specialist_instructions(tool: str) -> str:
    return f"You are a concise assistant. Use {tool} for the task. Answer in one or two sentences."


def build_demo_team(model: Model, *, directory: Path | None = None) -> Agent:
    """The demo's team on ``model``: the lead, whose stream shows every member's events.

    Args:
        model: What answers, for every agent of the team.
        directory: Where ``write_note`` writes (default:
            :func:`~agentrt.cli._demo.demo_directory`).
    """
    tools = {
        tool.name: tool
        for tool in demo_tools(directory if directory is not None else demo_directory())
    }
    mathematician = Agent(
        model=model,
        tools=[tools["calculate"]],
        instructions=_specialist_instructions("calculate"),
        name=SPECIALISTS["calculate"],
        description="Does arithmetic with calculate.",
        max_iterations=4,
    )
    forecaster = Agent(
        model=model,
        tools=[tools["get_weather"]],
        instructions=_specialist_instructions("get_weather"),
        name=SPECIALISTS["get_weather"],
        description="Reports the weather in a city with get_weather.",
        max_iterations=4,
    )
    scribe = Agent(
        model=model,
        tools=[tools["write_note"]],
        instructions=_SCRIBE_INSTRUCTIONS,
        name=SCRIBE,
        description="Saves notes in files with write_note (asks the user first).",
        max_iterations=4,
    )
    lead = Agent(
        model=model,
        instructions=_LEAD_INSTRUCTIONS,
        name=LEAD,
        description="Answers the user; delegates and hands off.",
        sub_agents=[mathematician, forecaster],
        handoffs=[scribe],
        max_iterations=6,
    )
    if isinstance(model, LocalModel):
        for member in (mathematician, forecaster, scribe):
            guide_small_model(member, plan=_own_tools(member))
        on_each_model_call(lead, _steer_lead)
    return lead


def _own_tools(agent: Agent) -> Callable[[str], Sequence[str]]:
    """The plan of a member with one job: its tools, whatever its task says."""
    names = [tool.name for tool in agent.tools]
    return lambda _task: names


# -- what the lead does, step by step ------------------------------------------------------


def lead_plan(question: str) -> list[tuple[str, str]]:
    """The lead's steps for ``question``: ``(tool, agent)`` pairs, in order.

    A ``transfer_task`` to each specialist whose tool :func:`~agentrt.cli._demo.guided_plan`
    picks, then a ``handoff`` to the scribe when the question asks for a note.
    """
    tools = guided_plan(question)
    steps = [(TRANSFER_TASK, SPECIALISTS[tool]) for tool in tools if tool in SPECIALISTS]
    if "write_note" in tools:
        steps.append((HANDOFF, SCRIBE))
    return steps


def _agent_argument(call: ToolCall) -> str:
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return ""
    value = arguments.get("agent") if isinstance(arguments, dict) else None
    return value if isinstance(value, str) else ""


def _team_calls(messages: Sequence[Message]) -> list[ToolCall]:
    return [
        call
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
        if call.name in (TRANSFER_TASK, HANDOFF)
    ]


def delegated_answers(messages: Sequence[Message]) -> dict[str, str]:
    """What each specialist answered in ``messages``: agent name -> its answer."""
    agents = {call.id: _agent_argument(call) for call in _team_calls(messages)}
    return {
        agents[message.tool_call_id]: message.content
        for message in messages
        if isinstance(message, ToolMessage)
        and message.name == TRANSFER_TASK
        and message.tool_call_id in agents
    }


# The form of each specialist's task, for a grammar-constrained small model: it writes
# the arithmetic or the city, copied from the question. Free, SmolLM2-135M wrote
# "7, 7, 7, 7, ..." until the length limit, and the mathematician answered with a
# story about the Fibonacci sequence.
_TASK_FORMS = {
    SPECIALISTS["calculate"]: r"^What is [-(0-9][-+*/%() .0-9]{0,60}[)0-9]\?$",
    SPECIALISTS["get_weather"]: r"^What is the weather in [A-Z][a-z]{1,20}( [A-Z][a-z]{1,20})?\?$",
}


def _only(request: ModelRequest, tool: str, agent: str) -> ModelRequest:
    """``request`` whose ``tool`` takes ``agent`` and nothing else as its ``agent``."""
    tools = copy.deepcopy(request.tools)
    for spec in tools:
        function = spec.get("function", {})
        if function.get("name") != tool:
            continue
        parameters = function.setdefault("parameters", {})
        properties = parameters.setdefault("properties", {})
        properties["agent"] = {"type": "string", "enum": [agent]}
        required = ["agent"]
        if tool == TRANSFER_TASK:
            properties["task"] = {"type": "string", "pattern": _TASK_FORMS[agent]}
            properties.pop("expected_output", None)
            required.append("task")
        parameters["required"] = required
    return dataclasses.replace(request, tools=tools)


def _steer_lead(request: ModelRequest) -> ModelRequest:
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    done = {
        (call.name, _agent_argument(call))
        for call in _team_calls(since_last_user_message(request.messages))
    }
    steps = lead_plan(users[-1].content if users else "")
    step = next((step for step in steps if step not in done), None)
    if step is None:
        return steer(request, None)
    tool, agent = step
    return steer(_only(request, tool, agent), tool)


# -- the scripted team ---------------------------------------------------------------------


def _specialist_turn(tool: str, question: str, results: dict[str, str]) -> ScriptItem:
    expression, city = question_parts(question)
    if tool not in results:
        arguments = {"expression": expression} if tool == "calculate" else {"city": city}
        return ToolCall(name=tool, arguments=arguments)
    if tool == "calculate":
        return f"{expression} = {results[tool]}."
    return f"The weather in {city} is {results[tool]}."


def _scribe_turn(since: Sequence[Message], results: dict[str, str]) -> ScriptItem:
    found = list(delegated_answers(since).values())
    if "write_note" not in results:
        note = "\n".join(found) or "Nothing found."
        return AssistantMessage(
            reasoning="The lead handed me the conversation to save what the team found.",
            tool_calls=(
                ToolCall(name="write_note", arguments={"filename": DEMO_NOTE, "text": note}),
            ),
        )
    written = results["write_note"]
    if written.startswith(REJECTED_PREFIX):
        saved = f"I did not save the note ({written})."
    else:
        saved = f"I saved it in {DEMO_NOTE}."
    return " ".join([*found, saved])


def _lead_turn(question: str, since: Sequence[Message]) -> ScriptItem:
    done = {(call.name, _agent_argument(call)) for call in _team_calls(since)}
    steps = [step for step in lead_plan(question) if step not in done]
    expression, city = question_parts(question)
    tasks = {
        SPECIALISTS["calculate"]: f"What is {expression}?",
        SPECIALISTS["get_weather"]: f"What is the weather in {city}?",
    }
    delegations = [agent for tool, agent in steps if tool == TRANSFER_TASK]
    if delegations:
        return AssistantMessage(
            reasoning=(
                "The specialists do not depend on each other's answers, so both work at once."
                if len(delegations) > 1
                else f"This is work for the {delegations[0]}."
            ),
            tool_calls=tuple(
                ToolCall(name=TRANSFER_TASK, arguments={"agent": agent, "task": tasks[agent]})
                for agent in delegations
            ),
        )
    if steps:  # the hand-off: the scribe saves the note and answers
        return AssistantMessage(
            reasoning="Saving a note is the scribe's job: I hand the conversation over.",
            tool_calls=(ToolCall(name=HANDOFF, arguments={"agent": SCRIBE}),),
        )
    found = list(delegated_answers(since).values())
    return " ".join(found) or (
        "I lead a small team: ask me for arithmetic or the weather, and to save a note."
    )


def _team_turn(request: ModelRequest) -> ScriptItem:
    """The turn of whichever agent of the team asks: known by the tools it offers."""
    offered = {spec.get("function", {}).get("name") for spec in request.tools}
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    question = users[-1].content if users else ""
    since = since_last_user_message(request.messages)
    results = {m.name: m.content for m in since if isinstance(m, ToolMessage)}
    for tool in SPECIALISTS:
        if tool in offered:
            return _specialist_turn(tool, question, results)
    if "write_note" in offered:
        return _scribe_turn(since, results)
    return _lead_turn(question, since)


def scripted_team_model() -> ScriptedModel:
    """The deterministic model of every agent of the demo's team.

    Each agent is known by the tools its request offers. For the default question the
    lead delegates the arithmetic and the weather at once, then hands off to the scribe,
    which asks to write the note and answers: ``6 * 7 = 42, and the weather in Paris is
    sunny, 21 C. I saved it in demo-answers.txt.``
    """
    return ScriptedModel(_team_turn, name="scripted-team", chunk_size=6, record=False)
