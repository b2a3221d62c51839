"""A team's run on a durable server, cancelled after every event of every agent's.

The server cancellation kit (agentrt.testing) on a durable store: each cancelled run,
wherever a sub-agent or an agent handed to had got, ends as one valid stream, leaves
every tool call at every depth answered, keeps in its stream the usage of every agent
of the team, is cancelled in the store (never recovered), and the session answers the
next message.
"""

from __future__ import annotations

from pathlib import Path

from agentrt.testing import server_cancellation_violations
from tests.test_team_cancellation import AGAIN, KINDS, Kind, Team


@KINDS
async def test_a_durable_team_run_cancelled_after_every_event_keeps_the_contract(
    kind: Kind, tmp_path: Path
) -> None:
    team = Team(kind)
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    problems = await server_cancellation_violations(team, "go", then=AGAIN, storage=store)
    assert problems == []
    # One answered run after each cancelled one.
    assert team.afterwards >= 10
