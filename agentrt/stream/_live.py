"""``agent.stream(prompt)``: run an agent and iterate over its stream events.

::

    async with agent.stream("What is 1 + 2?") as events:
        async for event in events:
            if isinstance(event, ToolCallConfirmationEvent):
                await events.confirm(event.tool_call.id, "approve")
            send_to_browser(event.model_dump_json())

The run happens in a task of its own and sends events through a bounded
:class:`~agentrt.stream._channel.Channel`: when the consumer falls ``buffer_size``
events behind, the run waits.
Leaving the ``async with`` block early cancels the run; ``stream_stopped`` is
still the last event produced.
"""

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from agentrt._state import RunResult
from agentrt.stream._adapter import StreamAdapter
from agentrt.stream._channel import Channel
from agentrt.stream._pricing import PriceTable
from agentrt.stream.confirm import ConfirmationPolicy
from agentrt.stream.events import StreamEvent
from agentrt.stream.session import Compactor, TitleOption
from agentrt.stream.validate import StreamValidator, StreamViolationError

if TYPE_CHECKING:
    from agentrt.agent import Agent

__all__ = ("EventStream", "open_stream")


class EventStream:
    """The events of one running stream: iterate, answer confirmations, read the result."""

    def __init__(
        self,
        channel: Channel[StreamEvent],
        adapter: StreamAdapter,
        *,
        strict: bool,
    ) -> None:
        self._channel = channel
        self._adapter = adapter
        self._validator = StreamValidator() if strict else None
        # What `async for` steps through when no validator checks the events.
        self._items: AsyncGenerator[StreamEvent, None] | None = None

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._validator is not None:
            return self  # __anext__ checks each event
        if self._items is None:
            self._items = self._channel.items()
        return self._items

    async def __anext__(self) -> StreamEvent:
        try:
            # A ready event is taken without a trip through the event loop: that trip
            # per event would be most of a streamed delta's cost.
            event = self._channel.get_nowait()
        except anyio.WouldBlock:
            try:
                event = await self._channel.get()
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
        if self._validator is not None:
            violations = self._validator.check(event)
            if violations:
                raise StreamViolationError(violations[0])
        return event

    async def confirm(self, tool_call_id: str, decision: str, reason: str | None = None) -> bool:
        """Answer the confirmation of a tool call (see :mod:`agentrt.stream.confirm`).

        Returns:
            False when this id was already answered (the answer is ignored).

        Raises:
            UnknownToolCallError: The model produced no call with this id.
            InvalidDecisionError: ``decision`` is not a known decision.
        """
        return self._adapter.confirmations.answer(tool_call_id, decision, reason)

    async def aclose(self) -> None:
        """Close the iterator ``async for`` used; ``agent.stream()`` does it on leaving."""
        if self._items is not None:
            await self._items.aclose()

    @property
    def session_id(self) -> str:
        """The ``session_id`` of the events."""
        return self._adapter.session_id

    @property
    def result(self) -> RunResult[Any] | None:
        """The run's result, once it finished successfully or ended waiting.

        A run that ended waiting has ``pending_tool_calls`` (see :mod:`agentrt.deferred`).
        """
        return self._adapter.result


@asynccontextmanager
async def open_stream(
    agent: "Agent",
    prompt: str | None,
    *,
    buffer_size: int = 64,
    strict: bool = False,
    auto_approve: bool = False,
    confirmation_policy: ConfirmationPolicy | None = None,
    prices: PriceTable | None = None,
    context_limit: int | None = None,
    title: TitleOption | None = None,
    compaction: Compactor | bool | None = None,
    defer_confirmations: bool = False,
    **execute_options: Any,
) -> AsyncIterator[EventStream]:
    """Run ``agent`` on ``prompt`` and yield an :class:`EventStream` of its events.

    Args:
        agent: The agent to run.
        prompt: The user's message (``None`` continues the conversation).
        buffer_size: How many events the run may get ahead of the consumer.
        strict: Validate the stream as it is read; raise
            :class:`StreamViolationError` at the first violation.
        auto_approve: Run tools that require confirmation without asking.
        confirmation_policy: Decide per call whether approval is needed.
        prices: Prices by model name for the cost in ``token_usage``.
        context_limit: The model's context window, for ``token_usage`` (and for
            compaction when the compactor has no limit of its own).
        title: Make a session title once per session: ``True``, a prompt, or a
            callable of the messages (see :mod:`agentrt.stream.session`).
        compaction: Compact the conversation near the context limit: a
            :class:`~agentrt.stream.session.Compactor`, or ``True`` for a default one.
        defer_confirmations: Do not wait in the run for confirmations: a call that
            needs approval is left open and the run ends waiting (``stream_stopped``
            lists it in ``pending_tool_call_ids``); a later stream decides it with
            ``tool_results={id: Approval(...)}``. See :mod:`agentrt.deferred`.
        **execute_options: Passed to :meth:`Agent.execute` (``output_type``,
            ``max_iterations``, ``tool_results``...).

    Raises:
        ValueError: ``buffer_size`` is negative.
        Exception: What the run raised, when the consumer read to the end.
    """
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 0:
        raise ValueError(f"buffer_size must be a non-negative int, got {buffer_size!r}")
    channel = Channel[StreamEvent](buffer_size)

    adapter = StreamAdapter(
        agent,
        channel.put,
        sink_nowait=channel.put_nowait,
        auto_approve=auto_approve,
        confirmation_policy=confirmation_policy,
        prices=prices,
        context_limit=context_limit,
        title=title,
        compaction=compaction,
        defer_confirmations=defer_confirmations,
    )
    failure: list[BaseException] = []

    async def produce() -> None:
        try:
            await adapter.run(prompt, **execute_options)
        except Exception as error:
            # Re-raised to the consumer after the block; raising it here would
            # cancel the consumer mid-iteration instead.
            failure.append(error)
        finally:
            channel.close()

    events = EventStream(channel, adapter, strict=strict)
    async with anyio.create_task_group() as group:
        group.start_soon(produce)
        try:
            yield events
        finally:
            # The consumer is done (or left early): stop the run if it still goes on.
            channel.close_reader()
            group.cancel_scope.cancel()
            await events.aclose()
    if failure:
        raise failure[0]
