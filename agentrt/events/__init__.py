"""The event catalogue: names, dispatch semantics, params types and accepted outputs.

Every event is declared once, in :data:`CATALOGUE` (:mod:`agentrt.events.catalogue`);
the enum, the registries, the typed hooks and ``docs/events.md`` come from it. The other
public modules: :mod:`agentrt.events.names` (the :class:`AgentEvents` enum, generated),
:mod:`agentrt.events.params` (each event's params ``TypedDict``) and
:mod:`agentrt.events.generate` (``python -m agentrt.events.generate`` writes what is made
from the catalogue). ``_registry`` (the registries read off the catalogue, the check of a
handler's output) and ``_reference`` (the text of ``docs/events.md``) are implementation.
"""

from agentrt.events._registry import EVENT_PARAMS as EVENT_PARAMS
from agentrt.events._registry import EVENT_SEMANTICS as EVENT_SEMANTICS
from agentrt.events._registry import EXTENSION_POINTS as EXTENSION_POINTS
from agentrt.events._registry import EventSemantics as EventSemantics
from agentrt.events._registry import check_output as check_output
from agentrt.events._registry import get_event_semantics as get_event_semantics
from agentrt.events._registry import get_params_type as get_params_type
from agentrt.events.catalogue import CATALOGUE as CATALOGUE
from agentrt.events.catalogue import Accepts as Accepts
from agentrt.events.catalogue import EventDecl as EventDecl
from agentrt.events.names import AgentEvents as AgentEvents
from agentrt.events.params import *  # noqa: F403
from agentrt.events.params import __all__ as _params_all

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
