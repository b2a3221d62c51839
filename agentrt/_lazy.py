"""Names a package reads from its modules on first use (PEP 562), in one place.

``agentrt`` and ``agentrt.stream`` export names that live in their submodules; importing
the package loads none of those modules, so that a program pays only for the parts it
uses (``agentrt --help`` loads no agent, a stream reader no run loop).
"""

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ("attach",)


def attach(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, for names read on first use.

    Args:
        package: The package's name, for the error of a name it does not have.
        names: Each name and the module it is read from.
        namespace: The package's globals: a name read once is kept there, so that later
            reads do not come back here.

    Returns:
        The two functions, to be bound as the package's ``__getattr__`` and ``__dir__``.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
