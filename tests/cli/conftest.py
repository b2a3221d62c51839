"""Every command-line test runs isolated (:func:`isolated`); ``agent_file`` is one to load."""

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrt import ModelUnavailableError
from agentrt.cli import _demo as demo
from tests.cli.support import AGENT_FILE, write


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No model or key from the environment, no local model, notes in tmp_path."""
    for name in ("OPENAI_BASE_URL", "AGENTRT_MODEL", "OPENAI_API_KEY", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    notes = tmp_path / "notes"
    monkeypatch.setenv("AGENTRT_DEMO_DIR", str(notes))

    def no_local_model() -> Any:
        raise ModelUnavailableError("llama-cpp-python", "not here", install="pip install x")

    # Where llama-cpp-python is installed the demo would load the real model.
    monkeypatch.setattr(demo, "_local_model", no_local_model)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    modules = set(sys.modules)
    yield notes
    for name in set(sys.modules) - modules:
        if name.startswith(("_agentrt_target_", "clitarget_")):
            del sys.modules[name]


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    return write(tmp_path / "app" / "bot.py", AGENT_FILE)
