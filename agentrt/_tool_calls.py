"""The tool calls of a turn: run, concurrently when there are several, and answered.

A part of :class:`agentrt._loop.Run` (which inherits it): a turn's calls go through
``tool:call:before``, the tool (an external tool's call, or ``DEFER`` from a handler,
leaves the call open) and ``tool:call:after`` or ``tool:call:error``, and every call the
assistant made gets its tool message, in the model's order, however the turn ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.lowlevel

from agentrt._state import AgentState
from agentrt.control import DEFER, Defer
from agentrt.deferred import ExternalTool
from agentrt.events._registry import check_output
from agentrt.events.names import EV
from agentrt.exceptions import ToolError, ToolNotFoundError
from agentrt.messages import ToolCall, ToolMessage, ToolResponse, to_text
from agentrt.tools import RUNNING_CALL, Tool

if TYPE_CHECKING:
    from agentrt.agent import Agent

__all__ = ("CANCELLED_TOOL_RESPONSE", "MAX_CONCURRENT_TOOLS", "ToolCalls")

E = EV  # AgentEvents, read without the enum metaclass hook (see EV)
MAX_CONCURRENT_TOOLS = 64
"""How many tool calls of one turn run at once, unless the agent says otherwise."""
CANCELLED_TOOL_RESPONSE = "Error: the tool call was cancelled before it finished."


class ToolCalls:
    """How a run runs and answers its turns' tool calls (a base of :class:`~agentrt._loop.Run`)."""

    __slots__ = ()

    # Run's: set in its __init__ (and offered per model call).
    agent: Agent
    approved: frozenset[str]
    offered: Mapping[str, Tool[Any, Any]] | None

    async def _run_tools(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """Run ``calls`` and append their answers; the calls deferred (left unanswered)."""
        agent = self.agent
        if (pending := agent.enter_state(AgentState.RUNNING_TOOLS)) is not None:
            await pending
        offered = self.offered
        if offered is None:
            # The tools in force were offered, or the response came from a handler.
            offered = agent.tool_table()
        responses: list[ToolResponse | str | Defer | None] = [None] * len(calls)
        try:
            if len(calls) == 1:
                responses[0] = await self._run_tool(calls[0], offered)
            else:
                await self._run_parallel(calls, offered, responses)
        except BaseException:
            # Whatever stopped the turn (cancellation, a handler's exception), every
            # tool call the assistant made still gets its answer in the conversation;
            # a failed run leaves nothing waiting: a deferred call counts as cut short.
            with anyio.CancelScope(shield=True):
                await self._append_tool_messages(calls, responses)
            raise
        # A scan in C: _run_tool defers with the DEFER object, which no response equals.
        if DEFER not in responses:
            await self._append_tool_messages(calls, responses)
            return []
        deferred = [call for call, r in zip(calls, responses, strict=True) if r is DEFER]
        await self._append_tool_messages(
            [call for call, r in zip(calls, responses, strict=True) if r is not DEFER],
            [r for r in responses if r is not DEFER],
        )
        return deferred

    async def _run_parallel(
        self,
        calls: Sequence[ToolCall],
        offered: Mapping[str, Tool[Any, Any]],
        responses: list[ToolResponse | str | Defer | None],
    ) -> None:
        """Run ``calls`` concurrently, at most ``max_concurrent_tools`` at a time.

        A model may ask for thousands of calls in one turn: a few workers take them
        in order rather than one task each. The first call that fails (an
        interceptable handler's exception, a ``KeyboardInterrupt`` from a tool) stops
        the others and is raised as it was raised, as with a single call: not wrapped
        in an exception group, and never left to kill the event loop from a child
        task (asyncio re-raises ``KeyboardInterrupt`` and ``SystemExit`` there).
        """
        limit = self.agent.max_concurrent_tools
        if limit is None:
            limit = len(calls)
        cancelled = anyio.get_cancelled_exc_class()
        failures: list[BaseException] = []
        pending = iter(range(len(calls)))

        async def worker() -> None:
            first = True
            for index in pending:  # shared: each call is taken by one worker
                if failures:
                    return
                if not first:
                    # Sync tools never wait: without this, a cancelled turn would
                    # still run every call left.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                first = False
                try:
                    responses[index] = await self._run_tool(calls[index], offered)
                except cancelled:
                    raise
                except BaseException as error:
                    failures.append(error)
                    group.cancel_scope.cancel()
                    return

        try:
            async with anyio.create_task_group() as group:
                for _ in range(min(limit, len(calls))):
                    group.start_soon(worker)
        except BaseException:
            if not failures:
                raise
            # A cancellation from outside met a failure: raise the failure; the
            # cancelled scope cancels again at the next checkpoint.
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise BaseExceptionGroup("several tool calls failed", failures)

    async def _answer_open_calls(self, since: int) -> None:
        """Answer every tool call from ``since`` on that has no tool message (as cancelled)."""
        agent = self.agent
        if agent.closed:
            return
        open_calls = agent.conversation.unanswered_calls(since)
        if open_calls:
            with anyio.CancelScope(shield=True):
                await self._append_tool_messages(open_calls, [None] * len(open_calls))

    async def _append_tool_messages(
        self,
        calls: Sequence[ToolCall],
        responses: Sequence[ToolResponse | str | Defer | None],
    ) -> None:
        """Answer each call: a str is a tool's successful text, None a call cut short.

        A deferred call meets this only when its run failed: it counts as cut short.
        """
        conversation = self.agent.conversation
        for call, response in zip(calls, responses, strict=True):
            if type(response) is str:
                content, is_error = response, False
            elif response is None or response is DEFER:
                content, is_error = CANCELLED_TOOL_RESPONSE, True
            else:
                content, is_error = response.content, response.is_error  # type: ignore[union-attr]
            message = ToolMessage(
                content=content, tool_call_id=call.id, name=call.name, is_error=is_error
            )
            await conversation.add(message)

    async def _run_tool(
        self, call: ToolCall, offered: Mapping[str, Tool[Any, Any]]
    ) -> ToolResponse | str | Defer:
        """Run one call; its response, just its text when it ran and succeeded, or DEFER."""
        agent = self.agent
        bus = agent.events
        try:
            tool = offered.get(call.name)
            if tool is None:
                raise ToolNotFoundError(call.name, tuple(offered))
            arguments = call.parse_arguments()
            decided: dict[str, Any] | ToolResponse | Defer = arguments
            if bus.has_handlers(E.TOOL_CALL_BEFORE):
                ctx = await bus.apply(
                    E.TOOL_CALL_BEFORE,
                    output=arguments,
                    agent=agent,
                    tool_name=call.name,
                    tool_call=call,
                    arguments=arguments,
                )
                if ctx.output is not arguments:  # the common case: no handler changed them
                    decided = check_output(E.TOOL_CALL_BEFORE, ctx.output)
                    if isinstance(decided, Defer):
                        if call.id not in self.approved:
                            return DEFER
                        decided = arguments  # a person approved it: it is not held again
            # dict first: isinstance() against a pydantic class is the slower test.
            response: ToolResponse | str
            if isinstance(decided, dict):
                if isinstance(tool, ExternalTool):
                    return DEFER  # the caller runs it
                arguments = decided
                # Text, not a ToolResponse: the model is only built for observers.
                # ToolContext.enter()'s work, inline: this is every tool call's path.
                token = RUNNING_CALL.set((agent, call))
                try:
                    result = await tool.run(arguments)
                finally:
                    RUNNING_CALL.reset(token)
                if result is DEFER:
                    # The tool left its call open (a team member that waits).
                    return result
                try:
                    response = to_text(result)
                except ValueError as exc:
                    # Not renderable (an object pydantic cannot serialize, an int past
                    # Python's digit limit): a failed call the model reads about, not a
                    # crash of the run.
                    raise ToolError(
                        f"tool {tool.name!r} returned a value of type "
                        f"{type(result).__name__!r} that cannot be rendered as text ({exc})"
                    ) from exc
            else:
                response = cast("ToolResponse", decided)  # DEFER returned or ran above
        except ToolError as error:
            ctx = await bus.apply(
                E.TOOL_CALL_ERROR, agent=agent, tool_name=call.name, tool_call=call, error=error
            )
            fallback = check_output(E.TOOL_CALL_ERROR, ctx.output, error)
            if fallback is None:
                return ToolResponse(f"Error: {error}", is_error=True)
            return fallback  # type: ignore[no-any-return]
        if bus.has_handlers(E.TOOL_CALL_AFTER):
            await bus.do(
                E.TOOL_CALL_AFTER,
                agent=agent,
                tool_name=call.name,
                tool_call=call,
                arguments=arguments,
                response=ToolResponse(response) if type(response) is str else response,
            )
        return response
