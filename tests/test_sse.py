"""agentrt/models/_sse.py (SSEDecoder): the event-stream rules, and bytes split anywhere."""

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt.models._sse import ServerSentEvent, SSEDecoder
from tests.openai_fixtures import RECORDED, Recorded


def decode(*pieces: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for piece in pieces:
        events += decoder.feed(piece)
    return events


def split_at(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def reference(body: bytes) -> list[ServerSentEvent]:
    """The specification's algorithm, line by line with no shortcut, to compare against."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:-1]
    events: list[ServerSentEvent] = []
    data: list[str] = []
    event, last_id, retry = "", "", None
    for line in lines:
        if not line:
            if data:
                events.append(ServerSentEvent("\n".join(data), event or "message", last_id, retry))
            data, event, retry = [], "", None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    return events


# -- the format ---------------------------------------------------------------------------------


def test_one_data_line_is_one_event() -> None:
    assert decode(b"data: hello\n\n") == [ServerSentEvent("hello")]


def test_event_defaults() -> None:
    event = ServerSentEvent("x")
    assert (event.data, event.event, event.id, event.retry) == ("x", "message", "", None)


def test_data_lines_are_joined_with_newlines() -> None:
    assert decode(b'data: {\ndata:   "a": 1\ndata: }\n\n') == [ServerSentEvent('{\n  "a": 1\n}')]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert decode(b"data:no space\n\ndata:  two spaces\n\n") == [
        ServerSentEvent("no space"),
        ServerSentEvent(" two spaces"),
    ]


def test_comments_are_ignored() -> None:
    body = b": OPENROUTER PROCESSING\n\ndata: a\n: keep-alive\ndata: b\n\n:\n\n"
    assert decode(body) == [ServerSentEvent("a\nb")]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending(newline: bytes) -> None:
    body = newline.join([b"data: a", b"", b"event: update", b"data: b", b"data: c", b"", b""])
    assert decode(body) == [ServerSentEvent("a"), ServerSentEvent("b\nc", "update")]


def test_mixed_line_endings() -> None:
    assert decode(b"data: a\r\rdata: b\r\n\r\ndata: c\n\n") == [
        ServerSentEvent("a"),
        ServerSentEvent("b"),
        ServerSentEvent("c"),
    ]


def test_crlf_split_between_pieces_is_one_line_ending() -> None:
    # Were the LF taken for a second line ending, "data: b" would be a separate event.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [ServerSentEvent("a\nb")]


def test_cr_at_the_end_of_a_piece_ends_its_line_at_once() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [ServerSentEvent("a")]
    assert decoder.feed(b"data: b\r\r") == [ServerSentEvent("b")]


def test_a_character_split_between_pieces() -> None:
    body = "data: Paris 🌤 à 18°C\n\n".encode()
    cut = body.index("🌤".encode()) + 2
    assert decode(body[:cut], body[cut:]) == [ServerSentEvent("Paris 🌤 à 18°C")]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert decode(b"data: a\xffb\n\n") == [ServerSentEvent("a\ufffdb")]


def test_a_leading_byte_order_mark_is_dropped() -> None:
    assert decode(b"\xef\xbb", b"\xbfdata: a\n\n") == [ServerSentEvent("a")]
    # Only at the start of the stream: later, it is part of a (unknown) field name.
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [ServerSentEvent("a")]


def test_no_event_without_data() -> None:
    assert decode(b"event: ping\n\nid: 3\n\nretry: 10\n\n") == []
    # The id outlives its event; extra blank lines still dispatch nothing.
    assert decode(b"id: 1\ndata: a\n\n\n\n") == [ServerSentEvent("a", id="1")]


def test_data_without_colon_is_an_empty_data_line() -> None:
    assert decode(b"data\n\ndata\ndata\n\n") == [ServerSentEvent(""), ServerSentEvent("\n")]


def test_id_carries_over_and_nul_ids_are_ignored() -> None:
    body = b"id: 7\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid\ndata: d\n\n"
    assert [(e.data, e.id) for e in decode(body)] == [
        ("a", "7"),
        ("b", "7"),
        ("c", "7"),
        ("d", ""),
    ]


def test_retry_takes_only_digits_and_belongs_to_its_event() -> None:
    body = b"retry: 1500\ndata: a\n\nretry: 1.5\ndata: b\n\ndata: c\n\n"
    assert [e.retry for e in decode(body)] == [1500, None, None]


def test_unknown_fields_are_ignored() -> None:
    assert decode(b"foo: bar\ndata: a\nbaz\n\n") == [ServerSentEvent("a")]


def test_event_type_resets_after_each_event() -> None:
    assert [e.event for e in decode(b"event: a\ndata: 1\n\ndata: 2\n\n")] == ["a", "message"]


def test_blank_lines_between_events_are_harmless() -> None:
    assert decode(b"\n\n\ndata: a\n\n\n\n\ndata: b\n\n\n") == [
        ServerSentEvent("a"),
        ServerSentEvent("b"),
    ]


def test_an_event_waits_for_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"data: b\n") == []
    assert decoder.feed(b"\n") == [ServerSentEvent("a\nb")]


def test_one_event_per_piece_keeps_the_fields_before_it() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef\xbb\xbfdata: a\n\n") == [ServerSentEvent("a")]
    assert decoder.feed(b"id: 4\n") == []
    assert decoder.feed(b"data: b\n\n") == [ServerSentEvent("b", id="4")]
    for field in (b"retry: 9\n", b"event: e\n", b"data: x\n", b"data: y"):
        decoder = SSEDecoder()
        decoder.feed(b": start\n")
        decoder.feed(field)
        assert decoder.feed(b"data: c\n\n") == reference(field + b"data: c\n\n")


def test_empty_pieces_change_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n\n") == [ServerSentEvent("a")]


def test_pending_shows_the_unfinished_event_and_close_drops_it() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":\ndata: 1}\n\ndata: {"b":\ndata: [2') == [
        ServerSentEvent('{"a":\n1}')
    ]
    assert decoder.pending == 'data: {"b":\ndata: [2'
    decoder.close()
    assert decoder.pending == ""
    assert decoder.feed(b"\n\n") == []


def test_a_long_line_fed_byte_by_byte() -> None:
    line = b"data: " + b"x" * 50_000 + b"\n\n"
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for i in range(len(line)):
        events += decoder.feed(line[i : i + 1])
    assert events == [ServerSentEvent("x" * 50_000)]


# -- recorded streams, split anywhere -----------------------------------------------------------


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
def test_recorded_streams_match_the_reference(recorded: Recorded) -> None:
    body = recorded.body
    events = decode(body)
    assert events == reference(body)
    assert events[-1] == ServerSentEvent("[DONE]")


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
def test_recorded_streams_byte_by_byte(recorded: Recorded) -> None:
    body = recorded.body
    crlf = body.replace(b"\n", b"\r\n")
    assert decode(*[crlf[i : i + 1] for i in range(len(crlf))]) == decode(body)


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(0, len(RECORDED) - 1),
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(0, 10_000), max_size=40),
)
def test_recorded_streams_split_at_random_points(
    index: int, newline: bytes, cuts: list[int]
) -> None:
    body = RECORDED[index].body.replace(b"\n", newline)
    whole = decode(body)
    assert decode(*split_at(body, [c % (len(body) + 1) for c in cuts])) == whole


# -- any stream, any split ----------------------------------------------------------------------

LINES = st.sampled_from(
    [
        b"data: a",
        b'data: {"x": 1}',
        b"data:b",
        b"data",
        b"data:  two",
        b"",
        b"",
        b": comment",
        b"event: update",
        b"id: 7",
        b"id: a\x00b",
        b"retry: 250",
        b"retry: soon",
        b"other: field",
        "data: é 🌤".encode(),
        b"data: \xff",
    ]
)
NEWLINES = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(LINES, NEWLINES), max_size=25))
    body = b"".join(line + newline for line, newline in lines)
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + body


@settings(max_examples=400, deadline=None)
@given(body=streams(), cuts=st.lists(st.integers(0, 1_000), max_size=20))
def test_any_stream_split_anywhere_matches_the_reference(body: bytes, cuts: list[int]) -> None:
    expected = reference(body)
    assert decode(body) == expected
    assert decode(*split_at(body, [c % (len(body) + 1) for c in cuts])) == expected
