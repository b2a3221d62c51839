"""A durable team in a process of its own, for the crash tests of teams.

``python -m tests.durable.team_app MODE STORE RUN_ID`` with MODE one of:

* ``run``: start the run ``RUN_ID`` of the team of :mod:`tests.durable.team_support`
  with the user message ``RUN_ID`` (``delegate``, ``parallel`` or ``billing please``:
  the lead's plan), and print its output;
* ``recover``: launch (DBOS recovers this executor's unfinished runs), wait for ``RUN_ID``
  and print its output;
* ``next``: ask ``and now?`` in a new run that continues the conversation the store
  recorded for ``RUN_ID`` (``after=``), and print its output.

The executor id is ``AGENTRT_TEST_EXECUTOR``; ``WORKDIR`` is ``AGENTRT_TEST_WORKDIR``.
"""

from __future__ import annotations

import os
import sys

import anyio

from agentrt.durable import DurableAgent, launch, result

from .team_support import make_team

durable = DurableAgent(make_team(), name="team-test")


async def main(mode: str, store: str, run_id: str) -> None:
    launch(store, executor_id=os.environ.get("AGENTRT_TEST_EXECUTOR", "local"))
    if mode == "run":
        done = await durable.execute(run_id, run_id=run_id)
    elif mode == "recover":
        done = await result(run_id)
    elif mode == "next":
        done = await durable.execute("and now?", after=run_id, run_id=f"{run_id}.next")
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(done.output, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
