"""The agent of the replay tests: ``tests.durable.replay_app:make``, on a real HTTP model.

Its model is an :class:`~agentrt.models.openai.OpenAIChatModel` at :data:`ENDPOINT`
(a local chat-completions server the recording test starts; nothing listens there
otherwise); its tools are test_durable_server's, which note each call in ``CALLS``.
``AGENTRT_TEST_CHANGE`` makes a changed agent, as a later version of the code would be:

* ``no-add``: the ``add`` tool is gone;
* ``no-confirm``: ``delete_file`` runs without asking first;
* ``renamed``: the agent is named ``helper`` rather than ``assistant``;
* ``doubled``: a handler doubles ``add``'s first argument before it runs;
* ``instructions``: its instructions say more than :data:`INSTRUCTIONS`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agentrt.agent import Agent
from agentrt.bus import EventContext
from agentrt.models.openai import OpenAIChatModel
from agentrt.tools import Tool, tool
from tests.durable.test_durable_server import CALLS, add, delete_file

__all__ = ("CALLS", "ENDPOINT", "INSTRUCTIONS", "MODELS", "make")

INSTRUCTIONS = "You add numbers and delete files."

ENDPOINT = ["http://127.0.0.1:9/v1"]
"""Where the model answers: set by the test that records; the discard port otherwise."""

MODELS: list[OpenAIChatModel] = []
"""The models made, for the tests to close."""


@tool(name="delete_file")
def delete_file_unasked(path: str) -> str:
    """Delete a file (a person approves each call)."""
    CALLS.append(f"delete {path}")
    return f"deleted {path}"


def make() -> Agent:
    """The agent, or the changed one ``AGENTRT_TEST_CHANGE`` names."""
    change = os.environ.get("AGENTRT_TEST_CHANGE", "")
    model = OpenAIChatModel("replay-model", base_url=ENDPOINT[0], max_retries=0)
    MODELS.append(model)
    tools: list[Tool[Any, Any] | Callable[..., Any]] = [add, delete_file]
    if change == "no-add":
        tools = [delete_file]
    elif change == "no-confirm":
        tools = [add, delete_file_unasked]
    name = "helper" if change == "renamed" else "assistant"
    instructions = INSTRUCTIONS + (" Be terse." if change == "instructions" else "")
    agent = Agent(model=model, tools=tools, name=name, instructions=instructions)
    if change == "doubled":
        agent.events.on("tool:call:before", _double)
    return agent


def _double(ctx: EventContext[Any, Any]) -> None:
    arguments = ctx.output
    if ctx.parameters["tool_name"] == "add" and isinstance(arguments, dict):
        ctx.output = {**arguments, "a": arguments["a"] * 2}
