"""agentrt.agent.observe_runs: a hook at the start of every run of any agent."""

import pytest

from agentrt import Agent, AgentEvents, ScriptedModel
from agentrt.agent import observe_runs


async def test_an_observer_sees_each_run_of_any_agent_before_execute_before() -> None:
    seen: list[str] = []
    first = Agent(model=ScriptedModel(["a", "b"]), name="first")
    first.events.on(AgentEvents.EXECUTE_BEFORE, lambda ctx: seen.append("execute:before"))

    def observer(agent: Agent) -> None:
        seen.append(f"run of {agent.name}")

    stop = observe_runs(observer)
    second = Agent(model=ScriptedModel(["c"]), name="second")  # made after: seen too
    await first.execute("1")
    await second.execute("2")
    stop()
    stop()  # removing twice does nothing
    await first.execute("3")

    assert seen == ["run of first", "execute:before", "run of second", "execute:before"]


async def test_what_an_observer_raises_fails_the_run_before_it_starts() -> None:
    agent = Agent(model=ScriptedModel(["never"]))

    def broken(agent: Agent) -> None:
        raise RuntimeError("observer broke")

    stop = observe_runs(broken)
    try:
        with pytest.raises(RuntimeError, match="observer broke"):
            await agent.execute("hi")
    finally:
        stop()
    assert agent.messages == ()
    assert (await agent.execute("again")).output == "never"


def test_an_observer_must_be_callable() -> None:
    with pytest.raises(TypeError, match="a run observer must be callable, got int"):
        observe_runs(3)  # type: ignore[arg-type]
