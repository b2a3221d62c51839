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

A run of a durable server session is replayed from its recording alone with
:func:`replay` (:mod:`agentrt.durable._replay`): the recorded answers and results
stand in for the model and the tools, and the replay emits the events the
original did, or says where the code now takes another path.

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
from ._export import export_test
from ._fork import fork
from ._recording import (
    NoRecordingStoreError,
    RecordedStep,
    Recording,
    RecordingIncompleteError,
    RecordingNotFoundError,
    ReplayError,
    read_recording,
)
from ._replay import (
    RecordedModel,
    RecordedStepError,
    ReplayDivergenceError,
    ReplayResult,
    replay,
    replay_recording,
)
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
    "NoRecordingStoreError",
    "RecordedModel",
    "RecordedStep",
    "RecordedStepError",
    "RecordedToolError",
    "Recording",
    "RecordingIncompleteError",
    "RecordingNotFoundError",
    "ReplayDivergenceError",
    "ReplayError",
    "ReplayResult",
    "RunCancelledError",
    "RunNotFoundError",
    "StepJournal",
    "StoreUnavailableError",
    "cancel",
    "export_test",
    "fork",
    "fresh_run",
    "launch",
    "read_recording",
    "record_pending",
    "replay",
    "replay_recording",
    "result",
    "shutdown",
    "step_journal",
)
