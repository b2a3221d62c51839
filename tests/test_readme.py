"""Issue 28, points 2 and 3: every Python block of the README runs as written.

Each block is a program of its own, run by this interpreter in a fresh directory, and
prints what the README says it does. The block the README names as a file
(```` ```python app.py ````) is saved under that name and served with ``agentrt
serve app:make_agent`` from its folder, as the README says: one session holds a
conversation of several turns.
"""

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agentrt.stream import AgentChoiceEvent, SSEEventDecoder
from tests.cli.support import REPO, child_env, serving

README = REPO / "README.md"

# A fenced Python block: its info string (after "python") and its code.
_BLOCK = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """A Python block of the README: the section it is in, the file it names, its code."""

    section: str
    filename: str | None
    code: str


def readme_blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    blocks = []
    for match in _BLOCK.finditer(text):
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.MULTILINE)
        filename = match["info"].strip() or None
        blocks.append(Block(headings[-1], filename, match["code"]))
    return blocks


# What each block prints (in its section); a block the README adds must say too.
PRINTS = {
    "Quickstart": [
        "calling add {'a': 1, 'b': 2}",
        "The answer is 3. Usage(",
        "calling add {'a': 2, 'b': 2}",
        '"type":"tool_call_response"',
        '"response":"4"',
        '"type":"stream_stopped"',
    ],
    "Serve your agent": [],  # a module to serve: see the conversation test below
    "A2A: agents of other frameworks call yours": [
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
        "said: Hello from agentrt, over A2A.",
    ],
    "Calling an A2A agent": [
        "card: researcher: Finds facts.",
        "researcher: Lyon has 522,250 inhabitants.",
        "lead: About half a million.",
    ],
    "Tools the caller runs, and calls that wait": [
        'the caller runs locate {"precise": true}',
        "You are in Lyon. ()",
    ],
    "Teams": [
        "researcher for call_1: Lyon has 522,250 inhabitants.",
        "lead: About half a million people live in Lyon.",
        "{'lead': 2, 'researcher': 1}",
    ],
    "Hooks in a team": ["adder called add for lead", "lead called transfer_task"],
    "Tools from MCP servers": ['"timezone": "Asia/Tokyo"'],
    "Traces (OpenTelemetry)": ['"name": "chat scripted"', '"name": "invoke_agent greeter"'],
    "Durable runs": ["Order 42 is charged and shipped."],
    "Fork a session": [
        "['model', 'add', 'model']",
        "['model'] It is 3.",
        "['model', 'add', 'model'] ['And 1 + 2, again?']",
    ],
}


def test_every_python_block_of_the_readme_is_checked() -> None:
    assert [block.section for block in readme_blocks()] == list(PRINTS)


@pytest.mark.parametrize("block", readme_blocks(), ids=lambda block: block.section)
def test_a_readme_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    program = tmp_path / (block.filename or "block.py")
    program.write_text(block.code, encoding="utf-8")
    # No endpoint from the environment: the blocks run offline, as the README says.
    env = child_env(OPENAI_BASE_URL="", AGENTRT_MODEL="")
    completed = subprocess.run(
        [sys.executable, program.name],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    missing = [text for text in PRINTS[block.section] if text not in completed.stdout]
    assert missing == [], completed.stdout


def _answer(client: httpx.Client, session: str, message: str) -> str:
    """Send ``message`` to the session: the text of the run's answer."""
    decoder = SSEEventDecoder()
    events = []
    with client.stream(
        "POST", f"/sessions/{session}/messages", json={"message": message}
    ) as response:
        assert response.status_code == 200
        for piece in response.iter_bytes():
            events += decoder.feed(piece)
    assert events[-1].event.type == "stream_stopped"
    return "".join(e.content for _, e in events if isinstance(e, AgentChoiceEvent))


def test_the_readme_app_serves_a_conversation_of_any_number_of_turns(tmp_path: Path) -> None:
    (app,) = [block for block in readme_blocks() if block.filename == "app.py"]
    (tmp_path / "app.py").write_text(app.code, encoding="utf-8")
    with (
        serving("app:make_agent", env=child_env(), cwd=tmp_path) as served,
        httpx.Client(base_url=served.url, timeout=30) as client,
    ):
        session = client.post("/sessions").json()["id"]
        answers = [
            _answer(client, session, message)
            for message in ("What is 2 + 3?", "And 40 + 2?", "Thanks!", "What is -7 + 10?")
        ]
        roles = [m["role"] for m in client.get(f"/sessions/{session}/messages").json()["messages"]]
    assert answers == [
        "The sum is 5.",
        "The sum is 42.",
        "I add two whole numbers: ask me, say, what is 2 + 3?",
        "The sum is 3.",
    ]
    turn = ["user", "assistant", "tool", "assistant"]
    assert roles == ["system", *turn, *turn, "user", "assistant", *turn]
