"""Model settings: the agent's, then the run's, then a hook's, reaching the request sent."""

from typing import Any

import httpx
import pytest

from agentrt import Agent, EventContext, ScriptedModel
from agentrt.models.base import ModelRequest
from agentrt.settings import (
    ModelSettingsError,
    check_model_settings,
    merge_model_settings,
)
from tests.openai_fixtures import Turn, completion_body
from tests.openai_support import Script, model


async def test_the_runs_settings_are_merged_over_the_agents_key_by_key() -> None:
    scripted = ScriptedModel(["one", "two"])
    agent = Agent(model=scripted, model_settings={"temperature": 0.2, "max_tokens": 64})
    await agent.execute("hi", model_settings={"temperature": 0.9, "seed": 7})
    await agent.execute("again")
    first, second = (request.settings for request in scripted.requests)
    assert first == {"temperature": 0.9, "max_tokens": 64, "seed": 7}
    assert second == {"temperature": 0.2, "max_tokens": 64}  # a run's settings stay its own
    assert agent.model_settings == {"temperature": 0.2, "max_tokens": 64}


async def test_a_hook_has_the_last_word() -> None:
    scripted = ScriptedModel(["ok"])
    agent = Agent(model=scripted, model_settings={"temperature": 0.2})

    @agent.hooks.on_llm_complete_before
    def deterministic(ctx: EventContext[Any, Any]) -> ModelRequest:
        request = ctx.output
        assert isinstance(request, ModelRequest)
        request.settings["temperature"] = 0.0
        return request

    await agent.execute("hi", model_settings={"tool_choice": "none"})
    assert scripted.requests[0].settings == {"temperature": 0.0, "tool_choice": "none"}


async def test_the_settings_reach_the_providers_request_body_unknown_keys_included() -> None:
    script = Script(httpx.Response(200, content=completion_body(Turn(content="Sunny."))))
    async with model(script) as chat:
        agent = Agent(model=chat, model_settings={"temperature": 0.3, "top_k": 40})
        await agent.execute(
            "Weather in Paris?",
            model_settings={"max_tokens": 128, "seed": 1, "reasoning_effort": "low"},
        )
    (body,) = script.bodies
    assert {key: body[key] for key in ("temperature", "top_k", "max_tokens", "seed")} == {
        "temperature": 0.3,
        "top_k": 40,
        "max_tokens": 128,
        "seed": 1,
    }
    assert body["reasoning_effort"] == "low"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temperature": "hot"}, "model setting 'temperature' must be a number, got 'hot' (str)"),
        ({"temperature": True}, "model setting 'temperature' must be a number"),
        ({"top_p": 1.5}, "model setting 'top_p' must be a number from 0 to 1, got 1.5"),
        ({"max_tokens": 0}, "model setting 'max_tokens' must be a positive int, got 0"),
        ({"max_tokens": 10.5}, "model setting 'max_tokens' must be a positive int"),
        ({"seed": "7"}, "model setting 'seed' must be an int"),
        ({"stop": ["a", 1]}, "model setting 'stop' must be a str or a list of str"),
        ({"tool_choice": "sometimes"}, "model setting 'tool_choice' must be \"auto\""),
        ({"tool_choice": {"type": "function"}}, "model setting 'tool_choice'"),
        ({"parallel_tool_calls": "yes"}, "model setting 'parallel_tool_calls' must be a bool"),
        ({"logit_bias": {"50256": "x"}}, "model setting 'logit_bias' must be a dict"),
        ({"user": 42}, "model setting 'user' must be a str, got 42 (int)"),
    ],
)
async def test_a_known_setting_of_the_wrong_type_fails_before_any_request(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ModelSettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Agent(model=ScriptedModel([]), model_settings=settings)
    scripted = ScriptedModel(["never"])
    agent = Agent(model=scripted)
    with pytest.raises(ModelSettingsError) as caught:
        await agent.execute("hi", model_settings=settings)
    assert caught.value.name == next(iter(settings))
    with pytest.raises(ModelSettingsError):
        agent.stream("hi", model_settings=settings)
    assert scripted.requests == []
    assert agent.messages == ()  # the run never started


def test_valid_settings_pass_and_unknown_ones_are_not_judged() -> None:
    settings = {
        "temperature": 1,
        "top_p": 0.5,
        "max_tokens": 1,
        "seed": -3,
        "stop": "END",
        "presence_penalty": -1.5,
        "frequency_penalty": 0,
        "tool_choice": {"type": "function", "function": {"name": "add"}},
        "parallel_tool_calls": False,
        "logit_bias": {"50256": -100},
        "user": "u-1",
        "top_k": "anything",
    }
    checked = check_model_settings(settings)
    assert checked == settings
    assert checked is not settings
    assert check_model_settings(None) == {}
    assert merge_model_settings({"seed": 1}, None) == {"seed": 1}


def test_settings_that_are_not_a_mapping_of_names_are_type_errors() -> None:
    with pytest.raises(TypeError, match="model_settings must be a mapping"):
        check_model_settings([("temperature", 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model setting names are strings, got 1"):
        check_model_settings({1: "x"})  # type: ignore[dict-item]


async def test_settings_is_the_former_name_of_model_settings() -> None:
    scripted = ScriptedModel(["ok"])
    agent = Agent(model=scripted, settings={"seed": 3})
    assert agent.settings is agent.model_settings
    await agent.execute("hi")
    assert scripted.requests[0].settings == {"seed": 3}
    with pytest.raises(TypeError, match="not both"):
        Agent(model=scripted, settings={"seed": 3}, model_settings={"seed": 4})


async def test_streamed_runs_take_settings_too() -> None:
    scripted = ScriptedModel(["streamed"])
    agent = Agent(model=scripted, model_settings={"max_tokens": 8})
    async with agent.stream("hi", model_settings={"temperature": 0.5}) as events:
        types = [event.type async for event in events]
    assert "stream_stopped" in types
    assert scripted.requests[0].settings == {"max_tokens": 8, "temperature": 0.5}
