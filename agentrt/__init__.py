"""agentrt: an asyncio-native agent runtime."""

from agentrt.bus import EventBus as EventBus
from agentrt.bus import EventContext as EventContext
from agentrt.events import AgentEvents as AgentEvents
from agentrt.events import EventSemantics as EventSemantics

__version__ = "0.1.0"
