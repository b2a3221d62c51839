"""Stream events to bytes and back: NDJSON and Server-Sent Events. Pure functions, no I/O.

Encoding::

    encode_ndjson(event)             # b'{"type":"agent_choice",...}\\n'
    encode_sse(event, sequence=7)    # b'event: agent_choice\\nid: 7\\ndata: {...}\\n\\n'
    sse_heartbeat()                  # b': heartbeat\\n\\n' (keeps proxies from timing out)

Decoding is incremental: feed the bytes as they arrive, split anywhere (mid-line,
mid-character, between the CR and LF of a line ending), and get the events that
are complete; call ``close()`` at the end of the stream, which raises when the last
record was cut off::

    decoder = SSEEventDecoder()
    async for piece in response.aiter_bytes():
        for sequence, event in decoder.feed(piece):
            ...
    decoder.close()

By default (the spec's rule for a consumer: log and ignore what cannot be understood),
a record that is not an event this version can read (a newer producer's event of a
known type whose shape changed, broken JSON) comes back as an
:class:`~agentrt.stream.InvalidEvent` (its text and why it was not read), logged, and
the records after it are read as usual: one bad record does not end the stream. A
strict decoder raises :class:`StreamDecodeError` for it instead; the events completed
before it in the same ``feed`` are on the exception (``decoded``), and the decoder
stays usable: the next ``feed`` goes on after the bad record, so nothing the stream
carried is lost. Either way, ``close()`` raises when the stream ended inside a record
(it was cut off, which is not a record of another shape).

The encoders write an :class:`~agentrt.stream.InvalidEvent` back as it came, so a
relay passes on what it could not read.

The SSE decoder reads frames with :class:`agentrt.models._sse.SSEDecoder`, the line
decoder the model clients use (WHATWG rules: CRLF, LF or CR line endings, comments,
multi-line data joined with ``\\n``), and adds only what is specific to this stream:
the data is one event, the ``id`` is its sequence number.
"""

import re
from typing import NamedTuple

from pydantic_core import from_json

from agentrt.models._sse import ServerSentEvent, SSEDecoder
from agentrt.stream._parse import AnyStreamEvent, InvalidEvent, invalid_event, parse_event
from agentrt.stream.events import StreamEventError

__all__ = (
    "NDJSONDecoder",
    "SSEEventDecoder",
    "SequencedEvent",
    "StreamDecodeError",
    "encode_ndjson",
    "encode_sse",
    "sse_heartbeat",
)


class SequencedEvent(NamedTuple):
    """An event read from an SSE stream with the sequence number its frame carried.

    Attributes:
        sequence: The frame's ``id``; when the producer numbers no frames (read
            leniently: a strict read requires the number), the frame's position in
            the stream, from 1.
        event: The event in the frame's data.
    """

    sequence: int
    event: AnyStreamEvent


class StreamDecodeError(StreamEventError):
    """A record of an encoded stream is not a valid event, or the stream ended inside one.

    Attributes:
        record: The record's number in the stream, from 1 (blank lines and SSE
            comments are not records).
        decoded: The events the failing call completed before this record; they
            are not returned otherwise.
    """

    def __init__(
        self,
        reason: str,
        *,
        data: object,
        record: int,
        decoded: list[AnyStreamEvent] | list[SequencedEvent],
    ) -> None:
        self.record = record
        self.decoded = decoded
        super().__init__(f"record {record}: {reason}", data=data)


def encode_ndjson(event: AnyStreamEvent) -> bytes:
    """One NDJSON record: the event's JSON on one line, ending with ``\\n``.

    JSON text never holds a raw line break (it escapes them), so the record is
    always exactly one line. An :class:`~agentrt.stream.InvalidEvent` is its text as it
    came, its line breaks (whitespace between JSON tokens) made spaces.
    """
    if isinstance(event, InvalidEvent):
        return _BREAKS.sub(" ", event.data).encode() + b"\n"
    return event.__pydantic_serializer__.to_json(event) + b"\n"


# The line ends of SSE (and of NDJSON as read here).
_BREAKS = re.compile(r"\r\n|\r|\n")


def encode_sse(event: AnyStreamEvent, *, sequence: int) -> bytes:
    """One SSE frame: ``event: <type>``, ``id: <sequence>``, ``data: <json>``, a blank line.

    An :class:`~agentrt.stream.InvalidEvent` is a frame without ``event`` whose data
    is its text as it came (a ``data:`` line per line of it).

    Args:
        event: The event.
        sequence: Its position in the stream, which a client sends back as
            ``Last-Event-ID`` when it reconnects.

    Raises:
        ValueError: ``sequence`` is negative.
    """
    if sequence < 0:
        raise ValueError(f"an SSE sequence number is >= 0, got {sequence}")
    if isinstance(event, InvalidEvent):
        lines = b"".join(b"data: %b\n" % line.encode() for line in _BREAKS.split(event.data))
        return b"id: %d\n%b\n" % (sequence, lines)
    return b"event: %b\nid: %d\ndata: %b\n\n" % (
        event.type.encode(),
        sequence,
        event.__pydantic_serializer__.to_json(event),
    )


_HEARTBEAT = b": heartbeat\n\n"


def sse_heartbeat() -> bytes:
    """An SSE comment frame, ``: heartbeat``, that clients ignore and proxies count as traffic."""
    return _HEARTBEAT


class NDJSONDecoder:
    """Turn the bytes of an NDJSON stream back into events.

    Lines may end with LF, CRLF or CR; blank lines are skipped. Feed bytes with
    :meth:`feed` in arrival order, split anywhere; call :meth:`close` at the end.

    Args:
        strict: Read only agentrt's own format (see :func:`parse_event`) and raise
            for a line that is not such an event; by default events of unknown types
            and unknown fields are kept, and a line that cannot be read is an
            :class:`~agentrt.stream.InvalidEvent`, as the spec asks.
    """

    __slots__ = ("_backlog", "_records", "_strict", "_tail")

    def __init__(self, *, strict: bool = False) -> None:
        self._strict = strict
        # The start of a line whose end has not arrived; a bytearray, so that a long
        # line fed in many small pieces is appended in amortized O(1).
        self._tail = bytearray()
        # Complete lines left after a record that failed, decoded by the next call.
        self._backlog: list[bytes] = []
        self._records = 0

    def feed(self, data: bytes) -> list[AnyStreamEvent]:
        """Take the next piece of the stream; return the events its complete lines hold.

        Raises:
            StreamDecodeError: Strict only: a line is not a valid event. The lines
                after it stay queued for the next call.
        """
        # Only the new piece is searched for a line end: the tail holds none.
        end = max(data.rfind(b"\n"), data.rfind(b"\r"))
        lines: list[bytes] = []
        if end < 0:
            self._tail += data
        else:
            if self._tail:
                self._tail += data[:end]
                block = bytes(self._tail)
            else:
                block = data[:end]
            # CR and LF never occur inside a UTF-8 sequence, so splitting the bytes
            # there cannot cut a character. A CRLF split between two pieces leaves an
            # empty line, which is skipped like any blank line.
            lines = block.splitlines()
            self._tail = bytearray(data[end + 1 :])
        if self._backlog:
            lines[:0] = self._backlog
            self._backlog = []
        return self._decode(lines)

    def close(self) -> list[AnyStreamEvent]:
        """End the stream.

        Returns:
            The events still queued after a failed record, and the last line's event
            when the stream ended after a complete event but without a line end.

        Raises:
            StreamDecodeError: The stream ended inside a record (the last line is not
                JSON, or strict: not a complete event), or (strict) a queued line is
                not a valid event.
        """
        lines, self._backlog = self._backlog, []
        tail, self._tail = bytes(self._tail), bytearray()
        events = self._decode(lines)
        if tail.strip():
            self._records += 1
            cut: str | None = None
            try:
                event = parse_event(tail, strict=self._strict)
            except StreamEventError as error:
                cut = error.reason
            else:
                # Whole JSON is a record of another shape; what is not JSON was cut off.
                if isinstance(event, InvalidEvent) and not _is_json(tail):
                    cut = event.reason
            if cut is not None:
                raise StreamDecodeError(
                    f"the stream ended inside this record, before its line end ({cut})",
                    data=tail,
                    record=self._records,
                    decoded=list(events),
                )
            events.append(event)
        return events

    def _decode(self, lines: list[bytes]) -> list[AnyStreamEvent]:
        events: list[AnyStreamEvent] = []
        for position, line in enumerate(lines):
            if not line.strip():
                continue
            self._records += 1
            try:
                events.append(parse_event(line, strict=self._strict))
            except StreamEventError as error:
                self._backlog = lines[position + 1 :]
                raise StreamDecodeError(
                    error.reason, data=error.data, record=self._records, decoded=list(events)
                ) from None
        return events


def _is_json(data: bytes) -> bool:
    try:
        from_json(data)
    except ValueError:
        return False
    return True


class SSEEventDecoder:
    """Turn the bytes of an SSE stream made by :func:`encode_sse` back into events.

    Each frame's data must be one event and its ``id`` a sequence number; an
    ``event`` field, when present, must name the data's type. Comments (such as
    heartbeats) and frames without data are skipped. Feed bytes with :meth:`feed`
    in arrival order, split anywhere; call :meth:`close` at the end.

    Args:
        strict: Read only agentrt's own format (see :func:`parse_event`), every frame
            numbered, and raise for a frame that is not such an event; by default
            unknown event types and fields are kept, a frame that cannot be read is an
            :class:`~agentrt.stream.InvalidEvent`, and the frames of a producer that
            numbers none (or not with numbers) are numbered by arrival.

    An SSE ``id`` carries over to the frames after it (the WHATWG rules), so a frame
    without an ``id`` line gets the previous frame's sequence number.
    """

    __slots__ = ("_backlog", "_frames", "_records", "_strict")

    def __init__(self, *, strict: bool = False) -> None:
        self._strict = strict
        self._frames = SSEDecoder()
        # Frames left after one that failed, decoded by the next call.
        self._backlog: list[ServerSentEvent] = []
        self._records = 0

    def feed(self, data: bytes) -> list[SequencedEvent]:
        """Take the next piece of the stream; return the events of the frames it completed.

        Raises:
            StreamDecodeError: Strict only: a frame is not a valid event. The frames
                after it stay queued for the next call.
        """
        frames = self._frames.feed(data)
        if self._backlog:
            frames[:0] = self._backlog
            self._backlog = []
        return self._decode(frames)

    def close(self) -> list[SequencedEvent]:
        """End the stream.

        Returns:
            The events still queued after a failed frame (normally none).

        Raises:
            StreamDecodeError: The stream ended inside a frame (data arrived that no
                blank line completed), or (strict) a queued frame is not a valid event.
        """
        frames, self._backlog = self._backlog, []
        # SSEDecoder.close() drops an unfinished frame silently; read it first.
        cut = self._frames.pending
        self._frames.close()
        events = self._decode(frames)
        if cut:
            raise StreamDecodeError(
                "the stream ended inside this frame, before the blank line that ends it",
                data=cut,
                record=self._records + 1,
                decoded=list(events),
            )
        return events

    def _decode(self, frames: list[ServerSentEvent]) -> list[SequencedEvent]:
        events: list[SequencedEvent] = []
        for position, frame in enumerate(frames):
            self._records += 1
            try:
                events.append(_sequenced(frame, self._strict, self._records))
            except StreamEventError as error:
                self._backlog = frames[position + 1 :]
                raise StreamDecodeError(
                    error.reason, data=error.data, record=self._records, decoded=list(events)
                ) from None
        return events


def _sequenced(frame: ServerSentEvent, strict: bool, record: int) -> SequencedEvent:
    event = parse_event(frame.data, strict=strict)
    # "message" is what the SSE rules call a frame without an event field.
    if (
        not isinstance(event, InvalidEvent)
        and frame.event != event.type
        and frame.event != "message"
    ):
        reason = f"the frame's event field {frame.event!r} is not its data's type {event.type!r}"
        if strict:
            raise StreamEventError(reason, data=frame.data)
        event = invalid_event(frame.data, reason)
    if frame.id.isascii() and frame.id.isdigit():
        return SequencedEvent(int(frame.id), event)
    if strict:
        got = f"{frame.id!r}" if frame.id else "none"
        raise StreamEventError(
            f"the frame's id must be a sequence number (digits), got {got}", data=frame.data
        )
    # A producer that numbers no frames (cagent's server), or not with numbers: number
    # them by arrival.
    return SequencedEvent(record, event)
