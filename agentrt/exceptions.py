"""The exceptions agentrt raises.

Every error is an :class:`AgentrtError`; each carries typed attributes and says in
its message what happened and the likely cause::

    AgentrtError
     ├── InvalidEventNameError (also ValueError)
     ├── HookOutputError (also TypeError): a handler set an output of the wrong type
     ├── HandlerTimeoutError (also TimeoutError): a handler ran past the bus's limit
     ├── ToolDefinitionError (also TypeError)
     ├── ToolError: a tool call failed; its message is what the model reads
     │    ├── ToolNotFoundError
     │    ├── ToolArgumentsError
     │    ├── ToolTimeoutError
     │    └── ToolExecutionError (the tool raised; __cause__ is the original)
     ├── ModelError: a model call failed
     │    ├── ScriptExhaustedError
     │    ├── OutputValidationError: a structured output did not validate
     │    ├── StreamProtocolError: a model stream broke its protocol
     │    ├── ModelHTTPError: the provider answered with an HTTP error status
     │    ├── ModelTimeoutError: the provider took longer than the timeout
     │    ├── ModelConnectionError: the provider could not be reached, or dropped the line
     │    ├── ModelResponseError: a successful answer is unusable (not JSON, an error object)
     │    └── ModelUnavailableError: a model's runtime or weights are not installed
     ├── AgentError
     │    ├── AgentClosedError
     │    ├── MaxIterationsExceededError
     │    ├── RunTimeoutError (also TimeoutError): a run passed its deadline
     │    ├── TemplateError
     │    ├── NotPendingError (also LookupError): tool_results names no open tool call
     │    └── ToolResultError (also TypeError): a tool_results value the call cannot take
     └── defined beside the code they belong to:
          agentrt.stream: StreamEventError (→ StreamDecodeError), StreamViolationError,
            UnknownToolCallError, InvalidDecisionError, EventsExpiredError,
            CompactionError, TitleError
          agentrt.server: SessionError and its kinds (unknown session, limits, ...)
          agentrt.toolsets: ToolsetError, ToolNameConflictError (a ToolDefinitionError)
          agentrt.mcp: MCPServerError (a ToolsetError), MCPToolError (a ToolError)

Handler exceptions raised on purpose (control flow) and cancellation are never
wrapped: they reach the caller as they were raised.
"""

__all__ = (
    "AgentClosedError",
    "AgentError",
    "AgentrtError",
    "HandlerTimeoutError",
    "HookOutputError",
    "InvalidEventNameError",
    "MaxIterationsExceededError",
    "NotPendingError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "OutputValidationError",
    "RunTimeoutError",
    "ScriptExhaustedError",
    "StreamProtocolError",
    "TemplateError",
    "ToolArgumentsError",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolResultError",
    "ToolTimeoutError",
)


class AgentrtError(Exception):
    """Base class of every error agentrt raises."""


class InvalidEventNameError(AgentrtError, ValueError):
    """An event name or pattern given to the bus is malformed.

    Attributes:
        name: The name as given.
        reason: What is wrong with it.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid event name {name!r}: {reason}")


class ToolError(AgentrtError):
    """A tool call could not produce a response. The message is what the model reads."""


class ToolArgumentsError(ToolError):
    """A tool call's arguments are not usable.

    Attributes:
        tool_name: The tool the model called.
        arguments: The arguments exactly as the model sent them.
        reason: Why they are not usable.
    """

    def __init__(self, tool_name: str, arguments: str, reason: str) -> None:
        self.tool_name = tool_name
        self.arguments = arguments
        self.reason = reason
        shown = arguments if len(arguments) <= 200 else arguments[:200] + "…"
        super().__init__(f"invalid arguments for tool {tool_name!r}: {reason}; got {shown!r}")


class ToolNotFoundError(ToolError):
    """The model called a tool that is not offered.

    Attributes:
        tool_name: The name the model used.
        available: The names of the tools that were offered.
    """

    def __init__(self, tool_name: str, available: "tuple[str, ...]") -> None:
        self.tool_name = tool_name
        self.available = available
        offered = ", ".join(repr(name) for name in available) or "none"
        super().__init__(f"unknown tool {tool_name!r}; the tools offered are: {offered}")


class ToolTimeoutError(ToolError):
    """A tool ran longer than its timeout.

    Attributes:
        tool_name: The tool.
        timeout: The limit in seconds.
    """

    def __init__(self, tool_name: str, timeout: float) -> None:
        self.tool_name = tool_name
        self.timeout = timeout
        super().__init__(f"tool {tool_name!r} timed out after {timeout:g} s")


class ToolExecutionError(ToolError):
    """A tool raised. The original exception is ``__cause__`` and :attr:`error`.

    Attributes:
        tool_name: The tool.
        error: What it raised.
    """

    def __init__(self, tool_name: str, error: BaseException) -> None:
        self.tool_name = tool_name
        self.error = error
        super().__init__(f"tool {tool_name!r} raised {type(error).__name__}: {error}")


class ToolDefinitionError(AgentrtError, TypeError):
    """A function cannot be made into a tool (for example it takes ``*args``).

    Attributes:
        tool_name: The tool's name.
        reason: What is wrong.
    """

    def __init__(self, tool_name: str, reason: str) -> None:
        self.tool_name = tool_name
        self.reason = reason
        super().__init__(f"cannot define tool {tool_name!r}: {reason}")


class ModelError(AgentrtError):
    """A model call failed."""


class ScriptExhaustedError(ModelError):
    """A :class:`~agentrt.ScriptedModel` was asked for more responses than it was given.

    Attributes:
        calls: How many responses the script held (and served).
    """

    def __init__(self, calls: int) -> None:
        self.calls = calls
        super().__init__(
            f"ScriptedModel ran out of responses: its script had {calls}, "
            f"and the agent asked for response {calls + 1}"
        )


class AgentError(AgentrtError):
    """An agent cannot do what was asked of it."""


class AgentClosedError(AgentError):
    """The agent was closed; it cannot run again.

    Attributes:
        name: The agent's name.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"agent {name!r} is closed; create a new Agent to run again")


class MaxIterationsExceededError(AgentError):
    """A run reached its iteration limit without a final answer.

    Attributes:
        max_iterations: The limit in force for the run.
    """

    def __init__(self, max_iterations: int) -> None:
        self.max_iterations = max_iterations
        super().__init__(
            f"the run reached max_iterations={max_iterations} without a final answer "
            f"(the model kept calling tools); raise the limit or handle execute:error"
        )


class TemplateError(AgentError):
    """Instructions could not be rendered.

    Attributes:
        reason: What went wrong.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot render the instructions: {reason}")


class NotPendingError(AgentError, LookupError):
    """``tool_results`` answers an id that is no open (deferred) tool call of the conversation.

    Attributes:
        tool_call_id: The id given.
        pending: The ids of the calls that are open.
    """

    def __init__(self, tool_call_id: str, pending: tuple[str, ...]) -> None:
        self.tool_call_id = tool_call_id
        self.pending = pending
        open_calls = ", ".join(repr(i) for i in pending) if pending else "none"
        super().__init__(
            f"tool_results answers {tool_call_id!r}, which is no open tool call of the "
            f"conversation (open calls: {open_calls}); answer only calls a run left waiting"
        )


class ToolResultError(AgentError, TypeError):
    """A ``tool_results`` value is not one the call takes.

    An external tool's call takes a result or a failure, a call that waits for
    approval an :class:`~agentrt.deferred.Approval`.

    Attributes:
        tool_call_id: The call the value was for.
    """

    def __init__(self, tool_call_id: str, message: str) -> None:
        self.tool_call_id = tool_call_id
        super().__init__(message)


class HookOutputError(AgentrtError, TypeError):
    """A handler of an interceptable event set an output of the wrong type.

    Attributes:
        event: The event whose handler set the output.
        expected: What the output must be.
        output: What it was.
    """

    def __init__(self, event: str, expected: str, output: object) -> None:
        self.event = event
        self.expected = expected
        self.output = output
        super().__init__(
            f"a handler of {event!r} set ctx.output to {type(output).__name__} "
            f"({output!r:.80}); it must be {expected}"
        )


class StreamProtocolError(ModelError):
    """A model stream broke its protocol (a malformed or out-of-order chunk).

    Attributes:
        reason: What was wrong.
        chunk: The offending chunk, as text.
    """

    def __init__(self, reason: str, *, chunk: str) -> None:
        self.reason = reason
        self.chunk = chunk
        shown = chunk if len(chunk) <= 200 else chunk[:200] + "…"
        super().__init__(f"malformed model stream: {reason}; offending chunk: {shown}")


class OutputValidationError(ModelError):
    """A model's structured output did not validate against the requested type.

    Attributes:
        output_type: The type asked for.
        content: The model's text, as received.
        problems: What failed, one line per error.
    """

    def __init__(self, output_type: object, content: str, problems: str) -> None:
        self.output_type = output_type
        self.content = content
        self.problems = problems
        name = getattr(output_type, "__name__", repr(output_type))
        shown = content if len(content) <= 200 else content[:200] + "…"
        super().__init__(
            f"the model's output is not a valid {name}: {problems}; the output was {shown!r}"
        )


class ModelUnavailableError(ModelError):
    """A model cannot run here: its runtime library or its weights are not installed.

    Attributes:
        missing: What is missing (a package, or a weights file).
        reason: How the absence showed.
        install: The command that installs it.
    """

    def __init__(self, missing: str, reason: str, *, install: str) -> None:
        self.missing = missing
        self.reason = reason
        self.install = install
        super().__init__(f"{missing} is not available: {reason}; install it with: {install}")


def _excerpt(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _after_attempts(attempts: int) -> str:
    return "" if attempts <= 1 else f" (after {attempts} attempts)"


_HTTP_HINTS = {
    400: "the server rejected the request; the body says which part",
    401: "check the API key (api_key= or OPENAI_API_KEY)",
    403: "the API key may not be allowed to use this model",
    404: "check base_url and the model name",
    413: "the request is too large",
    422: "the server could not process the request; the body says which part",
    429: "rate limited or out of quota",
}


class ModelHTTPError(ModelError):
    """The provider answered with an HTTP error status.

    429 and 5xx are retried (honouring ``Retry-After``) before this is raised; other
    statuses are raised at once.

    Attributes:
        status: The HTTP status code.
        url: The URL that was requested.
        body: The start of the response body.
        attempts: How many requests were made, retries included.
        retry_after: The wait in seconds the server asked for, when it asked.
    """

    def __init__(
        self,
        status: int,
        url: str,
        body: str,
        *,
        attempts: int = 1,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.url = url
        self.body = body
        self.attempts = attempts
        self.retry_after = retry_after
        hint = _HTTP_HINTS.get(status) or (
            "the server failed" if status >= 500 else "the server did not accept the request"
        )
        wait = "" if retry_after is None else f"; it asked to retry after {retry_after:g} s"
        super().__init__(
            f"POST {url} answered HTTP {status}{_after_attempts(attempts)}: {hint}{wait}; "
            f"body: {_excerpt(body) or '(empty)'}"
        )


class ModelTimeoutError(ModelError):
    """The provider did not answer, or stopped answering, within the timeout.

    Attributes:
        url: The URL that was requested.
        phase: Which wait ran out: ``"connect"``, ``"read"``, ``"write"`` or ``"pool"``.
        attempts: How many requests were made, retries included.
    """

    def __init__(self, url: str, phase: str, *, attempts: int = 1) -> None:
        self.url = url
        self.phase = phase
        self.attempts = attempts
        cause = {
            "connect": "the server did not accept the connection in time",
            "read": "the server went quiet before the answer was complete",
            "write": "the request could not be sent in time",
            "pool": "no connection of the client's pool became free in time",
        }.get(phase, "a wait ran out")
        super().__init__(
            f"POST {url} timed out ({phase}){_after_attempts(attempts)}: {cause}; "
            "a slow model may need a larger timeout"
        )


class ModelConnectionError(ModelError):
    """The provider could not be reached, or closed the connection mid-answer.

    Attributes:
        url: The URL that was requested.
        reason: What the transport reported.
        attempts: How many requests were made, retries included.
    """

    def __init__(self, url: str, reason: str, *, attempts: int = 1) -> None:
        self.url = url
        self.reason = reason
        self.attempts = attempts
        super().__init__(
            f"POST {url} failed{_after_attempts(attempts)}: {reason}; "
            "is the server running, and is base_url right?"
        )


class ModelResponseError(ModelError):
    """A successful HTTP answer cannot be used as a chat completion.

    Raised for a body that is not JSON or has no ``choices``, and for an error
    object where the answer should be (some servers report errors with status 200,
    or as an event inside a stream).

    Attributes:
        url: The URL that was requested.
        reason: What is wrong with the answer.
        body: The offending body or chunk (or its start).
    """

    def __init__(self, url: str, reason: str, body: str) -> None:
        self.url = url
        self.reason = reason
        self.body = body
        super().__init__(
            f"POST {url}: unusable answer: {reason}; body: {_excerpt(body) or '(empty)'}"
        )


class HandlerTimeoutError(AgentrtError, TimeoutError):
    """A handler took longer than the bus's ``handler_timeout``.

    Raised by an interceptable dispatch; a signal's is logged and counted like any
    signal handler failure.

    Attributes:
        event: The event being dispatched.
        handler: The handler, named.
        timeout: The limit in seconds.
    """

    def __init__(self, event: str, handler: str, timeout: float) -> None:
        self.event = event
        self.handler = handler
        self.timeout = timeout
        super().__init__(
            f"handler {handler} of {event!r} did not finish within {timeout:g} s "
            "(EventBus handler_timeout)"
        )


class RunTimeoutError(AgentError, TimeoutError):
    """A run passed the deadline given to ``execute(deadline=...)``.

    The run was cancelled: every tool call it made is answered in the conversation.

    Attributes:
        timeout: The deadline in seconds.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"the run did not finish within its deadline of {timeout:g} s")
