"""The conversation every framework runs in the peer benches, in plain Python.

Each peer module (``peer_pydantic_ai``, ``peer_openai_agents``, ``peer_strands``)
expresses it in its framework's own types: the user asks PROMPT, the scripted
model calls ``add(a=1, b=2)``, and once it sees the tool's result "3" it answers
ANSWER. A model that sees anything else answers something else, so a run whose
tool did not run (or returned a wrong value) fails the check on its output.

In the team workload (peer_teams.py) that agent is the sub-agent SUB_AGENT of a
lead, whose scripted model calls it (as a tool, ``transfer_task`` in agentrt) with
PROMPT as the task and passes its answer on.

This module has no ``collect``: it is a helper of peer_runs.py, peer_streaming.py and
peer_teams.py.
"""

from __future__ import annotations

PROMPT = "What is 1 + 2?"
ANSWER = "The answer is 3."
CALL_ID = "call_1"
ARGUMENTS = {"a": 1, "b": 2}
RESULT = "3"  # the tool's result as the model sees it (text)
SUB_AGENT = "adder"  # the team workload's sub-agent, and the name of the tool that runs it
LEAD_CALL_ID = "call_lead"


async def add(a: int, b: int) -> int:
    """Add two integers.

    Async because each peer runs a plain ``def`` tool in a worker thread
    (``asyncio.to_thread`` or anyio's), while agentrt calls it inline: with a
    coroutine no framework pays a thread hop, so the rows compare the runtimes.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


def answer_to(tool_result: object) -> str:
    """What the scripted model says once it has seen ``tool_result``."""
    if str(tool_result) == RESULT:
        return ANSWER
    return f"The tool returned {tool_result!r}."


class HookCount:
    """How many tool calls the frameworks' tool-call-before hooks saw: proof they ran."""

    def __init__(self) -> None:
        self.calls = 0


HOOKED = HookCount()
