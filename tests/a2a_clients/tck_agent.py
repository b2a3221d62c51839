"""An agent for the A2A TCK (a2aproject/a2a-tck), run by hand: ``agentrt serve`` targets.

The TCK picks its scenarios by ``messageId`` prefixes, which an agent never sees (it
reads the message's text). Two agents stand in: :func:`complete` answers every task
with "Hello from TCK" (the TCK's ``tck-complete-task``), :func:`ask` asks for a
confirmation first, so that every task waits in ``INPUT_REQUIRED`` (its
``tck-input-required``) until a message approves or rejects it::

    agentrt serve tests/a2a_clients/tck_agent.py:complete --store memory --port 9999
    ./run_tck.py --sut-host http://127.0.0.1:9999 --transport jsonrpc,http_json

With :func:`ask`, every task holds a run while it waits: serve it with
``--max-runs 1000 --max-sessions 10000``, or the TCK's many tasks reach the caps.

CORE-HIST-005/006 (SHOULD: a task's history holds the follow-up messages, in order)
send two text messages to a task that waits, then one that completes it. The first
text answers :func:`ask`'s confirmation (any text but ``approve`` rejects the call
with it as the reason) and the task completes; the second is then refused, as A2A
1.0 says of a message to a task in a terminal state (``UnsupportedOperationError``):
a task does not restart; a new task of the same context goes on. The TCK's own SUT
keeps the task waiting by the messages' ids, which an agent does not read. The
server keeps every such answer in the history, in order, with the client's
``messageId`` (tests/test_a2a_server.py,
``test_each_answer_to_a_task_that_asks_again_is_in_its_history_in_order``).
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
