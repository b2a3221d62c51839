"""A durable team in a process of its own, for the crash tests of teams.

``python -m tests.durable.team_app MODE STORE RUN_ID`` with MODE one of:

* ``run``: start the run ``RUN_ID`` of the team of :mod:`tests.durable.team_support`
  with the user message ``RUN_ID`` (``delegate``, ``parallel``, ``deep`` or ``billing
  please``: the lead's plan), and print its output;
* ``recover``: launch (DBOS recovers this executor's unfinished runs), wait for ``RUN_ID``
  and print its output;
* ``next``: ask ``and now?`` in a new run that continues the conversation the store
  recorded for ``RUN_ID`` (``after=``), and print its output;
* ``wait``: start the run ``RUN_ID`` with the user message ``clean up``: the researcher's
  ``delete_file`` call is deferred (a ``tool:call:before`` handler holds it for approval),
  so the run ends waiting on it; print the ids of the calls it left open and write them
  to ``WORKDIR/waiting``; with ``AGENTRT_TEST_BLOCK`` set, then wait forever;
* ``answer``: approve that call in the run ``RUN_ID.answer``, which continues the
  conversation the store recorded for ``RUN_ID`` (``after=``), and print its output.

The executor id is ``AGENTRT_TEST_EXECUTOR``; ``WORKDIR`` is ``AGENTRT_TEST_WORKDIR``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio

from agentrt import DEFER, Approval, ToolResult
from agentrt.bus import EventContext
from agentrt.durable import DurableAgent, launch, result

from .server_app import _log as log
from .team_support import make_team


def hold_deletes(ctx: EventContext[Any, Any]) -> None:
    """Every deletion waits for a person's approval, outside the run."""
    if ctx.parameters["tool_name"] == "delete_file":
        ctx.output = DEFER


team = make_team()
team.sub_agents[0].events.on("tool:call:before", hold_deletes)  # the researcher's
durable = DurableAgent(team, name="team-test")


async def main(mode: str, store: str, run_id: str) -> None:
    launch(store, executor_id=os.environ.get("AGENTRT_TEST_EXECUTOR", "local"))
    if mode == "run":
        done = await durable.execute(run_id, run_id=run_id)
    elif mode == "recover":
        done = await result(run_id)
    elif mode == "next":
        done = await durable.execute("and now?", after=run_id, run_id=f"{run_id}.next")
    elif mode == "wait":
        done = await durable.execute("clean up", run_id=run_id)
        ids = ",".join(call.id for call in done.pending_tool_calls)
        log("waiting", ids)
        print(ids, flush=True)
        if os.environ.get("AGENTRT_TEST_BLOCK"):
            await anyio.sleep_forever()
        return
    elif mode == "answer":
        answers: dict[str, ToolResult] = {"call-delete-r": Approval("approve")}
        done = await durable.execute(tool_results=answers, after=run_id, run_id=f"{run_id}.answer")
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(done.output, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
