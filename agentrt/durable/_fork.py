"""``agentrt.durable.fork``: a stored server session branched at one of its events.

The library form of ``POST /sessions/{id}/fork`` for a process that serves nothing: it
opens the store as a server does (:class:`~agentrt.server.durable.DurableBackend`),
forks the session (:meth:`~agentrt.server.SessionStore.fork`: the run's recorded steps
up to the event stand in for the model and the tools), and waits until the fork's run,
if it has one, has ended, wherever it ran. The new session is served by any server on
the store afterwards.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # The server is imported when a fork is made: agentrt.durable works without it.
    from agentrt.server.store import AgentFactory

__all__ = ("fork",)


async def fork(
    store: str,
    session_id: str,
    at: int,
    agent_factory: AgentFactory,
    *,
    message: str | None = None,
    executor_id: str | None = None,
) -> str:
    """Branch the session ``session_id`` of ``store`` at its event ``at``; the new id.

    Args:
        store: The durable store the session lives in (``sqlite:///PATH``,
            ``postgresql://...``).
        session_id: The session to branch.
        at: The id of one of its events.
        agent_factory: Makes the new session's agent (the one the server serves with).
        message: Replaces the last user message at that event (an edited fork).
        executor_id: This process's executor id (default: one of its own); the fork's
            run, if this process runs it and dies, is recovered by a process started
            with that id.

    Returns:
        The new session's id, once its run (if any) has ended.

    Raises:
        SessionNotFoundError, UnknownEventError, EventsExpiredError, CannotForkError:
            As :meth:`~agentrt.server.SessionStore.fork`.
        StoreUnavailableError: The store cannot be used.
    """
    from agentrt.server.durable import DurableBackend
    from agentrt.server.store import SessionStore

    backend = DurableBackend(store, executor_id=executor_id or f"fork-{uuid.uuid4().hex[:12]}")
    refused: Exception | None = None
    async with SessionStore(agent_factory, backend=backend) as sessions:
        try:
            forked = await sessions.fork(session_id, at, message=message)
        except Exception as error:
            # Raised as itself below, not in the exception group of the store's tasks.
            refused = error
        else:
            # Until the fork's run has ended, whichever process on the store runs it.
            async with contextlib.aclosing(forked.follow(0)) as batches:
                async for _ in batches:
                    pass
            return forked.id
    assert refused is not None
    raise refused
