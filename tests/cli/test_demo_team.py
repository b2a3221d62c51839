"""``agentrt demo --team``: a lead that delegates and hands off, every line attributed.

On the scripted model the lead gives the arithmetic and the weather to two specialists at
once (``transfer_task``), hands the conversation to the scribe (``handoff``), which asks
to write the note and answers. The local model's run is tests/live/test_demo_team_live.py;
here, how its steering shapes the requests.
"""

import json
import re
from pathlib import Path

import pytest

import agentrt
from agentrt import ScriptedModel, ToolCall
from agentrt.cli import _commands as commands
from agentrt.cli import _demo_team as team
from agentrt.cli._app import DEMO_QUESTION
from agentrt.cli._demo import DEMO_NOTE
from agentrt.cli._prompt import NO_TERMINAL_REASON
from agentrt.cli._render import RichRenderer, make_renderer
from agentrt.cli._specs import parse_model_spec
from agentrt.models.base import ModelRequest
from agentrt.stream import StreamEvent, validate
from agentrt.stream.events import parent_tool_call_id
from tests.cli.support import cli, in_order
from tests.cli.test_parts import FakeTerminal

Step = tuple[str, str | None, str]
"""An event as the tests compare it: type, agent_name, and the tool it concerns."""


def steps(events: list[StreamEvent]) -> dict[str | None, list[Step]]:
    """The events of each run of the stream, keyed by the agent its task went to.

    ``None``: the stream's own (the lead's, then the scribe's); a specialist's events
    under its name, found through the ``transfer_task`` call that started its run.
    Repeats of a step (a call's partial_tool_calls, text chunks) count once.
    """
    delegated: dict[str, str] = {}
    runs: dict[str | None, list[Step]] = {}
    for event in events:
        call = getattr(event, "tool_call", None)
        tool = call.function.name if call is not None else ""
        if event.type == "tool_call" and call is not None and tool == "transfer_task":
            delegated[call.id] = json.loads(call.function.arguments)["agent"]
        parent = parent_tool_call_id(event)
        run = runs.setdefault(delegated[parent] if parent else None, [])
        step = (event.type, event.agent_name, tool)
        if not run or run[-1] != step:
            run.append(step)
    return runs


def specialist_run(agent: str, tool: str) -> list[Step]:
    """A specialist's run: it calls its tool, then answers with what the tool returned."""
    return [
        ("partial_tool_call", agent, tool),
        ("token_usage", agent, ""),
        ("tool_call", agent, tool),
        ("tool_call_response", agent, tool),
        ("agent_choice", agent, ""),
        ("token_usage", agent, ""),
    ]


def test_the_scripted_team_delegates_at_once_hands_off_and_the_scribe_answers(
    capsys: pytest.CaptureFixture[str], isolated: Path
) -> None:
    result = cli(capsys, "demo", "--team", "--model", "scripted", "--yes", "--json")

    assert result.code == 0
    assert result.err == ""
    assert validate(result.events) == []
    runs = steps(result.events)
    assert runs[None] == [
        ("user_message", None, ""),
        ("stream_started", None, ""),
        ("team_info", "lead", ""),
        ("agent_choice_reasoning", "lead", ""),
        ("partial_tool_call", "lead", "transfer_task"),
        ("token_usage", "lead", ""),
        # Both delegations before either answer: the specialists work at once.
        ("tool_call", "lead", "transfer_task"),
        ("tool_call_response", "lead", "transfer_task"),
        ("agent_choice_reasoning", "lead", ""),
        ("partial_tool_call", "lead", "handoff"),
        ("token_usage", "lead", ""),
        ("tool_call", "lead", "handoff"),
        ("tool_call_response", "lead", "handoff"),
        ("agent_switching", "scribe", ""),
        ("agent_choice_reasoning", "scribe", ""),
        ("partial_tool_call", "scribe", "write_note"),
        ("token_usage", "scribe", ""),
        ("tool_call_confirmation", "scribe", "write_note"),
        ("tool_call", "scribe", "write_note"),
        ("tool_call_response", "scribe", "write_note"),
        ("agent_choice", "scribe", ""),
        ("token_usage", "scribe", ""),
        ("stream_stopped", None, ""),
    ]
    assert runs["mathematician"] == specialist_run("mathematician", "calculate")
    assert runs["forecaster"] == specialist_run("forecaster", "get_weather")
    answers = {
        event.tool_call.function.arguments: event.response
        for event in result.events
        if event.type == "tool_call_response"
    }
    assert answers == {
        '{"agent": "mathematician", "task": "What is 6 * 7?"}': "6 * 7 = 42.",
        '{"agent": "forecaster", "task": "What is the weather in Paris?"}': (
            "The weather in Paris is sunny, 21 C."
        ),
        '{"expression": "6 * 7"}': "42",
        '{"city": "Paris"}': "sunny, 21 C",
        '{"agent": "scribe"}': "scribe answers from here on.",
        json.dumps(
            {"filename": DEMO_NOTE, "text": "6 * 7 = 42.\nThe weather in Paris is sunny, 21 C."}
        ): f"wrote 48 characters to {isolated / DEMO_NOTE}",
    }
    said = "".join(event.content for event in result.events if event.type == "agent_choice")
    assert said.endswith(
        "6 * 7 = 42. The weather in Paris is sunny, 21 C. I saved it in demo-answers.txt."
    )
    assert (isolated / DEMO_NOTE).read_text() == (
        "6 * 7 = 42.\nThe weather in Paris is sunny, 21 C.\n"
    )


def test_the_team_demo_shows_who_says_what(
    capsys: pytest.CaptureFixture[str], isolated: Path
) -> None:
    result = cli(capsys, "demo", "--team", "--model", "scripted", "--yes")

    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[:6] == [
        "== agentrt demo --team ==",
        "   model: scripted (deterministic, offline)",
        "   team: lead -> mathematician (calculate), forecaster (get_weather); hands off to "
        "scribe (write_note, asks first)",
        f"   notes go to: {isolated}",
        "   approvals: automatic (--yes)",
        f"you: {DEMO_QUESTION}",
    ]
    # Each specialist's lines are its own, indented under the lead's call.
    in_order(
        result.out,
        "team: lead (answering), mathematician, forecaster, scribe\n",
        "thinking: The specialists do not depend on each other's answers, so both work at once.",
        '-> transfer_task(agent="mathematician", task="What is 6 * 7?")\n',
        '   [mathematician] -> calculate(expression="6 * 7")\n',
        "   [mathematician] <- calculate: 42\n",
        "   mathematician: 6 * 7 = 42.\n",
        "<- transfer_task: 6 * 7 = 42.\n",
    )
    in_order(
        result.out,
        '-> transfer_task(agent="forecaster", task="What is the weather in Paris?")\n',
        '   [forecaster] -> get_weather(city="Paris")\n',
        "   [forecaster] <- get_weather: sunny, 21 C\n",
        "   forecaster: The weather in Paris is sunny, 21 C.\n",
        "<- transfer_task: The weather in Paris is sunny, 21 C.\n",
        '-> handoff(agent="scribe")\n',
        "<- handoff: scribe answers from here on.\n",
        "=> scribe answers now\n",
        # The scribe speaks on the lead's conversation: its lines say it is the scribe.
        "[scribe] thinking: The lead handed me the conversation to save what the team found.",
        '[scribe] ?? write_note(filename="demo-answers.txt", text="6 * 7 = 42.\\nThe weather '
        'in Paris is sunny, 21 C.") needs your approval\n',
        "   approved (--yes)\n",
        "[scribe] <- write_note: wrote 48 characters to ",
        "scribe: 6 * 7 = 42. The weather in Paris is sunny, 21 C. "
        "I saved it in demo-answers.txt.\n",
    )


def test_at_a_terminal_the_team_demo_names_the_scribe_in_its_panels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("rich")
    events = cli(capsys, "demo", "--team", "--model", "scripted", "--yes", "--json").events
    out = FakeTerminal()
    renderer = make_renderer(out, environ={"NO_COLOR": "1"})
    assert isinstance(renderer, RichRenderer)
    renderer.console.width = 120
    for event in events:
        renderer.event(event)
    renderer.finish()

    # Labels in brackets are not taken for rich's markup: "[scribe]" is shown.
    in_order(
        re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()),
        "team: lead (answering), mathematician, forecaster, scribe",
        "tool call: transfer_task",
        "[mathematician] tool call: calculate",
        "[mathematician] result: calculate",
        "mathematician 6 * 7 = 42.",
        "=> scribe answers now",
        "[scribe] thinking The lead handed me the conversation",
        "[scribe] approval needed: write_note",
        "[scribe] result: write_note",
        "scribe 6 * 7 = 42. The weather in Paris is sunny, 21 C.",
    )


def test_a_note_refused_in_the_team_demo_is_said_by_the_scribe(
    capsys: pytest.CaptureFixture[str], isolated: Path
) -> None:
    result = cli(capsys, "demo", "--team", "--model", "scripted")

    assert result.code == 0
    in_order(
        result.out,
        "=> scribe answers now\n",
        f"[scribe] <- write_note: rejected by the user: {NO_TERMINAL_REASON}\n",
        "scribe: 6 * 7 = 42. The weather in Paris is sunny, 21 C. I did not save the note "
        f"(rejected by the user: {NO_TERMINAL_REASON}).\n",
    )
    assert not (isolated / DEMO_NOTE).exists()


@pytest.mark.parametrize(
    ("question", "delegated", "answer"),
    [
        ("What is 12 * (3 + 4)?", ["mathematician"], "lead: 12 * (3 + 4) = 84."),
        (
            "How is the weather in Rome and what is 2 + 3?",
            ["mathematician", "forecaster"],
            "lead: 2 + 3 = 5. The weather in Rome is sunny, 27 C.",
        ),
        (
            "Hello!",
            [],
            "lead: I lead a small team: ask me for arithmetic or the weather, and to save a note.",
        ),
    ],
)
def test_without_a_note_the_lead_answers_with_what_its_specialists_found(
    capsys: pytest.CaptureFixture[str], question: str, delegated: list[str], answer: str
) -> None:
    result = cli(capsys, "demo", "--team", question, "--model", "scripted", "--json")

    events = result.events
    assert validate(events) == []
    runs = steps(events)
    assert sorted(name for name in runs if name is not None) == sorted(delegated)
    assert "agent_switching" not in [kind for kind, _, _ in runs[None]]
    shown = cli(capsys, "demo", "--team", question, "--model", "scripted").out.splitlines()
    assert [line for line in shown if "tokens: " not in line][-1] == answer


def test_the_team_falls_back_to_its_scripted_model(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "demo", "--team", "--yes")

    assert "running the scripted demo model" in result.err
    assert "model: scripted (deterministic, offline)" in result.out
    assert "scribe: 6 * 7 = 42." in result.out
    assert commands._demo_model(parse_model_spec("scripted"), team=True).model.name == (
        "scripted-team"
    )


def test_the_help_of_demo_names_the_team_option(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli(capsys, "demo", "--help")

    assert result.code == 0
    assert "--team" in result.out
    assert "hands off to a scribe" in " ".join(result.out.split())


# -- on the local model: how the team is steered --------------------------------------------


def test_the_team_is_steered_on_a_local_model_only(tmp_path: Path) -> None:
    local = agentrt.LocalModel(loader=lambda: pytest.fail("not loaded"))
    guided = team.build_demo_team(local, directory=tmp_path)
    free = team.build_demo_team(team.scripted_team_model(), directory=tmp_path)

    before = agentrt.AgentEvents.LLM_STREAM_BEFORE
    for lead, steered in ((guided, True), (free, False)):
        assert [agent.name for agent in lead.sub_agents] == ["mathematician", "forecaster"]
        assert [agent.name for agent in lead.handoffs] == ["scribe"]
        for agent in (lead, *lead.sub_agents, *lead.handoffs):
            assert agent.events.has_handlers(before) is steered, agent.name


@pytest.mark.parametrize(
    ("question", "plan"),
    [
        (
            DEMO_QUESTION,
            [
                ("transfer_task", "mathematician"),
                ("transfer_task", "forecaster"),
                ("handoff", "scribe"),
            ],
        ),
        ("How is the weather in Tokyo?", [("transfer_task", "forecaster")]),
        ("Save a note saying hello", [("handoff", "scribe")]),
        ("Hello!", []),
    ],
)
def test_lead_plan_follows_the_question(question: str, plan: list[tuple[str, str]]) -> None:
    assert team.lead_plan(question) == plan


async def test_the_steered_lead_can_only_name_the_agent_of_each_step_in_turn(
    tmp_path: Path,
) -> None:
    # The lead's model, recorded: what it was offered at each call. Its specialists
    # answer on models of their own.
    lead_model = ScriptedModel(
        [
            ToolCall(name="transfer_task", arguments={"agent": "mathematician", "task": "1 + 1"}),
            ToolCall(name="transfer_task", arguments={"agent": "forecaster", "task": "Oslo"}),
            ToolCall(name="handoff", arguments={"agent": "scribe"}),
        ]
    )
    lead = team.build_demo_team(
        agentrt.LocalModel(loader=lambda: pytest.fail("not loaded")), directory=tmp_path
    )
    lead.model = lead_model
    for agent, answer in zip(
        (*lead.sub_agents, *lead.handoffs), ("2", "sunny", "Saved."), strict=True
    ):
        agent.model = ScriptedModel([answer])
    async with lead:
        await lead.execute("What is 1 + 1, and the weather in Oslo? Save it in a note.")

    def offered(request: ModelRequest) -> dict[str, object]:
        (spec,) = [s for s in request.tools if s["function"]["name"] == chosen(request)]
        parameters: dict[str, object] = spec["function"]["parameters"]
        return parameters

    def chosen(request: ModelRequest) -> str:
        choice = request.settings["tool_choice"]
        assert isinstance(choice, dict)
        name: str = choice["function"]["name"]
        return name

    requests = lead_model.requests
    assert [chosen(request) for request in requests] == [
        "transfer_task",
        "transfer_task",
        "handoff",
    ]
    assert [offered(r)["properties"]["agent"] for r in requests] == [  # type: ignore[index]
        {"type": "string", "enum": ["mathematician"]},
        {"type": "string", "enum": ["forecaster"]},
        {"type": "string", "enum": ["scribe"]},
    ]
    math_task, weather_task = (
        offered(r)["properties"]["task"]["pattern"]  # type: ignore[index]
        for r in requests[:2]
    )
    assert offered(requests[2])["required"] == ["agent"]
    assert all(offered(r)["required"] == ["agent", "task"] for r in requests[:2])
    # The tasks' forms take what the question says and nothing else.
    assert re.fullmatch(math_task, "What is 6 * (3 + 4)?")
    assert not re.fullmatch(math_task, "7, 7, 7, 7")
    assert re.fullmatch(weather_task, "What is the weather in New York?")
    assert not re.fullmatch(weather_task, "What is the weather in 7?")
    # What is narrowed is the request's copy: the tool itself keeps its schema.
    (schema,) = [s for s in requests[0].tools if s["function"]["name"] == "handoff"]
    assert "enum" not in schema["function"]["parameters"]["properties"]["agent"]


async def test_the_steered_lead_answers_in_words_once_its_plan_is_done(tmp_path: Path) -> None:
    lead = team.build_demo_team(
        agentrt.LocalModel(loader=lambda: pytest.fail("not loaded")), directory=tmp_path
    )
    lead.model = lead_model = ScriptedModel(
        [ToolCall(name="transfer_task", arguments={"agent": "mathematician", "task": "2"}), "4"]
    )
    lead.sub_agents[0].model = ScriptedModel(["4"])
    async with lead:
        result = await lead.execute("What is 2 + 2?")

    assert result.output == "4"
    assert [r.settings["tool_choice"] for r in lead_model.requests][1] == "none"
