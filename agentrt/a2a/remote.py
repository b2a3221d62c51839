"""Calling agents over A2A: :class:`RemoteAgent`, an agent of another server in a team.

``RemoteAgent(url)`` is an :class:`~agentrt.Agent` whose answers come from an A2A agent
(any framework's: ADK, strands, cagent, another ``agentrt serve``), through the
official ``a2a-sdk`` client. It reads the agent card at ``url`` (its name and
description become the agent's), and is a sub-agent like a local one::

    researcher = RemoteAgent("http://127.0.0.1:8001")
    lead = Agent(model=model, name="lead", sub_agents=[researcher])

Needs the ``a2a`` extra (``pip install 'agentrt[a2a]'``).

A ``transfer_task`` call to it (or a call of ``researcher.as_tool()``) sends the task as
a message that starts a remote task, in a context of its own. What the task streams
(the text of its artifacts; a new artifact starts a new paragraph) shows in the lead's
stream as ``agent_choice`` events attributed to the remote agent's name, and the text
of its last turn (after its last request for input) answers the delegation, as a local
sub-agent's last answer does. A stream cut before the task ended is followed again
(``SubscribeToTask``, ``GetTask`` once it ended) without repeating what was shown.

A remote task that asks for input (``INPUT_REQUIRED``) becomes a call of the remote
agent's :data:`INPUT_TOOL` tool, which requires confirmation: the stream shows it as a
``tool_call_confirmation`` (its arguments: the remote agent's ``question``, the ids of
its task and context, and the ``data`` parts of its request), answered like any other
(``events.confirm(call_id, "approve")``, a deferred confirmation's
:class:`~agentrt.deferred.Approval`). The answer goes back as the next message on that
task: a text part ``approve`` or ``reject``, and, when the request listed the calls it
waits on (a data part ``{"pending": [{"toolCallId": ...}, ...]}``, as ``agentrt serve``
sends; ``tool_call_id`` is read too), a data part
``{"decisions": {call id: {"decision", "reason"}}}`` with the decision for each (and a
rejection's reason). The task's ids are in the call's arguments, so the answer reaches
the task from any process that continues the run. A run of ours that is cancelled while
a remote task works cancels that task (``CancelTask``).

The remote agent's text is all the lead's stream shows of it: its tool calls, reasoning
and token usage stay on its side (A2A reports no usage: the remote agent has no
``token_usage`` events). A remote task that fails, is rejected, cancelled or asks for
authentication fails the delegation with a :class:`RemoteAgentError` naming the remote
agent (the delegating model reads it).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

try:
    from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
    from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
    from a2a.types import (
        AgentCard,
        CancelTaskRequest,
        GetTaskRequest,
        Message,
        Part,
        Role,
        SendMessageRequest,
        StreamResponse,
        SubscribeToTaskRequest,
        Task,
        TaskState,
        TaskStatus,
    )
    from a2a.utils.constants import TransportProtocol
    from a2a.utils.errors import A2AError
except ImportError as error:  # pragma: no cover - the a2a extra is a test dependency
    raise ImportError(
        f"agentrt.a2a needs the a2a extra ({error.name} is missing): pip install 'agentrt[a2a]'"
    ) from error

from agentrt.agent import Agent
from agentrt.deferred import REJECTED_PREFIX
from agentrt.exceptions import ModelError
from agentrt.messages import AssistantMessage, ToolMessage, UserMessage, new_tool_call_id
from agentrt.messages import Message as ChatMessage
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import ModelRequest, ModelResponse, StreamChunk, TextDelta, ToolCallDelta
from agentrt.tools import Tool

__all__ = ("INPUT_TOOL", "RemoteAgent", "RemoteAgentError", "RemoteModel")

logger = logging.getLogger("agentrt.a2a")

INPUT_TOOL = "input_required"
"""The name of the tool whose confirmation answers a remote task that asks for input."""

# How long a cancelled run gives the remote agent to hear that its task is cancelled.
_CANCEL_TIMEOUT = 5.0
# How many times a stream cut before its task ended is followed again.
_FOLLOW_AGAIN = 3
_COMPLETED = TaskState.TASK_STATE_COMPLETED

_ENDED = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


class RemoteAgentError(ModelError):
    """A remote agent could not be reached, or its task did not complete.

    Attributes:
        url: The remote agent's URL.
        task_id: The remote task's id, when one was started.
        state: The task's last state (``"FAILED"``, ``"REJECTED"``...), when known.
    """

    def __init__(
        self, message: str, *, url: str, task_id: str | None = None, state: str | None = None
    ) -> None:
        self.url = url
        self.task_id = task_id
        self.state = state
        super().__init__(message)


async def input_required(
    question: str, task_id: str, context_id: str = "", data: list[Any] | None = None
) -> str:
    """Answer what a remote agent asks before its task goes on: a person approves or rejects.

    Args:
        question: What the remote agent asks.
        task_id: The remote task that waits.
        context_id: The remote task's context.
        data: The structured parts of the request (the calls it waits on, say).
    """
    return "approve"  # runs only when approved; a rejection answers without running it


class _Remote:
    """The connection to one remote agent: its card and client, shared by its members."""

    def __init__(
        self, url: str, headers: Mapping[str, str] | None, http: httpx.AsyncClient | None
    ) -> None:
        self.url = url
        self.card: AgentCard | None = None
        self._headers = dict(headers or {})
        self._http = http
        self._own_http = http is None
        self._client: Client | None = None
        self._lock = anyio.Lock()

    async def client(self) -> Client:
        """The A2A client, made on first use from the agent card (read then).

        Raises:
            RemoteAgentError: The card cannot be read, or offers no binding the client speaks.
        """
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is None:
                if self._http is None:
                    # No read timeout: a remote task may stream for as long as it works.
                    timeout = httpx.Timeout(30.0, read=None)
                    self._http = httpx.AsyncClient(headers=self._headers, timeout=timeout)
                card = await self._read_card(self._http)
                config = ClientConfig(
                    streaming=True,
                    httpx_client=self._http,
                    supported_protocol_bindings=[
                        TransportProtocol.JSONRPC.value,
                        TransportProtocol.HTTP_JSON.value,
                    ],
                )
                try:
                    self._client = ClientFactory(config).create(card)
                except ValueError as error:
                    raise RemoteAgentError(
                        f"the A2A agent at {self.url} offers no binding this client speaks "
                        f"(JSON-RPC, HTTP+JSON): {error}",
                        url=self.url,
                    ) from None
                self.card = card
        return self._client

    async def _read_card(self, http: httpx.AsyncClient) -> AgentCard:
        """The agent card: at ``url`` if it names a JSON file, else under it, else at the root."""
        parts = urlsplit(self.url)
        root = f"{parts.scheme}://{parts.netloc}"
        places: list[tuple[str, str | None]]
        if parts.path.endswith(".json"):
            places = [(root, parts.path)]
        else:
            places = [(self.url, None)]
            if parts.path.strip("/"):
                places.append((root, None))
        failure: Exception | None = None
        for base, path in places:
            try:
                return await A2ACardResolver(http, base).get_agent_card(relative_card_path=path)
            except Exception as error:  # the SDK's resolution errors, httpx's
                failure = failure or error
        raise RemoteAgentError(
            f"cannot read the A2A agent card of {self.url}: {failure}", url=self.url
        ) from failure

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and not self._own_http:
            return  # the caller's httpx client is the caller's to close
        if client is not None:
            await client.close()
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None


class RemoteModel:
    """The :class:`~agentrt.Model` of a :class:`RemoteAgent`: each call is a remote task's turn.

    A call whose conversation ends with the answer to an :data:`INPUT_TOOL` call sends
    that answer on the task the call names; any other call starts a task with the
    conversation's last user message. The text the task streams is the answer; a task
    that asks for input answers with an :data:`INPUT_TOOL` call.
    """

    def __init__(self, remote: _Remote) -> None:
        self._remote = remote

    @property
    def name(self) -> str:
        card = self._remote.card
        return f"a2a:{card.name if card is not None else self._remote.url}"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The remote task's turn in one piece."""
        assembler = ResponseAssembler()
        async for chunk in self.stream(request):
            assembler.add(chunk)
        return assembler.response()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """The remote task's turn as it streams.

        A stream cut before the task ended (a connection lost, a proxy's timeout) is
        followed again (``SubscribeToTask``, or ``GetTask`` when it ended meanwhile),
        without repeating the text already streamed.

        Raises:
            RemoteAgentError: The remote agent cannot be reached, or its task did not
                complete (failed, rejected, cancelled, asks for authentication).
        """
        remote = self._remote
        client = await remote.client()
        message = _next_message(request.messages, remote.url)
        turn = _Turn(message.task_id or None, message.context_id)
        if turn.task_id is not None:
            # The task waits for this answer: what it streamed and asked before is not
            # this turn's.
            turn.answering(await client.get_task(GetTaskRequest(id=turn.task_id)))
        responses: AsyncIterator[StreamResponse | Task]
        responses = client.send_message(SendMessageRequest(message=message))
        cuts = 0
        while True:
            try:
                async for response in responses:
                    for text in turn.read(response):
                        yield TextDelta(text)
                if turn.ended:
                    break
                failure: Exception = ConnectionError("the stream ended before the task")
            except Exception as error:
                failure = error
            except BaseException:
                await self._cancel(client, turn)
                raise
            if turn.task_id is None or cuts == _FOLLOW_AGAIN:
                await self._cancel(client, turn)
                raise RemoteAgentError(
                    f"the A2A agent at {remote.url} failed to answer: "
                    f"{type(failure).__name__}: {failure}",
                    url=remote.url,
                    task_id=turn.task_id,
                ) from failure
            cuts += 1
            logger.info("following the remote task %s again: %s", turn.task_id, failure)
            responses = _follow(client, turn.task_id)
        async for chunk in turn.outcome(remote.url):
            yield chunk

    async def _cancel(self, client: Client, turn: _Turn) -> None:
        """Cancel the remote task our run no longer follows (unless it ended), best effort."""
        if turn.task_id is None or turn.ended:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_TIMEOUT):
            try:
                await client.cancel_task(CancelTaskRequest(id=turn.task_id))
            except Exception as error:  # the task may have ended meanwhile
                logger.info("could not cancel the remote task %s: %s", turn.task_id, error)


async def _follow(client: Client, task_id: str) -> AsyncIterator[StreamResponse | Task]:
    """The task's events from now on (its state first); the task itself if it ended."""
    try:
        async for response in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            yield response
    except A2AError:
        # A task that ended cannot be followed (UnsupportedOperationError): read it.
        yield await client.get_task(GetTaskRequest(id=task_id))


class _Turn:
    """What a remote task's responses told so far, in one call of its model."""

    def __init__(self, task_id: str | None, context_id: str) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.state: int | None = None
        self.question: Message | None = None  # the latest status message
        self._texts: dict[str, str] = {}  # artifact id -> its text said so far
        self._last: str | None = None  # the artifact said last
        # The request for input this turn answers: a task that shows it again has not
        # read the answer yet (a server may send its task as it stood first).
        self._answered: tuple[str, str] | None = None

    def answering(self, task: Task) -> None:
        """Start from ``task`` as it waits for the answer this turn sends."""
        self._task(task, say=False)
        if self.question is not None:
            self._answered = (self.question.message_id, _text_of(self.question))
        self.state = self.question = None

    @property
    def ended(self) -> bool:
        """Whether the task is done with this turn (ended, or waits for its client)."""
        return self.state in _ENDED

    def read(self, response: StreamResponse | Task) -> list[str]:
        """The new text ``response`` streams; its task's state is kept."""
        if isinstance(response, Task):
            return self._task(response)
        kind = response.WhichOneof("payload")
        if kind == "task":
            return self._task(response.task)
        if kind == "artifact_update":
            artifact = response.artifact_update.artifact
            text = "".join(get_text_parts(artifact.parts))
            if response.artifact_update.append:
                text = self._texts.get(artifact.artifact_id, "") + text
            return self._say(artifact.artifact_id, text)
        if kind == "status_update":
            status = response.status_update
            self._status(status.task_id, status.context_id, status.status)
            return []
        if kind == "message":
            # A direct reply: no task, and the answer is complete.
            reply = response.message
            self.task_id, self.state = reply.task_id or self.task_id, _COMPLETED
            return self._say(reply.message_id, "".join(get_text_parts(reply.parts)))
        return []

    def _task(self, task: Task, *, say: bool = True) -> list[str]:
        self._status(task.id, task.context_id, task.status)
        said: list[str] = []
        for artifact in task.artifacts:
            text = "".join(get_text_parts(artifact.parts))
            if say:
                said += self._say(artifact.artifact_id, text)
            else:
                self._texts[artifact.artifact_id] = text
        return said

    def _status(self, task_id: str, context_id: str, status: TaskStatus) -> None:
        question = status.message if status.HasField("message") else None
        if question is not None and self._answered == (question.message_id, _text_of(question)):
            return  # the request this turn answers, not a new one
        self.task_id, self.context_id, self.state = task_id, context_id, status.state
        self.question = question

    def _say(self, artifact_id: str, whole: str) -> list[str]:
        """What of ``whole``, the artifact's text now, is new (the rest was said)."""
        known = self._texts.get(artifact_id, "")
        # An artifact replaced by other text is said again, as it is now.
        new = whole[len(known) :] if whole.startswith(known) else whole
        self._texts[artifact_id] = whole
        if not new:
            return []
        said = [new]
        if self._last is not None and self._last != artifact_id:
            said.insert(0, "\n\n")  # another artifact: another paragraph
        self._last = artifact_id
        return said

    async def outcome(self, url: str) -> AsyncIterator[StreamChunk]:
        """The end of the turn: a final message's text, a request for input, or the error.

        Raises:
            RemoteAgentError: The task failed, was rejected or cancelled, or asks for
                authentication.
        """
        question, task_id = self.question, self.task_id
        if self.state == TaskState.TASK_STATE_INPUT_REQUIRED and task_id is not None:
            arguments: dict[str, Any] = {
                "question": _text_of(question) or "the remote agent asks for input",
                "task_id": task_id,
                "context_id": self.context_id,
            }
            data = get_data_parts(question.parts) if question is not None else []
            if data:
                arguments["data"] = data
            yield ToolCallDelta(0, new_tool_call_id(), INPUT_TOOL, json.dumps(arguments))
        elif self.state == _COMPLETED:
            if self._last is None and (text := _text_of(question)):
                yield TextDelta(text)  # an answer in the final status message only
        else:
            name = TaskState.Name(self.state or 0).removeprefix("TASK_STATE_")
            why = _text_of(question)
            raise RemoteAgentError(
                f"the remote task {task_id} ended {name}" + (f": {why}" if why else ""),
                url=url,
                task_id=task_id,
                state=name,
            )


def _text_of(message: Message | None) -> str:
    return "\n".join(get_text_parts(message.parts)) if message is not None else ""


def _next_message(messages: Sequence[ChatMessage], url: str) -> Message:
    """What the conversation sends: the answer to the remote task's request, or a new task.

    Raises:
        RemoteAgentError: The conversation holds no user message to send.
    """
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        call = _call_answered(messages, last.tool_call_id)
        if call is not None:
            return _answer(call, last)
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            return Message(
                role=Role.ROLE_USER,
                message_id=str(uuid.uuid4()),
                parts=[new_text_part(message.content)],
            )
    raise RemoteAgentError(
        f"nothing to send to the A2A agent at {url}: the conversation holds no user message",
        url=url,
    )


def _call_answered(messages: Sequence[ChatMessage], call_id: str) -> dict[str, Any] | None:
    """The arguments of the :data:`INPUT_TOOL` call ``call_id``, if it is one."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id == call_id and call.name == INPUT_TOOL:
                    arguments = json.loads(call.arguments)
                    return arguments if isinstance(arguments, dict) else None
            return None
    return None


def _answer(call: dict[str, Any], response: ToolMessage) -> Message:
    """The message that answers the remote task ``call`` names: ``response``'s decision."""
    rejected = response.is_error
    reason: str | None = None
    if rejected:
        reason = response.content.removeprefix(REJECTED_PREFIX).removeprefix(":").strip()
    decision = "reject" if rejected else "approve"
    parts: list[Part] = [new_text_part(decision)]
    waiting = [
        call_id
        for value in call.get("data") or ()
        if isinstance(value, dict) and isinstance(value.get("pending"), list)
        for item in value["pending"]
        if isinstance(item, dict)
        # JSON's usual spelling (A2A's, agentrt serve's) or Python's.
        and isinstance(call_id := item.get("toolCallId", item.get("tool_call_id")), str)
    ]
    if waiting:
        answer: dict[str, Any] = {"decision": decision}
        if reason:
            answer["reason"] = reason
        parts.append(new_data_part({"decisions": dict.fromkeys(waiting, answer)}))
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        task_id=str(call.get("task_id", "")),
        context_id=str(call.get("context_id", "")),
        parts=parts,
    )


class RemoteAgent(Agent):
    """An agent served over A2A elsewhere, as an agent of this process (a team's sub-agent).

    Made anywhere (no event loop is needed); the agent card is read when the agent
    first runs, or when a team that lists it starts (so that the delegating model reads
    the card's name and description). Close it (or use ``async with``) to close its
    connections. See :mod:`agentrt.a2a.remote`.

    Args:
        url: The remote agent's address: the base its card is under
            (``<url>/.well-known/agent-card.json``, else at the server's root), or the
            card's own URL (ending in ``.json``).
        name: The agent's name (default: the card's).
        description: What it does, for a delegating model (default: the card's).
        headers: HTTP headers for every request (``{"Authorization": "Bearer ..."}``).
        http_client: An ``httpx.AsyncClient`` to send the requests with (its headers,
            timeouts, proxies), left open when the agent closes; by default one of
            the agent's own.
        max_iterations: How many turns (the task, then one per request for input it
            makes) a run may take.

    Raises:
        ValueError: ``url`` is not an http(s) URL, ``name`` is empty, or both
            ``headers`` and ``http_client`` are given.
        TypeError: ``headers`` or ``http_client`` has the wrong type.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_iterations: int = 10,
    ) -> None:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"a remote agent's url is an http(s) URL, got {url!r:.80}")
        if headers is not None and not isinstance(headers, Mapping):
            raise TypeError(f"headers must be a mapping, got {type(headers).__name__}")
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise TypeError(
                f"http_client must be an httpx.AsyncClient, got {type(http_client).__name__}"
            )
        if headers is not None and http_client is not None:
            raise ValueError("give headers or an http_client (with its own headers), not both")
        self._remote = _Remote(url, headers, http_client)
        self._named = name is not None
        self._described = description is not None
        tool = Tool(input_required, name=INPUT_TOOL, requires_confirmation=True)
        super().__init__(
            model=RemoteModel(self._remote),
            tools=[tool],
            # Until the card is read: the address, which names the agent as well.
            name=name if name is not None else f"{parts.netloc}{parts.path.rstrip('/')}",
            description=description,
            max_iterations=max_iterations,
        )

    @property
    def url(self) -> str:
        """The remote agent's address, as given."""
        return self._remote.url

    @property
    def card(self) -> AgentCard | None:
        """The agent card, once read."""
        return self._remote.card

    async def initialize(self) -> None:
        """Read the agent card (once), then initialize as any agent.

        Raises:
            RemoteAgentError: The card cannot be read (the next run tries again).
        """
        await self._read_card()
        await super().initialize()

    async def close(self, reason: str | None = None) -> None:
        """Close the agent and its connections (see :meth:`Agent.close <agentrt.Agent.close>`)."""
        try:
            await super().close(reason)
        finally:
            await self._remote.aclose()

    async def _introduce(self) -> None:
        # A team that lists this agent starts: its model is to read the card's name and
        # description. A remote agent that cannot be reached now is named by its
        # address; delegating to it tries again (and fails the call if it still fails).
        try:
            await self._read_card()
        except RemoteAgentError as error:
            logger.warning("%s", error)

    async def _read_card(self) -> None:
        await self._remote.client()
        card = self._remote.card
        assert card is not None  # the client is made from the card
        if not self._named and card.name.strip():
            self.name = card.name
        if not self._described and card.description:
            self.description = card.description
