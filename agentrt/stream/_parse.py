"""Reading stream events: :func:`parse_event`, :class:`UnknownEvent` for unknown types and
:class:`InvalidEvent` for what cannot be read.

A consumer reads what producers send, and the spec has it log and ignore what it does
not understand: by default :func:`parse_event` keeps an event of an unknown type whole
(an :class:`UnknownEvent`), keeps fields it does not model, reads a scalar field a
producer left out (Go's ``omitempty``) as its zero value, and gives what it still cannot
read (a known type whose shape changed, broken JSON) as an :class:`InvalidEvent`, logged,
so that the stream goes on. ``strict=True`` reads only agentrt's own format and raises a
:class:`StreamEventError` whose message says, in terms of the wire format, what is wrong.
"""

import copy
import logging
from dataclasses import dataclass
from types import UnionType
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    TypeAlias,
    Union,
    get_args,
    get_origin,
    overload,
)

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import from_json, to_json

from agentrt.stream.events import (
    EVENT_TYPES,
    PARENT_TOOL_CALL_ID,
    StreamEvent,
    StreamEventError,
)

__all__ = ("AnyStreamEvent", "InvalidEvent", "UnknownEvent", "parse_event")

logger = logging.getLogger("agentrt.stream")


class UnknownEvent(BaseModel):
    """An event of a type this version does not model, kept whole.

    The spec has consumers log and ignore what they do not understand, and lets
    producers add event types; :func:`parse_event` returns one of these for such an
    event (unless asked to be strict), with every field it had: ``event.type``, and
    the rest in ``event.model_extra``. Encoding it gives the same JSON object back.

    Attributes:
        type: The event's type, as the producer named it.
    """

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    type: str


@dataclass(frozen=True, slots=True)
class InvalidEvent:
    """A record of a stream that is not an event this version can read, kept as it came.

    The spec has a consumer log and ignore an invalid event, and a transport error does
    not end a session: a lenient :func:`parse_event` (and so the decoders of
    :mod:`agentrt.stream.codec`) returns one of these instead of raising, logs it on the
    ``agentrt.stream`` logger, and the events after it are read as usual. Typical
    causes: a newer producer changed the shape of a known event type (a field renamed,
    an object replaced by an id), a field of the wrong type, a record that is not a
    JSON object. It is not an event: a consumer tells it apart with ``isinstance`` and
    skips it, shows it, or passes it on (the encoders write its ``data`` back unchanged).
    Its ``type`` is always ``"invalid_event"``, never the type the record named (that is
    :attr:`declared_type`), so that code that lists or matches types does not take it
    for the event it failed to be.

    Attributes:
        data: The record as it came: its JSON text (bytes read as UTF-8, a byte that is
            not UTF-8 replaced by U+FFFD; a dict given to :func:`parse_event` as JSON).
        reason: Why it was not read: the message a strict read raises, in terms of the
            wire format (``"'tool_call_response' event: tool_call: Field required"``).
        declared_type: The ``type`` the record named, when it is a JSON object with a
            string ``type``; ``None`` otherwise.
    """

    type: ClassVar[Literal["invalid_event"]] = "invalid_event"

    data: str
    reason: str
    declared_type: str | None = None


AnyStreamEvent: TypeAlias = StreamEvent | UnknownEvent | InvalidEvent
"""What :func:`parse_event` reads: an event of a known type, one of an unknown type kept
whole, or (only in a lenient read) a record it could not read."""

_adapter: TypeAdapter[StreamEvent] | None = None


def _events() -> TypeAdapter[StreamEvent]:
    """The validator of every event type, built on the first read (not at import: only a
    consumer reads events, and building it is most of what importing this module costs)."""
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(StreamEvent)
    return _adapter


# What a field a producer left out reads as in a lenient read: its type's zero value,
# which is what an omitted field means to the producers that omit them (Go's
# omitempty, protobuf).
_ZEROS: dict[object, object] = {str: "", int: 0, float: 0.0, bool: False}


@overload
def parse_event(data: str | bytes | dict[str, Any], *, strict: Literal[True]) -> StreamEvent: ...
@overload
def parse_event(data: str | bytes | dict[str, Any], *, strict: bool = False) -> AnyStreamEvent: ...
def parse_event(data: str | bytes | dict[str, Any], *, strict: bool = False) -> AnyStreamEvent:
    """The event that JSON text, JSON bytes or a dict describes.

    ``parse_event(event.model_dump_json()) == event`` for every event. By default
    the read follows the spec's rule for consumers, to log and ignore the unknown
    and reject the broken:

    - an event of a type not modelled here comes back as an :class:`UnknownEvent`;
    - fields a known event does not model are kept (``event.model_extra``) and
      encoded again;
    - a scalar field a producer left out (``session_id``, ``agent_name``) reads as its
      zero value;
    - what still cannot be read (malformed JSON, a missing ``type``, a missing object,
      a known field of the wrong type) comes back as an :class:`InvalidEvent` saying
      why, and is logged (``agentrt.stream`` logger, level WARNING).

    Args:
        data: One event: JSON text or bytes, or the dict ``model_dump()`` gives.
        strict: Read only agentrt's own format: an unknown type, an unknown or missing
            field, or anything a lenient read gives as an :class:`InvalidEvent` is an
            error.

    Raises:
        StreamEventError: In a strict read, ``data`` is not an event (the message says
            why); in either read, ``data`` is neither text, bytes nor a dict.
    """
    try:
        if isinstance(data, str | bytes):
            event = _events().validate_json(data)
        else:
            event = _events().validate_python(data)
    except ValidationError as error:
        if strict or not isinstance(data, str | bytes | dict):
            raise StreamEventError(_describe(error), data=data) from None
        try:
            return _parse_leniently(data, error)
        except StreamEventError as unread:
            return invalid_event(data, unread.reason)
    if strict and (extra := _extra_fields(event)):
        raise StreamEventError(
            f"{event.type!r} event: unknown field(s) {', '.join(extra)}", data=data
        )
    return event


def _parse_leniently(data: str | bytes | dict[str, Any], error: ValidationError) -> AnyStreamEvent:
    """The lenient read of what the strict one refused with ``error``."""
    problems = error.errors(include_url=False)
    first = problems[0]
    if first["type"] == "union_tag_invalid" and isinstance(first["ctx"]["tag"], str):
        fields = data if isinstance(data, dict) else from_json(data)
        try:
            return UnknownEvent.model_validate(fields)
        except ValidationError:  # pragma: no cover - a str tag makes a valid UnknownEvent
            pass
    elif all(problem["type"] == "missing" for problem in problems):
        fields = data if isinstance(data, dict) else from_json(data)
        filled = _fill_omitted(fields, [problem["loc"] for problem in problems])
        if filled is not None:
            omitted = {str(problem["loc"][-1]) for problem in problems}
            try:
                return _events().validate_python(filled, context={"omitted": omitted})
            except ValidationError as again:
                error = again
    raise StreamEventError(_describe(error), data=data) from None


def invalid_event(data: str | bytes | dict[str, Any], reason: str) -> InvalidEvent:
    """``data``, a record that was not read for ``reason``, as an :class:`InvalidEvent`, logged."""
    if isinstance(data, dict):
        text = to_json(data, fallback=repr).decode()
        fields: object = data
    else:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        try:
            fields = from_json(data)
        except ValueError:
            fields = None
    kind = fields.get("type") if isinstance(fields, dict) else None
    record = InvalidEvent(text, reason, kind if isinstance(kind, str) else None)
    logger.warning("a stream record was not read as an event (%s): %.200s", reason, text)
    return record


def _fill_omitted(
    fields: dict[str, Any], locations: list[tuple[int | str, ...]]
) -> dict[str, Any] | None:
    """``fields`` with each missing scalar at ``locations`` set to its zero value.

    ``None`` when one of them is not a scalar (a missing object is not an omitted
    value: the event is broken).
    """
    model = EVENT_TYPES.get(fields.get("type"))  # type: ignore[arg-type]
    if model is None:
        return None
    filled = copy.deepcopy(fields)
    for location in locations:
        # loc[0] is the union's tag; the rest is the path to the field.
        target, owner = filled, model
        for part in location[1:-1]:
            annotation = _unwrap(owner.model_fields[str(part)].annotation)
            if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                return None
            target, owner = target[str(part)], annotation
        name = str(location[-1])
        zero = _ZEROS.get(_unwrap(owner.model_fields[name].annotation), _NO_ZERO)
        if zero is _NO_ZERO:
            return None
        target[name] = zero
    return filled


_NO_ZERO = object()


def _unwrap(annotation: Any) -> Any:
    """The type inside ``Annotated[...]`` and ``X | None``."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return _unwrap(args[0])
    return annotation


def _extra_fields(model: BaseModel, prefix: str = "") -> list[str]:
    """The dotted names of the fields ``model`` (or a model inside it) does not declare."""
    # The extension field of a sub-agent's events is agentrt's own (see events.py).
    found = [
        f"{prefix}{name}"
        for name in model.model_extra or ()
        if prefix or name != PARENT_TOOL_CALL_ID
    ]
    for name in type(model).model_fields:
        value = getattr(model, name)
        for item in value if isinstance(value, list | tuple) else (value,):
            if isinstance(item, BaseModel):
                found += _extra_fields(item, f"{prefix}{name}.")
    return found


def _describe(error: ValidationError) -> str:
    """One line saying what is wrong, in terms of the wire format."""
    problems = error.errors(include_url=False)
    first = problems[0]
    kind = first["type"]
    if kind == "json_invalid":
        return f"not valid JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
    if kind == "union_tag_not_found":
        return "no 'type' field"
    if kind == "union_tag_invalid":
        known = ", ".join(EVENT_TYPES)
        return f"unknown type {first['ctx']['tag']!r} (the known types are {known})"
    if kind in {"model_attributes_type", "dict_type", "model_type"} and not first["loc"]:
        return f"an event is a JSON object, not {type(first['input']).__name__}"
    event_type = first["loc"][0] if first["loc"] else "?"
    details = "; ".join(
        f"{'.'.join(str(part) for part in problem['loc'][1:]) or '(event)'}: {problem['msg']}"
        for problem in problems[:5]
    )
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"{event_type!r} event: {details}{more}"
