"""A2A (the Agent2Agent protocol, 1.0): the server's agents for other agents.

``agentrt serve`` (and :func:`~agentrt.server.create_app`) serves A2A when ``a2a-sdk``
is installed (``pip install 'agentrt[a2a]'``), through the official SDK's server
pieces: its request handler interface, implemented here over the session core, and
its Starlette routes::

    GET  /.well-known/agent-card.json   the agent card (no token needed)
    POST /a2a                           the JSON-RPC binding
    *    /a2a/rest/...                  the HTTP+JSON binding (/a2a/rest/message:send...)

Methods: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask and
SubscribeToTask. A2A is one more projection of the session core, as AG-UI is
(:mod:`agentrt.server.agui`): whatever keeps the sessions (memory, SQLite, Postgres)
keeps the tasks, and any process on a durable store answers for any task.

Contexts and tasks
    An A2A ``contextId`` names one server session (one agent, one conversation),
    whose id is derived from it (:func:`context_session_id`): a message without
    one starts a new context, with an unguessable id. A ``taskId`` names one run
    of that session: ``<session id>.<N>``, N the number of the session's last event
    before the run's first (the run's own id is in the task's metadata,
    ``{"agentrt": {"runId": ...}}``). A message without ``taskId`` starts a new
    task (its text parts, joined, are the run's prompt); one context runs one task
    at a time. The task's state, artifacts and history are read from the run's
    events in the session's log (:mod:`agentrt.a2a._task` says what each event
    becomes), with what the context keeps beside them (:mod:`agentrt.a2a._index`:
    the client's own messages, and how each earlier task ended). A task is kept as
    long as its session is (``session_ttl`` idle), and as long as ``session_ttl``
    after its end; once its events left the log (a session keeps its ``retain``
    latest), it is told from what is left, or from how it ended, and its metadata
    says so (``{"agentrt": {"partial": ...}}``).

ListTasks
    The tasks of one context (``contextId``) or of every context the store holds
    (on a durable store, every process's: any process answers alike), the latest
    change first; by state and ``statusTimestampAfter``, a page at a time
    (``pageSize``, ``pageToken``), with artifacts when asked
    (``includeArtifacts``), and ``historyLength`` messages of each history.

What a client sees
    Streamed text arrives as artifact updates that append, one artifact per model
    turn (``text-1``, ``text-2``...): the answer is the task's last artifact. Tool
    calls, their responses, reasoning and non-fatal errors are ``WORKING`` status
    updates whose message holds the agentrt event as a data part; token usage is
    in the status updates' metadata and the task's (``{"agentrt": {"usage":
    {"inputTokens": ...}}}``). A failed run is ``FAILED``, its status message the error; a
    cancelled one ``CANCELED``.

Confirmations
    A tool call that needs a person's approval puts the task in
    ``INPUT_REQUIRED``: its status message lists the calls waiting (a data part
    ``{"type": "tool_call_confirmation", "pending": [{"toolCallId", "name",
    "arguments", "agentName"}], "decisions": [...]}``, a sub-agent's call with its
    ``parentToolCallId``), and a streaming send ends there. The
    run waits in the server for the answer (in the store when it is durable, so
    any process takes it, also after a restart): the client's next message on the
    task (``taskId`` set) answers with a data part ``{"decisions": {call_id:
    decision}}``, a decision being ``"approve"``, ``"approve-session"``,
    ``"approve-tool"``, ``"reject"`` or ``{"decision": ..., "reason": ...}``, or
    with text for every call waiting: ``approve``, ``reject``, or anything else,
    which rejects them with that text as the reason (the model reads it); the
    task goes on, and the send streams (or returns) what follows. A message to a
    task that ended is refused (``UnsupportedOperationError``, as A2A 1.0 says of
    a task in a terminal state: it does not restart), and so is one to a task at
    work that waits for nothing.

Security
    The server's rules apply to A2A as to every other route (Host, Origin, the
    bearer token: :mod:`agentrt.server.security`), but for the card, which a
    client reads before it knows how to authenticate: with a token, the card
    declares it as the ``bearer`` HTTP security scheme.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import secrets
import time
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing, contextmanager
from email.utils import formatdate
from typing import Any

from a2a.helpers import get_data_parts
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
    DEFAULT_LIST_TASKS_PAGE_SIZE,
    MAX_LIST_TASKS_PAGE_SIZE,
)
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, Router

from agentrt.a2a._body import BodyLimit
from agentrt.a2a._card import JSONRPC_PATH, REST_PATH, agent_card
from agentrt.a2a._index import ATTACHMENT, ContextIndex, TaskEnd, TaskRecord
from agentrt.a2a._task import TaskFold, Update
from agentrt.agent import Agent
from agentrt.server.limits import LimitError, ServerLimits
from agentrt.server.session_errors import (
    AlreadyAnsweredError,
    NoRunError,
    RunEndedError,
    RunInProgressError,
    SessionError,
    SessionNotFoundError,
)
from agentrt.server.sessions import BATCH, Run, Session
from agentrt.server.store import AgentFactory, SessionStore
from agentrt.stream._log import EventsExpiredError
from agentrt.stream.confirm import DECISIONS, UnknownToolCallError

__all__ = (
    "CANCELLED_BY_A2A",
    "MAX_CONTEXT_ID",
    "A2AEndpoint",
    "agent_card",
    "context_session_id",
)

CANCELLED_BY_A2A = "cancelled: CancelTask stopped the task before it finished"
"""The error that ends a run cancelled through A2A (its task is then ``CANCELED``)."""

MAX_CONTEXT_ID = 256
"""The longest ``contextId`` a client may choose, in characters (A2A sets no bound)."""

_PREFIX = "a2a-"

# What a task's metadata says ("partial") when some or all of its events are gone.
_GONE = "its events are no longer kept (a session keeps its retain latest)"
_FROM = "what is told starts at its event"


def context_session_id(context_id: str) -> str:
    """The id of the session of the A2A context ``context_id``.

    Derived (a hash, so that any context id fits the store's ids and a task id), not
    drawn: every process on a durable store finds the context's session from its id.
    """
    digest = hashlib.sha256(context_id.encode("utf-8", "surrogatepass")).digest()
    return _PREFIX + urlsafe_b64encode(digest[:24]).decode()


def _task_id(session: Session, after: int) -> str:
    return f"{session.id}.{after}"


def _split_task_id(task_id: str) -> tuple[str, int]:
    session_id, _, after = task_id.rpartition(".")
    if not session_id.startswith(_PREFIX) or not (after.isascii() and after.isdigit()):
        raise TaskNotFoundError(message=f"no task {task_id[:100]!r}: not a task id of this server")
    return session_id, int(after)


def _state_name(state: TaskState) -> str:
    return str(TaskState.Name(state)).removeprefix("TASK_STATE_").replace("_", "-").lower()


@contextmanager
def _as_a2a_errors() -> Iterator[None]:
    """The session core's errors as A2A's, with their messages."""
    try:
        yield
    except A2AError:
        raise
    except RunInProgressError as error:
        raise UnsupportedOperationError(
            message=f"the context has a task at work: {error}; send a new task once it ended"
        ) from None
    except (LimitError, SessionError) as error:
        raise InternalError(message=str(error)) from None


class A2AEndpoint(RequestHandler):
    """The A2A methods over the sessions of one server (see the module docstring).

    The SDK's JSON-RPC and HTTP+JSON routes call these methods; :meth:`routes`
    makes them, with the agent card's.

    Args:
        store: The server's sessions (a context is one of them).
        agent_factory: The server's factory: the card describes an agent it makes.
        limits: The server's caps (runs at once, message size).
        max_body_size: Bytes a request body may hold.
        token: Whether the server needs a bearer token (the card then says so).
        clock: Wall-clock seconds, to forget the tasks that ended ``session_ttl``
            ago (tests pass a fake one).
    """

    def __init__(
        self,
        store: SessionStore,
        agent_factory: AgentFactory,
        *,
        limits: ServerLimits,
        max_body_size: int,
        token: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._clock = clock
        self._factory = agent_factory
        self._limits = limits
        self._max_body_size = max_body_size
        self._token = token
        self._described: Agent | None = None
        self._described_at = ""

    # -- routes ---------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        """The card's route, the JSON-RPC binding's and the HTTP+JSON binding's."""
        limit = self._max_body_size
        jsonrpc = create_jsonrpc_routes(self, JSONRPC_PATH)[0]
        rest = create_rest_routes(self)
        return [
            Route(AGENT_CARD_WELL_KNOWN_PATH, self.card, methods=["GET"]),
            Route(JSONRPC_PATH, BodyLimit(jsonrpc.app, limit, buffered=False), methods=["POST"]),
            # Some clients (the A2A TCK) post to the interface's URL with a slash.
            Route(
                JSONRPC_PATH + "/",
                BodyLimit(jsonrpc.app, limit, buffered=False),
                methods=["POST"],
            ),
            Mount(REST_PATH, app=BodyLimit(Router(rest), limit, buffered=True)),
        ]

    async def card(self, request: Request) -> Response:
        """``GET /.well-known/agent-card.json``: the card, its URLs the request's.

        With an ``ETag`` (a ``304`` for a client that has it), ``Last-Modified`` (when
        this server first described its agent) and five minutes of ``max-age``.
        """
        from agentrt import __version__

        agent = await self._agent()
        base = str(request.base_url).rstrip("/")
        made = agent_card(agent, base, version=__version__, token=self._token)
        body = json.dumps(agent_card_to_dict(made), separators=(",", ":")).encode()
        headers = {
            "ETag": f'W/"{hashlib.sha256(body).hexdigest()[:32]}"',
            "Last-Modified": self._described_at,
            "Cache-Control": "public, max-age=300",
        }
        if request.headers.get("if-none-match") == headers["ETag"]:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    async def _agent(self) -> Agent:
        """An agent of the factory's, made once, to describe (it never runs)."""
        if self._described is None:
            made = self._factory()
            agent = await made if inspect.isawaitable(made) else made
            if not isinstance(agent, Agent):
                raise TypeError(
                    f"the agent factory must return an Agent, got {type(agent).__name__}"
                )
            self._described = agent
            self._described_at = formatdate(usegmt=True)
        return self._described

    # -- tasks ----------------------------------------------------------------------------

    async def _open(self, task_id: str) -> tuple[Session, ContextIndex, TaskFold]:
        """The task's session, its context's index, and the task as it stands."""
        session_id, after = _split_task_id(task_id)
        try:
            session = await self._store.open(session_id)
        except SessionNotFoundError:
            raise TaskNotFoundError(message=f"no task {task_id!r} (its context is gone)") from None
        index = await ContextIndex.load(session)
        if index is None:
            raise TaskNotFoundError(message=f"no task {task_id!r}")
        if after not in index.tasks:
            raise TaskNotFoundError(message=index.missing(task_id, after))
        return session, index, await self._fold(session, index, after)

    @staticmethod
    async def _fold(session: Session, index: ContextIndex, after: int) -> TaskFold:
        """The task ``after`` of ``session`` as its events tell it (what is left of them),
        or as it ended."""
        record = index.tasks[after]
        task_id = _task_id(session, after)
        fold = TaskFold(
            task_id, index.context_id, record.run_id, after, client=list(record.messages)
        )
        until = index.until(after) if record.end is None else record.end.last
        while not fold.terminal and (until is None or fold.sequence < until):
            try:
                batch = await session.log.read(fold.sequence, BATCH)
            except EventsExpiredError as expired:
                if record.end is not None:
                    fold.ended_as(record.end.last, record.end.status, f"{_GONE}: this is its end")
                    break
                if until is not None and expired.first > until:
                    raise TaskNotFoundError(message=f"task {task_id!r}: {_GONE}") from None
                fold.resume_at(expired.first - 1, f"{_GONE}: {_FROM} {expired.first}")
                continue
            if not batch:
                break
            for sequence, event in batch:
                if until is not None and sequence > until:
                    break
                fold.feed(sequence, event)
                if fold.terminal:
                    break
        return fold

    async def _follow(
        self, session: Session, fold: TaskFold, run: Run | None, *, to_the_end: bool
    ) -> AsyncGenerator[Update, None]:
        """The task's updates from where ``fold`` stands: to its end, or (unless
        ``to_the_end``) until it waits for its client."""
        if fold.terminal or (fold.waiting and not to_the_end):
            return
        while True:
            batches = session.follow(fold.sequence, run=run)
            try:
                async with aclosing(batches):
                    async for batch in batches:
                        for sequence, event in batch:
                            for update in fold.feed(sequence, event):
                                yield update
                            if fold.terminal or (fold.waiting and not to_the_end):
                                return
                return
            except EventsExpiredError as expired:
                # Fallen behind the log (a run faster than its reader, and a small
                # retain): on from what is left, and the task says what was missed.
                fold.resume_at(expired.first - 1, f"{_GONE}: {_FROM} {expired.first}")

    async def _send(self, params: SendMessageRequest) -> tuple[Session, TaskFold, Run | None]:
        """Start the task the message asks for, or answer the one it names."""
        validate_history_length(params.configuration)
        message = params.message
        if message.task_id:
            return await self._answer(message)
        prompt = _prompt(message)
        if len(message.context_id) > MAX_CONTEXT_ID:
            raise InvalidParamsError(
                message=f"contextId must be at most {MAX_CONTEXT_ID} characters"
            )
        context_id = message.context_id or secrets.token_urlsafe(24)
        with _as_a2a_errors():
            self._limits.check_message(prompt)
            session = await self._store.open_or_create(context_session_id(context_id))
            index = await ContextIndex.load(session) or ContextIndex(context_id)
            await self._record_ends(session, index)
            self._limits.check_run(self._store.runs)
            run = await session.start(prompt)
        task_id = _task_id(session, run.after)
        given = _as_sent(message, task_id, context_id)
        index.tasks[run.after] = TaskRecord(run.run_id, [(run.after, given)])
        await index.save(session)
        fold = TaskFold(task_id, context_id, run.run_id, run.after, client=[(run.after, given)])
        return session, fold, run

    async def _record_ends(self, session: Session, index: ContextIndex) -> None:
        """Record how the context's earlier tasks ended (the new one's events may push
        theirs out of the log) and forget those that ended ``session_ttl`` ago."""
        for after in index.unended():
            try:
                fold = await self._fold(session, index, after)
            except TaskNotFoundError:
                continue  # its events are gone, and nothing said how it ended
            if fold.terminal:
                index.tasks[after].end = TaskEnd.of(fold)
        index.prune(self._clock(), self._store.session_ttl)

    async def _answer(self, message: Message) -> tuple[Session, TaskFold, Run | None]:
        session, index, fold = await self._open(message.task_id)
        if message.context_id and message.context_id != fold.context_id:
            raise InvalidParamsError(
                message=f"task {fold.task_id!r} belongs to another context than "
                f"{message.context_id!r}"
            )
        if fold.terminal:
            raise UnsupportedOperationError(
                message=f"task {fold.task_id!r} is {_state_name(fold.state)}: it takes no "
                "more messages; send one without taskId to start a new task"
            )
        if not fold.waiting:
            raise UnsupportedOperationError(
                message=f"task {fold.task_id!r} is at work and waits for nothing; send to it "
                "when it asks for input (input-required)"
            )
        decisions = _decisions(message, fold)
        # Kept before the run goes on: a reader that sees what follows sees the answer.
        given = _as_sent(message, fold.task_id, fold.context_id)
        record = index.tasks[_split_task_id(fold.task_id)[1]]
        record.messages.append((fold.sequence, given))
        await index.save(session)
        for call_id, (decision, reason) in decisions.items():
            try:
                await session.confirm(call_id, decision, reason)
            except (AlreadyAnsweredError, RunEndedError, UnknownToolCallError) as error:
                record.messages.pop()
                await index.save(session)
                raise InvalidParamsError(message=f"tool call {call_id!r}: {error}") from None
        fold.answered(list(decisions), given)
        return session, fold, None

    # -- the methods ----------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """SendMessage: the task once it ended or waits for input (or at once, with
        ``returnImmediately``)."""
        session, fold, run = await self._send(params)
        if not params.configuration.return_immediately:
            async with aclosing(self._follow(session, fold, run, to_the_end=False)) as updates:
                async for _ in updates:
                    pass
        return apply_history_length(fold.task(), params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        """SendStreamingMessage: the task, then its updates until it ended or waits."""
        session, fold, run = await self._send(params)
        yield apply_history_length(fold.task(), params.configuration)
        async with aclosing(self._follow(session, fold, run, to_the_end=False)) as updates:
            async for update in updates:
                yield update

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """GetTask: the task as it stands, from any process."""
        validate_history_length(params)
        _, _, fold = await self._open(params.id)
        return apply_history_length(fold.task(), params)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """ListTasks: the tasks of one context or of every context (on a durable store,
        every process's: any process answers alike); the latest change first, filtered
        by state and by the time of their last change, a page at a time."""
        validate_history_length(params)
        size = params.page_size if params.HasField("page_size") else DEFAULT_LIST_TASKS_PAGE_SIZE
        if not 1 <= size <= MAX_LIST_TASKS_PAGE_SIZE:
            raise InvalidParamsError(
                message=f"pageSize must be between 1 and {MAX_LIST_TASKS_PAGE_SIZE}, got {size}"
            )
        cursor = _cursor(params.page_token) if params.page_token else None
        since = (
            params.status_timestamp_after.ToNanoseconds()
            if params.HasField("status_timestamp_after")
            else None
        )
        found: list[tuple[int, str, Task | None]] = []
        for session_id, index in (await self._indexes(params.context_id)).items():
            for after, record in index.tasks.items():
                task: Task | None = None
                if record.end is not None:
                    status = record.end.status
                else:
                    task = await self._read(session_id, index, after)
                    if task is None:
                        continue
                    status = task.status
                changed = status.timestamp.ToNanoseconds()
                if params.status and status.state != params.status:
                    continue
                if since is not None and changed < since:
                    continue
                found.append((changed, f"{session_id}.{after}", task))
        # The latest change first; task ids break ties, so that pages do not overlap.
        found.sort(key=lambda entry: (-entry[0], entry[1]))
        # A cursor, not an offset: the task a page ended with (its time and id), so
        # that a task changed meanwhile does not shift the pages that follow.
        rest = [e for e in found if cursor is None or (-e[0], e[1]) > (-cursor[0], cursor[1])]
        page: list[Task] = []
        for _, task_id, known in rest[:size]:
            session_id, after = _split_task_id(task_id)
            task = known or await self._read(session_id, None, after)
            if task is None:
                continue  # gone meanwhile
            if not params.include_artifacts:
                task.ClearField("artifacts")
            page.append(apply_history_length(task, params))
        following = ""
        if len(rest) > size:
            changed, task_id, _ = rest[size - 1]
            following = urlsafe_b64encode(json.dumps([changed, task_id]).encode()).decode()
        return ListTasksResponse(
            tasks=page,
            next_page_token=following,
            page_size=size,
            total_size=len(found),
        )

    async def _indexes(self, context_id: str) -> dict[str, ContextIndex]:
        """The index of the context ``context_id``, or of every context (by session id)."""
        if not context_id:
            kept = await self._store.backend.attachments(self._store, ATTACHMENT)
            indexes = {
                session_id: ContextIndex.from_json(data) for session_id, data in kept.items()
            }
            # Only a context's own session: a fork of it (POST /sessions/{id}/fork) holds
            # a copy of its index, and is no context.
            return {
                session_id: index
                for session_id, index in indexes.items()
                if context_session_id(index.context_id) == session_id
            }
        session_id = context_session_id(context_id)
        try:
            session = await self._store.open(session_id)
        except SessionNotFoundError:
            return {}
        index = await ContextIndex.load(session)
        return {} if index is None else {session_id: index}

    async def _read(self, session_id: str, index: ContextIndex | None, after: int) -> Task | None:
        """The task ``after`` of the session ``session_id`` as it stands; None: gone."""
        try:
            session = await self._store.open(session_id)
            index = index or await ContextIndex.load(session)
            if index is None or after not in index.tasks:
                return None
            return (await self._fold(session, index, after)).task()
        except (SessionNotFoundError, TaskNotFoundError):
            return None

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """CancelTask: the run cancelled wherever it runs; the task once ``CANCELED``."""
        session, _, fold = await self._open(params.id)
        if fold.terminal:
            raise TaskNotCancelableError(
                message=f"task {fold.task_id!r} is {_state_name(fold.state)} already"
            )
        # NoRunError: it ended meanwhile, and the task says how.
        with _as_a2a_errors(), contextlib.suppress(NoRunError):
            await session.cancel(CANCELLED_BY_A2A)
        async with aclosing(self._follow(session, fold, None, to_the_end=True)) as updates:
            async for _ in updates:
                pass
        return fold.task()

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        """SubscribeToTask: the task as it stands, then its updates to its end (from
        any process, also after a restart)."""
        session, _, fold = await self._open(params.id)
        if fold.terminal:
            raise UnsupportedOperationError(
                message=f"task {fold.task_id!r} is {_state_name(fold.state)}: nothing more "
                "will happen to it (GetTask reads it)"
            )
        yield fold.task()
        async with aclosing(self._follow(session, fold, None, to_the_end=True)) as updates:
            async for update in updates:
                yield update

    # -- what is not served -----------------------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Not supported: the card says ``pushNotifications: false``."""
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Not supported: the card says ``pushNotifications: false``."""
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Not supported: the card says ``pushNotifications: false``."""
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Not supported: the card says ``pushNotifications: false``."""
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """Not supported: the public card is the only one."""
        raise ExtendedAgentCardNotConfiguredError


# -- a message's content ---------------------------------------------------------------------


def _prompt(message: Message) -> str:
    """The text of a message that starts a task (text parts only)."""
    texts = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind != "text":
            raise ContentTypeNotSupportedError(
                message=f"a new task takes text parts only, got a {kind or 'empty'} part"
            )
        texts.append(part.text)
    prompt = "\n".join(texts)
    if not prompt.strip():
        raise InvalidParamsError(message="the message has no text")
    return prompt


def _cursor(token: str) -> tuple[int, str]:
    """The task a page ended with, from its ``nextPageToken``."""
    try:
        changed, task_id = json.loads(urlsafe_b64decode(token.encode()))
        if isinstance(changed, int) and isinstance(task_id, str):
            return changed, task_id
    except (ValueError, TypeError):
        pass
    raise InvalidParamsError(message=f"pageToken {token[:50]!r} is not one this server gave")


def _as_sent(message: Message, task_id: str, context_id: str) -> Message:
    """The client's ``message`` as the task's history keeps it (on the task, in the
    context)."""
    kept = Message()
    kept.CopyFrom(message)
    kept.task_id = task_id
    kept.context_id = context_id
    return kept


def _decisions(message: Message, fold: TaskFold) -> dict[str, tuple[str, str | None]]:
    """The decisions a message on a task that waits gives for its calls."""
    waiting = sorted(fold.pending)
    usage = (
        f'answer with a data part {{"decisions": {{call id: decision}}}} (decisions: '
        f"{', '.join(DECISIONS)}) or the text approve or reject; waiting: {waiting}"
    )
    decided: dict[str, tuple[str, str | None]] = {}
    for data in get_data_parts(message.parts):
        given = data.get("decisions") if isinstance(data, dict) else None
        if not isinstance(given, dict):
            raise InvalidParamsError(message=f"task {fold.task_id!r} waits for decisions: {usage}")
        for call_id, answer in given.items():
            if call_id not in fold.pending:
                raise InvalidParamsError(
                    message=f"no tool call {call_id!r} of task {fold.task_id!r} waits: {usage}"
                )
            decision, reason = answer, None
            if isinstance(answer, dict):
                decision, reason = answer.get("decision"), answer.get("reason")
            if decision not in DECISIONS or not (reason is None or isinstance(reason, str)):
                raise InvalidParamsError(message=f"tool call {call_id!r}: {usage}")
            decided[call_id] = (str(decision), reason)
    text = " ".join(part.text for part in message.parts if part.HasField("text")).strip()
    if text:
        # Only the word approves; any other text turns the calls down, and says why
        # (what a person, or a model, answers in its own words).
        word = text.lower()
        answer = (word, None) if word in ("approve", "reject") else ("reject", text)
        for call_id in waiting:
            decided.setdefault(call_id, answer)
    if not decided:
        raise InvalidParamsError(message=f"task {fold.task_id!r} waits for decisions: {usage}")
    return decided
