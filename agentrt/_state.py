"""An agent's lifecycle states and the result of one run."""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, NoReturn, TypeVar

from agentrt.messages import Message, ToolCall, Usage

__all__ = ("AgentState", "RunResult")

T = TypeVar("T")


class _Alone(Mapping[str, Usage]):
    """No shares: the usage of a run of one agent alone (see ``RunResult.agent_usage``).

    Empty and hashable, so that one instance is every result's default (a dataclass
    refuses an unhashable default) and a run makes no mapping of its own.
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> NoReturn:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


_ALONE = _Alone()


class AgentState(StrEnum):
    """Where an agent is in its life; every change dispatches ``agent:state:change``."""

    IDLE = "idle"
    RUNNING = "running"
    CALLING_MODEL = "calling_model"
    RUNNING_TOOLS = "running_tools"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(slots=True, frozen=True)
class RunResult(Generic[T]):
    """What one :meth:`Agent.execute` produced.

    Attributes:
        output: The content of the final assistant message, as stored.
        messages: The messages this run added to the conversation, in order.
        usage: Tokens spent by this run's model calls: a team's run (see
            :mod:`agentrt.team`) counts those of every agent that worked in it.
        iterations: How many turns of the loop the run took.
        value: The validated structured output when ``output_type`` was given;
            otherwise the same text as ``output``. ``None`` for a structured run that
            ended waiting before its answer.
        pending_tool_calls: The tool calls the run left open, in the model's order:
            empty when the run finished; otherwise it ended *waiting* (an external
            tool's call, a call deferred for approval) and ``output`` is the text so
            far. Answer them with ``execute(tool_results=...)`` (see
            :mod:`agentrt.deferred`).
        agent_usage: Each agent's share of ``usage``, by name, for a run in which
            other agents worked (sub-agents, agents handed to); empty for a run of
            one agent alone, whose ``usage`` is all its own.
    """

    output: str
    messages: list[Message]
    usage: Usage
    iterations: int
    value: T
    pending_tool_calls: tuple[ToolCall, ...] = ()
    agent_usage: Mapping[str, Usage] = _ALONE
