"""The run the load and soak tests repeat, and exactly what it must produce.

The run of ``benches/bench_agent.py``: a prompt, one tool call ``add(1, 2)``, the
answer. The expected messages and stream events are written out in full so that a
run that "succeeds" with anything else counts as wrong.
"""

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentrt import (
    Agent,
    AgentEvents,
    AssistantMessage,
    EventContext,
    Message,
    ModelRequest,
    RunResult,
    ScriptedModel,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentrt.models.scripted import ScriptItem
from agentrt.stream.events import (
    AgentChoiceEvent,
    StreamEvent,
    ToolCallResponseEvent,
)
from agentrt.stream.validate import validate

INSTRUCTIONS = "You add numbers."
PROMPT = "What is 1 + 2?"
ANSWER = "The answer is 3."
CALL = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})

# ScriptedModel's token estimate, about four characters a token: the first call reads
# "You add numbers." + PROMPT (30 characters, 8 tokens) and writes "add" + the arguments
# (19, 5); the second reads those and the tool's "3" (31, 8) and writes ANSWER (16, 4).
EXPECTED_MESSAGES: list[Message] = [
    UserMessage(content=PROMPT),
    AssistantMessage(tool_calls=(CALL,), usage=Usage(8, 5, 0, 0, 1)),
    ToolMessage(content="3", tool_call_id="call_1", name="add"),
    AssistantMessage(content=ANSWER, usage=Usage(8, 4, 0, 0, 1)),
]
"""What one run adds to the conversation (``RunResult.messages``)."""

# Eight-character chunks: the 16-character arguments and answer come in two each.
EXPECTED_STREAM_TYPES = [
    "user_message",
    "stream_started",
    "partial_tool_call",
    "partial_tool_call",
    "token_usage",
    "tool_call",
    "tool_call_response",
    "agent_choice",
    "agent_choice",
    "token_usage",
    "stream_stopped",
]
"""The event types of one run's stream, in order."""

Script = Callable[[ModelRequest], ScriptItem | Awaitable[ScriptItem]]
"""What the ScriptedModel of :func:`new_agent` answers with."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def respond(request: ModelRequest) -> ScriptItem:
    """The model: call ``add`` when the user asked, answer once the tool did."""
    return CALL if request.messages[-1].role == "user" else ANSWER


class ToolCallAudit:
    """A user's hook on ``tool:call:before``: counts the calls it saw.

    Registered on every agent, so that a run that skipped the hooks is wrong and the
    baseline of handler counts is a user's handler, not an empty bus.
    """

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, ctx: EventContext[Any, Any]) -> None:
        self.calls += 1


def new_agent(audit: ToolCallAudit, script: Script = respond) -> Agent:
    """An agent for the standard run, ``audit`` on its tool calls.

    Args:
        audit: The hook to register on ``tool:call:before``.
        script: What the model answers with: :func:`respond`, or a wrapper of it
            that adds latency.
    """
    agent = Agent(
        model=ScriptedModel(script, record=False), tools=[add], instructions=INSTRUCTIONS
    )
    agent.events.on(AgentEvents.TOOL_CALL_BEFORE, audit)
    return agent


def result_problem(result: RunResult[str]) -> str | None:
    """What is wrong with a run's result, or ``None`` when it is exactly the expected one."""
    if result.output != ANSWER:
        return f"output {result.output!r}"
    if result.messages != EXPECTED_MESSAGES:
        return f"messages {result.messages!r}"
    return None


def stream_problem(events: Sequence[StreamEvent]) -> str | None:
    """What is wrong with a run's stream, or ``None`` when it is exactly the expected one."""
    types = [event.type for event in events]
    if types != EXPECTED_STREAM_TYPES:
        return f"event types {types}"
    violations = validate(events)
    if violations:
        return f"violations {[str(v) for v in violations]}"
    text = "".join(event.content for event in events if isinstance(event, AgentChoiceEvent))
    if text != ANSWER:
        return f"answer text {text!r}"
    (response,) = [event for event in events if isinstance(event, ToolCallResponseEvent)]
    if response.response != "3" or response.tool_call.id != CALL.id:
        return f"tool call response {response!r}"
    return None


async def executed_run_problem(agent: Agent) -> str | None:
    """Run ``agent`` once with ``execute``; what is wrong with the result, or ``None``."""
    return result_problem(await agent.execute(PROMPT))


async def streamed_run_problem(agent: Agent) -> str | None:
    """Run ``agent`` once with ``stream``; what is wrong with the stream, or ``None``."""
    events: list[StreamEvent] = []
    async with agent.stream(PROMPT) as stream:
        async for event in stream:
            events.append(event)
    result = stream.result
    if result is None:
        return "the stream's run left no result"
    return stream_problem(events) or result_problem(result)
