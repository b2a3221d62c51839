"""Deferred tool calls: calls a run leaves open, for its caller to answer in a later run.

A run ends *waiting* when one of its tool calls is deferred rather than run:

* the call is to an :class:`ExternalTool`, a tool the model may call and the caller runs
  (a browser's tool, an AG-UI frontend tool, a job on another machine); or
* a ``tool:call:before`` handler deferred it (its output is
  :data:`~agentrt.control.DEFER`): a call that waits for a person's approval, when the
  stream defers its confirmations (``agent.stream(..., defer_confirmations=True)``).

The other calls of that turn run as usual; then the run ends, with
``result.pending_tool_calls`` the calls left open and ``result.output`` the text so far.
Nothing waits in memory: the conversation holds the assistant message with the open
calls, and a later run answers them::

    result = await agent.execute("Where am I?")
    call = result.pending_tool_calls[0]  # the model called the external tool
    result = await agent.execute(tool_results={call.id: {"city": "Lyon"}})

What each call takes in ``tool_results`` (:data:`ToolResult`):

* an external tool's call: its result, a ``str`` (as is) or a JSON value (rendered as
  JSON), or a :class:`~agentrt.ToolError` for its failure (the model reads
  ``"Error: <message>"``), or a :class:`~agentrt.ToolResponse` for the exact text;
* a call deferred for approval: an :class:`Approval`. ``approve`` (and
  ``approve-session``, ``approve-tool``, see :mod:`agentrt.stream.confirm`) runs the
  tool now, in the continuing run; ``reject`` answers it with the rejection
  (``"rejected by the user: <reason>"``) without running it.

Calls may be answered over several runs: a run given answers for some of them ends
waiting again on the rest, without calling the model. A run with a new user message
answers every call still open with :data:`UNANSWERED_TOOL_RESPONSE` (an error the model
reads), so that the conversation stays valid for any provider.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, TypeAlias

from pydantic_core import to_json

from agentrt.exceptions import NotPendingError, ToolError, ToolResultError
from agentrt.messages import ToolCall, ToolResponse, to_text
from agentrt.tools import Tool

__all__ = (
    "DECISIONS",
    "REJECTED_PREFIX",
    "UNANSWERED_TOOL_RESPONSE",
    "Answer",
    "Approval",
    "Decision",
    "ExternalTool",
    "ToolResult",
    "as_answer",
    "as_answers",
    "check_answers",
    "rejection",
)

Decision: TypeAlias = Literal["approve", "approve-session", "approve-tool", "reject"]
"""An answer to a confirmation request."""
DECISIONS: tuple[Decision, ...] = ("approve", "approve-session", "approve-tool", "reject")

REJECTED_PREFIX = "rejected by the user"
"""Start of a rejected call's response: ``"rejected by the user: <reason>"``."""

UNANSWERED_TOOL_RESPONSE = (
    "Error: this tool call was never answered; the conversation went on without its result."
)
"""What a deferred call left open gets when a new user message arrives."""


def rejection(reason: str | None) -> ToolResponse:
    """The response a rejected call gets instead of running."""
    return ToolResponse(
        f"{REJECTED_PREFIX}: {reason}" if reason else REJECTED_PREFIX, is_error=True
    )


@dataclass(frozen=True, slots=True)
class Approval:
    """A person's decision on a tool call that waited for approval.

    Attributes:
        decision: One of :data:`DECISIONS`.
        reason: Why (shown to the model in a rejection).

    Raises:
        ValueError: ``decision`` is not one of :data:`DECISIONS`.
        TypeError: ``reason`` is neither a string nor ``None``.
    """

    decision: Decision
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            allowed = ", ".join(repr(d) for d in DECISIONS)
            raise ValueError(f"invalid decision {self.decision!r}; use one of {allowed}")
        if self.reason is not None and not isinstance(self.reason, str):
            raise TypeError(f"reason must be a string or None, got {type(self.reason).__name__}")

    @property
    def approved(self) -> bool:
        """Whether the call may run (every decision but ``reject``)."""
        return self.decision != "reject"


_JSON: TypeAlias = str | int | float | bool | list[Any] | dict[str, Any] | None
ToolResult: TypeAlias = _JSON | ToolError | ToolResponse | Approval
"""A value of ``tool_results``: a result (``str`` or JSON value), a failure
(:class:`~agentrt.ToolError`), an exact :class:`~agentrt.ToolResponse`, or an
:class:`Approval`."""


Answer: TypeAlias = ToolResponse | Approval
"""A ``tool_results`` value as the run takes it: the response it gives, or an approval."""


def as_answers(tool_results: object) -> dict[str, Answer]:
    """``tool_results`` checked, each value as the response it gives or its approval.

    Raises:
        TypeError: ``tool_results`` is not a mapping of call ids (str).
        ToolResultError: A value is no kind of answer (see :func:`as_answer`).
    """
    if not isinstance(tool_results, Mapping):
        raise TypeError(
            f"tool_results maps tool call ids to answers, got {type(tool_results).__name__}"
        )
    answers: dict[str, Answer] = {}
    for call_id, value in tool_results.items():
        if not isinstance(call_id, str):
            raise TypeError(f"a tool_results key is a tool call id (str), got {call_id!r:.60}")
        answers[call_id] = as_answer(call_id, value)
    return answers


def check_answers(
    answers: Mapping[str, Answer],
    open_calls: Sequence[ToolCall],
    tools: Mapping[str, Tool[Any, Any]],
) -> None:
    """Refuse answers that name no open call, or that do not fit their call.

    Args:
        answers: The answers, by call id (:func:`as_answers`).
        open_calls: The calls the conversation leaves open
            (``conversation.pending_calls()``).
        tools: The tools in force by name (``agent.tool_table()``): a call to an
            :class:`ExternalTool` takes a result, any other an :class:`Approval`.

    Raises:
        NotPendingError: An id is not one of an open call.
        ToolResultError: An approval for an external tool's call, or a result for a
            call that waits for approval.
    """
    by_id = {call.id: call for call in open_calls}
    for call_id, answer in answers.items():
        call = by_id.get(call_id)
        if call is None:
            raise NotPendingError(call_id, tuple(by_id))
        external = isinstance(tools.get(call.name), ExternalTool)
        if external and isinstance(answer, Approval):
            raise ToolResultError(
                call_id,
                f"tool call {call_id!r} is to the external tool {call.name!r}, which the "
                f"caller runs: answer it with its result (a str or JSON value) or a "
                f"ToolError, not a decision ({answer!r})",
            )
        if not external and not isinstance(answer, Approval):
            raise ToolResultError(
                call_id,
                f"tool call {call_id!r} to {call.name!r} waits for approval (the agent runs "
                f"that tool): answer it with an Approval(decision, reason), not a result",
            )


def as_answer(tool_call_id: str, value: object) -> Answer:
    """``value`` of ``tool_results`` as the response it gives, or the approval it is.

    Raises:
        ToolResultError: ``value`` is none of the kinds a call takes (a ``set``, an
            object that is not JSON, bytes...).
    """
    if isinstance(value, Approval | ToolResponse):
        return value
    if isinstance(value, str):
        return ToolResponse(value)
    if isinstance(value, ToolError):
        return ToolResponse(f"Error: {value}", is_error=True)
    if isinstance(value, BaseException):
        _refuse(
            tool_call_id,
            f"an exception of type {type(value).__name__}; a failure is a ToolError",
        )
    if value is None or isinstance(value, int | float | bool | list | dict):
        try:
            to_json(value)
        except ValueError as error:
            _refuse(tool_call_id, f"a {type(value).__name__} that is not JSON ({error})")
        return ToolResponse(to_text(value))
    return _refuse(tool_call_id, f"a value of type {type(value).__name__}")


def _refuse(tool_call_id: str, what: str) -> NoReturn:
    raise ToolResultError(
        tool_call_id,
        f"the answer to tool call {tool_call_id!r} is {what}: give a str or JSON value "
        f"(its result), a ToolError (its failure), a ToolResponse, or an Approval",
    )


_RUNS_IN_THE_CALLER = (
    "an external tool runs in the caller: its calls are answered with "
    "execute(tool_results=...), never run by the agent"
)


def _runs_in_the_caller() -> NoReturn:
    raise ToolError(_RUNS_IN_THE_CALLER)


class ExternalTool(Tool[..., Any]):
    """A tool the model may call and the caller runs: the agent never runs it.

    A run whose model calls it ends waiting (see :mod:`agentrt.deferred`): its call is in
    ``result.pending_tool_calls``, and ``agent.execute(tool_results={call.id: value})``
    gives its result and goes on.

    Args:
        name: The name the model uses (1 to 64 letters, digits, ``_`` or ``-``).
        description: What the tool does, for the model.
        parameters: The JSON schema of its arguments, an object schema
            (``{"type": "object", "properties": {...}}``). The model's arguments are
            not checked against it: the caller who runs the tool does that.

    Raises:
        TypeError: ``name`` or ``description`` is not a string, or ``parameters`` is
            not a mapping.
        ValueError: ``parameters`` is not an object schema (or not JSON).
        ToolDefinitionError: The name is malformed.
    """

    __slots__ = ()

    def __init__(self, name: str, description: str, parameters: Mapping[str, Any]) -> None:
        if not isinstance(name, str):
            raise TypeError(f"an external tool's name is a string, got {type(name).__name__}")
        if not isinstance(description, str):
            raise TypeError(
                f"an external tool's description is a string, got {type(description).__name__}"
            )
        if not isinstance(parameters, Mapping):
            raise TypeError(
                f"parameters is a JSON schema (a dict), got {type(parameters).__name__}"
            )
        if parameters.get("type") != "object":
            raise ValueError(
                f"parameters of external tool {name!r} must be an object schema "
                f'({{"type": "object", ...}}), got type {parameters.get("type")!r}'
            )
        properties = parameters.get("properties", {})
        if not isinstance(properties, Mapping):
            raise ValueError(
                f"the properties of external tool {name!r}'s schema must be an object, "
                f"got {type(properties).__name__}"
            )
        try:
            json.dumps(parameters, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"parameters of external tool {name!r} is not JSON ({error})"
            ) from error
        super().__init__(_runs_in_the_caller, name=name, description=description)
        # The schema given, not the one Tool read from the function's signature.
        self.parameters = dict(parameters)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments as given: the caller who runs the tool checks them."""
        return arguments

    async def run(self, arguments: dict[str, Any]) -> NoReturn:
        """Never runs: the loop defers the calls of an external tool.

        Raises:
            ToolError: Always (a runner that is not the loop called it).
        """
        raise ToolError(_RUNS_IN_THE_CALLER)

    def __repr__(self) -> str:
        return f"ExternalTool(name={self.name!r})"
