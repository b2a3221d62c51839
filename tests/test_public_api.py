"""The public surface: what ``agentrt.__all__`` promises is what the package exports."""

import importlib
import inspect
import subprocess
import sys

import pytest

import agentrt

MODULES = (
    "agentrt.bus",
    "agentrt.events",
    "agentrt.events.names",
    "agentrt.events.params",
    "agentrt.events.registry",
    "agentrt.events.reference",
    "agentrt.conversation",
    "agentrt.settings",
    "agentrt.stream.state",
    "agentrt.exceptions",
    "agentrt.messages",
    "agentrt.models.base",
    "agentrt.models.scripted",
    "agentrt.models.assemble",
    "agentrt.models.openai",
    "agentrt.models.sse",
    "agentrt.models.local",
    "agentrt.stream",
    "agentrt.stream.adapter",
    "agentrt.stream.codec",
    "agentrt.stream.confirm",
    "agentrt.stream.events",
    "agentrt.stream.live",
    "agentrt.stream.log",
    "agentrt.stream.pricing",
    "agentrt.stream.validate",
    "agentrt.structured",
    "agentrt.shell",
    "agentrt.stream.session",
    "agentrt.tools",
    "agentrt.agent",
    "agentrt.state",
    "agentrt.loop",
    "agentrt.control",
    "agentrt.hooks",
    "agentrt.testing",
)


def test_all_matches_the_public_names_of_the_package() -> None:
    # Names imported on first use (agentrt._LAZY) count as public before they are read.
    public = {name for name in vars(agentrt) if not name.startswith("_")} | set(agentrt._LAZY)
    modules = {name for name in public if inspect.ismodule(getattr(agentrt, name))}
    assert set(agentrt.__all__) == (public - modules) | {"__version__"}
    assert len(agentrt.__all__) == len(set(agentrt.__all__)), "duplicates in __all__"
    assert isinstance(agentrt.__all__, tuple)


def test_every_module_declares_all_and_exports_it() -> None:
    for name in MODULES:
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        assert isinstance(exported, tuple), f"{name} has no __all__ tuple"
        for symbol in exported:
            assert hasattr(module, symbol), f"{name}.__all__ names missing {symbol!r}"


def test_public_classes_and_functions_are_documented() -> None:
    for name in agentrt.__all__:
        value = getattr(agentrt, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"agentrt.{name} has no docstring"


def test_version_is_a_string() -> None:
    assert isinstance(agentrt.__version__, str)
    assert agentrt.__version__.count(".") == 2


def test_import_agentrt_leaves_the_heavy_parts_for_first_use() -> None:
    """httpx, the stream models, LocalModel and the shell tool load when first read."""
    code = (
        "import sys, agentrt\n"
        "heavy = ['httpx', 'agentrt.stream', 'agentrt.models.local', 'agentrt.shell']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "from agentrt import OpenAIChatModel, StreamEvent, LocalModel, shell_tool\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print(agentrt.OpenAIChatModel is OpenAIChatModel, 'OpenAIChatModel' in dir(agentrt))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "[]",
        "['agentrt.models.local', 'agentrt.shell', 'agentrt.stream', 'httpx']",
        "True True",
    ]
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        agentrt.nothing_here  # noqa: B018
