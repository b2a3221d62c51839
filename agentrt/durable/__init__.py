"""Durable runs on DBOS: a run survives the death of its process (``agentrt[durable]``).

::

    from agentrt import Agent
    from agentrt.durable import DurableAgent, launch

    durable = DurableAgent(Agent(model=model, tools=[charge]), name="billing")
    launch("sqlite:///runs.sqlite", executor_id="worker-1")
    result = await durable.execute("Charge Ada 10 EUR")

Each run is a DBOS workflow named after the durable agent; each model call and each
tool call is a step recorded in the store, a team's members' at any depth too. See
:class:`DurableAgent` for recovery.

A stored server session is branched at one of its events with :func:`fork`
(:mod:`agentrt.durable._fork`): the run's recorded steps up to there stand in.
"""

try:
    import dbos as _dbos  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed where tested
    raise ImportError("agentrt.durable needs DBOS: pip install 'agentrt[durable]'") from exc

from ._agent import (
    DEFAULT_STORE,
    DurableAgent,
    RunCancelledError,
    RunNotFoundError,
    StoreUnavailableError,
    cancel,
    launch,
    result,
    shutdown,
)
from ._fork import fork
from ._steps import (
    DurableModel,
    DurableReplayError,
    FreshRun,
    RecordedToolError,
    StepJournal,
    fresh_run,
    record_pending,
    step_journal,
)

__all__ = (
    "DEFAULT_STORE",
    "DurableAgent",
    "DurableModel",
    "DurableReplayError",
    "FreshRun",
    "RecordedToolError",
    "RunCancelledError",
    "RunNotFoundError",
    "StepJournal",
    "StoreUnavailableError",
    "cancel",
    "fork",
    "fresh_run",
    "launch",
    "record_pending",
    "result",
    "shutdown",
    "step_journal",
)
