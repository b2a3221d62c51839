"""Reading a real producer's streams: cagent's event sequences (the team's interop data).

The fixtures are the team's interop data, next to the checkout (CI provides them),
made from cagent's own runtime tests. The rule under test is the stream's, not the
fixtures': a consumer keeps what it does not understand and rejects what is broken.
"""

import json
from pathlib import Path

import pytest

from agentrt.stream._parse import AnyStreamEvent, InvalidEvent, UnknownEvent, parse_event
from agentrt.stream.codec import NDJSONDecoder, SSEEventDecoder, encode_ndjson, encode_sse
from agentrt.stream.events import StreamEventError, TeamAgent, TeamInfoEvent
from agentrt.stream.validate import StreamValidator

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "interop" / "cagent"
FILES = sorted(FIXTURES.glob("*.ndjson")) + sorted(FIXTURES.glob("*.sse"))
pytestmark = pytest.mark.skipif(not FILES, reason=f"the interop fixtures are not at {FIXTURES}")


def read(path: Path) -> list[AnyStreamEvent]:
    if path.suffix == ".sse":
        decoder = SSEEventDecoder()
        return [item.event for item in decoder.feed(path.read_bytes()) + decoder.close()]
    ndjson = NDJSONDecoder()
    return ndjson.feed(path.read_bytes()) + ndjson.close()


def sessions(events: list[AnyStreamEvent]) -> list[list[AnyStreamEvent]]:
    """The file's stream sessions: a new one starts at each stream_started after a stop."""
    found: list[list[AnyStreamEvent]] = [[]]
    for event in events:
        if event.type == "stream_started" and any(e.type == "stream_stopped" for e in found[-1]):
            found.append([])
            # The events after a stop and before the next start (the next turn's
            # user_message) belong to the next session.
            previous = found[-2]
            stop = max(i for i, e in enumerate(previous) if e.type == "stream_stopped")
            found[-1] = previous[stop + 1 :]
            del previous[stop + 1 :]
        found[-1].append(event)
    return found


def sent_comes_back(sent: object, encoded: object) -> bool:
    """Whether everything in ``sent`` is in ``encoded``, unchanged, at any depth."""
    if isinstance(sent, dict):
        return isinstance(encoded, dict) and all(
            key in encoded and sent_comes_back(value, encoded[key]) for key, value in sent.items()
        )
    return sent == encoded


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_every_line_of_every_file_is_read_and_encoded_back_unchanged(path: Path) -> None:
    lines = [line for line in path.read_text().splitlines() if line.startswith("{")]
    lines += [line[6:] for line in path.read_text().splitlines() if line.startswith("data: ")]
    events = read(path)
    assert len(events) == len(lines) > 0
    for line, event in zip(lines, events, strict=True):
        assert parse_event(line) == event
        assert not isinstance(event, InvalidEvent)  # cagent's shapes are read
        encoded = json.loads(event.model_dump_json())
        original = json.loads(line)
        # What the producer left out reads as its zero value; everything it sent,
        # modelled or not, comes back as it was.
        assert sent_comes_back(original, encoded), (original, encoded)


# The rules a cagent stream breaks as our spec words them, per file (index, rule); every
# other event passes every rule. Each is cagent's, not the reader's:
# - TestErrorEvent: cagent's error event carries no AgentContext (no agent_name) and
#   the zero time 0001-01-01, earlier than the events before it;
# - TestToolCallSequence: an unknown tool's error response with no tool_call before it;
# - TestToolRejectionWithReason: a rejected call answered after its confirmation, with
#   no tool_call event;
# - TestCompaction: a compaction announced as 'started' without a 'start' before it;
# - the .fragment files hold no stream_started / stream_stopped (see the README).
BROKEN = {
    "runtime_test__TestErrorEvent.ndjson": [(6, "agent_name_empty"), (6, "timestamp_order")],
    "runtime_test__TestToolCallSequence.ndjson": [(10, "tool_call_response_unmatched")],
    "runtime_test__TestToolRejectionWithReason.fragment.ndjson": [
        (1, "tool_call_response_unmatched")
    ],
    "runtime_test__TestCompaction.ndjson": [(16, "compaction_order")],
}


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_validate_checks_the_rules_it_knows_and_skips_unknown_events(path: Path) -> None:
    events = read(path)
    found: list[tuple[int, str]] = []
    skipped = 0
    offset = 0
    for session in sessions(events):
        validator = StreamValidator()
        for event in session:
            found += [(offset + v.index, v.rule) for v in validator.check(event)]
        if not path.name.endswith(".fragment.ndjson"):
            found += [(offset + v.index, v.rule) for v in validator.finish()]
        assert validator.skipped == [
            i for i, event in enumerate(session) if isinstance(event, UnknownEvent)
        ]
        skipped += len(validator.skipped)
        offset += len(session)
    if path.name.endswith(".fragment.ndjson"):
        found = [(i, rule) for i, rule in found if not rule.startswith("stream_started")]
    assert found == BROKEN.get(path.name, [])
    assert skipped == sum(isinstance(event, UnknownEvent) for event in events) > 0


def test_the_unknown_types_are_kept_with_their_fields() -> None:
    events = read(FIXTURES / "runtime_test__TestSimple.ndjson")
    unknown = [event for event in events if isinstance(event, UnknownEvent)]
    assert {event.type for event in unknown} == {"agent_info", "toolset_info", "message_added"}
    info = unknown[0]
    assert info.type == "agent_info"
    assert info.model_extra is not None
    assert info.model_extra["agent_name"] == "root"


def test_cagents_team_info_is_read_as_ours() -> None:
    (team,) = [
        e for e in read(FIXTURES / "runtime_test__TestSimple.ndjson") if e.type == "team_info"
    ]
    assert isinstance(team, TeamInfoEvent)
    assert team.available_agents == (
        TeamAgent(name="root", description="", provider="test", model="mock-model"),
    )
    assert (team.current_agent, team.agent_name) == ("root", "root")


def test_our_encoders_carry_a_real_producers_events_through() -> None:
    events = read(FIXTURES / "runtime_test__TestToolCallSequence.ndjson")
    ndjson = NDJSONDecoder()
    assert ndjson.feed(b"".join(encode_ndjson(event) for event in events)) == events
    sse = SSEEventDecoder()
    framed = b"".join(encode_sse(event, sequence=n) for n, event in enumerate(events, 1))
    assert [(item.sequence, item.event) for item in sse.feed(framed)] == list(enumerate(events, 1))


def newer(line: str) -> str:
    """A line of the fixtures in the newer upstream's shape (the fixtures' README): the
    AgentContext first, and a ``tool_call_response`` carrying ``tool_call_id``, not the call."""
    fields = json.loads(line)
    context = {key: fields.pop(key) for key in ("agent_name", "timestamp") if key in fields}
    if fields["type"] == "tool_call_response" and "tool_call" in fields:
        fields["tool_call_id"] = fields.pop("tool_call")["id"]
    return json.dumps(context | fields, separators=(",", ":"))


@pytest.mark.parametrize("framing", ["ndjson", "sse"])
def test_a_newer_producers_stream_goes_on_past_an_event_whose_shape_changed(framing: str) -> None:
    path = FIXTURES / "runtime_test__TestToolCallSequence.ndjson"
    lines = [newer(line) for line in path.read_text().splitlines()]
    if framing == "ndjson":
        decoder = NDJSONDecoder()
        events = decoder.feed("\n".join(lines).encode() + b"\n") + decoder.close()
    else:
        sse = SSEEventDecoder()  # cagent's server frames without event or id fields
        framed = "".join(f"data: {line}\n\n" for line in lines).encode()
        events = [item.event for item in sse.feed(framed) + sse.close()]
    # Every record is read, in order; the one a newer producer reshaped is an
    # InvalidEvent saying why, and the events after it still arrive.
    assert len(events) == len(lines)
    (position,) = [i for i, event in enumerate(events) if isinstance(event, InvalidEvent)]
    reshaped = events[position]
    assert isinstance(reshaped, InvalidEvent)
    assert (reshaped.data, reshaped.declared_type) == (lines[position], "tool_call_response")
    assert "tool_call: Field required" in reshaped.reason
    assert [event.type for event in events[position + 1 :]] == ["message_added", "stream_stopped"]
    assert [parse_event(line) for line in lines] == events
    # A strict read refuses it.
    with pytest.raises(StreamEventError, match="tool_call: Field required"):
        parse_event(lines[position], strict=True)
