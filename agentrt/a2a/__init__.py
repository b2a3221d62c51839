"""A2A (the Agent2Agent protocol): agentrt's agents for other agents, and theirs for ours.

Needs the ``a2a`` extra (``pip install 'agentrt[a2a]'``: the official ``a2a-sdk``).
Names are read from their modules on first use: importing the package loads neither
the SDK nor the client.

- :mod:`agentrt.a2a.remote`: the client side. :class:`RemoteAgent` is an agent served
  over A2A elsewhere, as a sub-agent of a team of this process.
"""

from typing import TYPE_CHECKING

from agentrt._lazy import attach

if TYPE_CHECKING:
    from agentrt.a2a.remote import RemoteAgent as RemoteAgent
    from agentrt.a2a.remote import RemoteAgentError as RemoteAgentError

__all__ = ("RemoteAgent", "RemoteAgentError")

_NAMES = {
    "RemoteAgent": "agentrt.a2a.remote",
    "RemoteAgentError": "agentrt.a2a.remote",
}

__getattr__, __dir__ = attach(__name__, _NAMES, globals())
