"""The event catalogue: names, dispatch semantics, params types and accepted outputs.

Every event is declared once, in :data:`CATALOGUE` (:mod:`agentrt.events.catalogue`);
the enum, the registries, the typed hooks and ``docs/events.md`` come from it.
"""

from agentrt.events.catalogue import CATALOGUE as CATALOGUE
from agentrt.events.catalogue import Accepts as Accepts
from agentrt.events.catalogue import EventDecl as EventDecl
from agentrt.events.names import AgentEvents as AgentEvents
from agentrt.events.params import *  # noqa: F403
from agentrt.events.params import __all__ as _params_all
from agentrt.events.registry import EVENT_PARAMS as EVENT_PARAMS
from agentrt.events.registry import EVENT_SEMANTICS as EVENT_SEMANTICS
from agentrt.events.registry import EXTENSION_POINTS as EXTENSION_POINTS
from agentrt.events.registry import EventSemantics as EventSemantics
from agentrt.events.registry import check_output as check_output
from agentrt.events.registry import get_event_semantics as get_event_semantics
from agentrt.events.registry import get_params_type as get_params_type

__all__ = (
    "CATALOGUE",
    "EVENT_PARAMS",
    "EVENT_SEMANTICS",
    "EXTENSION_POINTS",
    "Accepts",
    "AgentEvents",
    "EventDecl",
    "EventSemantics",
    "check_output",
    "get_event_semantics",
    "get_params_type",
    *_params_all,
)
