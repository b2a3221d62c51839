"""Record to test: a recorded run written out as a pytest module.

:func:`export_test` is what ``agentrt replay --export-test SESSION_ID > test_x.py``
writes: a module holding the recording (as JSON) and one test that replays it
against the agent the session's factory makes *now* (see
:func:`~agentrt.durable.replay_recording`) and asserts the recorded event sequence.
A real conversation becomes a regression test in one command: it passes while the
agent behaves as it did, and fails (a :class:`~agentrt.durable.ReplayDivergenceError`
naming the step, or the first event that differs) once a change makes it take
another path.
"""

from __future__ import annotations

import re

from ._recording import Recording, ReplayError

__all__ = ("export_test",)

_TEMPLATE = '''\
"""Run {number} of session {session}, recorded by agentrt, as a regression test.

Written by ``agentrt replay --export-test``. The recorded model answers stand in for
the model (a ScriptedModel of the recording, streamed in the recorded pieces), the
recorded tool results for the tools and the recorded answers for the confirmations:
nothing external is called. The test makes the agent as it is now, with

    {shown}

and checks that it emits the events the recorded run emitted (timestamps apart), with
the recorded instructions and tools. A change that makes it take another path fails
the test, naming the first step, event or setting that differs.
"""

import anyio

from agentrt.durable import Recording, replay_recording
{agent_import}
RECORDING = Recording.from_json({recording})


def test_{name}_emits_the_recorded_events() -> None:
    replayed = anyio.run(replay_recording, RECORDING, AGENT)
    assert replayed.differences() == []
'''


def _literal(text: str) -> str:
    """``text`` as a Python string literal: raw and triple-quoted where it can be."""
    if '"""' not in text and "\r" not in text and not text.endswith("\\"):
        return f'r"""\n{text}\n"""'
    return repr(text)


def _agent_import(target: str) -> str:
    location, _, attr = target.rpartition(":")
    is_module = not (location.endswith(".py") or "/" in location or "\\" in location)
    if is_module and attr.isidentifier():
        return f"from {location} import {attr} as AGENT\n"
    return f"AGENT = {target!r}  # the agent factory, by name\n"


def export_test(recording: Recording, agent: str | None = None) -> str:
    """A pytest module that replays ``recording`` and asserts its events.

    Args:
        recording: The recorded run (:func:`~agentrt.durable.read_recording`).
        agent: The agent factory's name (``module:attr`` or ``file.py:attr``);
            default: the one the session was served with.

    Raises:
        ReplayError: No agent factory is known for the session, and none is given.
        ValueError: ``agent`` is not a ``module:attr`` or ``file.py:attr`` name.
    """
    target = agent if agent is not None else recording.factory
    if target is None:
        raise ReplayError(
            f"session {recording.session_id!r} recorded no importable agent factory (it "
            "was served with a lambda, a closure or a method): name the agent the test "
            "makes (--agent module:attr)"
        )
    from agentrt.cli._targets import TargetError, parse_target

    try:
        parse_target(target)
    except TargetError as error:
        raise ValueError(str(error)) from None
    name = re.sub(r"\W+", "_", f"run_{recording.number}_of_session_{recording.session_id[:8]}")
    # The session id is a secret of its own in a server: the test shows its start only.
    return _TEMPLATE.format(
        number=recording.number,
        session=f"{recording.session_id[:8]}...",
        shown=target,
        agent_import=_agent_import(target),
        recording=_literal(recording.to_json()),
        name=name.lower().rstrip("_"),
    )
