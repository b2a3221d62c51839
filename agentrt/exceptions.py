"""The exceptions agentrt raises.

Every error is an :class:`AgentrtError`; each carries typed attributes and says in
its message what happened and the likely cause::

    AgentrtError
     ├── InvalidEventNameError (also ValueError)
     ├── HookOutputError (also TypeError): a handler set an output of the wrong type
     ├── ToolDefinitionError (also TypeError)
     ├── ToolError: a tool call failed; its message is what the model reads
     │    ├── ToolNotFoundError
     │    ├── ToolArgumentsError
     │    ├── ToolTimeoutError
     │    └── ToolExecutionError (the tool raised; __cause__ is the original)
     ├── ModelError: a model call failed
     │    ├── ScriptExhaustedError
     │    ├── OutputValidationError: a structured output did not validate
     │    └── StreamProtocolError: a model stream broke its protocol
     └── AgentError
          ├── AgentClosedError
          ├── MaxIterationsExceededError
          └── TemplateError

Handler exceptions raised on purpose (control flow) and cancellation are never
wrapped: they reach the caller as they were raised.
"""

__all__ = ("AgentrtError", "InvalidEventNameError")


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
