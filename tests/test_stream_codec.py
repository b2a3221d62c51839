"""agentrt/stream/codec.py: NDJSON and SSE encoders, incremental decoders."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.stream import InvalidEvent
from agentrt.stream.codec import (
    NDJSONDecoder,
    SequencedEvent,
    SSEEventDecoder,
    StreamDecodeError,
    encode_ndjson,
    encode_sse,
    sse_heartbeat,
)
from agentrt.stream.events import (
    AgentChoiceEvent,
    StreamEvent,
    StreamEventError,
    StreamStartedEvent,
    StreamStoppedEvent,
)
from tests.test_stream_events import SAMPLES, T0

EVENTS: list[StreamEvent] = list(SAMPLES.values())
CHOICE = SAMPLES["agent_choice"]
CHOICE_JSON = CHOICE.model_dump_json().encode()


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given positions (any order, duplicates allowed)."""
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    return [data[start:end] for start, end in zip([0, *points], [*points, len(data)], strict=True)]


def _endings(data: bytes, ending: bytes) -> bytes:
    return data.replace(b"\n", ending)


# -- encoders ------------------------------------------------------------------------------------


def test_encode_ndjson_is_the_json_and_a_line_feed() -> None:
    assert encode_ndjson(CHOICE) == CHOICE_JSON + b"\n"
    assert encode_ndjson(CHOICE).count(b"\n") == 1


def test_encode_sse_frame() -> None:
    assert encode_sse(CHOICE, sequence=7) == (
        b"event: agent_choice\nid: 7\ndata: " + CHOICE_JSON + b"\n\n"
    )


def test_line_breaks_in_fields_stay_escaped_inside_one_line() -> None:
    event = AgentChoiceEvent(
        session_id="s", timestamp=T0, content="a\nb\r\nc\rd\u2028e", agent_name="x"
    )
    record = encode_ndjson(event)
    assert b"\r" not in record
    assert record.count(b"\n") == 1
    assert encode_sse(event, sequence=0).count(b"\n") == 4  # three field lines, one blank


def test_encode_sse_rejects_a_negative_sequence() -> None:
    with pytest.raises(ValueError, match="sequence number is >= 0, got -1"):
        encode_sse(CHOICE, sequence=-1)


def test_sse_heartbeat_is_a_comment_frame() -> None:
    assert sse_heartbeat() == b": heartbeat\n\n"


# -- NDJSON decoder ------------------------------------------------------------------------------


def test_ndjson_round_trip_whole() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b"".join(encode_ndjson(event) for event in EVENTS)) == EVENTS
    assert decoder.close() == []


@given(
    cuts=st.lists(st.integers(min_value=0), max_size=30),
    ending=st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_ndjson_round_trip_split_anywhere(cuts: list[int], ending: bytes) -> None:
    # SAMPLES hold multi-byte characters, so some cuts fall inside a UTF-8 sequence.
    data = _endings(b"".join(encode_ndjson(event) for event in EVENTS), ending)
    decoder = NDJSONDecoder()
    decoded = [event for piece in _split(data, cuts) for event in decoder.feed(piece)]
    assert decoded + decoder.close() == EVENTS


def test_ndjson_byte_by_byte() -> None:
    data = b"".join(encode_ndjson(event) for event in EVENTS)
    decoder = NDJSONDecoder()
    decoded = [event for i in range(len(data)) for event in decoder.feed(data[i : i + 1])]
    assert decoded == EVENTS


def test_ndjson_skips_blank_lines() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b"\n  \r\n" + encode_ndjson(CHOICE) + b"\n\t\n") == [CHOICE]


def test_ndjson_close_accepts_a_complete_last_line_without_its_line_end() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(CHOICE_JSON) == []
    assert decoder.close() == [CHOICE]


def test_ndjson_close_raises_on_a_truncated_record() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(encode_ndjson(CHOICE) + CHOICE_JSON[:-5]) == [CHOICE]
    with pytest.raises(StreamDecodeError) as caught:
        decoder.close()
    error = caught.value
    assert error.record == 2
    assert error.reason.startswith(
        "record 2: the stream ended inside this record, before its line end (not valid JSON"
    )
    assert error.data == CHOICE_JSON[:-5]
    assert isinstance(error, StreamEventError)


def test_ndjson_bad_record_raises_and_loses_nothing() -> None:
    decoder = NDJSONDecoder(strict=True)
    data = encode_ndjson(CHOICE) + b'{"type": "nope"}\n' + encode_ndjson(CHOICE) + b"{"
    with pytest.raises(StreamDecodeError) as caught:
        decoder.feed(data)
    error = caught.value
    assert error.record == 2
    assert error.decoded == [CHOICE]
    assert "unknown type 'nope'" in error.reason
    assert error.data == b'{"type": "nope"}'
    # The record after the bad one was queued, the unfinished one is still pending.
    rest = f'"type": "stream_stopped", "session_id": "s", "timestamp": "{T0}"}}\n'
    assert decoder.feed(rest.encode()) == [
        CHOICE,
        StreamStoppedEvent(session_id="s", timestamp=T0),
    ]


def test_ndjson_close_decodes_records_queued_after_an_error() -> None:
    decoder = NDJSONDecoder(strict=True)
    with pytest.raises(StreamDecodeError):
        decoder.feed(b"[]\n" + encode_ndjson(CHOICE))
    assert decoder.close() == [CHOICE]


# -- SSE decoder ---------------------------------------------------------------------------------


def _sse_stream() -> bytes:
    frames = [encode_sse(event, sequence=i) for i, event in enumerate(EVENTS)]
    frames.insert(3, sse_heartbeat())
    frames.insert(0, b": connected\n\n")
    return b"".join(frames)


SEQUENCED = [SequencedEvent(i, event) for i, event in enumerate(EVENTS)]


def test_sse_round_trip_whole() -> None:
    decoder = SSEEventDecoder()
    assert decoder.feed(_sse_stream()) == SEQUENCED
    assert decoder.close() == []


@given(
    cuts=st.lists(st.integers(min_value=0), max_size=30),
    ending=st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_sse_round_trip_split_anywhere(cuts: list[int], ending: bytes) -> None:
    data = _endings(_sse_stream(), ending)
    decoder = SSEEventDecoder()
    decoded = [event for piece in _split(data, cuts) for event in decoder.feed(piece)]
    assert decoded + decoder.close() == SEQUENCED


def test_sse_byte_by_byte_with_crlf() -> None:
    data = _endings(_sse_stream(), b"\r\n")
    decoder = SSEEventDecoder()
    decoded = [event for i in range(len(data)) for event in decoder.feed(data[i : i + 1])]
    assert decoded == SEQUENCED


def test_sse_multi_line_data_is_joined() -> None:
    pretty = json.dumps(CHOICE.model_dump(mode="json"), indent=2, ensure_ascii=False)
    frame = "event: agent_choice\nid: 3\n" + "".join(
        f"data: {line}\n" for line in pretty.split("\n")
    )
    decoder = SSEEventDecoder()
    assert decoder.feed(frame.encode() + b"\n") == [(3, CHOICE)]


def test_sse_frame_without_event_field_is_accepted() -> None:
    decoder = SSEEventDecoder()
    assert decoder.feed(b"id: 1\ndata: " + CHOICE_JSON + b"\n\n") == [(1, CHOICE)]


def test_sse_event_field_must_match_the_type() -> None:
    frame = b"event: error\nid: 1\ndata: " + CHOICE_JSON + b"\n\n"
    decoder = SSEEventDecoder(strict=True)
    with pytest.raises(StreamDecodeError) as caught:
        decoder.feed(frame)
    reason = "the frame's event field 'error' is not its data's type 'agent_choice'"
    assert caught.value.reason == f"record 1: {reason}"
    assert SSEEventDecoder().feed(frame) == [
        (1, InvalidEvent(CHOICE_JSON.decode(), reason, "agent_choice"))
    ]


@pytest.mark.parametrize(
    ("id_line", "got"), [(b"", "none"), (b"id: seven\n", "'seven'"), (b"id: -1\n", "'-1'")]
)
def test_sse_id_must_be_a_sequence_number(id_line: bytes, got: str) -> None:
    decoder = SSEEventDecoder(strict=True)
    with pytest.raises(StreamDecodeError) as caught:
        decoder.feed(b"event: agent_choice\n" + id_line + b"data: " + CHOICE_JSON + b"\n\n")
    assert caught.value.reason == (
        f"record 1: the frame's id must be a sequence number (digits), got {got}"
    )


def test_sse_bad_frame_raises_and_loses_nothing() -> None:
    started = StreamStartedEvent(session_id="s", timestamp=T0)
    data = (
        encode_sse(CHOICE, sequence=0)
        + b"event: x\nid: 1\ndata: {not json}\n\n"
        + encode_sse(started, sequence=2)
    )
    decoder = SSEEventDecoder(strict=True)
    with pytest.raises(StreamDecodeError) as caught:
        decoder.feed(data)
    error = caught.value
    assert error.record == 2
    assert error.decoded == [(0, CHOICE)]
    assert error.reason.startswith("record 2: not valid JSON")
    assert decoder.feed(b"") == [(2, started)]
    assert decoder.close() == []


def test_sse_close_raises_on_a_truncated_frame() -> None:
    frame = encode_sse(CHOICE, sequence=5)
    decoder = SSEEventDecoder()
    assert decoder.feed(encode_sse(CHOICE, sequence=4) + frame[:-1]) == [(4, CHOICE)]
    with pytest.raises(StreamDecodeError) as caught:
        decoder.close()
    error = caught.value
    assert error.record == 2
    assert error.reason == (
        "record 2: the stream ended inside this frame, before the blank line that ends it"
    )
    assert error.data == "event: agent_choice\ndata: " + CHOICE_JSON.decode()


def test_sse_close_raises_on_a_frame_cut_mid_line() -> None:
    decoder = SSEEventDecoder()
    decoder.feed(encode_sse(CHOICE, sequence=1)[:-20])
    with pytest.raises(StreamDecodeError, match="ended inside this frame"):
        decoder.close()


def test_sse_close_after_a_heartbeat_is_clean() -> None:
    decoder = SSEEventDecoder()
    assert decoder.feed(sse_heartbeat()) == []
    assert decoder.close() == []


def test_sse_close_raises_on_a_frame_cut_before_its_data() -> None:
    decoder = SSEEventDecoder()
    decoder.feed(b"event: agent_choice\nid: 1\n")
    with pytest.raises(StreamDecodeError, match="ended inside this frame"):
        decoder.close()


# -- records that cannot be read -----------------------------------------------------------------

# A newer producer's stream: docker-agent's later wire format answers a tool call with
# the call's id instead of the call, a known type in another shape; and a record that
# is not JSON at all. The spec: log and ignore what cannot be understood, and a
# transport error does not end the session.
CALLED = SAMPLES["tool_call"]
RESHAPED = (
    '{"agent_name":"root","timestamp":"2026-11-22T04:58:00Z","type":"tool_call_response",'
    '"session_id":"s","tool_call_id":"call_1","response":"2","tool_definition":{"name":"add"}}'
)
RESHAPED_WHY = "'tool_call_response' event: tool_call: Field required"
GARBLED = '{"type":"agent_choice","content":"x'
AFTER = [CHOICE, SAMPLES["token_usage"], SAMPLES["stream_stopped"]]


def _unreadable_ndjson() -> bytes:
    started = encode_ndjson(SAMPLES["stream_started"]) + encode_ndjson(CALLED)
    middle = RESHAPED.encode() + b"\n" + GARBLED.encode() + b"\n"
    return started + middle + b"".join(encode_ndjson(event) for event in AFTER)


def _read_the_unreadable(read: list[object]) -> None:
    """What a lenient decoder gives for the stream: every record, the bad two as such."""
    assert read[:2] == [SAMPLES["stream_started"], CALLED]
    reshaped, garbled = read[2:4]
    assert reshaped == InvalidEvent(RESHAPED, RESHAPED_WHY, "tool_call_response")
    assert isinstance(garbled, InvalidEvent)
    assert (garbled.data, garbled.declared_type) == (GARBLED, None)
    assert garbled.reason.startswith("not valid JSON (EOF while parsing a string")
    assert read[4:] == AFTER


@given(cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_ndjson_records_that_cannot_be_read_do_not_end_the_stream(cuts: list[int]) -> None:
    decoder = NDJSONDecoder()
    read = [event for piece in _split(_unreadable_ndjson(), cuts) for event in decoder.feed(piece)]
    _read_the_unreadable([*read, *decoder.close()])


def test_a_strict_ndjson_decoder_raises_at_the_first_record_it_cannot_read() -> None:
    decoder = NDJSONDecoder(strict=True)
    with pytest.raises(StreamDecodeError) as caught:
        decoder.feed(_unreadable_ndjson())
    assert caught.value.record == 3
    assert caught.value.reason.startswith(f"record 3: {RESHAPED_WHY[:-15]}")
    assert caught.value.decoded == [SAMPLES["stream_started"], CALLED]


def _unreadable_sse() -> bytes:
    head = [SAMPLES["stream_started"], CALLED]
    frames = [encode_sse(event, sequence=n) for n, event in enumerate(head, 1)]
    frames.append(b"event: tool_call_response\nid: 3\ndata: " + RESHAPED.encode() + b"\n\n")
    frames.append(b"event: agent_choice\nid: 4\ndata: " + GARBLED.encode() + b"\n\n")
    frames += [encode_sse(event, sequence=n) for n, event in enumerate(AFTER, 5)]
    return b"".join(frames)


@given(cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_sse_frames_that_cannot_be_read_do_not_end_the_stream(cuts: list[int]) -> None:
    decoder = SSEEventDecoder()
    read = [item for piece in _split(_unreadable_sse(), cuts) for item in decoder.feed(piece)]
    read += decoder.close()
    assert [item.sequence for item in read] == list(range(1, 8))
    _read_the_unreadable([item.event for item in read])


def test_a_strict_sse_decoder_raises_at_the_first_frame_it_cannot_read() -> None:
    decoder = SSEEventDecoder(strict=True)
    with pytest.raises(StreamDecodeError) as caught:
        decoder.feed(_unreadable_sse())
    assert caught.value.record == 3
    assert caught.value.decoded == [(1, SAMPLES["stream_started"]), (2, CALLED)]


def test_a_lenient_sse_decoder_numbers_frames_whose_id_is_not_a_number_by_arrival() -> None:
    frames = b"id: a1\ndata: " + CHOICE_JSON + b"\n\nid: -1\ndata: " + CHOICE_JSON + b"\n\n"
    assert SSEEventDecoder().feed(frames) == [(1, CHOICE), (2, CHOICE)]


def test_the_encoders_pass_on_what_could_not_be_read_as_it_came() -> None:
    pretty = InvalidEvent('{\n  "type": "tool_call",\r\n  "x": 1\r}', "why", "tool_call")
    ndjson = NDJSONDecoder()
    assert ndjson.feed(_unreadable_ndjson()) == ndjson.feed(
        b"".join(encode_ndjson(event) for event in ndjson.feed(_unreadable_ndjson()))
    )
    assert encode_ndjson(pretty) == b'{   "type": "tool_call",   "x": 1 }\n'
    sse = SSEEventDecoder()
    read = sse.feed(_unreadable_sse())
    again = b"".join(encode_sse(item.event, sequence=item.sequence) for item in read)
    assert sse.feed(again) == read
    assert encode_sse(pretty, sequence=9) == (
        b'id: 9\ndata: {\ndata:   "type": "tool_call",\ndata:   "x": 1\ndata: }\n\n'
    )
    (item,) = sse.feed(encode_sse(pretty, sequence=9))
    assert isinstance(item.event, InvalidEvent)
    assert item.event.data == '{\n  "type": "tool_call",\n  "x": 1\n}'
    assert item.event.declared_type == "tool_call"


def test_ndjson_close_gives_a_last_record_of_another_shape_and_raises_on_a_cut_one() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(RESHAPED.encode()) == []
    assert decoder.close() == [InvalidEvent(RESHAPED, RESHAPED_WHY, "tool_call_response")]
    decoder.feed(GARBLED.encode())
    with pytest.raises(StreamDecodeError, match="ended inside this record"):
        decoder.close()
