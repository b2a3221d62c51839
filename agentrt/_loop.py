"""One run of the execute loop: the events a run announces, in order.

::

    with tool_results (agentrt.deferred): tools:provide, the tools the answers are checked
      against and approved calls run with; a bad answer fails the run here
    execute:before (apply: max_iterations)
    the calls an earlier run left open, when there are: their answers appended, then the
      approved calls run as a turn's calls do (below); calls still unanswered keep the
      run waiting (it ends here), unless a prompt came: they are answered with an error
    user message created and appended
    per turn:
      execute:iteration:before (apply: SKIP_ITERATION, or a response instead of the model)
      tools:provide, tools:generate_signature, message:render:*, llm:{complete,stream}:before
      the model call → llm:stream:chunk per chunk; on failure llm:*:error then llm:error
      llm:{complete,stream}:after → assistant message created and appended
      tool calls, concurrently: tool:call:before → tool → tool:call:after | tool:call:error;
        their messages appended in the model's order; a deferred call (an external
        tool's, or DEFER from tool:call:before) gets none, and the run ends waiting
        after this turn
      execute:iteration:after (signal: iteration, the turn's messages)
    on an exception: execute:error (apply: recovery, else the exception propagates)
    execute:after (signal: the result)
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel

from agentrt._runs import checkpoint_if_cancelled
from agentrt._state import AgentState, RunResult
from agentrt._tool_calls import CANCELLED_TOOL_RESPONSE, MAX_CONCURRENT_TOOLS, ToolCalls
from agentrt.control import RETRY, SkipIteration
from agentrt.deferred import (
    UNANSWERED_TOOL_RESPONSE,
    Answer,
    Approval,
    check_answers,
    rejection,
)
from agentrt.events._registry import check_output
from agentrt.events.names import EV
from agentrt.exceptions import (
    MaxIterationsExceededError,
    OutputValidationError,
)
from agentrt.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    Usage,
    UserMessage,
    new_tool_call_id,
)
from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import NO_USAGE, ModelRequest, ModelResponse, TextDelta, ToolCallDelta
from agentrt.structured import OutputSpec
from agentrt.tools import Tool

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.conversation import Conversation

__all__ = ("CANCELLED_TOOL_RESPONSE", "MAX_CONCURRENT_TOOLS", "Run", "offered_tools")

E = EV  # AgentEvents, read without the enum metaclass hook (see EV)
_CHUNK = E.LLM_STREAM_CHUNK
T = TypeVar("T")


class Run(ToolCalls):
    """The state of one :meth:`Agent.execute`: its turn count, usage and new messages."""

    __slots__ = (
        "agent",
        "answers",
        "approved",
        "call_ids",
        "iteration",
        "max_iterations",
        "messages",
        "offered",
        "output",
        "output_retries",
        "pending",
        "prompt",
        "request",
        "settings",
        "start",
        "stream",
        "usage",
        "value",
    )

    def __init__(
        self,
        agent: Agent,
        prompt: str | None,
        max_iterations: int,
        stream: bool,
        output: OutputSpec[Any] | None = None,
        settings: dict[str, Any] | None = None,
        answers: Mapping[str, Answer] | None = None,
    ):
        self.agent = agent
        # The answers to the calls an earlier run left open (tool_results), by call id.
        self.answers = answers
        # The ids of those calls that were approved: a DEFER does not hold them again.
        self.approved: frozenset[str] = frozenset()
        # The calls this run leaves open (it ends waiting on them).
        self.pending: tuple[ToolCall, ...] = ()
        # The merged, checked model settings of this run; each request gets a copy.
        self.settings = settings or {}
        self.prompt = prompt
        self.max_iterations = max_iterations
        self.stream = stream
        self.output = output
        self.output_retries = 0
        self.value: Any = None
        self.iteration = 0
        self.usage = NO_USAGE
        self.start = 0
        # The tools offered to the latest model call, the ones its tool calls may use;
        # None for the tools in force (the common case: their table is the agent's).
        self.offered: Mapping[str, Tool[Any, Any]] | None = None
        self.request: ModelRequest | None = None
        # The tool call ids of the conversation and this run, once a call was seen.
        self.call_ids: set[str] | None = None
        # The conversation's own list, set by execute(); see there.
        self.messages: list[Message]

    async def execute(self) -> RunResult[Any]:
        agent = self.agent
        bus = agent.events
        try:
            # Inside the try: a handler of this state change that fails (or a cancellation
            # delivered there) must still leave the agent IDLE, not RUNNING for good.
            conversation = agent.conversation
            # Read (never changed) here rather than through len(conversation),
            # conversation[:] and since(): a Python call each, five a run.
            self.messages = conversation._messages
            # Cheap when nothing waits: the scan stops at the last non-tool message.
            open_calls = conversation.pending_calls()
            if self.answers:
                # Before anything runs or changes: a bad answer leaves the run unstarted.
                # The tools a model call is offered, which the approved calls run with.
                self.offered = await offered_tools(agent)
                check_answers(self.answers, open_calls, self.offered)
            if (pending := agent.enter_state(AgentState.RUNNING)) is not None:
                await pending
            # has_handlers(): skip what nobody listens to (see Agent.create_message).
            if bus.has_handlers(E.EXECUTE_BEFORE):
                ctx = await bus.apply(
                    E.EXECUTE_BEFORE,
                    output=self.max_iterations,
                    agent=agent,
                    prompt=self.prompt,
                    max_iterations=self.max_iterations,
                )
                self.max_iterations = check_output(E.EXECUTE_BEFORE, ctx.output)
            if (pending := agent.sync_system()) is not None:
                await pending
            self.start = len(self.messages)
            if open_calls:
                self.pending = tuple(await self._continue(open_calls))
            if self.pending:
                # Still waiting on calls nobody answered yet: no model call.
                output = _last_assistant_text(conversation)
            else:
                if self.prompt is not None:
                    await conversation.add(UserMessage(content=self.prompt))
                try:
                    output = await self._turns()
                except Exception as error:
                    output = await self._retry(error)
            result = RunResult(
                output=output,
                messages=self.messages[self.start :],
                usage=self.usage,
                iterations=self.iteration,
                value=output if self.output is None else self.value,
                pending_tool_calls=self.pending,
            )
            if bus.has_handlers(E.EXECUTE_AFTER):
                await bus.do(E.EXECUTE_AFTER, agent=agent, result=result)
        except BaseException:
            await self._idle(shield=True)
            raise
        # _idle(shield=False), inline: a coroutine fewer on every run.
        if not agent.closed and (pending := agent.enter_state(AgentState.IDLE)) is not None:
            await pending
        # A run that never waits (a scripted model, sync tools and handlers) never meets a
        # checkpoint: a cancellation requested during it would go unnoticed and the run
        # would report success. Take it here, once the agent is idle again.
        await checkpoint_if_cancelled()
        return result

    # -- the calls an earlier run left open (agentrt.deferred) ---------------------------------

    async def _continue(self, open_calls: Sequence[ToolCall]) -> list[ToolCall]:
        """Answer the open calls from ``self.answers``; the calls still open after."""
        answers = self.answers or {}
        answered: list[ToolCall] = []
        responses: list[ToolResponse | str | None] = []
        approved: list[ToolCall] = []
        left: list[ToolCall] = []
        for call in open_calls:
            answer = answers.get(call.id)
            if answer is None:
                left.append(call)
            elif not isinstance(answer, Approval):
                answered.append(call)
                responses.append(answer)
            elif answer.approved:
                approved.append(call)
                if answer.decision != "approve":
                    # Session-wide decisions outlive the run: the agent's streams read them.
                    self.agent.stream_state.approvals.record(answer.decision, call.name)
            else:
                answered.append(call)
                responses.append(rejection(answer.reason))
        if left and self.prompt is not None:
            # The conversation goes on: a call without an answer would make it invalid.
            answered += left
            responses += [ToolResponse(UNANSWERED_TOOL_RESPONSE, is_error=True)] * len(left)
            left = []
        await self._append_tool_messages(answered, responses)
        if approved:
            # They run with the tools a model call is offered (a durable agent's are
            # steps), found when the answers were checked.
            self.approved = frozenset(call.id for call in approved)
            left += await self._run_tools(approved)
        self.offered = None
        return left

    def _count(self, usage: Usage) -> None:
        # The first call's usage is the total so far: no addition needed.
        self.usage = usage if self.usage is NO_USAGE else self.usage + usage

    # -- tool call ids: each answered by exactly one tool message ------------------------------
    #
    # A model may repeat an id (within a turn, or one it used before: some servers
    # number calls per answer) or send an empty one. The conversation could not say
    # which answer is whose, a provider rejects it, and a stream would show two calls
    # as one. Such a call gets a fresh id; the first call with an id keeps it.

    def _used_ids(self) -> set[str]:
        used = self.call_ids
        if used is None:
            # Built on the run's first tool call: runs without calls pay nothing.
            used = self.call_ids = self.agent.tool_call_ids()
        return used

    def _distinct_ids(self, response: ModelResponse) -> ModelResponse:
        """``response`` with a fresh id for each call whose id is empty or already used."""
        calls = response.tool_calls
        if not calls:
            return response
        used = self._used_ids()
        distinct: list[ToolCall] = []
        for call in calls:
            if not call.id or call.id in used:
                call = call.model_copy(update={"id": new_tool_call_id()})
            used.add(call.id)
            distinct.append(call)
        if all(map(operator.is_, distinct, calls)):
            return response
        # A copy: the response may be a handler's or a script's own object.
        return dataclasses.replace(response, tool_calls=tuple(distinct))

    def _claim_id(self, chunk: ToolCallDelta) -> ToolCallDelta:
        """The first fragment of a streamed call, with a fresh id if its own is unusable."""
        used = self._used_ids()
        call_id = chunk.id
        if not call_id or call_id in used:
            call_id = new_tool_call_id()
            chunk = dataclasses.replace(chunk, id=call_id)
        used.add(call_id)
        return chunk

    async def _idle(self, *, shield: bool) -> None:
        """Back to IDLE after a run; shielded when the run is being torn down."""
        agent = self.agent
        if agent.closed:
            return
        if shield:
            with anyio.CancelScope(shield=True):
                if (pending := agent.enter_state(AgentState.IDLE)) is not None:
                    await pending
        elif (pending := agent.enter_state(AgentState.IDLE)) is not None:
            await pending

    async def _retry(self, error: Exception) -> str:
        """After ``error`` failed the turns: recover (``execute:error``) or run them again.

        The first attempt runs in :meth:`execute` itself: a coroutine fewer on every run.
        """
        retries = 0
        while True:
            recovery = await self._recover(error)
            if recovery is not None:
                return recovery
            retries += 1
            if retries > self.agent.max_retries:
                raise error
            try:
                return await self._turns()
            except Exception as again:
                error = again

    async def _recover(self, error: Exception) -> str | None:
        """Ask ``execute:error`` handlers: the final answer, or ``None`` to retry.

        Re-raises ``error`` when no handler recovers.
        """
        agent = self.agent
        ctx = await agent.events.apply(
            E.EXECUTE_ERROR, agent=agent, error=error, iteration=self.iteration
        )
        recovery = check_output(E.EXECUTE_ERROR, ctx.output, error)
        if recovery is None:
            raise error
        if recovery is RETRY:
            return None
        if isinstance(recovery, str):
            recovery = AssistantMessage(content=recovery)
        stored = await agent.conversation.add(recovery)
        return stored.content

    async def _turns(self) -> str:
        agent = self.agent
        bus = agent.events
        conversation = agent.conversation
        while True:
            if self.iteration >= self.max_iterations:
                raise MaxIterationsExceededError(self.max_iterations)
            self.iteration += 1
            turn_start = len(self.messages)
            self.request = None
            override = None
            if bus.has_handlers(E.EXECUTE_ITERATION_BEFORE):
                ctx = await bus.apply(
                    E.EXECUTE_ITERATION_BEFORE, agent=agent, iteration=self.iteration
                )
                override = check_output(E.EXECUTE_ITERATION_BEFORE, ctx.output)
            final: str | None = None
            if not isinstance(override, SkipIteration):
                if override is None:
                    response = await self._call_model()
                else:
                    response = self._distinct_ids(_as_response(override))
                    self._count(response.usage)
                try:
                    stored = await conversation.add(response.to_message())
                    if self.output is not None:
                        final = await self._structured_turn(stored, response)
                    elif stored.role == "assistant" and stored.tool_calls:
                        waiting = await self._run_tools(stored.tool_calls)
                        if waiting:
                            self.pending = tuple(waiting)
                            final = stored.content
                        elif agent.handing_off is not None:
                            # A handoff call (agentrt.team): the next agent answers.
                            final = stored.content
                    else:
                        final = stored.content
                except BaseException:
                    # append() stores the message before its after-signals, and the
                    # tools' state change comes before they run: a failure or a
                    # cancellation there would leave tool calls without an answer.
                    await self._answer_open_calls(turn_start)
                    raise
            if bus.has_handlers(E.EXECUTE_ITERATION_AFTER):
                await bus.do(
                    E.EXECUTE_ITERATION_AFTER,
                    agent=agent,
                    iteration=self.iteration,
                    messages=conversation.since(turn_start),
                )
            if final is not None:
                return final

    # -- structured output ------------------------------------------------------------------

    async def _structured_turn(self, stored: Message, response: ModelResponse) -> str | None:
        """Read the structured value from this turn's answer; the final text or None."""
        spec = self.output
        assert spec is not None
        calls = stored.tool_calls if stored.role == "assistant" else ()
        output_call = spec.output_call(calls)
        try:
            if output_call is not None:
                value = spec.parse_call(output_call)
            elif calls:
                waiting = await self._run_tools(calls)
                await self._extract_after(response, None)
                if waiting:
                    self.pending = tuple(waiting)
                    return stored.content
                return None
            else:
                value = spec.parse_text(stored.content)
        except OutputValidationError as error:
            await self._extract_failed(error)
            self.output_retries += 1
            if self.output_retries > self.agent.max_output_retries:
                if output_call is not None:
                    await self._answer_output_call(calls, output_call, f"Error: {error}")
                raise
            retry = spec.retry_prompt(error)
            if output_call is not None:
                await self._answer_output_call(calls, output_call, f"Error: {retry}")
            else:
                await self.agent.conversation.add(UserMessage(content=retry))
            return None
        if output_call is not None:
            await self._answer_output_call(calls, output_call, "Final output accepted.")
        self.value = value
        await self._extract_after(response, value)
        return stored.content

    async def _answer_output_call(
        self, calls: Sequence[ToolCall], output_call: ToolCall, text: str
    ) -> None:
        """Answer every call of the turn: the output tool with ``text``, the others run."""
        others = [call for call in calls if call is not output_call]
        if others:
            self.pending = tuple(await self._run_tools(others))
        await self._append_tool_messages(
            [output_call], [ToolResponse(text, is_error=text.startswith("Error"))]
        )

    async def _extract_after(self, response: ModelResponse, value: Any) -> None:
        bus = self.agent.events
        # No request means a handler supplied this turn's answer: no model call to close.
        if self.request is not None and bus.has_handlers(E.LLM_EXTRACT_AFTER):
            await bus.do(
                E.LLM_EXTRACT_AFTER,
                agent=self.agent,
                request=self.request,
                response=response,
                output=value,
            )

    async def _extract_failed(self, error: Exception) -> None:
        agent = self.agent
        request = self.request
        if request is None:
            return
        await agent.events.do(E.LLM_EXTRACT_ERROR, agent=agent, request=request, error=error)
        await agent.events.do(
            E.LLM_ERROR, agent=agent, request=request, error=error, operation="extract"
        )

    # -- the model call -------------------------------------------------------------------

    async def _call_model(self) -> ModelResponse:
        agent = self.agent
        bus = agent.events
        if (pending := agent.enter_state(AgentState.CALLING_MODEL)) is not None:
            await pending
        if (pending := agent.sync_system()) is not None:
            await pending
        # The has_handlers() tests before each await spare a coroutine per step.
        in_force = agent.tools
        tools = (
            await self._provide_tools(in_force) if bus.has_handlers(E.TOOLS_PROVIDE) else in_force
        )
        if bus.has_handlers(E.TOOLS_GENERATE_SIGNATURE):
            schemas = [await self._signature(tool) for tool in tools]
        else:
            schemas = [tool.signature() for tool in tools]
        if bus.has_handlers(E.MESSAGE_RENDER_BEFORE) or bus.has_handlers(E.MESSAGE_RENDER_AFTER):
            messages = await self._render()
        else:
            messages = self.messages[:]
        request = ModelRequest(messages=messages, tools=schemas, settings=dict(self.settings))
        # The common case offers exactly the tools in force: reuse the agent's table.
        self.offered = None if tools is in_force else {tool.name: tool for tool in tools}
        spec = self.output
        if spec is not None:
            # A structured run's model calls are extract calls: llm:extract:before,
            # then llm:extract:after (with the value) or llm:extract:error.
            before, after, failed, operation = (
                E.LLM_EXTRACT_BEFORE,
                None,
                E.LLM_EXTRACT_ERROR,
                "extract",
            )
            if spec.mode == "native":
                request.output_schema = spec.schema
            else:
                request.tools = [*request.tools, spec.tool_signature()]
        elif self.stream:
            before, after, failed, operation = (
                E.LLM_STREAM_BEFORE,
                E.LLM_STREAM_AFTER,
                E.LLM_STREAM_ERROR,
                "stream",
            )
        else:
            before, after, failed, operation = (
                E.LLM_COMPLETE_BEFORE,
                E.LLM_COMPLETE_AFTER,
                E.LLM_COMPLETE_ERROR,
                "complete",
            )
        if bus.has_handlers(before):
            extra = {} if spec is None else {"output_type": spec.output_type}
            ctx = await bus.apply(before, output=request, agent=agent, request=request, **extra)
            request = check_output(before, ctx.output)
        self.request = request
        try:
            if self.stream:
                response = await self._consume_stream(request)
            else:
                response = await agent.model.complete(request)
                if not isinstance(response, ModelResponse):
                    raise TypeError(
                        f"{type(agent.model).__name__}.complete() returned "
                        f"{type(response).__name__}, not a ModelResponse"
                    )
                if response.tool_calls:  # a stream's ids are settled chunk by chunk
                    response = self._distinct_ids(response)
        except Exception as error:
            await bus.do(failed, agent=agent, request=request, error=error)
            await bus.do(
                E.LLM_ERROR, agent=agent, request=request, error=error, operation=operation
            )
            raise
        # _count(), inline: every model call's path.
        usage = self.usage
        self.usage = response.usage if usage is NO_USAGE else usage + response.usage
        if after is not None and bus.has_handlers(after):
            await bus.do(after, agent=agent, request=request, response=response)
        return response

    async def _consume_stream(self, request: ModelRequest) -> ModelResponse:
        agent = self.agent
        bus = agent.events
        assembler = ResponseAssembler()
        chunks = agent.model.stream(request)
        opened: set[int] = set()
        add, add_text, event = assembler.add, assembler.add_text, _CHUNK
        has_handlers, signal = bus.has_handlers, bus.signal_now
        try:
            async for chunk in chunks:
                if type(chunk) is TextDelta:
                    add_text(chunk.text)  # the common chunk, without add()'s type tests
                else:
                    if type(chunk) is ToolCallDelta and chunk.index not in opened:
                        # A call's first fragment: its id is settled here, so that the
                        # assembler and every observer (the stream's partial_tool_call
                        # events) see the same one.
                        opened.add(chunk.index)
                        chunk = self._claim_id(chunk)
                    add(chunk)
                if has_handlers(event):
                    pending = signal(event, agent=agent, request=request, chunk=chunk)
                    if pending is not None:
                        await pending
        except BaseException:
            # Close the model's stream now (its HTTP connection, its worker), not
            # whenever the generator is collected.
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
            raise
        return assembler.response()

    async def _provide_tools(self, in_force: Sequence[Tool[Any, Any]]) -> Sequence[Tool[Any, Any]]:
        return await _provide(self.agent, in_force)

    async def _signature(self, tool: Tool[Any, Any]) -> dict[str, Any]:
        agent = self.agent
        signature = tool.signature()
        ctx = await agent.events.apply(
            E.TOOLS_GENERATE_SIGNATURE,
            output=signature,
            agent=agent,
            tool=tool,
            signature=signature,
        )
        return check_output(E.TOOLS_GENERATE_SIGNATURE, ctx.output)  # type: ignore[no-any-return]

    async def _render(self) -> list[Message]:
        agent = self.agent
        bus = agent.events
        rendered = agent.conversation[:]
        if bus.has_handlers(E.MESSAGE_RENDER_BEFORE):
            ctx = await bus.apply(
                E.MESSAGE_RENDER_BEFORE, output=rendered, agent=agent, messages=rendered
            )
            rendered = check_output(E.MESSAGE_RENDER_BEFORE, ctx.output)
        if bus.has_handlers(E.MESSAGE_RENDER_AFTER):
            await bus.do(E.MESSAGE_RENDER_AFTER, agent=agent, messages=rendered)
        return rendered


async def offered_tools(agent: Agent) -> Mapping[str, Tool[Any, Any]]:
    """The tools a model call of ``agent`` would be offered now, by name.

    The tools in force, as ``tools:provide`` handlers leave them (a handler may offer
    tools the agent does not own, such as an AG-UI client's external tools); the
    event is dispatched only when someone listens. What a run's answers to its open
    calls are checked against (:func:`agentrt.deferred.check_answers`).
    """
    if not agent.events.has_handlers(E.TOOLS_PROVIDE):
        return agent.tool_table()
    return {tool.name: tool for tool in await _provide(agent, agent.tools)}


async def _provide(agent: Agent, in_force: Sequence[Tool[Any, Any]]) -> Sequence[Tool[Any, Any]]:
    """``tools:provide``: the tools offered, as its handlers leave them."""
    tools = list(in_force)
    ctx = await agent.events.apply(E.TOOLS_PROVIDE, output=tools, agent=agent, tools=tools)
    provided = ctx.output
    if provided is tools:
        return tools
    return check_output(E.TOOLS_PROVIDE, provided)  # type: ignore[no-any-return]


def _last_assistant_text(conversation: Conversation) -> str:
    """The text of the conversation's last assistant message (the one whose calls wait)."""
    for index in range(len(conversation) - 1, -1, -1):
        message = conversation[index]
        if message.role == "assistant":
            return message.content
    return ""


def _as_response(override: ModelResponse | AssistantMessage | str) -> ModelResponse:
    if isinstance(override, ModelResponse):
        return override
    if isinstance(override, str):
        return ModelResponse(content=override)
    return ModelResponse(
        content=override.content,
        reasoning=override.reasoning,
        tool_calls=override.tool_calls,
        usage=override.usage or Usage(),
    )
