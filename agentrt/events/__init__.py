"""The event catalogue: names, dispatch semantics and params types."""

from agentrt.events.names import AgentEvents as AgentEvents
from agentrt.events.params import *  # noqa: F403
from agentrt.events.params import __all__ as _params_all
from agentrt.events.registry import EVENT_PARAMS as EVENT_PARAMS
from agentrt.events.registry import EVENT_SEMANTICS as EVENT_SEMANTICS
from agentrt.events.registry import EXTENSION_POINTS as EXTENSION_POINTS
from agentrt.events.registry import EventSemantics as EventSemantics
from agentrt.events.registry import get_event_semantics as get_event_semantics
from agentrt.events.registry import get_params_type as get_params_type

__all__ = (
    "EVENT_PARAMS",
    "EVENT_SEMANTICS",
    "EXTENSION_POINTS",
    "AgentEvents",
    "EventSemantics",
    "get_event_semantics",
    "get_params_type",
    *_params_all,
)
