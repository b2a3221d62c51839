"""The :class:`Agent`: a conversation, tools, a model, and the loop that joins them.

Every step is announced on :attr:`Agent.events` (an :class:`~agentrt.EventBus`);
:attr:`Agent.hooks` is its typed front. The loop itself lives in
:mod:`agentrt._loop`; this module holds the agent's state: its conversation and
version, its tools and modes, its instructions, and its lifecycle.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, overload

import anyio

from agentrt._loop import MAX_CONCURRENT_TOOLS, Run
from agentrt._runs import RUN_OBSERVERS, RunGate, observe_runs
from agentrt._state import AgentState, RunResult
from agentrt._team_member import TeamMember, team_list
from agentrt.bus import EventBus
from agentrt.conversation import Conversation
from agentrt.deferred import ToolResult, as_answers
from agentrt.events.names import EV
from agentrt.events.params import _bind_late_names
from agentrt.exceptions import (
    AgentClosedError,
    RunTimeoutError,
    TemplateError,
    ToolDefinitionError,
)
from agentrt.messages import (
    Message,
    SystemMessage,
)
from agentrt.models.base import Model
from agentrt.settings import check_model_settings, merge_model_settings
from agentrt.structured import OutputMode, OutputSpec
from agentrt.tools import Tool, ToolLike
from agentrt.toolsets import AgentToolsets, Toolset

if TYPE_CHECKING:
    from agentrt.hooks import HooksAccessor
    from agentrt.stream._live import EventStream
    from agentrt.stream.state import StreamState

__all__ = ("Agent", "AgentState", "ContextProvider", "RunResult", "observe_runs")

E = EV  # AgentEvents, read without the enum metaclass hook (see EV)
T = TypeVar("T")
_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

ContextProvider = Callable[[], Any] | Callable[[], Awaitable[Any]]
"""A sync or async callable whose value fills ``{{ name }}`` in the instructions."""


@dataclass(slots=True, frozen=True)
class _Mode:
    name: str
    instructions: str | None
    tools: tuple[Tool[Any, Any], ...]


class Agent(TeamMember):
    """An agent: a model, tools, instructions, and the conversation so far.

    Construct it anywhere (no running event loop is needed). Use it as
    ``async with Agent(...) as agent:`` to have it closed on exit, or call
    :meth:`close` yourself.

    Args:
        model: What answers (any :class:`~agentrt.Model`, e.g. ``ScriptedModel``).
        tools: Functions or :class:`~agentrt.Tool` objects the model may call, and
            toolsets (:class:`~agentrt.toolsets.Toolset`, such as the MCP servers of
            :mod:`agentrt.mcp`), opened when the agent starts and closed with it.
        instructions: The system prompt. ``{{ name }}`` is filled from the
            context provider of that name, each time the model is called.
        name: The agent's name, used in events and streams.
        description: What the agent does, in a sentence: how a team's
            ``transfer_task`` tool presents it to the agents that delegate to it
            (see :mod:`agentrt.team`).
        sub_agents: Agents this one may delegate a task to: its model gets a
            ``transfer_task`` tool (see :mod:`agentrt.team`).
        handoffs: Agents this one may hand the conversation over to: its model
            gets a ``handoff`` tool; the agent handed to answers from then on, on
            this agent's conversation (see :mod:`agentrt.team` and :attr:`speaker`).
        max_iterations: Model turns a run may take before it fails.
        max_retries: How many times ``execute:error`` handlers may answer RETRY
            within one run.
        max_output_retries: How many times an invalid structured answer is sent
            back to the model for correction within one run.
        max_concurrent_tools: How many tool calls of one turn run at once (a model
            may ask for thousands); ``None`` for no bound.
        context_providers: Named sync or async callables for the instructions.
        model_settings: Settings sent with every model request (temperature,
            max_tokens, tool_choice, seed, ...; see :mod:`agentrt.settings`): the
            known ones are checked here, the others passed through to the provider.
        settings: The former name of ``model_settings``; give one or the other.
        events: The bus to use; a new one by default.
        strict: Raise signal handler failures instead of logging them (tests).
        handler_timeout: Seconds an async hook may take before it fails (see
            :class:`~agentrt.EventBus`); for the agent's own bus.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: A limit is not positive, a name is empty, or tool names repeat.
    """

    def __init__(
        self,
        *,
        model: Model,
        tools: Sequence[ToolLike | Toolset] = (),
        instructions: str | None = None,
        name: str = "agent",
        description: str | None = None,
        sub_agents: Sequence[Agent] = (),
        handoffs: Sequence[Agent] = (),
        max_iterations: int = 10,
        max_retries: int = 2,
        max_output_retries: int = 2,
        max_concurrent_tools: int | None = MAX_CONCURRENT_TOOLS,
        context_providers: Mapping[str, ContextProvider] | None = None,
        model_settings: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        events: EventBus | None = None,
        strict: bool = False,
        handler_timeout: float | None = None,
    ) -> None:
        if not (hasattr(model, "complete") and hasattr(model, "stream")):
            raise TypeError(
                f"model must provide complete() and stream() (the Model protocol), "
                f"got {type(model).__name__}"
            )
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"an agent's name is a non-empty string, got {name!r}")
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(f"instructions must be a string, got {type(instructions).__name__}")
        if description is not None and not isinstance(description, str):
            raise TypeError(f"description must be a string, got {type(description).__name__}")
        _check_limit("max_iterations", max_iterations, minimum=1)
        _check_limit("max_retries", max_retries, minimum=0)
        _check_limit("max_output_retries", max_output_retries, minimum=0)
        if max_concurrent_tools is not None:
            # Zero workers would answer every call "cancelled" without running one.
            _check_limit("max_concurrent_tools", max_concurrent_tools, minimum=1)
        if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
            raise TypeError(f"tools must be a list of functions or Tools, got {tools!r:.60}")
        self.model = model
        self.name = name
        self.description = description
        self.instructions = instructions
        # Checked only when given: most agents have no team, and pay nothing for it.
        self.sub_agents: list[Agent] = team_list("sub_agents", sub_agents) if sub_agents else []
        """The agents this one may delegate to; may be extended at any time."""
        self.handoffs: list[Agent] = team_list("handoffs", handoffs) if handoffs else []
        """The agents this one may hand the conversation to; may be extended at any time."""
        self.max_iterations = max_iterations
        self.max_retries = max_retries
        self.max_output_retries = max_output_retries
        self.max_concurrent_tools = max_concurrent_tools
        if settings is not None:
            if model_settings is not None:
                raise TypeError("give model_settings or settings (its former name), not both")
            model_settings = settings
        self.model_settings: dict[str, Any] = (
            {} if model_settings is None else check_model_settings(model_settings)
        )
        """The settings of every model call; a run's own are merged over them."""
        self.events = (
            events
            if events is not None
            else EventBus(strict=strict, handler_timeout=handler_timeout)
        )
        functions: list[Any] = []
        toolsets: list[Toolset] = []
        for item in tools:
            # callable() first: a protocol isinstance() costs microseconds per tool.
            if not callable(item) and isinstance(item, Toolset):
                toolsets.append(item)
            else:
                functions.append(item)
        self._tools = _tool_table(functions)
        self._own_tools = tuple(self._tools.values())
        if functions:
            self._note_delegations(self._own_tools)
        # None for the usual agent without toolsets: its table never changes.
        self._toolsets = AgentToolsets(self._tools, toolsets) if toolsets else None
        self._providers: dict[str, ContextProvider] = {}
        for key, provider in (context_providers or {}).items():
            self.add_context_provider(key, provider)
        self.conversation = Conversation(self)
        self._state = AgentState.IDLE
        self._modes: list[_Mode] = []
        self._hooks: HooksAccessor | None = None
        self._initialized = False
        self._closed = False
        self._gate = RunGate()
        self._session_id: str | None = None
        self._rendered_system: str | None = None
        self._stream_state: StreamState | None = None
        if self.sub_agents or self.handoffs:
            self._join_team()

    # -- read-only views ----------------------------------------------------------------

    @property
    def settings(self) -> dict[str, Any]:
        """The former name of :attr:`model_settings` (the same dict)."""
        return self.model_settings

    @property
    def hooks(self) -> HooksAccessor:
        """Typed registration of handlers on :attr:`events` (created on first access)."""
        hooks = self._hooks
        if hooks is None:
            from agentrt.hooks import HooksAccessor

            hooks = self._hooks = HooksAccessor(self.events)
        return hooks

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation, oldest first (a snapshot)."""
        return self.conversation.messages

    @property
    def version(self) -> int:
        """A number that changes on every change to the conversation."""
        return self.conversation.version

    @property
    def state(self) -> AgentState:
        """Where the agent is now."""
        return self._state

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._closed

    @property
    def tools(self) -> tuple[Tool[Any, Any], ...]:
        """The tools in force now: the agent's, its toolsets', then those of active modes."""
        if self._toolsets is not None:
            self._sync_toolsets()
        if not self._modes:
            return self._own_tools
        tools = dict(self._tools)
        for mode in self._modes:
            for item in mode.tools:
                tools[item.name] = item
        return tuple(tools.values())

    def tool_table(self) -> Mapping[str, Tool[Any, Any]]:
        """The tools in force now by name (:attr:`tools` as a mapping; do not change it)."""
        if self._toolsets is not None:
            self._sync_toolsets()
        if not self._modes:
            return self._tools
        return {tool.name: tool for tool in self.tools}

    def _sync_toolsets(self) -> None:
        assert self._toolsets is not None
        table = self._toolsets.table()
        if table is not self._tools:  # a toolset opened or changed its tools
            self._tools = table
            self._own_tools = tuple(table.values())
            self._note_delegations(self._own_tools)

    async def _open_toolsets(self) -> None:
        if self._toolsets is not None:
            await self._toolsets.open()
            self._sync_toolsets()

    @property
    def modes(self) -> tuple[str, ...]:
        """The names of the active modes, outermost first."""
        return tuple(mode.name for mode in self._modes)

    # -- lifecycle ----------------------------------------------------------------------

    async def initialize(self) -> None:
        """Open the toolsets, announce ``agent:init:after`` once; runs by itself on first use.

        Raises:
            ToolNameConflictError: Two tools offered to the agent have one name.
            ToolsetError: A toolset could not be opened (an MCP server that does
                not start); the next run tries again.
        """
        if self._toolsets is not None:
            await self._open_toolsets()
        await self._announce_init()

    async def _announce_init(self) -> None:
        if self._initialized:
            return
        self._initialized = True
        if self.events.has_handlers(E.AGENT_INIT_AFTER):
            await self.events.do(E.AGENT_INIT_AFTER, agent=self)

    async def __aenter__(self) -> Self:
        self._check_open()
        await self.initialize()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        reason = None if exc is None else f"{type(exc).__name__}: {exc}"
        with anyio.CancelScope(shield=exc is not None):
            await self.close(reason)

    async def close(self, reason: str | None = None) -> None:
        """Close the agent: ``agent:close:before`` → cleanup → ``agent:close:after``.

        Idempotent: closing a closed agent does nothing. Afterwards every method
        that runs or changes the agent raises :class:`AgentClosedError`.

        Args:
            reason: Why, for the handlers (``ctx.parameters["reason"]``).
        """
        if self._closed or self._state is AgentState.CLOSING:
            return
        if reason is not None and not isinstance(reason, str):
            raise TypeError(f"reason must be a string, got {type(reason).__name__}")
        # Not initialize(): closing an agent that never ran starts no toolset.
        if not self._initialized:
            await self._announce_init()
        bus = self.events
        params: dict[str, Any] = {"agent": self}
        if reason is not None:
            params["reason"] = reason
        if bus.has_handlers(E.AGENT_CLOSE_BEFORE):
            await bus.apply(E.AGENT_CLOSE_BEFORE, **params)
        # enter_state()'s awaitable only when someone listens: no coroutine otherwise.
        if (pending := self.enter_state(AgentState.CLOSING)) is not None:
            await pending
        self._modes.clear()
        self._closed = True
        self.conversation.close()
        try:
            if self._toolsets is not None:
                await self._toolsets.close()
        finally:
            if (pending := self.enter_state(AgentState.CLOSED)) is not None:
                await pending
        if bus.has_handlers(E.AGENT_CLOSE_AFTER):
            await bus.do(E.AGENT_CLOSE_AFTER, **params)

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError(self.name)

    def enter_state(self, state: AgentState) -> Awaitable[Any] | None:
        """Move the agent to ``state``; what announces the change, if anyone listens.

        For runners (the execute loop, a durable runner) that drive the agent
        through its states. Synchronous, so that a change nobody listens to costs
        no coroutine::

            pending = agent.enter_state(AgentState.RUNNING_TOOLS)
            if pending is not None:
                await pending  # agent:state:change

        Returns:
            ``None`` when the agent already was in ``state`` or no
            ``agent:state:change`` handler is registered; else the awaitable that
            dispatches it.
        """
        previous = self._state
        if previous is state:
            return None
        self._state = state
        if not self.events.has_handlers(E.AGENT_STATE_CHANGE):
            return None
        return self.events.do(E.AGENT_STATE_CHANGE, agent=self, previous=previous, state=state)

    # -- the conversation ---------------------------------------------------------------
    #
    # The agent's own methods are its conversation's (see agentrt.conversation): each
    # returns the conversation's coroutine rather than awaiting it in one of its own,
    # which would cost a second coroutine on every call.

    def create_message(self, message: Message) -> Coroutine[Any, Any, Message]:
        """Announce a new message (``message:create:*``); return the one to use."""
        return self.conversation.create(message)

    def append(self, message: Message) -> Coroutine[Any, Any, Message]:
        """Append ``message`` to the conversation; return the message stored.

        ``message:append:before`` handlers may store another message instead.

        Raises:
            AgentClosedError: The agent is closed.
            TypeError: ``message`` is not a message.
        """
        return self.conversation.append(message)

    def replace(self, index: int, message: Message) -> Coroutine[Any, Any, Message]:
        """Replace the message at ``index``; return the message stored.

        Raises:
            IndexError: No message at ``index``.
        """
        return self.conversation.replace(index, message)

    def set_system(self, content: str | SystemMessage) -> Coroutine[Any, Any, Message]:
        """Set the system message (the conversation's first); return the message stored."""
        return self.conversation.set_system(content)

    def reset(self) -> Coroutine[Any, Any, None]:
        """Forget the conversation except the system message."""
        return self.conversation.reset()

    def compact(
        self, end: int, summary: Message, *, start: int | None = None
    ) -> Coroutine[Any, Any, Message]:
        """Replace the messages ``start`` to ``end`` (exclusive) by one; return the one stored.

        See :meth:`Conversation.compact <agentrt.conversation.Conversation.compact>`
        (the primitive of :class:`agentrt.stream.session.Compactor`).
        """
        return self.conversation.compact(end, summary, start=start)

    # -- instructions -------------------------------------------------------------------

    def add_context_provider(self, name: str, provider: ContextProvider) -> None:
        """Register ``provider`` as the value of ``{{ name }}`` in the instructions."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"a context provider's name is an identifier, got {name!r}")
        if not callable(provider):
            raise TypeError(f"context provider {name!r} must be callable")
        self._providers[name] = provider

    def _instructions_template(self) -> str | None:
        if not self._modes:
            return self.instructions or None
        parts = [self.instructions] if self.instructions else []
        parts.extend(mode.instructions for mode in self._modes if mode.instructions)
        return "\n\n".join(parts) if parts else None

    async def render_instructions(self) -> str | None:
        """The instructions with every ``{{ name }}`` filled by its context provider.

        Raises:
            TemplateError: A variable has no provider.
        """
        template = self._instructions_template()
        if template is None or "{{" not in template:
            return template
        values: dict[str, str] = {}
        for name in dict.fromkeys(_VARIABLE.findall(template)):
            values[name] = str(await self._provide(name))
        return _VARIABLE.sub(lambda m: values[m.group(1)], template)

    async def _provide(self, name: str) -> Any:
        provider = self._providers.get(name)
        if provider is None:
            known = ", ".join(sorted(self._providers)) or "none"
            raise TemplateError(
                f"no context provider for {{{{ {name} }}}} (providers: {known}); "
                "pass context_providers={...} to Agent"
            )
        ctx = await self.events.apply(E.CONTEXT_PROVIDER_BEFORE, agent=self, name=name)
        value = ctx.output
        if value is None:
            value = provider()
            if isinstance(value, Awaitable):
                value = await value
        await self.events.do(E.CONTEXT_PROVIDER_AFTER, agent=self, name=name, value=value)
        return value

    def sync_system(self) -> Awaitable[Any] | None:
        """Make the system message the rendered instructions; what does it, if needed.

        For runners: called before every model call. Synchronous, so that the common
        case (instructions without variables, already set) costs no coroutine.

        Returns:
            ``None`` when the system message surely matches the instructions; else
            the awaitable that renders them (``context:provider:*``) and sets the
            system message when it differs (``message:set_system:*``).
        """
        if not self._modes:
            instructions = self.instructions
            # Plain instructions render to themselves, so identity says they were set.
            if not instructions or (
                self._rendered_system is instructions and "{{" not in instructions
            ):
                return None
        return self._sync_system()

    async def _sync_system(self) -> None:
        rendered = await self.render_instructions()
        if rendered is None or rendered == self._rendered_system:
            return
        conversation = self.conversation
        head = conversation[0] if len(conversation) else None
        if not (isinstance(head, SystemMessage) and head.content == rendered):
            await conversation.set_system(rendered)
        self._rendered_system = rendered

    # -- modes --------------------------------------------------------------------------

    @asynccontextmanager
    async def mode(
        self,
        name: str,
        *,
        instructions: str | None = None,
        tools: Sequence[ToolLike] = (),
    ) -> AsyncIterator[Self]:
        """Run a block in a named mode that adds instructions and tools while active.

        Modes stack: ``async with agent.mode("review"):`` inside another mode adds
        to it. Dispatches ``mode:entering`` / ``mode:entered`` on entry and
        ``mode:exiting`` / ``mode:exited`` on exit (also when the block raises).

        Args:
            name: The mode's name.
            instructions: Appended to the agent's instructions while active.
            tools: Offered in addition to the agent's tools while active.
        """
        self._check_open()
        if not isinstance(name, str) or not name:
            raise ValueError(f"a mode's name is a non-empty string, got {name!r}")
        entry = _Mode(name, instructions, tuple(_tool_table(tools).values()))
        self._note_delegations(entry.tools)
        stack = (*self.modes, name)
        await self.events.do(E.MODE_ENTERING, agent=self, mode=name, stack=self.modes)
        self._modes.append(entry)
        self._rendered_system = None
        await self.events.do(E.MODE_ENTERED, agent=self, mode=name, stack=stack)
        try:
            yield self
        finally:
            with anyio.CancelScope(shield=True):
                await self.events.do(E.MODE_EXITING, agent=self, mode=name, stack=stack)
                if entry in self._modes:
                    self._modes.remove(entry)
                self._rendered_system = None
                await self.events.do(E.MODE_EXITED, agent=self, mode=name, stack=self.modes)

    # -- running ------------------------------------------------------------------------

    @overload
    async def execute(
        self,
        prompt: str | None = None,
        *,
        max_iterations: int | None = None,
        stream: bool = False,
        deadline: float | None = None,
        model_settings: Mapping[str, Any] | None = None,
        tool_results: Mapping[str, ToolResult] | None = None,
    ) -> RunResult[str]: ...

    @overload
    async def execute(
        self,
        prompt: str | None = None,
        *,
        output_type: type[T],
        output_mode: OutputMode | None = None,
        max_iterations: int | None = None,
        stream: bool = False,
        deadline: float | None = None,
        model_settings: Mapping[str, Any] | None = None,
        tool_results: Mapping[str, ToolResult] | None = None,
    ) -> RunResult[T]: ...

    async def execute(
        self,
        prompt: str | None = None,
        *,
        output_type: type[Any] | None = None,
        output_mode: OutputMode | None = None,
        max_iterations: int | None = None,
        stream: bool = False,
        deadline: float | None = None,
        model_settings: Mapping[str, Any] | None = None,
        tool_results: Mapping[str, ToolResult] | None = None,
    ) -> RunResult[Any]:
        """Run the agent until the model gives its final answer, or the run waits.

        Concurrent calls on one agent are serialized: each runs after the previous
        one returned.

        A run *waits* when a tool call is deferred (see :mod:`agentrt.deferred`): an
        :class:`~agentrt.deferred.ExternalTool`'s call, or one a ``tool:call:before``
        handler deferred (a confirmation). The turn's other calls run, then the run
        ends with ``result.pending_tool_calls`` the open calls; a later run answers
        them with ``tool_results``.

        Args:
            prompt: The user's message; ``None`` continues the conversation as is.
            output_type: Ask for a structured answer of this type (a pydantic model,
                a dataclass, ``list[int]``...): ``result.value`` is the validated
                instance. See :mod:`agentrt.structured`.
            output_mode: ``"native"`` (JSON schema in the request) or ``"tool"``
                (a final-output tool); by default native when the model says it
                supports it (``model.supports_output_schema``), else tool.
            max_iterations: This run's turn limit (default: the agent's).
            stream: Call the model with ``stream()`` (chunks are announced as
                ``llm:stream:chunk``) instead of ``complete()``.
            deadline: Seconds the whole run may take (waiting for an earlier
                run included). Past it the run is cancelled — every tool
                call it made is answered — and :class:`RunTimeoutError` raised.
            model_settings: This run's model settings, merged over the agent's
                key by key (see :mod:`agentrt.settings`).
            tool_results: Answers to the calls an earlier run left open, by call id:
                an external tool's result (a ``str`` or JSON value), its failure (a
                :class:`~agentrt.ToolError`), or for a call that waits for approval an
                :class:`~agentrt.deferred.Approval`. Approved calls run first; calls
                left unanswered keep the run waiting, unless ``prompt`` is given:
                then they are answered with an error that says so.

        Returns:
            The run's output text, new messages, usage, iteration count and value,
            and the calls it left open (``pending_tool_calls``, empty when it finished).

        Raises:
            AgentClosedError: The agent is closed.
            MaxIterationsExceededError: The limit was reached and no
                ``execute:error`` handler recovered.
            OutputValidationError: The structured answer stayed invalid after
                ``max_output_retries`` corrections.
            ModelSettingsError: A known model setting has the wrong type; raised
                before the run starts.
            NotPendingError: ``tool_results`` names a call that is not open.
            ToolResultError: A ``tool_results`` value does not fit its call (a
                decision for an external tool's call, a result for a call that
                waits for approval, a value that is not JSON).
            Exception: Whatever failed, unchanged, when no handler recovered.
        """
        self._check_open()
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string or None, got {type(prompt).__name__}")
        if max_iterations is not None:
            _check_limit("max_iterations", max_iterations, minimum=1)
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, int | float) or deadline <= 0
        ):
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        spec: OutputSpec[Any] | None = None
        if output_type is not None:
            native = getattr(self.model, "supports_output_schema", False) is True
            spec = OutputSpec(output_type, output_mode or ("native" if native else "tool"))
        elif output_mode is not None:
            raise ValueError("output_mode is only meaningful with an output_type")
        settings = self.model_settings
        if model_settings is not None or settings:
            settings = merge_model_settings(settings, model_settings)
        answers = None if tool_results is None else as_answers(tool_results)
        if answers and self._waiting:
            from agentrt.team import route_answers

            # Answers to the calls of members that wait, for the calls that wait on them.
            answers = route_answers(self, answers)
        run = Run(
            self, prompt, max_iterations or self.max_iterations, stream, spec, settings, answers
        )
        if deadline is None:
            return await self._execute(run)
        with anyio.move_on_after(deadline):
            return await self._execute(run)
        raise RunTimeoutError(deadline)

    async def _execute(self, run: Run) -> RunResult[Any]:
        gate = self._gate
        if not gate.enter_nowait():
            await gate.enter()
        try:
            self._check_open()
            if not self._initialized:
                # First: its toolsets' tools may be agents used as tools (a team).
                await self.initialize()
            # An agent that has (or had) a team, or an agent among its tools, runs
            # through agentrt.team; one that never had either pays these three tests.
            team = self._team_call_ids is not None or self.sub_agents or self.handoffs
            if team and self._team is None and (self.sub_agents or self.handoffs):
                self._join_team()  # a list was extended after the agent was made
                await self._open_toolsets()
            if RUN_OBSERVERS:
                for observer in tuple(RUN_OBSERVERS):
                    observer(self)
            if not team:
                return await run.execute()
            from agentrt.team import run_in_team

            return await run_in_team(self, run)
        finally:
            gate.leave()

    def stream(
        self, prompt: str | None = None, **options: Any
    ) -> AbstractAsyncContextManager[EventStream]:
        """Run the agent and iterate over its stream events (see docs/stream.md).

        ``async with agent.stream(prompt) as events: async for event in events: ...``
        See :func:`agentrt.stream.open_stream` for the options (buffer size,
        strict validation, confirmations, deferred confirmations, prices) and
        ``execute`` options (``tool_results`` continues a run that ended waiting).
        """
        from agentrt.stream._live import open_stream

        self._check_open()
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string or None, got {type(prompt).__name__}")
        # Checked here too: a bad setting is the caller's error, not a failed stream.
        check_model_settings(options.get("model_settings"))
        return open_stream(self, prompt, **options)

    @property
    def stream_state(self) -> StreamState:
        """What this agent's streams share: session usage, approvals, title (made on first use).

        See :class:`agentrt.stream.state.StreamState`.
        """
        state = self._stream_state
        if state is None:
            from agentrt.stream.state import StreamState

            state = self._stream_state = StreamState()
        return state

    @property
    def session_id(self) -> str:
        """An unguessable id for this agent's conversation (made on first access)."""
        session_id = self._session_id
        if session_id is None:
            session_id = self._session_id = secrets.token_hex(16)
        return session_id

    def __repr__(self) -> str:
        return (
            f"<Agent {self.name!r} model={getattr(self.model, 'name', '?')!r} "
            f"tools={len(self._tools)} messages={len(self.conversation)} state={self._state}>"
        )


def _check_limit(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def _tool_table(tools: Sequence[ToolLike]) -> dict[str, Tool[Any, Any]]:
    table: dict[str, Tool[Any, Any]] = {}
    for item in tools:
        converted = Tool.of(item)
        if converted.name in table:
            raise ToolDefinitionError(converted.name, "two tools have this name")
        table[converted.name] = converted
    return table


# The event params types name Agent and Tool, which could not be imported where they are
# declared (both import the event system): bound now that both exist, so that
# typing.get_type_hints() resolves every params type.
_bind_late_names()
