"""``agentrt demo`` on the real SmolLM2-135M ends with an answer in words.

The command runs in this process as a person runs it (``--json`` to read its events);
with no terminal to ask and no ``--yes`` the note is refused. The answer is the text
after the last tool result: it must state what the tools returned and not be a tool
call written as text, which is how the demo used to end (``functions.write_note:
{"text": "This is a note.",}``). ``benches/demo_answers.py`` measures ten prompts.
"""

import json

import pytest

from agentrt.cli import main

pytestmark = [pytest.mark.live, pytest.mark.usefixtures("demo_folder")]

DEFAULT = "What is 6 * 7, and what is the weather in Paris? Save both answers in a note."


def run_demo(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[dict[str, str], str]:
    """What each tool returned, and the final answer."""
    assert main(["demo", *arguments, "--json"]) == 0
    results: dict[str, str] = {}
    pieces: list[str] = []
    for line in capsys.readouterr().out.splitlines():
        event = json.loads(line)
        if event["type"] == "tool_call_response":
            results[event["tool_call"]["function"]["name"]] = event["response"]
            pieces.clear()
        elif event["type"] == "agent_choice":
            pieces.append(event["content"])
    return results, "".join(pieces).strip()


def assert_words(answer: str) -> None:
    assert answer
    for mark in ("functions.", "{", "}", "<|"):
        assert mark not in answer, answer


@pytest.mark.parametrize("approve", [True, False], ids=["yes", "no-terminal"])
def test_the_default_question_ends_with_what_the_tools_returned(
    capsys: pytest.CaptureFixture[str], approve: bool
) -> None:
    results, answer = run_demo(capsys, *(["--yes"] if approve else []))

    assert results["calculate"] == "42"
    assert results["get_weather"] == "sunny, 21 C"
    assert results["write_note"].startswith("wrote" if approve else "rejected by the user")
    assert_words(answer)
    assert "42" in answer
    assert "sunny" in answer


@pytest.mark.parametrize(
    ("question", "tool", "result", "stated"),
    [
        ("What is 12 * 12?", "calculate", "144", "144"),
        ("How is the weather in Tokyo?", "get_weather", "cloudy, 18 C", "cloudy"),
    ],
)
def test_a_short_question_is_answered_with_its_tools_result(
    capsys: pytest.CaptureFixture[str], question: str, tool: str, result: str, stated: str
) -> None:
    results, answer = run_demo(capsys, question, "--yes")

    assert results == {tool: result}
    assert_words(answer)
    assert stated in answer
