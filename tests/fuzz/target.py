"""The agent the fuzzed server serves: answers at once, with one tool to call."""

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall
from agentrt.models.scripted import ScriptItem


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _answer(request: ModelRequest) -> ScriptItem:
    # A tool call on the first turn of every message, then a text answer: runs that use
    # the tool path too.
    last = request.messages[-1]
    if last.role == "user":
        return ToolCall(name="add", arguments={"a": 1, "b": 2})
    return "1 + 2 = 3"


def make() -> Agent:
    """A new agent for each session."""
    return Agent(model=ScriptedModel(_answer), tools=[add])
