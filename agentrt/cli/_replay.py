"""``agentrt replay``: a recorded run of a durable session, run again, or written out as a test.

The durable package (DBOS, SQLAlchemy) is imported when the command runs; a missing
extra is a usage error that says which to install.
"""

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from agentrt.cli._app import EXIT_FAILED, EXIT_OK, PROG, usage_error
from agentrt.cli._render import make_renderer
from agentrt.cli._targets import one_line
from agentrt.stream.codec import encode_ndjson

if TYPE_CHECKING:
    from agentrt.stream.events import StreamEvent

__all__ = ("ReplayOptions", "replay_command")


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """What ``agentrt replay`` was asked to do."""

    session_id: str
    store: str
    run: int | None
    agent: str | None
    json: bool
    export_test: bool


def replay_command(options: ReplayOptions) -> int:
    """Run ``agentrt replay``; the exit code (0 the recorded events, 1 not, 2 bad usage)."""
    prog = f"{PROG} replay"
    if options.run is not None and options.run < 1:
        return usage_error(f"{prog}: --run takes a run's number, from 1; got {options.run}")
    try:
        from agentrt import durable
    except ImportError as error:
        return usage_error(f"{prog} needs agentrt[durable]: {error}")
    try:
        recording = anyio.run(
            durable.read_recording, options.store, options.session_id, options.run
        )
        if options.export_test:
            sys.stdout.write(durable.export_test(recording, options.agent))
            return EXIT_OK
        replayed = anyio.run(durable.replay_recording, recording, options.agent)
    except durable.ReplayDivergenceError as error:
        _show(error.events, options.json)
        sys.stderr.write(f"{PROG}: {one_line(str(error), limit=1000)}\n")
        return EXIT_FAILED
    except (durable.ReplayError, durable.StoreUnavailableError, ValueError, TypeError) as error:
        return usage_error(f"{prog}: {error}")
    _show(replayed.events, options.json)
    differences = replayed.differences()
    where = f"run {recording.number} of session {options.session_id}"
    if differences:
        sys.stderr.write(
            f"{PROG}: the replay of {where} differs from the recording: "
            f"{one_line(differences[0], limit=1000)}\n"
        )
        return EXIT_FAILED
    sys.stderr.write(
        f"{PROG}: replayed {where}: the {len(replayed.events)} recorded events, in order "
        "(the model and the tools were not called)\n"
    )
    return EXIT_OK


def _show(events: "Sequence[StreamEvent]", as_json: bool) -> None:
    if as_json:
        for event in events:
            sys.stdout.write(encode_ndjson(event).decode("utf-8"))
        sys.stdout.flush()
        return
    renderer = make_renderer(sys.stdout)
    for event in events:
        renderer.event(event)
    renderer.finish()
