"""What an A2A context keeps with its session: its id, and a record of each task.

A context's session keeps, as its ``a2a`` attachment (see
:meth:`~agentrt.server.backend.Backend.write_attachment`: in the store when it is
durable, for every process), a :class:`ContextIndex`: the context's own id (its
session's id is a hash of it) and, per task, a :class:`TaskRecord`: the run, the
client's messages (the session's events do not hold their ids, nor the answers to a
confirmation as the client sent them), and, once a later task started, how the task
ended. That end keeps an old task's status readable after its events have left the
session's log (the server keeps a session's ``retain`` latest events).

The index is written when a task starts (the context has no other task at work then,
so no two processes write it at once) and when the client answers a task that waits.
A task that ended more than ``session_ttl`` seconds before a new task of its context
starts is forgotten then (the time a session is kept when idle: a task is kept as
long after its end); a request for it says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from a2a.types import Message, TaskStatus
from google.protobuf.json_format import MessageToDict, ParseDict

from agentrt.a2a._task import TaskFold
from agentrt.server.sessions import Session

__all__ = ("ATTACHMENT", "ContextIndex", "TaskEnd", "TaskRecord")

ATTACHMENT = "a2a"
"""The name under which a context's index is kept with its session."""


@dataclass(frozen=True, slots=True)
class TaskEnd:
    """How a task ended: its last event's number, when (epoch seconds), its status."""

    last: int
    at: float
    status: TaskStatus

    @classmethod
    def of(cls, fold: TaskFold) -> TaskEnd:
        """The end of the ended task ``fold`` tells."""
        status = fold.task().status
        at = datetime.fromisoformat(fold.updated).timestamp() if fold.updated else 0.0
        return cls(fold.sequence, at, status)


@dataclass(slots=True)
class TaskRecord:
    """What a context keeps of one task (see the module docstring)."""

    run_id: str
    messages: list[tuple[int, Message]] = field(default_factory=list)
    """The client's messages, each with the number of the event after which it came."""
    end: TaskEnd | None = None


@dataclass(slots=True)
class ContextIndex:
    """A context's id and its tasks, by the number of the event before each one's first.

    Attributes:
        forgotten: Tasks numbered up to this one were forgotten (ended more than
            ``session_ttl`` seconds before a later task started).
    """

    context_id: str
    tasks: dict[int, TaskRecord] = field(default_factory=dict)
    forgotten: int = -1

    @classmethod
    async def load(cls, session: Session) -> ContextIndex | None:
        """The index kept with ``session``, as last written by any process."""
        kept = await session.store.backend.read_attachment(session, ATTACHMENT)
        return None if kept is None else cls.from_json(kept)

    async def save(self, session: Session) -> None:
        """Keep the index with ``session``, for every process."""
        await session.store.backend.write_attachment(session, ATTACHMENT, self.to_json())

    @classmethod
    def from_json(cls, kept: dict[str, Any]) -> ContextIndex:
        """The index from its JSON form."""
        tasks: dict[int, TaskRecord] = {}
        for after, record in kept["tasks"].items():
            if isinstance(record, str):  # as the first release kept it: the run's id
                tasks[int(after)] = TaskRecord(record)
                continue
            ended = record.get("end")
            tasks[int(after)] = TaskRecord(
                str(record["run"]),
                [(int(at), ParseDict(message, Message())) for at, message in record["messages"]],
                None
                if ended is None
                else TaskEnd(
                    int(ended["last"]),
                    float(ended["at"]),
                    ParseDict(ended["status"], TaskStatus()),
                ),
            )
        return cls(str(kept["context_id"]), tasks, int(kept.get("forgotten", -1)))

    def to_json(self) -> dict[str, Any]:
        """The index as JSON, as :meth:`from_json` reads it."""
        tasks: dict[str, Any] = {}
        for after, record in self.tasks.items():
            kept: dict[str, Any] = {
                "run": record.run_id,
                "messages": [[at, MessageToDict(message)] for at, message in record.messages],
            }
            if record.end is not None:
                kept["end"] = {
                    "last": record.end.last,
                    "at": record.end.at,
                    "status": MessageToDict(record.end.status),
                }
            tasks[str(after)] = kept
        return {"context_id": self.context_id, "tasks": tasks, "forgotten": self.forgotten}

    def until(self, after: int) -> int | None:
        """The number of the last event the task ``after`` may have (the event before
        the next task's first); None for the latest task."""
        later = [other for other in self.tasks if other > after]
        return min(later) if later else None

    def unended(self) -> list[int]:
        """The tasks whose end is not recorded, oldest first."""
        return sorted(after for after, record in self.tasks.items() if record.end is None)

    def prune(self, now: float, keep_for: float) -> list[int]:
        """Forget the tasks that ended more than ``keep_for`` seconds before ``now``."""
        old = sorted(
            after
            for after, record in self.tasks.items()
            if record.end is not None and record.end.at < now - keep_for
        )
        for after in old:
            del self.tasks[after]
            self.forgotten = max(self.forgotten, after)
        return old

    def missing(self, task_id: str, after: int) -> str:
        """Why the task ``task_id`` of this context is not found."""
        if after <= self.forgotten:
            return (
                f"no task {task_id!r}: it ended more than session_ttl seconds before a later "
                "task of its context started, and is no longer kept"
            )
        return f"no task {task_id!r}"
