"""Helpers for testing code built on agentrt.

:class:`EventRecorder` records every dispatch it is registered for, with the
semantics it was dispatched with and its parameters; :func:`contract_violations`
checks a recording against :data:`~agentrt.EVENT_SEMANTICS` and
:data:`~agentrt.EVENT_PARAMS`. :class:`~agentrt.ScriptedModel` is the model to
script runs with.

::

    recorder = EventRecorder()
    agent.events.on("*", recorder, priority=10_000)
    await agent.execute("hi")
    assert recorder.names()[:2] == ["agent:state:change", "execute:before"]
    assert contract_violations(recorder) == []

The cancellation kit checks the cancellation contract: a cancelled run never
reports success, leaves the conversation consistent, keeps the usage it spent,
ends its stream with one ``stream_stopped``, and leaves its agent (or server
session) usable. :func:`cancellation_violations` cancels a run at every event
boundary in turn (``execute``, a :class:`~agentrt.stream.StreamAdapter` or the
consumer of ``agent.stream``); :func:`server_cancellation_violations` does the same
through the server's ``DELETE /sessions/{id}/run`` after each event of the run's
stream. Both check what each run left with :func:`run_violations`, which a test
may also call on a run it cancelled its own way. For a team (see :mod:`agentrt.team`)
the kit counts and cancels at the boundaries of every agent's run, at any depth, and
checks every member's conversation too::

    assert await cancellation_violations(make_agent, "go", stream=True, then="again") == []
"""

import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
import anyio.lowlevel

from agentrt.bus import EventContext
from agentrt.events._registry import EVENT_PARAMS, EVENT_SEMANTICS, EventSemantics
from agentrt.events.names import AgentEvents
from agentrt.models.scripted import ScriptedModel

if TYPE_CHECKING:
    import httpx

    from agentrt.agent import Agent
    from agentrt.messages import Message
    from agentrt.server.backend import SessionLog
    from agentrt.server.store import SessionStore
    from agentrt.stream.events import StreamEvent

__all__ = (
    "EventRecorder",
    "RecordedEvent",
    "ScriptedModel",
    "cancellation_violations",
    "contract_violations",
    "run_violations",
    "server_cancellation_violations",
)


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One dispatch as a handler saw it."""

    event: AgentEvents | str
    semantics: EventSemantics
    parameters: MappingProxyType[str, Any]


class EventRecorder:
    """A handler that records every dispatch it receives; register it on ``"*"``."""

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    def __call__(self, ctx: EventContext[Any, Any]) -> None:
        self.events.append(
            RecordedEvent(ctx.event, ctx.semantics, MappingProxyType(dict(ctx.parameters)))
        )

    def names(self) -> list[str]:
        """The recorded event names, in dispatch order."""
        return [str(recorded.event) for recorded in self.events]

    def of(self, event: AgentEvents | str) -> list[RecordedEvent]:
        """The recorded dispatches of one event."""
        return [recorded for recorded in self.events if recorded.event == event]

    def clear(self) -> None:
        """Forget what was recorded."""
        self.events.clear()


def contract_violations(recorder: EventRecorder) -> list[str]:
    """Check each recorded dispatch of a core event against the registries.

    Returns:
        One line per violation: an event dispatched with the other semantics than
        :data:`EVENT_SEMANTICS` declares, or whose parameters are not exactly the
        keys of its :data:`EVENT_PARAMS` type (every required key, no unknown key).
        Empty when the recording keeps the contract.
    """
    problems: list[str] = []
    for n, recorded in enumerate(recorder.events):
        event = recorded.event
        if not isinstance(event, AgentEvents):
            continue
        declared = EVENT_SEMANTICS[event]
        if recorded.semantics is not declared:
            problems.append(
                f"#{n} {event}: dispatched as {recorded.semantics.name}, declared {declared.name}"
            )
        params_type = EVENT_PARAMS.get(event)
        if params_type is None:
            problems.append(f"#{n} {event}: an extension point was dispatched by core")
            continue
        keys = set(recorded.parameters)
        missing = params_type.__required_keys__ - keys
        unknown = keys - params_type.__required_keys__ - params_type.__optional_keys__
        if missing or unknown:
            problems.append(
                f"#{n} {event}: missing keys {sorted(missing)}, unknown keys {sorted(unknown)}"
            )
    return problems


# -- the cancellation kit -----------------------------------------------------------------

_Via = Literal["execute", "adapter", "consumer"]


def run_violations(
    messages: "Sequence[Message]",
    events: "Sequence[StreamEvent] | None" = None,
    *,
    before: "Sequence[Message]" = (),
    prompt: str | None = None,
    partial: bool = False,
    usage: bool = True,
    members: "Sequence[Sequence[Message]]" = (),
) -> list[str]:
    """Check what a run (cancelled or not) left behind; return every broken promise.

    * Nothing the conversation held before the run was lost or changed, and the
      run's first message is its prompt (when it got as far as adding one).
    * Each assistant tool call is answered by exactly one tool message, after it
      and before the next user or assistant message; no tool call id repeats, and
      no tool message answers a call that is not open.
    * With ``events``: they validate (:func:`agentrt.stream.validate`: among
      others, exactly one ``stream_stopped``, last), and the latest ``token_usage``
      counts every token the conversation's assistant messages spent (its usage is
      cumulative over the agent's streams: pass the whole conversation); a stream
      without one is of a run that spent nothing.

    Args:
        messages: The conversation after the run.
        events: The run's stream events, when it was streamed.
        before: The conversation before the run (system messages are not compared:
            instructions may be rendered again).
        prompt: The run's prompt.
        partial: ``events`` is what a cancelled consumer read: the beginning of the
            stream, which may lack ``stream_started`` and ``stream_stopped`` and the
            latest ``token_usage``.
        usage: Compare the usage of the stream and of the conversation (turn it
            off for an agent whose model calls are not all in its conversation:
            session titles, compaction).
        members: The conversations of the team members that ran for it (delegated
            tasks, at any depth): each must be as consistent as the run's own, and
            their usage counts in the stream's.

    Returns:
        One line per violation (empty when the run kept its promises).
    """
    from agentrt.stream.validate import validate

    problems: list[str] = []
    kept = [message for message in before if message.role != "system"]
    now = [message for message in messages if message.role != "system"]
    if now[: len(kept)] != kept:
        problems.append("the conversation lost or changed messages it held before the run")
    added = now[len(kept) :]
    if prompt is not None and added:
        first = added[0]
        if first.role != "user" or first.content != prompt:
            problems.append(
                f"the run's first message is not its prompt {prompt!r}: "
                f"{first.role} {first.content[:80]!r}"
            )
    problems.extend(_conversation_violations(messages))
    for member in members:
        problems.extend(f"a member's conversation: {p}" for p in _conversation_violations(member))
    if events is not None:
        skipped = {"stream_started_missing", "stream_stopped_missing"} if partial else set()
        problems.extend(
            str(violation) for violation in validate(events) if violation.rule not in skipped
        )
        if usage and not partial:
            problems.extend(_usage_violations(messages, added, events, members))
    return problems


def _conversation_violations(messages: "Sequence[Message]") -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    open_calls: list[str] = []
    stray: list[str] = []
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in open_calls:
                open_calls.remove(message.tool_call_id)
            else:
                stray.append(message.tool_call_id)
            continue
        if open_calls:
            # Providers reject a conversation whose tool calls are not answered
            # before the next turn, even if an answer comes later.
            problems.append(f"tool calls without an answer: {open_calls}")
            open_calls = []
        if message.role == "assistant":
            for call in message.tool_calls:
                if call.id in seen:
                    problems.append(f"tool call id {call.id!r} is used twice")
                seen.add(call.id)
                open_calls.append(call.id)
    if open_calls:
        problems.append(f"tool calls without an answer: {open_calls}")
    if stray:
        problems.append(f"tool messages that answer no open tool call: {stray}")
    return problems


def _spent(messages: "Sequence[Message]") -> tuple[int, int]:
    spent_in = spent_out = 0
    for message in messages:
        if message.role == "assistant" and message.usage is not None and message.usage.requests:
            spent_in += message.usage.input_tokens
            spent_out += message.usage.output_tokens
    return spent_in, spent_out


def _usage_violations(
    messages: "Sequence[Message]",
    added: "Sequence[Message]",
    events: "Sequence[StreamEvent]",
    members: "Sequence[Sequence[Message]]" = (),
) -> list[str]:
    """The latest token_usage counts all the tokens spent; none means the run spent none."""
    from agentrt.stream.events import TokenUsageEvent

    reported = [event.usage for event in events if isinstance(event, TokenUsageEvent)]
    by_members = [_spent(member) for member in members]
    if not reported:
        spent_in, spent_out = _spent(added)
        spent_in += sum(spent[0] for spent in by_members)
        spent_out += sum(spent[1] for spent in by_members)
        if spent_in or spent_out:
            return [
                f"the run's model calls spent {spent_in} input and {spent_out} output "
                "tokens; its stream has no token_usage"
            ]
        return []
    spent_in, spent_out = _spent(messages)
    spent_in += sum(spent[0] for spent in by_members)
    spent_out += sum(spent[1] for spent in by_members)
    latest = reported[-1]
    if (latest.input_tokens, latest.output_tokens) != (spent_in, spent_out):
        whose = "the team's" if members else "the conversation's"
        return [
            f"{whose} model calls spent {spent_in} input and {spent_out} output "
            f"tokens; the latest token_usage says {latest.input_tokens} and "
            f"{latest.output_tokens}"
        ]
    return []


class _TeamWatch:
    """A ``"*"`` handler on every agent of a team that notes each agent a dispatch names.

    A team's members are fresh agents, one per delegated task (see :mod:`agentrt.team`),
    made on copies of their sub-agents' buses: they carry the handler, so their
    dispatches name them here, and their conversations can be checked after the run.
    """

    def __init__(self) -> None:
        # Every agent a dispatch named, by id: a team's members among them.
        self.agents: dict[int, Agent] = {}

    def arm(self, agent: "Agent") -> None:
        """Register on ``agent`` and every agent of its team (members copy the handler)."""
        from agentrt.team import team_of

        for each in team_of(agent):
            each.events.on("*", self, priority=sys.maxsize)

    def note(self, ctx: EventContext[Any, Any]) -> None:
        """Note the agent ``ctx`` names, if any."""
        agent = ctx._params.get("agent")
        if agent is not None:
            self.agents.setdefault(id(agent), agent)

    def members(self, agent: "Agent") -> "list[Agent]":
        """The agents other than ``agent`` (and its team) that ran: a team's members."""
        from agentrt.team import team_of

        team = {id(each) for each in team_of(agent)}
        return [each for key, each in self.agents.items() if key not in team]

    def conversations(self, agent: "Agent") -> "list[Sequence[Message]]":
        """The conversations of the members that ran for ``agent``, each once.

        Not ``agent``'s own, which an agent handed to speaks on: it is checked as the
        run's conversation.
        """
        conversations = {id(m.conversation): m.messages for m in self.members(agent)}
        conversations.pop(id(agent.conversation), None)
        return list(conversations.values())

    async def __call__(self, ctx: EventContext[Any, Any]) -> None:
        self.note(ctx)


class _CancelAt(_TeamWatch):
    """A ``"*"`` handler that cancels ``scope`` at the k-th dispatch it sees (0: never)."""

    def __init__(self, k: int, *, checkpoint: bool = True) -> None:
        super().__init__()
        self.k = k
        self.checkpoint = checkpoint
        self.count = 0
        self.scope: anyio.CancelScope | None = None
        self.event: str | None = None

    async def __call__(self, ctx: EventContext[Any, Any]) -> None:
        self.note(ctx)  # the members of the run after the cancelled one too
        if self.scope is None:
            return  # not armed: the counting run's end, or the run after the cancelled one
        self.count += 1
        if self.count == self.k:
            self.event = str(ctx.event)
            self.scope.cancel()
            if self.checkpoint:
                # Delivered inside this very dispatch, whatever kind of event it is.
                await anyio.lowlevel.checkpoint()


class _ListSink:
    def __init__(self, events: list[Any]) -> None:
        self.events = events

    async def __call__(self, event: Any) -> None:
        self.events.append(event)


async def _run(agent: "Agent", prompt: str, via: _Via, events: list[Any]) -> bool:
    """Run ``agent`` once as ``via`` says, streaming into ``events``; True if it succeeded."""
    from agentrt.stream._adapter import StreamAdapter

    if via == "execute":
        await agent.execute(prompt)
        return True
    if via == "adapter":
        adapter = StreamAdapter(agent, _ListSink(events))
        await adapter.run(prompt)
        return adapter.result is not None
    async with agent.stream(prompt) as stream:
        async for event in stream:
            events.append(event)
    return stream.result is not None


def _task_ids() -> set[int]:
    return {task.id for task in anyio.get_running_tasks()}


async def cancellation_violations(
    make_agent: Callable[[], "Agent"],
    prompt: str,
    *,
    stream: bool | Literal["adapter", "consumer"] = False,
    checkpoint: bool = True,
    then: str | None = None,
    usage: bool = True,
) -> list[str]:
    """Cancel a run at every event boundary in turn; return every broken promise.

    ``make_agent()`` must build a fresh agent (and model) each time: the run is
    repeated once to count its dispatches, then once per boundary. At the k-th
    dispatch the caller's cancel scope is cancelled, and the cancellation contract is
    checked: the run never reports success, :func:`run_violations` finds nothing in
    its conversation (and stream), no task of the run is left, the agent is back to
    idle and, with ``then``, runs again.

    Args:
        make_agent: Builds a fresh agent.
        prompt: The prompt of the cancelled runs.
        stream: ``False``: cancel ``agent.execute``. ``True`` or ``"adapter"``: cancel
            a :class:`~agentrt.stream.StreamAdapter` feeding a list (whose events
            must be one whole stream session). ``"consumer"``: cancel the task that
            reads ``agent.stream`` (what it read must be the beginning of one).
        checkpoint: Take a checkpoint right after cancelling, so that the
            cancellation is delivered inside the k-th dispatch; ``False`` leaves it
            to the run's next checkpoint (a run may have none before its end: it
            must still not report success).
        then: A prompt to run on the same agent after each cancelled run (the same
            way, without cancelling): it must succeed and keep the conversation.
        usage: Check the streams' usage (see :func:`run_violations`).

    Returns:
        One line per violation (empty when the contract holds at every boundary).

    Raises:
        ValueError: ``stream`` is not one of the values above.
    """
    from agentrt._state import AgentState

    if stream not in (True, False, "adapter", "consumer"):
        raise ValueError(f"stream must be False, True, 'adapter' or 'consumer', got {stream!r}")
    via: _Via = "adapter" if stream is True else "execute" if stream is False else stream
    counter = _CancelAt(0)
    agent = make_agent()
    counter.arm(agent)
    counter.scope = anyio.CancelScope()  # armed, but k=0 never fires
    await _run(agent, prompt, via, [])
    counter.scope = None
    await agent.close()
    total = counter.count
    problems: list[str] = []
    for k in range(1, total + 1):
        agent = make_agent()
        cancel = _CancelAt(k, checkpoint=checkpoint)
        cancel.arm(agent)
        events: list[StreamEvent] = []
        tasks = _task_ids()
        succeeded = False
        with anyio.CancelScope() as scope:
            cancel.scope = scope
            succeeded = await _run(agent, prompt, via, events)
        cancel.scope = None
        members = cancel.members(agent)
        spent = cancel.conversations(agent)
        found: list[str] = []
        if cancel.event is None:
            found.append("the dispatch never came: the run is not the one counted")
        elif succeeded:
            found.append("the run reported success")
        found.extend(
            run_violations(
                agent.messages,
                None if via == "execute" else events,
                prompt=prompt,
                partial=via == "consumer",
                usage=usage,
                members=spent,
            )
        )
        for member in members:
            if member.state is not AgentState.IDLE:
                found.append(f"the member {member.name!r} is {member.state}, not idle")
        left = sorted(str(task.name) for task in anyio.get_running_tasks() if task.id not in tasks)
        if left:
            found.append(f"tasks of the run are left running: {left}")
        if agent.state is not AgentState.IDLE:
            found.append(f"the agent is {agent.state}, not idle")
        if then is not None and agent.state is AgentState.IDLE:
            # The session's usage counts what the members of both runs spent.
            found.extend(await _then_violations(agent, then, via, usage=usage, watch=cancel))
        where = f"cancelled at dispatch {k}/{total} ({cancel.event})"
        problems.extend(f"{where}: {problem}" for problem in found)
        with anyio.CancelScope(shield=True):
            await agent.close()
    return problems


async def _then_violations(
    agent: "Agent",
    prompt: str,
    via: _Via,
    *,
    usage: bool,
    watch: _TeamWatch,
) -> list[str]:
    from agentrt._state import AgentState

    kept = list(agent.messages)
    events: list[StreamEvent] = []
    try:
        await _run(agent, prompt, via, events)
    except Exception as error:
        return [f"the run after it failed: {type(error).__name__}: {error}"]
    found = run_violations(
        agent.messages,
        None if via == "execute" else events,
        before=kept,
        prompt=prompt,
        usage=usage,
        members=watch.conversations(agent),
    )
    if agent.state is not AgentState.IDLE:
        found.append(f"the agent is {agent.state} after the next run, not idle")
    return [f"the run after it: {problem}" for problem in found]


class _HoldAfter:
    """A ``"*"`` handler that holds a server run once its k-th stream event is logged.

    Registered below the stream adapter's handlers, it sees each dispatch after the
    adapter wrote that dispatch's events: the run waits at the first dispatch after
    event k (user_message and stream_started are written together, before any).
    """

    def __init__(self, k: int, log: "SessionLog") -> None:
        self.k = k
        self.log = log
        self.held_at: str | None = None
        self.reached = anyio.Event()
        """Set once the run is held, or has ended."""
        self.resume = anyio.Event()

    async def __call__(self, ctx: EventContext[Any, Any]) -> None:
        if self.held_at is None and self.log.last_sequence >= self.k:
            self.held_at = str(ctx.event)
            self.reached.set()
            # Not a sleep: the run waits for the cancellation (delivered here) or, in
            # a shielded section, until the cancel request was answered.
            await self.resume.wait()


async def server_cancellation_violations(
    make_agent: Callable[[], "Agent | Awaitable[Agent]"],
    prompt: str,
    *,
    then: str | None = None,
    stream_options: Mapping[str, Any] | None = None,
    usage: bool = True,
    storage: str = "memory",
) -> list[str]:
    """Cancel a server run with ``DELETE /sessions/{id}/run`` after each of its events.

    Serves ``make_agent`` in process (:func:`agentrt.server.create_app`; needs
    ``agentrt[server]``), runs ``prompt`` once in a session to count its stream's
    events, then, for each k, runs it in a new session, holds the run right after
    its k-th event, cancels it through the endpoint and checks the contract: the
    endpoint answers 202 while the run goes on and 409 once it has ended; a
    cancelled run's stream ends with an ``error`` and ``stream_stopped`` (it never
    reads as a success); :func:`run_violations` finds nothing in the stream and the
    conversation (``GET /sessions/{id}/messages``); the agent is idle; and, with
    ``then``, the session answers ``then`` afterwards without an error. For a team
    (see :mod:`agentrt.team`) every member's conversation is checked too, and the
    stream's usage, which counts the whole team, against what every agent of the
    team spent in the session.

    Args:
        make_agent: The server's agent factory (a fresh agent per session).
        prompt: The message of the cancelled runs.
        then: A message to send after each cancelled run, in the same session.
        stream_options: The server's ``stream_options``.
        usage: Check the streams' usage against what the session's agents spent
            (see :func:`run_violations`; off with ``title`` or ``compaction`` options).
        storage: The server's store (:func:`~agentrt.server.create_app`): with a
            durable one, the runs are durable and a cancelled run must also be
            cancelled in the store (never to be recovered).

    Returns:
        One line per violation (empty when the contract holds after every event).
    """
    import httpx

    from agentrt.server.app import create_app

    app = create_app(make_agent, stream_options=stream_options, page=False, storage=storage)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app), base_url="http://localhost"
        ) as client,
    ):
        server = _Server(client, app.state.sessions, usage=usage)
        session_id = await server.new_session()
        plain, problems = await server.send(
            session_id, prompt, name="the run without cancellation"
        )
        await server.close_session(session_id)
        total = len(plain)
        for k in range(1, total + 1):
            found, held_at = await server.cancel_after(k, prompt, then)
            where = f"cancelled after event {k}/{total} ({plain[k - 1].type}"
            where += ")" if held_at is None else f", held at {held_at})"
            problems.extend(f"{where}: {problem}" for problem in found)
    return problems


class _Server:
    """The requests of :func:`server_cancellation_violations`, to an app in process."""

    def __init__(self, client: "httpx.AsyncClient", store: "SessionStore", *, usage: bool) -> None:
        from pydantic import TypeAdapter

        from agentrt.messages import Message

        self.client = client
        self.store = store
        self.messages = TypeAdapter(list[Message])
        self.usage = usage
        # Each session's agent, and who ran for it: a team's members spend too.
        self.watches: dict[str, tuple[Agent, _TeamWatch]] = {}

    async def new_session(self) -> str:
        response = await self.client.post("/sessions")
        response.raise_for_status()
        session_id = str(response.json()["id"])
        agent = (await self.store.open(session_id)).agent
        watch = self.watches[session_id] = (agent, _TeamWatch())
        watch[1].arm(agent)
        return session_id

    async def close_session(self, session_id: str) -> None:
        await self.client.delete(f"/sessions/{session_id}")
        del self.watches[session_id]

    def members(self, session_id: str) -> "list[Sequence[Message]]":
        """The conversations of the members that ran in the session so far."""
        agent, watch = self.watches[session_id]
        return watch.conversations(agent)

    async def conversation(self, session_id: str) -> "list[Message]":
        response = await self.client.get(f"/sessions/{session_id}/messages")
        return self.messages.validate_python(response.json()["messages"])

    @staticmethod
    def decode(body: bytes) -> "list[StreamEvent]":
        from agentrt.stream.codec import SSEEventDecoder

        # Strict: our own server's stream, so an unknown event type is an error, and
        # every event is a StreamEvent.
        decoder = SSEEventDecoder(strict=True)
        items = decoder.feed(body) + decoder.close()
        return cast("list[StreamEvent]", [item.event for item in items])

    async def send(
        self, session_id: str, message: str, *, name: str
    ) -> "tuple[list[StreamEvent], list[str]]":
        """Run ``message`` to its end: its events, and what it broke (said as ``name``)."""
        from agentrt.stream.events import ErrorEvent

        kept = await self.conversation(session_id)
        response = await self.client.post(
            f"/sessions/{session_id}/messages", json={"message": message}
        )
        if response.status_code != 200:
            return [], [f"{name} was refused: {response.status_code} {response.text}"]
        events = self.decode(response.content)
        found = run_violations(
            await self.conversation(session_id),
            events,
            before=kept,
            prompt=message,
            usage=self.usage,
            members=self.members(session_id),
        )
        found += [f"an error: {event.error}" for event in events if isinstance(event, ErrorEvent)]
        return events, [f"{name}: {problem}" for problem in found]

    async def cancel_after(
        self, k: int, prompt: str, then: str | None
    ) -> tuple[list[str], str | None]:
        """Run ``prompt`` in a new session and cancel it after its k-th event.

        Returns:
            What the run broke, and the dispatch it was held at (None: it ended first).
        """
        from agentrt._state import AgentState
        from agentrt.stream.events import ErrorEvent

        session_id = await self.new_session()
        session = await self.store.open(session_id)
        hold = _HoldAfter(k, session.log)
        session.agent.events.on("*", hold, priority=-sys.maxsize - 1)
        bodies: list[bytes] = []

        async def post() -> None:
            try:
                response = await self.client.post(
                    f"/sessions/{session_id}/messages", json={"message": prompt}
                )
                bodies.append(response.content)
            finally:
                hold.reached.set()

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            await hold.reached.wait()
            cancel = await self.client.delete(f"/sessions/{session_id}/run")
            hold.resume.set()
        session.agent.events.off("*", hold)
        events = self.decode(bodies[0])
        found = run_violations(
            await self.conversation(session_id),
            events,
            prompt=prompt,
            usage=self.usage,
            members=self.members(session_id),
        )
        expected = 409 if hold.held_at is None else 202
        if cancel.status_code != expected:
            found.append(f"DELETE /run answered {cancel.status_code}, not {expected}")
        if cancel.status_code == 202:
            if [event.type for event in events[-2:]] != ["error", "stream_stopped"]:
                found.append("the cancelled run's stream does not end with error, stream_stopped")
        else:
            found += [f"an error: {e.error}" for e in events if isinstance(e, ErrorEvent)]
        if session.agent.state is not AgentState.IDLE:
            found.append(f"the agent is {session.agent.state}, not idle")
        if then is not None:
            found += (await self.send(session_id, then, name="the run after it"))[1]
        await self.close_session(session_id)
        return found, hold.held_at
