"""Session events: a title for the session, and compaction of a conversation near its limit.

Both are opt-in: without them no extra model call is made and no handler is added::

    async with agent.stream("Plan a trip", title=True, compaction=Compactor()) as events:
        ...

**Title.** ``title=True`` asks the model with :data:`DEFAULT_TITLE_PROMPT`;
``title="<prompt>"`` with another prompt; ``title=fn`` calls ``fn(messages)`` (sync or
async) with the conversation. It is made once per agent session, at the end of the
first run that succeeds (an ``execute:after`` handler), kept in :func:`session_state`,
and emitted as ``session_title`` before that stream's ``stream_stopped``; a model-made
title's token usage follows it. A failure is an ``error`` event; the run is not
disturbed and the next stream tries again. Without a stream: :func:`ensure_title`.

**Compaction.** Before each model call (an ``execute:iteration:before`` handler) a
:class:`Compactor` measures the conversation: the tokens the model reported for its
latest call (input + output) plus an estimate of the messages added since, or an
estimate of everything when no call reported usage. At ``threshold`` of the context
limit, the messages between the system message and the ``keep_recent`` latest ones
(never splitting an assistant's tool calls from their tool messages) are summarized
by the model and replaced by one user message holding the summary, through
:meth:`Agent.compact <agentrt.Agent.compact>`. The stream shows::

    session_compaction start → started → session_summary → token_usage → session_compaction
    completed

where ``token_usage`` counts the summary call and gives the new (estimated) context
length. When the summary cannot be made, the conversation stays exactly as it was::

    session_compaction start → started → error → session_compaction completed

and the run goes on. Without a stream: ``compactor.attach(agent)`` (failures are
logged on the ``agentrt`` logger) or ``await compactor.compact(agent)``.

**Side calls.** A title or a summary is one ``agent.model.complete(request)`` on a
one-off request (a system prompt and a plain-text transcript of the conversation, no
tools), not a run of the agent: ``execute`` (also with ``output_type``) would append
the exchange to the conversation, would wait for the run in progress (compaction
happens inside a run: a deadlock), and its ``llm:*`` events would show the summary's
text on the stream as the agent's answer. A transcript rather than the messages
themselves: a provider may refuse tool messages in a request that offers no tools,
and any model can read text.
"""

import inspect
import logging
import sys
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from agentrt.bus import EventContext
from agentrt.events.names import EV, AgentEvents
from agentrt.exceptions import AgentrtError
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import estimate_tokens
from agentrt.stream.events import (
    ErrorEvent,
    SessionCompactionEvent,
    SessionSummaryEvent,
    SessionTitleEvent,
)
from agentrt.stream.state import SessionState

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.stream._adapter import StreamAdapter

__all__ = (
    "DEFAULT_SUMMARY_PROMPT",
    "DEFAULT_TITLE_PROMPT",
    "SUMMARY_PREFIX",
    "TITLE_MAX_LENGTH",
    "Compaction",
    "CompactionError",
    "CompactionPlan",
    "CompactionReport",
    "Compactor",
    "Estimator",
    "SessionEvents",
    "SessionState",
    "Summarizer",
    "TitleError",
    "TitleFunction",
    "TitleOption",
    "context_length",
    "ensure_title",
    "estimate_message_tokens",
    "generate_title",
    "session_state",
    "transcript",
)

E = EV  # AgentEvents, read without the enum metaclass hook (see EV)
logger = logging.getLogger("agentrt")

DEFAULT_TITLE_PROMPT = (
    "Write a short title, at most six words, for the conversation you are given. "
    "Answer with the title only: no quotes, no final period."
)
"""The system prompt of a model-made title."""

DEFAULT_SUMMARY_PROMPT = (
    "You compact a conversation between a user and an AI assistant that uses tools. "
    "Summarize the conversation you are given so that the assistant can continue it "
    "without the original: the user's goals and requests, decisions made, facts and "
    "results learned (from tools too), names, numbers and files that matter, and what "
    "remains to be done. Be concise and factual; answer with the summary only."
)
"""The system prompt of a model-made summary."""

SUMMARY_PREFIX = "[Summary of the earlier conversation]\n"
"""Opens the user message that replaces the summarized messages."""

TITLE_MAX_LENGTH = 80
"""Characters a title keeps at most."""

# Titles need the beginning of a conversation, not all of it.
_TITLE_TRANSCRIPT_CHARS = 4000
# Last among the handlers of an event: see what the others decided.
_LAST = -sys.maxsize

TitleFunction: TypeAlias = Callable[[tuple[Message, ...]], str | Awaitable[str]]
"""Makes a title from the conversation (sync or async)."""
TitleOption: TypeAlias = bool | str | TitleFunction
"""``True`` (the model, default prompt), a prompt for the model, or a :data:`TitleFunction`."""
Summarizer: TypeAlias = Callable[[tuple[Message, ...]], str | Awaitable[str]]
"""Makes a summary of the messages to compact (sync or async), instead of the model."""
Estimator: TypeAlias = Callable[[Sequence[Message]], int]
"""Estimates the tokens of messages."""


class TitleError(AgentrtError):
    """A session title could not be made.

    Attributes:
        reason: What went wrong.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the session title could not be made: {reason}")


class CompactionError(AgentrtError):
    """A compaction failed; the conversation is unchanged. ``__cause__`` is the original error.

    Attributes:
        reason: What went wrong.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"compaction failed, the conversation is unchanged: {reason}")


# -- the session's memory ---------------------------------------------------------------


def session_state(agent: "Agent") -> SessionState:
    """The session memory of ``agent`` (its title, compactions): ``agent.stream_state.session``."""
    return agent.stream_state.session


# -- measuring --------------------------------------------------------------------------


def estimate_message_tokens(messages: Sequence[Message]) -> int:
    """A deterministic token estimate: about four characters a token, four per message."""
    total = 0
    for message in messages:
        text = message.content
        if isinstance(message, AssistantMessage):
            text += (message.reasoning or "") + "".join(
                call.name + call.arguments for call in message.tool_calls
            )
        total += 4 + estimate_tokens(text)
    return total


def _reported(message: Message) -> Usage | None:
    if isinstance(message, AssistantMessage):
        usage = message.usage
        if usage is not None and usage.requests and usage.input_tokens:
            return usage
    return None


def context_length(agent: "Agent", estimator: Estimator = estimate_message_tokens) -> int:
    """The tokens the conversation of ``agent`` takes in the model's context now.

    The latest model call's reported input and output tokens plus an estimate of the
    messages added after it; an estimate of all messages when no call reported usage
    (or when the latest report predates a compaction).
    """
    messages = agent.messages
    stale = session_state(agent).compacted_usage
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        usage = _reported(message)
        if usage is not None:
            if message is stale:
                break
            return usage.input_tokens + usage.output_tokens + estimator(messages[index + 1 :])
    return estimator(messages)


def transcript(messages: Sequence[Message]) -> str:
    """The messages as plain text, one paragraph each, for a title or summary request."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            lines.append(f"System: {message.content}")
        elif isinstance(message, UserMessage):
            lines.append(f"User: {message.content}")
        elif isinstance(message, AssistantMessage):
            if message.content:
                lines.append(f"Assistant: {message.content}")
            lines.extend(
                f"Assistant called {call.name}({call.arguments})" for call in message.tool_calls
            )
        else:
            lines.append(
                f"Tool {message.name or message.tool_call_id} answered: {message.content}"
            )
    return "\n\n".join(lines)


def _model_limit(agent: "Agent") -> int | None:
    limit = getattr(agent.model, "context_limit", None)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    value = function(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


# -- titles -----------------------------------------------------------------------------


def _check_title_option(title: object) -> TitleOption | None:
    if title is None or title is False:
        return None
    if title is True or callable(title):
        return title
    if isinstance(title, str):
        if not title.strip():
            raise ValueError("a title prompt is a non-empty string")
        return title
    raise TypeError(
        f"title must be True, a prompt string or a callable of the messages, got {title!r:.60}"
    )


_DECORATION = "\"'`*# \t"


def _clean_title(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = line.strip(_DECORATION)
    if line[:6].lower() == "title:":
        line = line[6:].strip(_DECORATION)
    if line.endswith(".") and not line.endswith(".."):
        line = line[:-1].rstrip()
    if len(line) > TITLE_MAX_LENGTH:
        line = line[: TITLE_MAX_LENGTH - 1].rstrip() + "…"
    return line


async def generate_title(agent: "Agent", source: TitleOption = True) -> tuple[str, Usage]:
    """Make a title for the conversation of ``agent`` (without storing it).

    Args:
        agent: Whose conversation.
        source: ``True`` (the model with :data:`DEFAULT_TITLE_PROMPT`), a prompt for
            the model, or a :data:`TitleFunction`.

    Returns:
        The title (first line, quotes removed, at most :data:`TITLE_MAX_LENGTH`
        characters) and the usage of the model call (zero for a function).

    Raises:
        TitleError: The model or the function failed, or the title is empty.
    """
    option = _check_title_option(source)
    if option is None:
        raise ValueError("generate_title needs a source: True, a prompt or a callable")
    messages = agent.messages
    usage = Usage()
    try:
        if isinstance(option, bool | str):
            prompt = DEFAULT_TITLE_PROMPT if option is True else str(option)
            text = transcript([m for m in messages if not isinstance(m, SystemMessage)])
            request = ModelRequest(
                messages=[
                    SystemMessage(content=prompt),
                    UserMessage(content=text[:_TITLE_TRANSCRIPT_CHARS]),
                ]
            )
            response = await agent.model.complete(request)
            value: object = response.content
            usage = response.usage
        else:
            value = await _call(option, messages)
    except Exception as error:
        raise TitleError(f"{type(error).__name__}: {error}") from error
    if not isinstance(value, str):
        raise TitleError(f"the title is a {type(value).__name__}, not a str")
    title = _clean_title(value)
    if not title:
        raise TitleError("the title is empty")
    return title, usage


async def ensure_title(agent: "Agent", source: TitleOption = True) -> str:
    """The session's title: made by :func:`generate_title` on the first call, then kept.

    Raises:
        TitleError: It had to be made, and could not be.
    """
    state = session_state(agent)
    if state.title is None:
        title, _ = await generate_title(agent, source)
        if state.title is None:  # another task may have made one meanwhile
            state.title = title
    return state.title


# -- compaction -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """Which messages a compaction replaces (see :meth:`Compactor.plan`).

    Attributes:
        start: The first message summarized.
        end: The first message kept after them.
        messages: The messages summarized (``agent.messages[start:end]``).
        context_length: The measured context length that called for it.
        context_limit: The limit it was measured against (``None`` when forced
            without one).
    """

    start: int
    end: int
    messages: tuple[Message, ...]
    context_length: int
    context_limit: int | None


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction that happened.

    Attributes:
        summary: The summary's text.
        message: The message that now stands for the summarized ones.
        start: Its position in the conversation.
        removed: How many messages it replaced.
        usage: What the summary call spent (zero for a :data:`Summarizer`).
        context_length_before: The context length measured before.
        context_length: The estimated context length after.
    """

    summary: str
    message: Message
    start: int
    removed: int
    usage: Usage
    context_length_before: int
    context_length: int


class Compactor:
    """Summarize the older part of a conversation when it nears the context limit.

    Args:
        threshold: Compact when the context length reaches this fraction of the limit.
        context_limit: The model's context window in tokens (default: the limit the
            stream was given, else the model's ``context_limit`` attribute; without
            any, nothing is compacted unless forced).
        keep_recent: How many of the latest messages stay as they are (more when the
            boundary would split a tool call from its answers).
        prompt: The system prompt of the summary request.
        summarizer: Make the summary with this (sync or async) callable of the
            messages instead of the model.
        estimator: Estimates the tokens of messages the model has not counted.

    Raises:
        ValueError: ``threshold`` is not in (0, 1], or a count is negative.
        TypeError: A callable is not callable.
    """

    def __init__(
        self,
        *,
        threshold: float = 0.8,
        context_limit: int | None = None,
        keep_recent: int = 4,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        summarizer: Summarizer | None = None,
        estimator: Estimator = estimate_message_tokens,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise TypeError(f"threshold must be a number, got {type(threshold).__name__}")
        if not 0 < threshold <= 1:
            raise ValueError(
                f"threshold is a fraction of the context limit in (0, 1], got {threshold}"
            )
        if context_limit is not None and (
            isinstance(context_limit, bool)
            or not isinstance(context_limit, int)
            or context_limit < 1
        ):
            raise ValueError(f"context_limit must be a positive int, got {context_limit!r}")
        if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
            raise ValueError(f"keep_recent must be a non-negative int, got {keep_recent!r}")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt must be a non-empty string")
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"summarizer must be callable, got {type(summarizer).__name__}")
        if not callable(estimator):
            raise TypeError(f"estimator must be callable, got {type(estimator).__name__}")
        self.threshold = float(threshold)
        self.context_limit = context_limit
        self.keep_recent = keep_recent
        self.prompt = prompt
        self.summarizer = summarizer
        self.estimator = estimator

    # -- the three steps ----------------------------------------------------------------

    def plan(
        self, agent: "Agent", *, context_limit: int | None = None, force: bool = False
    ) -> CompactionPlan | None:
        """Decide whether to compact now, and which messages.

        Args:
            agent: Whose conversation.
            context_limit: The limit to use when the compactor has none of its own.
            force: Plan even below the threshold (or without a known limit).

        Returns:
            The plan, or ``None`` when the conversation is below the threshold or
            nothing could be summarized (only the system message and the kept ones).
        """
        limit = self.context_limit or context_limit or _model_limit(agent)
        messages = agent.messages
        length = context_length(agent, self.estimator)
        if not force and (limit is None or length < self.threshold * limit):
            return None
        start = 1 if messages and isinstance(messages[0], SystemMessage) else 0
        end = max(start, len(messages) - self.keep_recent)
        # Keep an assistant's tool calls with their answers: move the boundary back
        # to the assistant message.
        while start < end < len(messages) and isinstance(messages[end], ToolMessage):
            end -= 1
        if end <= start:
            return None
        return CompactionPlan(start, end, messages[start:end], length, limit)

    async def summarize(self, agent: "Agent", plan: CompactionPlan) -> tuple[str, Usage]:
        """Make the summary of ``plan.messages``: the model's, or the summarizer's.

        Returns:
            The summary and the usage of the model call (zero for a summarizer).

        Raises:
            CompactionError: The call failed or the summary is empty.
        """
        usage = Usage()
        try:
            if self.summarizer is not None:
                value: object = await _call(self.summarizer, plan.messages)
            else:
                request = ModelRequest(
                    messages=[
                        SystemMessage(content=self.prompt),
                        UserMessage(content=transcript(plan.messages)),
                    ]
                )
                response = await agent.model.complete(request)
                value, usage = response.content, response.usage
        except Exception as error:
            raise CompactionError(
                f"the summary call raised {type(error).__name__}: {error}"
            ) from error
        if not isinstance(value, str) or not value.strip():
            raise CompactionError(f"the summary is empty or not text ({value!r:.40})")
        return value.strip(), usage

    async def apply(
        self, agent: "Agent", plan: CompactionPlan, summary: str, usage: Usage | None = None
    ) -> Compaction:
        """Replace the planned messages by the summary (:meth:`Agent.compact`).

        Raises:
            CompactionError: The conversation changed since the plan was made.
        """
        current = agent.messages[plan.start : plan.end]
        if len(current) != len(plan.messages) or any(
            now is not then for now, then in zip(current, plan.messages, strict=True)
        ):
            raise CompactionError("the conversation changed while its summary was being made")
        stored = await agent.compact(
            plan.end, UserMessage(content=SUMMARY_PREFIX + summary), start=plan.start
        )
        state = session_state(agent)
        state.summary = summary
        state.compactions += 1
        state.compacted_usage = next(
            (m for m in reversed(agent.messages) if _reported(m) is not None), None
        )
        return Compaction(
            summary=summary,
            message=stored,
            start=plan.start,
            removed=plan.end - plan.start,
            usage=usage or Usage(),
            context_length_before=plan.context_length,
            context_length=context_length(agent, self.estimator),
        )

    async def compact(
        self, agent: "Agent", *, context_limit: int | None = None, force: bool = False
    ) -> Compaction | None:
        """Plan, summarize and apply: compact now if the conversation calls for it.

        Args:
            agent: Whose conversation.
            context_limit: The limit to use when the compactor has none of its own.
            force: Compact even below the threshold.

        Returns:
            What happened, or ``None`` when there was nothing to do.

        Raises:
            CompactionError: The summary could not be made or the conversation
                changed meanwhile; the conversation is unchanged.
        """
        plan = self.plan(agent, context_limit=context_limit, force=force)
        if plan is None:
            return None
        summary, usage = await self.summarize(agent, plan)
        return await self.apply(agent, plan, summary, usage)

    # -- without a stream -----------------------------------------------------------------

    def attach(self, agent: "Agent") -> None:
        """Compact ``agent``'s conversation before each of its model calls, when needed.

        A failed compaction is logged as a warning on the ``agentrt`` logger and the
        run goes on with the conversation as it was. :meth:`detach` undoes it.
        """
        agent.events.on(E.EXECUTE_ITERATION_BEFORE, self._on_iteration, priority=_LAST)

    def detach(self, agent: "Agent") -> bool:
        """Stop compacting ``agent`` automatically; whether it was attached."""
        return agent.events.off(E.EXECUTE_ITERATION_BEFORE, self._on_iteration)

    @contextmanager
    def attached(self, agent: "Agent") -> Iterator["Compactor"]:
        """:meth:`attach` for the duration of the block."""
        self.attach(agent)
        try:
            yield self
        finally:
            self.detach(agent)

    def interceptor(
        self, *, context_limit: int | None = None, report: "CompactionReport | None" = None
    ) -> Callable[[EventContext[Any, Any]], Awaitable[None]]:
        """The interceptable ``execute:iteration:before`` handler that compacts when needed.

        It changes the run: before a model call whose conversation is near the context
        limit, the older messages give way to a summary (:meth:`plan`,
        :meth:`summarize`, :meth:`apply`). A turn a handler already answered is left
        alone. ``report`` hears of each step (a stream turns them into its
        ``session_compaction`` events); without it a failed compaction is logged.

        Args:
            context_limit: The model's context window, unless the compactor has its own.
            report: Told when a compaction starts, fails, is interrupted or is done.
        """

        async def compact_before_the_model_call(ctx: EventContext[Any, Any]) -> None:
            if ctx.output is not None:
                return  # a handler supplies this turn's answer: no model call to make room for
            agent = ctx.parameters["agent"]
            plan = self.plan(agent, context_limit=context_limit)
            if plan is None:
                return
            if report is not None:
                await report.started()
            try:
                summary, usage = await self.summarize(agent, plan)
                done = await self.apply(agent, plan, summary, usage)
            except CompactionError as error:
                if report is None:
                    logger.warning("agent %r: %s", agent.name, error)
                else:
                    await report.failed(error)
                return
            except Exception:
                # A message:replace:before handler raised (control flow): close the
                # compaction before the run reports the error.
                if report is not None:
                    await report.interrupted()
                raise
            if report is not None:
                await report.finished(done)

        return compact_before_the_model_call

    async def _on_iteration(self, ctx: EventContext[Any, Any]) -> None:
        if ctx.output is not None:
            return  # a handler supplies this turn's answer: no model call to make room for
        agent = ctx.parameters["agent"]
        try:
            await self.compact(agent)
        except CompactionError as error:
            logger.warning("agent %r: %s", agent.name, error)

    def __repr__(self) -> str:
        return (
            f"Compactor(threshold={self.threshold}, context_limit={self.context_limit}, "
            f"keep_recent={self.keep_recent})"
        )


# -- the stream side --------------------------------------------------------------------


class CompactionReport(Protocol):
    """What hears of the steps of a compaction made by :meth:`Compactor.interceptor`."""

    async def started(self) -> None:
        """A compaction begins (its summary is about to be made)."""

    async def failed(self, error: CompactionError) -> None:
        """The compaction failed; the conversation is as it was."""

    async def interrupted(self) -> None:
        """A handler raised during the compaction; the run reports the error."""

    async def finished(self, done: Compaction) -> None:
        """The compaction is done: ``done`` says what it made."""


class SessionEvents:
    """Titles and compactions of one :class:`~agentrt.stream.StreamAdapter`, as stream events.

    The adapter makes one from its ``title`` and ``compaction`` options and registers
    its :meth:`handlers` with its own; it emits through the adapter's public
    :meth:`~agentrt.stream.StreamAdapter.emit`.

    Args:
        adapter: The stream to emit into.
        title: See :data:`TitleOption`; ``None`` or ``False``: no title.
        compaction: A :class:`Compactor`, ``True`` for a default one, or ``None`` /
            ``False`` for none.
    """

    def __init__(
        self,
        adapter: "StreamAdapter",
        *,
        title: TitleOption | None = None,
        compaction: Compactor | bool | None = None,
    ) -> None:
        # Weak: the adapter owns this object, and a reference back would make the two a
        # cycle that only the cyclic garbage collector frees (a server makes one per run).
        self._adapter = weakref.ref(adapter)
        self.title = _check_title_option(title)
        if compaction is True:
            compaction = Compactor()
        elif compaction is False:
            compaction = None
        if compaction is not None and not isinstance(compaction, Compactor):
            raise TypeError(
                f"compaction must be a Compactor, True or None, got {type(compaction).__name__}"
            )
        self.compactor = compaction

    @property
    def adapter(self) -> "StreamAdapter":
        """The stream to emit into.

        Raises:
            ReferenceError: The adapter is gone (nothing keeps it but its owner).
        """
        adapter = self._adapter()
        if adapter is None:
            raise ReferenceError("the stream adapter of these session events is gone")
        return adapter

    def gates(self) -> list[tuple[AgentEvents, Callable[[EventContext[Any, Any]], Any]]]:
        """The interceptable handlers that change the run: the compactor's, reporting here."""
        compactor = self.compactor
        if compactor is None:
            return []
        handler = compactor.interceptor(context_limit=self.adapter.context_limit, report=self)
        return [(E.EXECUTE_ITERATION_BEFORE, handler)]

    def handlers(self) -> list[tuple[AgentEvents, Callable[[EventContext[Any, Any]], Any]]]:
        """The ``(event, handler)`` pairs that observe one run (none when all is off)."""
        handlers: list[tuple[AgentEvents, Callable[[EventContext[Any, Any]], Any]]] = []
        if self.title is not None and session_state(self.adapter.agent).title is None:
            handlers.append((E.EXECUTE_AFTER, self._after_run))
        return handlers

    def _compaction(self, status: str) -> SessionCompactionEvent:
        adapter = self.adapter
        return SessionCompactionEvent(
            session_id=adapter.session_id,
            agent_name=adapter.agent.name,
            status=status,  # type: ignore[arg-type]
        )

    def _error(self, error: Exception) -> ErrorEvent:
        adapter = self.adapter
        return ErrorEvent(
            session_id=adapter.session_id, agent_name=adapter.agent.name, error=str(error)
        )

    # -- the compaction's steps, as stream events (CompactionReport) ------------------

    async def started(self) -> None:
        """Emit ``session_compaction`` start and started."""
        await self.adapter.emit(self._compaction("start"))
        await self.adapter.emit(self._compaction("started"))

    async def failed(self, error: CompactionError) -> None:
        """Emit the error, then ``session_compaction`` completed."""
        await self.adapter.emit(self._error(error))
        await self.adapter.emit(self._compaction("completed"))

    async def interrupted(self) -> None:
        """Emit ``session_compaction`` completed: the run reports the error."""
        await self.adapter.emit(self._compaction("completed"))

    async def finished(self, done: Compaction) -> None:
        """Emit the summary, the summary's token usage, then ``session_compaction`` completed."""
        adapter = self.adapter
        await adapter.emit(
            SessionSummaryEvent(
                session_id=adapter.session_id, agent_name=adapter.agent.name, summary=done.summary
            )
        )
        await adapter.emit(
            adapter.token_usage_event(done.usage, context_length=done.context_length)
        )
        await adapter.emit(self._compaction("completed"))

    async def _after_run(self, ctx: EventContext[Any, Any]) -> None:
        adapter = self.adapter
        agent = adapter.agent
        state = session_state(agent)
        if self.title is None or state.title is not None:
            return
        try:
            title, usage = await generate_title(agent, self.title)
        except TitleError as error:
            await adapter.emit(self._error(error))
            return
        state.title = title
        await adapter.emit(
            SessionTitleEvent(session_id=adapter.session_id, agent_name=agent.name, title=title)
        )
        if usage.requests:
            await adapter.emit(
                adapter.token_usage_event(usage, context_length=context_length(agent))
            )
