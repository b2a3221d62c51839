"""The attribution of a team's stream: which delegated run an event belongs to.

Every event of a sub-agent's run (see :mod:`agentrt.stream._team`) carries
``parent_tool_call_id``, an extension field of agentrt's: the id of the call that
started the run. It is not a declared field of any event model: it rides in the
event's extra fields, absent from every other event (which so pay nothing for it).
"""

from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from agentrt.stream._parse import InvalidEvent

__all__ = ("PARENT_TOOL_CALL_ID", "attributed", "parent_tool_call_id")

PARENT_TOOL_CALL_ID = "parent_tool_call_id"
"""The extension field of a sub-agent's events: the id of the call that started its run."""


def parent_tool_call_id(event: "BaseModel | InvalidEvent") -> str | None:
    """The id of the tool call whose sub-agent run ``event`` belongs to, or ``None``.

    ``None`` for the events of the stream's own agent (and of any producer that does
    not nest runs), and for a record a lenient read could not read (an
    :class:`~agentrt.stream.InvalidEvent`: it belongs to no run anyone can tell).
    """
    extra = getattr(event, "__pydantic_extra__", None)
    if not extra:
        return None
    value = extra.get(PARENT_TOOL_CALL_ID)
    return value if isinstance(value, str) else None


_E = TypeVar("_E", bound=BaseModel)


def attributed(event: _E, tool_call_id: str) -> _E:
    """``event`` as the event of a sub-agent run started by the call ``tool_call_id``."""
    return event.model_copy(update={PARENT_TOOL_CALL_ID: tool_call_id})
