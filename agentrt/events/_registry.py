"""How each event is dispatched, what it carries and what its handlers may answer.

Everything here is read off the one declaration, :data:`~agentrt.events.catalogue.CATALOGUE`:

- :data:`EVENT_SEMANTICS` says, for every :class:`AgentEvents` member, whether it is
  dispatched with :meth:`EventBus.apply <agentrt.EventBus.apply>` (``INTERCEPTABLE``:
  handlers change the outcome through ``ctx.output``) or with
  :meth:`EventBus.do <agentrt.EventBus.do>` (``SIGNAL``: handlers only observe).
- :data:`EVENT_PARAMS` maps every event to its params ``TypedDict`` (``None`` for the
  extension points, whose payload the extension defines).
- :func:`check_output` is the one check of what an interceptable's handlers left in
  ``ctx.output``.
"""

from types import MappingProxyType
from typing import Any, Final, cast

from agentrt.events import params
from agentrt.events.catalogue import CATALOGUE, EventDecl, EventSemantics
from agentrt.events.names import AgentEvents
from agentrt.exceptions import HookOutputError

__all__ = (
    "EVENT_PARAMS",
    "EVENT_SEMANTICS",
    "EXTENSION_POINTS",
    "EventSemantics",
    "check_output",
    "get_event_semantics",
    "get_params_type",
)

# Keyed by the enum's members, not the catalogue's entries: an event just declared
# in the catalogue is left out until the generator has written it into the enum, so
# that the generator itself can still be imported.
_BY_NAME: Final = {decl.name: decl for decl in CATALOGUE}
_DECLS: Final[MappingProxyType[AgentEvents, EventDecl]] = MappingProxyType(
    {event: _BY_NAME[event.value] for event in AgentEvents}
)

EXTENSION_POINTS: Final[frozenset[AgentEvents]] = frozenset(
    event for event, decl in _DECLS.items() if decl.extension
)
"""Events reserved for extensions: declared, never dispatched by core."""

EVENT_SEMANTICS: Final[MappingProxyType[AgentEvents, EventSemantics]] = MappingProxyType(
    {event: decl.semantics for event, decl in _DECLS.items()}
)
"""Every :class:`AgentEvents` member mapped to exactly one :class:`EventSemantics`."""

EVENT_PARAMS: Final[MappingProxyType[AgentEvents, type[Any] | None]] = MappingProxyType(
    {event: decl.params for event, decl in _DECLS.items()}
)
"""Every :class:`AgentEvents` member mapped to its params ``TypedDict`` (``None`` for the
extension points)."""


def check_output(event: AgentEvents, output: object, cause: BaseException | None = None) -> Any:
    """Return ``output`` if the handlers of ``event`` may leave it in ``ctx.output``.

    The runtime calls this after every :meth:`EventBus.apply <agentrt.EventBus.apply>`
    whose output it uses; what each event accepts is declared in the catalogue.

    Args:
        event: The interceptable event whose handlers ran.
        output: What they left in ``ctx.output``.
        cause: The exception the event is about (``execute:error``,
            ``tool:call:error``), chained to the error.

    Raises:
        HookOutputError: The output is not one the event accepts.
        ValueError: ``event`` is not interceptable.
    """
    accepts = _DECLS[event].accepts
    if accepts is None:
        raise ValueError(f"{event.value!r} declares no output the runtime checks")
    if not accepts.test(output):
        raise HookOutputError(event, accepts.what, output) from cause
    return output


def _check_name(event: object) -> None:
    if not isinstance(event, str):
        raise TypeError(
            f"an event is an AgentEvents member or its string value, got {type(event).__name__}"
        )


def get_event_semantics(event: AgentEvents | str) -> EventSemantics | None:
    """Return how ``event`` is dispatched, or ``None`` for a name not in :class:`AgentEvents`.

    Args:
        event: An :class:`AgentEvents` member or its string value
            (``"tool:call:before"``).

    Raises:
        TypeError: ``event`` is not a string.
    """
    _check_name(event)
    # StrEnum members hash and compare like their values, so a plain string finds them.
    return EVENT_SEMANTICS.get(cast("AgentEvents", event))


def get_params_type(event: AgentEvents | str) -> type[Any] | None:
    """Return the params ``TypedDict`` of ``event``, or ``None`` when it has none.

    ``None`` means the name is unknown (including every removed alias) or names an
    extension point, whose payload the extension defines.

    Args:
        event: An :class:`AgentEvents` member or its string value.

    Raises:
        TypeError: ``event`` is not a string.
    """
    _check_name(event)
    if "Agent" not in vars(params):
        # Params types name Agent and Tool: typing.get_type_hints() of what this returns
        # must resolve them, in a program that has not loaded the agent module too.
        params._bind_late_names()
    return EVENT_PARAMS.get(cast("AgentEvents", event))
