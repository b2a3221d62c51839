"""A2A (the Agent2Agent protocol): agentrt's agents for other agents, and theirs for ours.

Needs the ``a2a`` extra (``pip install 'agentrt[a2a]'``: the official ``a2a-sdk``).
Names are read from their modules on first use: importing the package loads neither
the SDK nor the server.

- :mod:`agentrt.a2a.server`: the server side. ``agentrt serve`` (and
  :func:`~agentrt.server.create_app`) answers A2A with :class:`A2AEndpoint`: the agent
  card, the JSON-RPC and HTTP+JSON bindings, contexts as sessions and tasks as runs.
  :mod:`agentrt.a2a._task` tells a run's events as the task's state and updates,
  :mod:`agentrt.a2a._index` keeps what a context keeps beside them (the client's
  messages, how its tasks ended), :mod:`agentrt.a2a._card` makes the card and
  :mod:`agentrt.a2a._body` caps request bodies.
- :mod:`agentrt.a2a.remote`: the client side. :class:`RemoteAgent` is an agent served
  over A2A elsewhere, as a sub-agent of a team of this process.
"""

from typing import TYPE_CHECKING

from agentrt._lazy import attach

if TYPE_CHECKING:
    from agentrt.a2a.remote import RemoteAgent as RemoteAgent
    from agentrt.a2a.remote import RemoteAgentError as RemoteAgentError
    from agentrt.a2a.server import A2AEndpoint as A2AEndpoint
    from agentrt.a2a.server import agent_card as agent_card
    from agentrt.a2a.server import context_session_id as context_session_id

__all__ = ("A2AEndpoint", "RemoteAgent", "RemoteAgentError", "agent_card", "context_session_id")

_NAMES = {
    "A2AEndpoint": "agentrt.a2a.server",
    "RemoteAgent": "agentrt.a2a.remote",
    "RemoteAgentError": "agentrt.a2a.remote",
    "agent_card": "agentrt.a2a.server",
    "context_session_id": "agentrt.a2a.server",
}

__getattr__, __dir__ = attach(__name__, _NAMES, globals())
