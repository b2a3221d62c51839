"""Tools: plain or async functions the model may call.

A tool's name, description and JSON schema come from the function: its name, its
docstring (the first paragraph describes the tool, a Google-style ``Args:`` section
describes the parameters) and its type hints (validated with pydantic). The
:func:`tool` decorator overrides name and description and sets options.

An ``async def`` tool runs on the event loop, in the run's task. A plain ``def`` tool
runs in a worker thread (``anyio.to_thread``), so a function that blocks (a request, a
query, a computation) never stalls the loop: other runs, the stream and a server's
requests go on meanwhile. At most :func:`sync_tool_limiter`'s number of such threads
run at once in an event loop; the calls beyond wait their turn.
"""

import contextlib
import inspect
import re
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    NamedTuple,
    ParamSpec,
    TypeAlias,
    TypeVar,
    get_type_hints,
    overload,
)

import anyio
import anyio.lowlevel
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentrt._plain import NEVER_AWAITABLE
from agentrt.events.names import EV
from agentrt.exceptions import (
    ToolArgumentsError,
    ToolDefinitionError,
    ToolExecutionError,
    ToolTimeoutError,
)

if TYPE_CHECKING:
    from agentrt.agent import Agent
    from agentrt.messages import ToolCall

__all__ = (
    "RUNNING_CALL",
    "SYNC_TOOL_THREADS",
    "RunningCall",
    "Tool",
    "ToolContext",
    "ToolLike",
    "current_tool_context",
    "sync_tool_limiter",
    "tool",
)

PS = ParamSpec("PS")
T = TypeVar("T")

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
# Only Google-style section names: a description line that ends in ':' is text.
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns|Return|Yields|Yield|Raises|Examples?"
    r"|Notes?|Attributes|Warnings?|See Also|Todo|References|Keyword Args|Other Parameters)"
    r":\s*$"
)
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _SECTION.match(lines[i]):
        description.append(lines[i])
        i += 1
    current: str | None = None
    in_args = False
    for line in lines[i:]:
        if _SECTION.match(line):
            in_args = bool(_ARGS_HEADER.match(line))
            current = None
            continue
        if not in_args:
            continue
        match = _ARG_LINE.match(line)
        indent = len(line) - len(line.lstrip())
        if match and indent <= 4:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current is not None and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    text = "\n".join(description).strip()
    first_paragraph = text.split("\n\n", 1)[0].replace("\n", " ").strip()
    return first_paragraph, params


def _build_model(
    function: Callable[..., Any], tool_name: str, param_docs: dict[str, str]
) -> type[BaseModel]:
    try:
        signature = inspect.signature(function)
        hints = get_type_hints(function, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise ToolDefinitionError(tool_name, f"cannot read its signature ({exc})") from exc
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                tool_name, f"parameter {param.name!r} is *args or **kwargs; name each argument"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                tool_name, f"parameter {param.name!r} is positional-only; tools take keywords"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        described = param_docs.get(param.name)
        # Only set a description the docstring gives: Field(description=None) would
        # hide one from Annotated[..., Field(description=...)] in the type hint.
        field = Field(default, description=described) if described else Field(default)
        fields[param.name] = (annotation, field)
    return create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )


_NO_DEADLINE = contextlib.nullcontext()


class _Analysis(NamedTuple):
    description: str
    arguments_model: type[BaseModel]
    fields: tuple[str, ...]
    parameters: dict[str, Any]


# Building the pydantic model of a signature costs hundreds of microseconds; agents
# are often built per request from the same functions. Weak keys: the cache never
# keeps a function alive (the analysis holds no reference to it).
_ANALYSES: "weakref.WeakKeyDictionary[Callable[..., Any], _Analysis]" = weakref.WeakKeyDictionary()


def _analyse(function: Callable[..., Any], tool_name: str) -> _Analysis:
    try:
        cached = _ANALYSES.get(function)
    except TypeError:  # not hashable or not weakly referenceable: no caching
        cached = None
    if cached is not None:
        return cached
    description, param_docs = _parse_docstring(inspect.getdoc(function))
    model = _build_model(function, tool_name, param_docs)
    schema = model.model_json_schema()
    schema.pop("title", None)
    analysis = _Analysis(description, model, tuple(model.model_fields), schema)
    with contextlib.suppress(TypeError):
        _ANALYSES[function] = analysis
    return analysis


class Tool(Generic[PS, T]):
    """A function the model may call, with its name, description and argument schema.

    Calling a ``Tool`` calls the function, so a decorated function keeps working in
    plain code.

    In a run, an ``async def`` function runs on the event loop; any other runs in a
    worker thread (an awaitable it returns is awaited on the loop), so it may block
    without stalling other runs or a server (:func:`sync_tool_limiter` bounds how many
    run at once). It still sees :func:`current_tool_context` (the thread runs in a copy
    of the run's context), and its exceptions fail the call as an async tool's do.
    Calls of the same tool in one turn may run in threads at the same time
    (``Agent(max_concurrent_tools=...)``), so such a function must be thread-safe (or
    take a :class:`threading.Lock`). A thread cannot be interrupted: when the run is
    cancelled, or the call's ``timeout`` passes, the run stops waiting at once (the call
    is answered as cancelled or timed out) and the function runs on to its end in its
    thread, its result discarded.

    Attributes:
        name: The name the model uses.
        description: What the tool does, for the model.
        parameters: The JSON schema of the arguments (an object schema).
        function: The wrapped function.
        timeout: Seconds a call may take, or ``None`` for no limit.
        requires_confirmation: Whether a person must approve each call.
        annotations: Hints about the tool's behaviour in MCP's terms (``title``,
            ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
            ``openWorldHint``), or ``None``; a stream shows them in the
            ``tool_definition`` of the tool's events.
    """

    __slots__ = (
        "_arguments_model",
        "_fields",
        "_is_async",
        "annotations",
        "description",
        "function",
        "name",
        "parameters",
        "requires_confirmation",
        "timeout",
    )

    def __init__(
        self,
        function: Callable[PS, T],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        requires_confirmation: bool = False,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(function):
            raise TypeError(f"a tool wraps a function, got {type(function).__name__}")
        tool_name = name or getattr(function, "__name__", None)
        if not tool_name or not isinstance(tool_name, str):
            raise ToolDefinitionError(repr(function), "it has no __name__; pass name=...")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            raise ToolDefinitionError(
                tool_name, "a tool name has 1 to 64 letters, digits, '_' or '-'"
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ToolDefinitionError(
                tool_name, f"timeout must be a positive number, got {timeout!r}"
            )
        if annotations is not None and not isinstance(annotations, Mapping):
            raise ToolDefinitionError(
                tool_name, f"annotations must be a mapping, got {type(annotations).__name__}"
            )
        analysis = _analyse(function, tool_name)
        self.function = function
        self.name = tool_name
        self.description = description if description is not None else analysis.description
        self.timeout = timeout
        self.requires_confirmation = requires_confirmation
        self.annotations: Mapping[str, Any] | None = (
            None if annotations is None else dict(annotations)
        )
        self._is_async = inspect.iscoroutinefunction(function)
        self._arguments_model = analysis.arguments_model
        self._fields = analysis.fields
        self.parameters: dict[str, Any] = analysis.parameters

    @classmethod
    def of(cls, item: "ToolLike") -> "Tool[Any, Any]":
        """``item`` if it is a Tool, else a Tool wrapping the function ``item``."""
        return item if isinstance(item, Tool) else cls(item)

    def signature(self) -> dict[str, Any]:
        """The schema offered to the model, in the OpenAI function-tool format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate ``arguments`` against the signature; return the keyword arguments.

        Raises:
            ToolArgumentsError: An argument is missing, unexpected or of the wrong type.
        """
        try:
            model = self._arguments_model.model_validate(arguments)
        except ValidationError as exc:
            problems = validation_problems(exc)
            raise ToolArgumentsError(self.name, _compact(arguments), problems) from exc
        return {field: getattr(model, field) for field in self._fields}

    async def run(self, arguments: dict[str, Any]) -> Any:
        """Validate ``arguments`` and run the tool, within its timeout.

        Raises:
            ToolArgumentsError: The arguments do not fit the signature.
            ToolTimeoutError: The tool ran past its timeout.
            ToolExecutionError: The tool raised; the exception is the cause.
        """
        kwargs = self.validate(arguments)
        function: Callable[..., Any] = self.function
        timeout = self.timeout
        if timeout is None and self._is_async:
            # The usual tool: no cancel scope (it would cost more than a short tool), and
            # not even a null context's two calls.
            try:
                return await function(**kwargs)
            except Exception as exc:
                raise ToolExecutionError(self.name, exc) from exc
        try:
            with _NO_DEADLINE if timeout is None else anyio.move_on_after(timeout):
                if self._is_async:
                    return await function(**kwargs)
                # Abandoned on cancellation: Python cannot stop a thread, and a
                # cancelled run (or a call past its timeout) must not wait for a
                # function that may never return.
                (result,) = await anyio.to_thread.run_sync(
                    _call_in_a_box,
                    function,
                    kwargs,
                    abandon_on_cancel=True,
                    limiter=sync_tool_limiter(),
                )
                # The run may have been cancelled while the thread finished (another
                # call of the turn failed, say): the call stops here, as an async
                # tool's would at its next await.
                await anyio.lowlevel.checkpoint_if_cancelled()
                if type(result) not in NEVER_AWAITABLE and inspect.isawaitable(result):
                    result = await result
                return result
        except Exception as exc:
            raise ToolExecutionError(self.name, exc) from exc
        # Only reached when the deadline cancelled the call.
        raise ToolTimeoutError(self.name, timeout or 0.0)

    def __call__(self, *args: PS.args, **kwargs: PS.kwargs) -> T:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, parameters={list(self._fields)!r})"


def _call_in_a_box(function: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[Any]:
    """Call ``function`` (in a worker thread); its result in a tuple.

    In a tuple because trio refuses a thread's result that is a coroutine: a plain
    function may return one (a wrapper of an async function), which the run awaits.
    """
    try:
        return (function(**kwargs),)
    finally:
        # The worker thread keeps its copy of the run's context a moment after the
        # run has the result: it must not keep the agent alive.
        RUNNING_CALL.set(None)


def validation_problems(error: ValidationError) -> str:
    """One line naming each failed location and what was wrong with it."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(value)'}: {err['msg']}"
        for err in error.errors(include_url=False)
    )


ToolLike = Tool[Any, Any] | Callable[..., Any]
"""What ``Agent(tools=[...])`` accepts: a :class:`Tool` or a plain/async function."""


def _compact(arguments: dict[str, Any]) -> str:
    import json

    try:
        return json.dumps(arguments)
    except (TypeError, ValueError):
        return repr(arguments)


@overload
def tool(function: Callable[PS, T], /) -> Tool[PS, T]: ...


@overload
def tool(
    *,
    name: str | None = ...,
    description: str | None = ...,
    timeout: float | None = ...,
    requires_confirmation: bool = ...,
    annotations: Mapping[str, Any] | None = ...,
) -> Callable[[Callable[PS, T]], Tool[PS, T]]: ...


def tool(
    function: Callable[PS, T] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_confirmation: bool = False,
    annotations: Mapping[str, Any] | None = None,
) -> Tool[PS, T] | Callable[[Callable[PS, T]], Tool[PS, T]]:
    """Make a function a :class:`Tool`: ``@tool`` or ``@tool(name=..., timeout=...)``.

    An ``async def`` function runs on the event loop; a plain ``def`` runs in a worker
    thread, so it may block without stalling the loop (see :class:`Tool`).

    Args:
        function: The function (when used as ``@tool`` without arguments).
        name: The name the model uses; defaults to the function's name.
        description: What the tool does; defaults to the docstring's first paragraph.
        timeout: Seconds a call may take before it fails with a timeout.
        requires_confirmation: Ask a person before each call (see the stream).
        annotations: Behaviour hints in MCP's terms (``readOnlyHint``, ...) that a
            stream shows in the tool's ``tool_definition``.
    """

    def make(func: Callable[PS, T]) -> Tool[PS, T]:
        return Tool(
            func,
            name=name,
            description=description,
            timeout=timeout,
            requires_confirmation=requires_confirmation,
            annotations=annotations,
        )

    if function is None:
        return make
    return make(function)


# -- the running call ----------------------------------------------------------------------


class ToolContext:
    """The tool call a tool is running for: who called it, and a way to report progress.

    The run makes one for every tool call and sets it for the task that runs the tool;
    inside the tool (anything it awaits, and the worker thread of a plain ``def``
    tool), :func:`current_tool_context` returns it.
    A tool uses it to learn its call's id (a key to make a side effect idempotent: a
    call interrupted before its result was recorded may be made again with the same
    id) and to report output while it runs with :meth:`emit`.

    Attributes:
        agent: The agent whose run called the tool.
        tool_call: The call being answered: its id, the tool's name, the arguments.
    """

    __slots__ = ("agent", "tool_call")

    def __init__(self, agent: "Agent", tool_call: "ToolCall") -> None:
        self.agent = agent
        self.tool_call = tool_call

    @property
    def tool_call_id(self) -> str:
        """The id of the call, unique within the agent's conversation."""
        return self.tool_call.id

    async def emit(self, output: str) -> None:
        """Report a piece of the tool's output while it runs: a ``tool:call:output`` signal.

        Hooks observe it (``agent.hooks.on_tool_call_output``) and the stream relays
        it with the call's id; the tool's result is still what it returns. Nothing is
        dispatched when no handler listens. A plain ``def`` tool, in its worker
        thread, calls it through the loop: ``anyio.from_thread.run(context.emit, text)``.

        Args:
            output: The piece of output, as text.

        Raises:
            TypeError: ``output`` is not a string.
        """
        if not isinstance(output, str):
            raise TypeError(f"tool output is a str, got {type(output).__name__}")
        bus = self.agent.events
        if bus.has_handlers(_TOOL_CALL_OUTPUT):
            call = self.tool_call
            await bus.do(
                _TOOL_CALL_OUTPUT,
                agent=self.agent,
                tool_name=call.name,
                tool_call=call,
                output=output,
            )

    def enter(self) -> "Token[RunningCall | None]":
        """Make this the current context of the running task; :meth:`leave` undoes it.

        For runners that call tools themselves; a plain method pair rather than a
        context manager because it sits on every tool call's path.
        """
        return RUNNING_CALL.set((self.agent, self.tool_call))

    @staticmethod
    def leave(token: "Token[RunningCall | None]") -> None:
        """Restore the context that was current before :meth:`enter` returned ``token``."""
        RUNNING_CALL.reset(token)

    def __repr__(self) -> str:
        return f"<ToolContext {self.tool_call.name!r} id={self.tool_call.id!r}>"


_TOOL_CALL_OUTPUT = EV.TOOL_CALL_OUTPUT
RunningCall: TypeAlias = "tuple[Agent, ToolCall]"

RUNNING_CALL: "ContextVar[RunningCall | None]" = ContextVar("agentrt_running_call", default=None)
"""The tool call running in this task, as ``(agent, tool_call)``; for runners.

A tuple, not a :class:`ToolContext`: the execute loop sets it around every tool call
(``token = RUNNING_CALL.set((agent, call))``, then ``RUNNING_CALL.reset(token)``,
the cost of :meth:`ToolContext.enter` without its two calls), and most tools never
ask, so :func:`current_tool_context` builds the context on demand.
"""


def current_tool_context() -> ToolContext | None:
    """The :class:`ToolContext` of the tool call running in this task, or ``None``.

    ``None`` outside a tool call, e.g. when a tool function is called directly.
    A plain ``def`` tool sees it too: its worker thread runs in a copy of the run's
    context.
    """
    running = RUNNING_CALL.get()
    return None if running is None else ToolContext(*running)


# -- the threads of plain functions -------------------------------------------------------

SYNC_TOOL_THREADS = 40
"""How many plain ``def`` tools run at once in an event loop, unless changed.

The number of tokens :func:`sync_tool_limiter` starts with: as many as anyio's own
default limiter, but a limiter of their own, so that tools that block never hold the
threads other code of the process waits for (and the other way round).
"""

_SYNC_TOOL_LIMITER: "anyio.lowlevel.RunVar[anyio.CapacityLimiter]" = anyio.lowlevel.RunVar(
    "agentrt_sync_tool_limiter"
)


def sync_tool_limiter() -> anyio.CapacityLimiter:
    """The limiter of the worker threads that run plain ``def`` tools in this event loop.

    Every plain ``def`` tool of every agent in the event loop runs in a thread that
    holds one of its tokens; a call that finds none free waits (cancellably) until
    another ends. It starts with :data:`SYNC_TOOL_THREADS` tokens; set another number
    for the running loop, e.g. in the agent factory of a server, with
    ``sync_tool_limiter().total_tokens = 8``. A call abandoned by its run (cancelled,
    or past its timeout) gives its token back at once, while its function may still
    run to its end in its thread.

    Returns:
        The running event loop's limiter, made on first use.

    Raises:
        RuntimeError: No event loop runs in this thread.
    """
    limiter = _SYNC_TOOL_LIMITER.get(None)
    if limiter is None:
        limiter = anyio.CapacityLimiter(SYNC_TOOL_THREADS)
        _SYNC_TOOL_LIMITER.set(limiter)
    return limiter
