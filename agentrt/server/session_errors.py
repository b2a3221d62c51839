"""The errors of the server's sessions and their stores.

No HTTP here: :mod:`agentrt.server.app` maps each onto a status and a code.

::

    SessionError (an AgentrtError)
     ├── SessionNotFoundError (also LookupError)
     ├── SessionLimitError
     ├── StoreNotRunningError
     ├── StoreFailedError
     ├── RunInProgressError
     ├── NoRunError
     ├── AlreadyAnsweredError
     ├── RunEndedError
     ├── UnknownEventError (also LookupError)
     └── CannotForkError

Answers for ids no run produced raise :class:`~agentrt.stream.UnknownToolCallError`,
unknown decisions :class:`~agentrt.stream.InvalidDecisionError`, and reads behind the
retained window :class:`~agentrt.stream.EventsExpiredError`.
"""

from agentrt.exceptions import AgentrtError

__all__ = (
    "AGUIInputError",
    "AlreadyAnsweredError",
    "CannotForkError",
    "NoRunError",
    "RunEndedError",
    "RunInProgressError",
    "SessionError",
    "SessionExistsError",
    "SessionLimitError",
    "SessionNotFoundError",
    "StoreFailedError",
    "StoreNotRunningError",
    "UnknownEventError",
)


class SessionError(AgentrtError):
    """Base class of the errors of server sessions."""


class AGUIInputError(SessionError):
    """A ``RunAgentInput`` the server cannot run (answered as a 422 ``invalid_ag_ui_input``)."""


class SessionNotFoundError(SessionError, LookupError):
    """No session has this id (it never existed, expired, or was deleted).

    Args:
        session_id: The id given.
        in_memory: The store keeps sessions in its process only (``--store memory``):
            the message says that a restart loses them too.

    Attributes:
        session_id: The id given.
    """

    def __init__(self, session_id: str, *, in_memory: bool = False) -> None:
        self.session_id = session_id
        lost = (
            "expired after being idle, was deleted, or was lost in a restart "
            "(this server keeps its sessions in memory: they do not survive a restart)"
            if in_memory
            else "expired after being idle, or was deleted"
        )
        super().__init__(
            f"no session {session_id!r}: it never existed, {lost}; create one with POST /sessions"
        )


class SessionExistsError(SessionError):
    """A session with the id asked for exists already (a store's ``create`` with an id).

    Attributes:
        session_id: The id given.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__("a session with this id exists already; open it instead")


class SessionLimitError(SessionError):
    """The server holds as many sessions as it may.

    Attributes:
        limit: The configured maximum.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the server already holds its maximum of {limit} sessions; "
            "retry after idle sessions expire"
        )


class StoreFailedError(SessionError):
    """A durable session store's database failed (unreachable, refused, or not writable).

    The message names the store (without its password) and says why.
    """


class StoreNotRunningError(SessionError):
    """The session store's task group is not running (the app's lifespan did not run)."""

    def __init__(self) -> None:
        super().__init__(
            "the server's session store is not running: serve the app with an ASGI server "
            "that runs the lifespan protocol (uvicorn does), or enter "
            "app.router.lifespan_context(app) around direct calls"
        )


class RunInProgressError(SessionError):
    """A message was posted while the session's previous run is still going.

    Attributes:
        session_id: The session.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            "this session is already running a message: wait for its stream_stopped "
            "event (GET /sessions/{id}/events) or cancel it (DELETE /sessions/{id}/run)"
        )


class NoRunError(SessionError):
    """There is no run to cancel.

    Attributes:
        session_id: The session.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__("this session has no run in progress to cancel")


class AlreadyAnsweredError(SessionError):
    """A confirmation was answered a second time; the first answer stands.

    Attributes:
        tool_call_id: The tool call.
    """

    def __init__(self, tool_call_id: str) -> None:
        self.tool_call_id = tool_call_id
        super().__init__(
            f"tool call {tool_call_id!r} was already answered; the first answer stands"
        )


class RunEndedError(SessionError):
    """A confirmation names a tool call of a run that has ended.

    Attributes:
        tool_call_id: The tool call.
    """

    def __init__(self, tool_call_id: str) -> None:
        self.tool_call_id = tool_call_id
        super().__init__(
            f"tool call {tool_call_id!r} belongs to a run that has ended: "
            "nothing waits for this answer any more"
        )


class UnknownEventError(SessionError, LookupError):
    """A fork names an event the session never had (its events are numbered from 1).

    An event id of another session is a number of that session's log: here it names
    this session's event of that number, or none.

    Attributes:
        session_id: The session.
        event_id: The id given.
        last: The number of the session's latest event (0: none yet).
    """

    def __init__(self, session_id: str, event_id: int, last: int) -> None:
        self.session_id = session_id
        self.event_id = event_id
        self.last = last
        have = f"its events are numbered 1 to {last}" if last else "it has no events yet"
        super().__init__(
            f"this session has no event {event_id}: {have} (event ids are the id: lines of "
            "GET /sessions/{id}/events, numbered per session)"
        )


class CannotForkError(SessionError):
    """A fork asked for something the session cannot give (the message says what)."""
