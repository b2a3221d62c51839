"""Shared fixtures: a scripted agent factory and a dispatch recorder.

``AGENTRT_BACKEND=trio`` (``nox -s trio``) runs every coroutine test on trio through
anyio's pytest plugin instead of pytest-asyncio, which that session leaves out.
"""

import os
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from agentrt import Agent, ScriptedModel
from agentrt.models.scripted import ScriptItem
from agentrt.testing import EventRecorder


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


async def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


AgentFactory = Callable[..., Agent]


@pytest.fixture
async def make_agent() -> AsyncIterator[AgentFactory]:
    """Build strict agents over a ScriptedModel; every one is closed after the test."""
    made: list[Agent] = []

    def factory(script: Sequence[ScriptItem] | Any, **options: Any) -> Agent:
        options.setdefault("tools", [add, divide])
        options.setdefault("strict", True)
        model = script if isinstance(script, ScriptedModel) else ScriptedModel(script)
        agent = Agent(model=model, **options)
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.close()


@pytest.fixture
def recorder() -> EventRecorder:
    return EventRecorder()


BACKEND = os.environ.get("AGENTRT_BACKEND", "asyncio")


if BACKEND != "asyncio":

    @pytest.fixture
    def anyio_backend() -> str:
        return BACKEND
