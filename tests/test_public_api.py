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
    "agentrt.events._registry",
    "agentrt.events._reference",
    "agentrt.events.catalogue",
    "agentrt.events.generate",
    "agentrt.conversation",
    "agentrt.settings",
    "agentrt.stream.state",
    "agentrt.exceptions",
    "agentrt.messages",
    "agentrt.models.base",
    "agentrt.models.scripted",
    "agentrt.models._assemble",
    "agentrt.models.openai",
    "agentrt.models._openai_wire",
    "agentrt.models._sse",
    "agentrt.models.local",
    "agentrt.stream",
    "agentrt.stream._adapter",
    "agentrt.stream.codec",
    "agentrt.stream.confirm",
    "agentrt.stream.events",
    "agentrt.stream._parse",
    "agentrt.stream._live",
    "agentrt.stream._log",
    "agentrt.stream._pricing",
    "agentrt.stream.validate",
    "agentrt.structured",
    "agentrt.shell",
    "agentrt.stream.session",
    "agentrt.tools",
    "agentrt.agent",
    "agentrt._state",
    "agentrt._loop",
    "agentrt.control",
    "agentrt.hooks",
    "agentrt.testing",
)


def printed_by(code: str) -> list[str]:
    """The lines a fresh interpreter prints running ``code`` (what a program imports first)."""
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return completed.stdout.splitlines()


def test_all_is_narrow_and_names_only_what_the_package_exports() -> None:
    assert len(agentrt.__all__) <= 41
    assert len(agentrt.__all__) == len(set(agentrt.__all__)), "duplicates in __all__"
    assert isinstance(agentrt.__all__, tuple)
    # Eager or read on first use (agentrt._LAZY): every name in __all__ is there.
    for name in agentrt.__all__:
        assert getattr(agentrt, name) is not None, name
    # Nothing public is defined at package level besides __all__ and the modules.
    public = {name for name in vars(agentrt) if not name.startswith("_")}
    modules = {name for name in public if inspect.ismodule(getattr(agentrt, name))}
    assert public - modules <= set(agentrt.__all__) | set(agentrt._LAZY)


# What the package exported before it was narrowed: still importable from it, as always.
FORMER_EXPORTS = [
    "DEFAULT_PRIORITY",
    "EXTENSION_POINTS",
    "ContextProvider",
    "Handler",
    "Predicate",
    "IterationOverride",
    "Recovery",
    "AgentClosedError",
    "AgentError",
    "HandlerTimeoutError",
    "InvalidEventNameError",
    "MaxIterationsExceededError",
    "ModelConnectionError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "OutputValidationError",
    "RunTimeoutError",
    "ScriptExhaustedError",
    "StreamProtocolError",
    "TemplateError",
    "ToolArgumentsError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolTimeoutError",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "ToolCallDelta",
    "UsageChunk",
    "OutputMode",
    "shell_tool",
    "Compactor",
    "ModelPrices",
    "StreamAdapter",
]


def test_what_was_exported_before_is_still_importable_from_the_package() -> None:
    kept = [
        "Agent",
        "ScriptedModel",
        "ToolCall",
        "ToolResponse",
        "EventContext",
        "tool",
        "EventBus",
        "AgentEvents",
        "EventSemantics",
        "EVENT_SEMANTICS",
        "EVENT_PARAMS",
        "get_params_type",
        "get_event_semantics",
        "HooksAccessor",
        "TypedEventHandlersMixin",
        "OpenAIChatModel",
        "LocalModel",
    ]
    assert set(kept) <= set(agentrt.__all__)
    for name in FORMER_EXPORTS:
        value = getattr(agentrt, name)
        module = importlib.import_module(agentrt._LAZY[name])
        assert getattr(module, name) is value, name
    assert "ToolTimeoutError" in dir(agentrt)
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = agentrt.Nope


def test_the_stream_tools_are_importable_from_agentrt_stream() -> None:
    import agentrt.events
    import agentrt.stream

    assert callable(agentrt.stream.parse_event)
    assert callable(agentrt.stream.validate)
    assert agentrt.events.ToolCallBeforeParams is agentrt.events.params.ToolCallBeforeParams


def test_import_agentrt_stream_builds_no_validator_until_an_event_needs_one() -> None:
    code = (
        "import sys\n"
        "from agentrt.stream import EVENT_TYPES, AgentChoiceEvent, parse_event\n"
        "from agentrt.stream import _parse as parse\n"
        "built = lambda: sorted(t for t, c in EVENT_TYPES.items() if c.__pydantic_complete__)\n"
        "print(built(), parse._adapter is None, 'pydantic.plugin._loader' in sys.modules)\n"
        "event = AgentChoiceEvent(session_id='s', content='Hi', agent_name='a')\n"
        "print('agent_choice' in built(), parse_event(event.model_dump_json()) == event)\n"
    )
    out = printed_by(code)
    assert out == ["[] True False", "True True"]


def test_a_program_that_reads_a_stream_loads_neither_the_agent_nor_its_loop() -> None:
    code = (
        "import sys\n"
        "from agentrt.stream import parse_event, validate\n"
        "from agentrt.stream.codec import SSEEventDecoder\n"
        "import agentrt.stream.validate\n"
        "loop = ('agentrt.agent', 'agentrt._loop', 'anyio')\n"
        "print(sorted(m for m in loop if m in sys.modules))\n"
        "import agentrt.stream\n"
        "print(agentrt.stream.validate is validate, validate.__name__)\n"
        "from agentrt.stream import EventStream\n"
        "print('agentrt.stream._live' in sys.modules, 'EventStream' in dir(agentrt.stream))\n"
    )
    assert printed_by(code) == ["[]", "True validate", "True True"]


def test_reading_events_moved_to_agentrt_stream_parse_and_is_still_importable_where_it_was() -> (
    None
):
    import agentrt.stream._parse
    import agentrt.stream.events

    for name in ("parse_event", "UnknownEvent", "AnyStreamEvent"):
        assert getattr(agentrt.stream.events, name) is getattr(agentrt.stream._parse, name)
    with pytest.raises(AttributeError, match="has no attribute 'parse_events'"):
        _ = agentrt.stream.events.parse_events


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


def test_import_agentrt_loads_nothing_until_a_name_is_used() -> None:
    """Each name loads its module on first use; the agent's own loads none of the rest."""
    code = (
        "import sys, agentrt\n"
        "core = ['pydantic', 'anyio', 'agentrt.agent', 'agentrt.messages', 'agentrt.bus']\n"
        "heavy = ['httpx', 'agentrt.stream', 'agentrt.models.local', 'agentrt.shell']\n"
        "print(sorted(m for m in core + heavy if m in sys.modules))\n"
        "from agentrt import Agent\n"
        "print(sorted(m for m in core + heavy if m in sys.modules))\n"
        "from agentrt import OpenAIChatModel, StreamEvent, LocalModel, shell_tool\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print(agentrt.OpenAIChatModel is OpenAIChatModel, 'OpenAIChatModel' in dir(agentrt))\n"
    )
    out = printed_by(code)
    assert out == [
        "[]",
        "['agentrt.agent', 'agentrt.bus', 'agentrt.messages', 'anyio', 'pydantic']",
        "['agentrt.models.local', 'agentrt.shell', 'agentrt.stream', 'httpx']",
        "True True",
    ]
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        agentrt.nothing_here  # noqa: B018


def test_star_import_gives_every_name_of_all() -> None:
    namespace: dict[str, object] = {}
    exec("from agentrt import *", namespace)
    assert set(agentrt.__all__) <= set(namespace)
    assert namespace["Agent"] is agentrt.Agent


def test_params_types_resolve_in_a_program_that_never_loaded_the_agent() -> None:
    code = (
        "import sys, typing\n"
        "from agentrt.events import AgentEvents, get_params_type\n"
        "loaded = 'agentrt.agent' in sys.modules\n"
        "hints = typing.get_type_hints(get_params_type(AgentEvents.AGENT_CLOSE_BEFORE))\n"
        "print(loaded, hints['agent'].__module__, hints['agent'].__name__)\n"
    )
    out = printed_by(code)
    assert out == ["False agentrt.agent Agent"]


def test_agentrt_models_is_a_package_that_loads_a_model_only_when_it_is_used() -> None:
    code = (
        "import sys, agentrt.models\n"
        "models = ['agentrt.models.base', 'agentrt.models.scripted', 'agentrt.models.openai',"
        " 'agentrt.models.local', 'httpx', 'pydantic']\n"
        "print(agentrt.models.__file__.endswith('__init__.py'),"
        " sorted(m for m in models if m in sys.modules))\n"
        "from agentrt.models import ScriptedModel, TextDelta\n"
        "print(sorted(m for m in models if m in sys.modules))\n"
        "from agentrt.models import OpenAIChatModel\n"
        "print('httpx' in sys.modules, 'agentrt.models.local' in sys.modules)\n"
        "print(agentrt.models.OpenAIChatModel is OpenAIChatModel,"
        " 'LocalModel' in dir(agentrt.models))\n"
    )
    assert printed_by(code) == [
        "True []",
        "['agentrt.models.base', 'agentrt.models.scripted', 'pydantic']",
        "True False",
        "True True",
    ]
    import agentrt.models

    with pytest.raises(AttributeError, match=r"'agentrt\.models' has no attribute 'Nope'"):
        _ = agentrt.models.Nope


def test_agentrt_models_exports_the_models_and_the_model_seam() -> None:
    import agentrt.models
    import agentrt.models.base
    import agentrt.models.scripted

    assert set(agentrt.models.__all__) >= set(agentrt.models.base.__all__)
    assert {"ScriptedModel", "OpenAIChatModel", "LocalModel"} <= set(agentrt.models.__all__)
    # The names agentrt exports too are the same objects there.
    for name in set(agentrt.models.__all__) - {"ScriptItem"}:
        assert getattr(agentrt.models, name) is getattr(agentrt, name), name
    assert agentrt.models.ScriptItem is agentrt.models.scripted.ScriptItem
