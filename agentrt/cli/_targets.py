"""``TARGET``: the agent ``agentrt run`` runs, named ``package.module:attr`` or ``file.py:attr``.

``attr`` (dotted names reach inside: ``app:agents.support``) is an
:class:`~agentrt.Agent`, or a function returning one, sync or async, called without
arguments::

    agentrt run myapp.agents:support "Where is my order?"
    agentrt run ./bot.py:make_agent "Hello"

A module is imported with the current directory on ``sys.path`` (as ``python -m``
does); a file is loaded from its path with its own folder on ``sys.path`` (as
``python file.py`` does), so it may import its neighbours.

Everything that can go wrong before the agent exists (no such module or file, an
error while importing it, no such attribute, an attribute that is not an agent, a
factory that raises or returns something else) is a :class:`TargetError` with a
one-line message.
"""

import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agentrt.agent import Agent

__all__ = ("Target", "TargetError", "load_agent", "load_factory", "one_line", "parse_target")

_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_MAX_MESSAGE = 300


class TargetError(Exception):
    """The target cannot give an agent; the message is one line saying why."""


def one_line(text: str, limit: int = _MAX_MESSAGE) -> str:
    """``text`` on one line (whitespace runs, line breaks included, become one space), cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _describe(error: BaseException) -> str:
    text = str(error)
    return one_line(f"{type(error).__name__}: {text}" if text else type(error).__name__)


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed ``TARGET``.

    Attributes:
        location: The module name, or the file path.
        attr: The attribute path inside it (dots reach nested attributes).
        is_file: Whether ``location`` is a file path.
    """

    location: str
    attr: str
    is_file: bool

    def __str__(self) -> str:
        return f"{self.location}:{self.attr}"


def parse_target(text: str) -> Target:
    """Split ``module:attr`` or ``path/to/file.py:attr``.

    A location ending in ``.py`` or holding a path separator is a file.

    Raises:
        TargetError: There is no ``:attr``, or a part is malformed.
    """
    location, colon, attr = text.rpartition(":")
    if not colon or not location or not attr:
        raise TargetError(
            f"target {text!r} must be module:attr or path/to/file.py:attr "
            "(attr names an Agent or a function returning one)"
        )
    if not all(part.isidentifier() for part in attr.split(".")):
        raise TargetError(f"target {text!r}: {attr!r} is not an attribute name")
    is_file = location.endswith(".py") or "/" in location or os.sep in location
    if not is_file and not _MODULE.fullmatch(location):
        raise TargetError(f"target {text!r}: {location!r} is neither a module name nor a .py file")
    return Target(location, attr, is_file)


def _import_module(name: str) -> ModuleType:
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        # Only when the target itself (or a package above it) is missing: a module
        # that imports something missing failed *while importing*, reported as such.
        if error.name is not None and (name == error.name or name.startswith(error.name + ".")):
            raise TargetError(f"no module named {name!r} (from {os.getcwd()})") from None
        raise TargetError(f"importing {name!r} failed: {_describe(error)}") from None
    except Exception as error:
        raise TargetError(f"importing {name!r} failed: {_describe(error)}") from None


def _load_file(location: str) -> ModuleType:
    path = Path(location).expanduser()
    if not path.is_file():
        kind = "is not a file" if path.exists() else "does not exist"
        raise TargetError(f"{location!r} {kind}")
    path = path.resolve()
    stem = re.sub(r"\W", "_", path.stem)
    # A private name: the file's own name may be taken (a "json.py" next to the app).
    name = f"_agentrt_target_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"{location!r} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    # Registered before it runs, as an import does: dataclasses and pydantic models
    # defined in the file look their module up there.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(name, None)
        raise TargetError(f"importing {location!r} failed: {_describe(error)}") from None
    return module


def _lookup(text: str) -> tuple[Target, Any]:
    target = parse_target(text)
    module = _load_file(target.location) if target.is_file else _import_module(target.location)
    value: Any = module
    for part in target.attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise TargetError(f"{target.location!r} has no attribute {target.attr!r}") from None
    return target, value


def load_factory(text: str) -> Callable[[], Any]:
    """The agent factory ``text`` names, for a server that makes one agent per session.

    Raises:
        TargetError: The target cannot be loaded, or is an Agent rather than a
            function returning one (sessions must not share an agent).
    """
    from agentrt.agent import Agent  # not at import: parsing the command line needs none of it

    target, value = _lookup(text)
    if isinstance(value, Agent):
        raise TargetError(
            f"{target} is one Agent; serving needs a function returning a new Agent per "
            "session (sessions must not share a conversation)"
        )
    if not callable(value):
        raise TargetError(f"{target} is a {type(value).__name__}, not a function")
    return cast("Callable[[], Any]", value)


async def load_agent(text: str) -> "Agent":
    """The agent ``text`` names: imported, looked up, and made by its factory when it is one.

    Raises:
        TargetError: See the module docstring.
    """
    from agentrt.agent import Agent

    target, value = _lookup(text)
    if isinstance(value, Agent):
        return value
    if not callable(value):
        raise TargetError(
            f"{target} is a {type(value).__name__}, not an Agent or a function returning one"
        )
    try:
        made = value()
        if inspect.isawaitable(made):
            made = await made
    except Exception as error:
        raise TargetError(f"calling {target} failed: {_describe(error)}") from None
    if not isinstance(made, Agent):
        raise TargetError(f"{target} returned a {type(made).__name__}, not an Agent")
    return made
