"""Issue 24, point 1: one session core, whatever keeps the sessions.

The server has one :class:`Session` and one :class:`SessionStore`; what differs between
memory, SQLite and Postgres is behind the seams of :mod:`agentrt.server.backend`, each
implemented once per backend, and no backend refuses what the core asks of it.
"""

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import agentrt.server
from agentrt.server.backend import Backend, SessionLog
from agentrt.server.durable import DurableBackend
from agentrt.server.memory import MemoryBackend, MemoryLog
from agentrt.server.sessions import Session
from agentrt.server.store import SessionStore


def _server_modules() -> list[str]:
    return [
        f"agentrt.server.{info.name}" for info in pkgutil.iter_modules(agentrt.server.__path__)
    ]


def test_the_server_has_one_session_class_and_one_store() -> None:
    subclasses = [
        f"{module}.{name}"
        for module in _server_modules()
        for name, value in inspect.getmembers(importlib.import_module(module), inspect.isclass)
        if value not in (Session, SessionStore) and issubclass(value, (Session, SessionStore))
    ]
    assert subclasses == []


def _members(protocol: type) -> set[str]:
    return {
        name
        for name, _ in inspect.getmembers(protocol)
        if not name.startswith("_") and name not in dir(object)
    }


@pytest.mark.parametrize(
    ("protocol", "implementation"),
    [
        (Backend, MemoryBackend),
        (Backend, DurableBackend),
        (SessionLog, MemoryLog),
    ],
)
def test_each_backend_implements_every_seam(protocol: type, implementation: type) -> None:
    assert sorted(_members(protocol) - set(dir(implementation))) == []


@pytest.mark.parametrize("implementation", [MemoryBackend, DurableBackend])
def test_no_backend_refuses_a_seam(implementation: type) -> None:
    # A seam a backend has nothing to do for is done as nothing, not refused.
    tree = ast.parse(Path(inspect.getfile(implementation)).read_text())
    (cls,) = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef) and n.name == implementation.__name__
    ]
    refused = [
        method.name
        for method in cls.body
        if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
        and method.name in _members(Backend)
        for node in ast.walk(method)
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and getattr(node.exc.func, "id", None) in ("TypeError", "NotImplementedError")
    ]
    assert refused == []
