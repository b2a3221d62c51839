"""The exceptions agentrt raises.

Every error is an :class:`AgentrtError`; each carries typed attributes and says in
its message what happened and the likely cause::

    AgentrtError
     └── InvalidEventNameError (also ValueError)

Handler exceptions raised on purpose (control flow) and cancellation are never
wrapped: they reach the caller as they were raised.
"""

__all__ = ("AgentrtError", "InvalidEventNameError")


class AgentrtError(Exception):
    """Base class of every error agentrt raises."""


class InvalidEventNameError(AgentrtError, ValueError):
    """An event name or pattern given to the bus is malformed.

    Attributes:
        name: The name as given.
        reason: What is wrong with it.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid event name {name!r}: {reason}")
