"""A memory store's session holds its events as their JSON once an event stream has read them.

An idle session is most of what a server holds; its events were most of the objects
the cyclic garbage collector walked. After an SSE reader has sent them, the log holds
each as the JSON it sent (untracked by the collector), later SSE readers send those
bytes as they are, and every other reader (AG-UI, A2A, forks) gets the same models as
before.
"""

import gc
from typing import Any, cast

from agentrt.server import create_app
from agentrt.server.backend import EncodedEvent
from agentrt.server.memory import MemoryLog
from agentrt.server.sessions import Session
from agentrt.stream.codec import SequencedEvent, encode_sse
from agentrt.stream.events import AgentChoiceEvent, StreamEvent, StreamStartedEvent
from tests.server_support import (
    ADD_SCRIPT,
    decode,
    factory_of,
    in_process,
    new_session,
    store_of,
    text_of,
    types,
)


def frames(body: bytes) -> list[bytes]:
    """The SSE frames of ``body``, each without its blank line."""
    return body.removesuffix(b"\n\n").split(b"\n\n")


def frames_of(items: list[SequencedEvent]) -> bytes:
    return b"".join(encode_sse(item.event, sequence=item.sequence) for item in items)


async def test_an_event_stream_leaves_the_sessions_events_as_the_json_it_sent() -> None:
    app = create_app(factory_of(ADD_SCRIPT))
    async with in_process(app) as client:
        session_id = await new_session(client)
        body = (
            await client.post(f"/sessions/{session_id}/messages", json={"message": "1 + 2?"})
        ).content
        log = cast("MemoryLog", store_of(app).sessions[session_id].log)
        sent = decode(body)
        assert types(sent)[-1] == "stream_stopped"
        assert text_of(sent) == "1 + 2 = 3"

        # Held as the JSON it sent: bytes, which the collector does not track.
        held: list[Any] = list(log._events)  # the log's own storage
        assert [type(event) for event in held] == [bytes] * len(sent)
        assert not [event for event in held if gc.is_tracked(event)]
        assert b"".join(held) == b"".join(f.split(b"data: ", 1)[1] for f in frames(body))

        # Another event stream sends the same bytes; any other reader reads the models
        # the first stream's frames were written from.
        again = await client.get(f"/sessions/{session_id}/events?after=0")
        assert again.content == body
        models = await log.read(0, 1000)
        assert [item.event for item in models] == [item.event for item in sent]
        assert frames_of(models) == body


async def test_encoded_reads_give_each_events_frame_and_pack_only_the_newest() -> None:
    log = MemoryLog(cast("Session", None), retain=5000)
    events: list[StreamEvent] = [StreamStartedEvent(session_id="s", agent_name="agent")]
    events += [
        AgentChoiceEvent(session_id="s", content=f"{n} ", agent_name="agent") for n in range(1500)
    ]
    for event in events:
        log.append(event)
    expected = [SequencedEvent(n, event) for n, event in enumerate(events, 1)]

    read = await log.read_encoded(0, 5000)
    assert all(isinstance(item, EncodedEvent) for item in read)
    assert b"".join(cast("EncodedEvent", item).sse() for item in read) == frames_of(expected)
    # A deque is reached from its nearer end: only the newest events are packed when
    # read, so that a reader catching up on a long log does not pay for each by its
    # distance from the end.
    held: list[Any] = list(log._events)
    packed = [type(event) is bytes for event in held]
    assert packed == [False] * (len(events) - 1024) + [True] * 1024

    # Models for every other reader, packed or not, the same as written.
    assert log.since(0) == expected
    assert await log.read(1400, 5) == expected[1400:1405]
    # And encoded reads of what is packed give the same frames again.
    again = await log.read_encoded(1490, 100)
    assert b"".join(cast("EncodedEvent", item).sse() for item in again) == frames_of(
        expected[1490:]
    )


def test_an_encoded_event_is_read_from_json_that_names_its_type_first_and_only_then() -> None:
    event = AgentChoiceEvent(session_id="s", content='é "quoted"', agent_name="agent")
    data = event.__pydantic_serializer__.to_json(event)
    encoded = EncodedEvent.of_json(7, data)
    assert encoded == EncodedEvent(7, "agent_choice", data)
    assert encoded is not None
    assert encoded.sse() == encode_sse(event, sequence=7)
    # Another producer's field order (or no type at all): not read, the caller parses.
    assert EncodedEvent.of_json(7, b'{"session_id":"s","type":"agent_choice"}') is None
    assert EncodedEvent.of_json(7, b'{"type":') is None
