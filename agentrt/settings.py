"""Model settings: temperature, max tokens, tool choice and the like, checked before any request.

An agent's ``model_settings`` apply to every model call; a run's
(``agent.execute(..., model_settings=...)``, ``agent.stream(...)``) are merged over
them key by key, and the merged settings are :attr:`ModelRequest.settings
<agentrt.ModelRequest.settings>`, which an ``llm:*:before`` handler may still change.

The settings every OpenAI-compatible provider knows are listed in
:class:`ModelSettings`, and a value of the wrong type for one of them is a
:class:`ModelSettingsError` naming it, raised where the settings are given, before any
request. Any other key passes through to the provider unchanged: servers have their
own (``top_k``, ``min_p``, ``reasoning_effort``, ...), and agentrt does not guess them.
"""

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypedDict

from agentrt.exceptions import AgentrtError

__all__ = ("ModelSettings", "ModelSettingsError", "check_model_settings", "merge_model_settings")


class ModelSettings(TypedDict, total=False):
    """The settings agentrt checks; every other key is passed through as it is."""

    temperature: float
    """Sampling temperature, a number (providers accept 0 to 2)."""
    top_p: float
    """Nucleus sampling: a number from 0 to 1."""
    max_tokens: int
    """The most tokens the answer may have: a positive int."""
    seed: int
    """Seed for sampling, where the provider supports reproducible answers: an int."""
    stop: str | list[str]
    """Text (or texts) at which the answer stops."""
    presence_penalty: float
    """A number (providers accept -2 to 2)."""
    frequency_penalty: float
    """A number (providers accept -2 to 2)."""
    tool_choice: Literal["auto", "none", "required"] | dict[str, Any]
    """``"auto"``, ``"none"``, ``"required"``, or ``{"type": "function", "function":
    {"name": ...}}`` to force one tool."""
    parallel_tool_calls: bool
    """Whether the model may ask for several tool calls in one turn."""
    logit_bias: dict[str, float]
    """Token id (as a string) to a bias number."""
    user: str
    """An end-user id the provider may use for abuse monitoring."""


class ModelSettingsError(AgentrtError, TypeError):
    """A known model setting has a value of the wrong type or outside its range.

    Attributes:
        name: The setting.
        value: The value given.
    """

    def __init__(self, name: str, expected: str, value: object) -> None:
        self.name = name
        self.value = value
        super().__init__(
            f"model setting {name!r} must be {expected}, got {value!r:.80} "
            f"({type(value).__name__})"
        )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _between(low: float, high: float) -> Callable[[object], bool]:
    return lambda value: _number(value) and low <= value <= high  # type: ignore[operator]


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _stop(value: object) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )


def _tool_choice(value: object) -> bool:
    if isinstance(value, str):
        return value in ("auto", "none", "required")
    if not isinstance(value, dict) or value.get("type") != "function":
        return False
    function = value.get("function")
    return isinstance(function, dict) and isinstance(function.get("name"), str)


def _logit_bias(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and _number(bias) for key, bias in value.items()
    )


# Each known setting: the test its value must pass and what the error says it must be.
_CHECKS: Mapping[str, tuple[Callable[[object], bool], str]] = {
    "temperature": (_number, "a number"),
    "top_p": (_between(0, 1), "a number from 0 to 1"),
    "max_tokens": (lambda value: _int(value) and value > 0, "a positive int"),  # type: ignore[operator]
    "seed": (_int, "an int"),
    "stop": (_stop, "a str or a list of str"),
    "presence_penalty": (_number, "a number"),
    "frequency_penalty": (_number, "a number"),
    "tool_choice": (
        _tool_choice,
        '"auto", "none", "required" or {"type": "function", "function": {"name": ...}}',
    ),
    "parallel_tool_calls": (lambda value: isinstance(value, bool), "a bool"),
    "logit_bias": (_logit_bias, "a dict of token id (str) to a number"),
    "user": (lambda value: isinstance(value, str), "a str"),
}


def check_model_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check the known settings of ``settings``; return them as a new dict.

    Args:
        settings: Setting name to value; ``None`` for none.

    Raises:
        TypeError: ``settings`` is not a mapping with string keys.
        ModelSettingsError: A known setting has a value of the wrong type or range.
    """
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise TypeError(
            f"model_settings must be a mapping of setting names to values, "
            f"got {type(settings).__name__}"
        )
    checked = dict(settings)
    for name, value in checked.items():
        if not isinstance(name, str):
            raise TypeError(f"model setting names are strings, got {name!r}")
        check = _CHECKS.get(name)
        if check is not None and not check[0](value):
            raise ModelSettingsError(name, check[1], value)
    return checked


def merge_model_settings(
    base: Mapping[str, Any], override: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``base`` with ``override``'s settings put over it, key by key (both checked).

    Raises:
        ModelSettingsError: A known setting has a value of the wrong type or range.
    """
    merged = check_model_settings(base)
    if override:
        merged.update(check_model_settings(override))
    return merged
