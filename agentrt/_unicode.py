"""Text a model sent that is not valid Unicode: lone surrogates, spelled as JSON escapes.

A Python ``str`` can hold a lone surrogate (``"\\ud800"``: from a JSON ``\\ud800`` escape
decoded by a lenient parser, or from a test's script), which no UTF-8 encoder accepts: such
text would fail every later step that encodes it (the tool-argument parser, the next
request to the model, an SSE event). :func:`escape_surrogates` spells each one as the
six characters of its JSON escape, so the text can be stored, sent and shown, while the
tool-argument parser still refuses it with a reason the model can read.
"""

import json
import re
from typing import Any

__all__ = (
    "LONE_SURROGATE_ESCAPE",
    "NUL_ESCAPE",
    "escape_surrogates",
    "loads_escaping_surrogates",
)

_SURROGATE = re.compile("[\ud800-\udfff]")

# An escape is one when an even number of backslashes (none, or escaped ones) precede it.
_ESCAPED = r"(?<!\\)(?:\\\\)*"
_HIGH = r"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"

LONE_SURROGATE_ESCAPE = re.compile(f"{_ESCAPED}(?:{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW})")
"""A JSON surrogate escape that is not half of a high-low pair: it names no character."""

NUL_ESCAPE = re.compile(rf"{_ESCAPED}\\u0000")
"""A JSON ``\\u0000`` escape: a NUL character once decoded."""


def escape_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by its ``\\uXXXX`` escape."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def _escape_all(value: Any) -> Any:
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, list):
        return [_escape_all(item) for item in value]
    if isinstance(value, dict):
        return {escape_surrogates(key): _escape_all(item) for key, item in value.items()}
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_escaping_surrogates(data: str | bytes) -> Any:
    """Parse JSON that may hold lone-surrogate escapes, which pydantic_core refuses.

    Every string comes back valid Unicode (its lone surrogates spelled as escapes), so
    a model's answer with one bad escape in a tool call becomes a tool error rather
    than an unreadable answer.

    Raises:
        ValueError: The data is not JSON (or nests too deeply to parse).
    """
    try:
        value = json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return _escape_all(value)
