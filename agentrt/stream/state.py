"""What an agent's streams share: :class:`StreamState`, one per agent (``agent.stream_state``).

A stream lives as long as one run; a *session* (the agent's conversation) outlives
it. What the session's streams must remember lives here, in one object the agent
owns, so that it goes with the agent: the session's token usage (``token_usage``
events report it), the approvals given "for the session" or "for this tool", and the
session's title and compactions.
"""

from dataclasses import dataclass, field

from agentrt.messages import Message, Usage

__all__ = ("Approvals", "SessionState", "StreamState")


@dataclass(slots=True)
class Approvals:
    """What the session has approved for good.

    Attributes:
        everything: Every tool call runs without asking ("approve-session").
        tools: Tools whose calls run without asking ("approve-tool").
    """

    everything: bool = False
    tools: set[str] = field(default_factory=set)

    def record(self, decision: str, tool_name: str) -> None:
        """Keep what a decision on a call of ``tool_name`` approves for good, if anything."""
        if decision == "approve-session":
            self.everything = True
        elif decision == "approve-tool":
            self.tools.add(tool_name)


@dataclass(slots=True)
class SessionState:
    """What an agent's session remembers across streams: its title and compactions.

    Attributes:
        title: The session's title, once made.
        summary: The latest compaction's summary.
        compactions: How many compactions the conversation went through.
        compacted_usage: The latest message whose reported usage predates the latest
            compaction: its figures describe the longer conversation, so
            :func:`~agentrt.stream.session.context_length` estimates instead of
            trusting them.
    """

    title: str | None = None
    summary: str | None = None
    compactions: int = 0
    compacted_usage: Message | None = None


@dataclass(slots=True)
class StreamState:
    """Everything an agent's streams share across runs (``agent.stream_state``).

    Attributes:
        usage: The tokens the session's model calls spent so far.
        approvals: Approvals that outlive one stream.
        session: The session's title and compactions.
    """

    usage: Usage = field(default_factory=Usage)
    approvals: Approvals = field(default_factory=Approvals)
    session: SessionState = field(default_factory=SessionState)
