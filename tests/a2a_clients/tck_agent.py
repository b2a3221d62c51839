"""An agent for the A2A TCK (a2aproject/a2a-tck), run by hand: ``agentrt serve`` targets.

The TCK picks its scenarios by ``messageId`` prefixes, which an agent never sees (it
reads the message's text). Two agents stand in: :func:`complete` answers every task
with "Hello from TCK" (the TCK's ``tck-complete-task``), :func:`ask` asks for a
confirmation first, so that every task waits in ``INPUT_REQUIRED`` (its
``tck-input-required``) until a message approves or rejects it::

    agentrt serve tests/a2a_clients/tck_agent.py:complete --store memory --port 9999
    ./run_tck.py --sut-host http://127.0.0.1:9999 --transport jsonrpc,http_json
"""

from agentrt import Agent, ScriptedModel, ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptItem
from agentrt.tools import tool


@tool(requires_confirmation=True)
def proceed() -> str:
    """Go on with the task (a person approves it first)."""
    return "approved"


def _complete(request: ModelRequest) -> ScriptItem:
    return "Hello from TCK"


def _ask(request: ModelRequest) -> ScriptItem:
    if request.messages[-1].role == "tool":
        return "Hello from TCK"
    return ToolCall(name="proceed", arguments={})


def complete() -> Agent:
    """Every task completes with a text answer."""
    return Agent(model=ScriptedModel(_complete, record=False), name="tck", tools=[proceed])


def ask() -> Agent:
    """Every task waits for a person's approval, then completes."""
    return Agent(model=ScriptedModel(_ask, record=False), name="tck", tools=[proceed])
