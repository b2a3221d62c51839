"""The public surface: what ``agentrt.__all__`` promises is what the package exports."""

import ast
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

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
    "agentrt.deferred",
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
    "agentrt.team",
    "agentrt.stream.attribution",
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


# -- one list of lazy names per package ------------------------------------------------------
#
# A package that reads its names on first use (agentrt._lazy.attach) spells each name three
# times: a `from M import X as X` under TYPE_CHECKING (what type checkers and editors see),
# `"X": "M"` in its _LAZY table (what the package imports at runtime) and "X" in __all__.
# Python gives a type checker no way to read the table, so the three are checked here
# against each other, from the source: a name added to one and not the others fails.

PACKAGE_ROOT = Path(agentrt.__file__).parent


def lazy_packages() -> list[str]:
    """Every package of agentrt whose __init__ reads names on first use."""
    found = []
    for init in sorted(PACKAGE_ROOT.rglob("__init__.py")):
        if "_lazy.attach(" in init.read_text(encoding="utf-8"):
            parts = init.parent.relative_to(PACKAGE_ROOT.parent).parts
            found.append(".".join(parts))
    return found


@dataclass
class Exports:
    """What a package's ``__init__`` declares, read from its source."""

    typing_imports: dict[str, str] = field(default_factory=dict)
    lazy: dict[str, str] = field(default_factory=dict)
    eager: dict[str, str] = field(default_factory=dict)
    all: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING", "_typing.TYPE_CHECKING"}


def _reexports(node: ast.ImportFrom, into: dict[str, str], where: str, out: Exports) -> None:
    for alias in node.names:
        if alias.asname != alias.name:
            out.problems.append(f"{where}: import {alias.name} as {alias.name} (a re-export)")
        if alias.name in into:
            out.problems.append(f"{where}: {alias.name} imported twice")
        into[alias.name] = node.module or ""


def read_exports(source: str) -> Exports:
    """The TYPE_CHECKING imports, the _LAZY table, the eager imports and __all__ of a source."""
    out = Exports()
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                if not isinstance(statement, ast.ImportFrom):
                    out.problems.append(f"TYPE_CHECKING: not an import: {ast.unparse(statement)}")
                    continue
                _reexports(statement, out.typing_imports, "TYPE_CHECKING", out)
        elif isinstance(node, ast.ImportFrom) and node.module not in (None, "agentrt"):
            _reexports(node, out.eager, "eager import", out)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target == "_LAZY":
                assert isinstance(node.value, ast.Dict)
                keys = [ast.literal_eval(key) for key in node.value.keys if key is not None]
                out.problems += [f"_LAZY: {key} twice" for key in keys if keys.count(key) > 1]
                out.lazy = ast.literal_eval(node.value)
            elif target == "__all__":
                out.all = list(ast.literal_eval(node.value))
                out.problems += [f"__all__: {n} twice" for n in out.all if out.all.count(n) > 1]
    return out


# agentrt's __all__ is the narrow set a program starts with; the package exports more (the
# names it exported before it was narrowed, the deferred tools' rarer names), importable
# from it and listed in its table, not in __all__.
NARROW_ALL = {"agentrt"}


def export_problems(source: str, package: str) -> list[str]:
    """Where the TYPE_CHECKING imports, the _LAZY table and __all__ of a package disagree."""
    exports = read_exports(source)
    problems = list(set(exports.problems))
    typing_imports, lazy = exports.typing_imports, exports.lazy
    for name in sorted(typing_imports.keys() | lazy.keys()):
        imported, listed = typing_imports.get(name), lazy.get(name)
        if imported is None:
            problems.append(f"{name}: in _LAZY ({listed}), not imported under TYPE_CHECKING")
        elif listed is None:
            problems.append(f"{name}: imported under TYPE_CHECKING ({imported}), not in _LAZY")
        elif imported != listed:
            problems.append(f"{name}: TYPE_CHECKING imports it from {imported}, _LAZY {listed}")
    exported = lazy.keys() | exports.eager.keys() | {"__version__"}
    problems += [
        f"{name}: in __all__, not exported" for name in exports.all if name not in exported
    ]
    if package not in NARROW_ALL:
        missing = (lazy.keys() | exports.eager.keys()) - set(exports.all)
        problems += [f"{name}: exported, not in __all__" for name in sorted(missing)]
    return sorted(problems)


def init_source(package: str) -> str:
    path = PACKAGE_ROOT.parent.joinpath(*package.split("."), "__init__.py")
    return path.read_text(encoding="utf-8")


def test_the_packages_that_read_names_on_first_use_are_found() -> None:
    assert lazy_packages() == ["agentrt", "agentrt.models", "agentrt.stream"]


@pytest.mark.parametrize("package", lazy_packages())
def test_type_checking_imports_lazy_table_and_all_name_the_same_names(package: str) -> None:
    assert export_problems(init_source(package), package) == []
    exports = read_exports(init_source(package))
    assert exports.typing_imports
    assert exports.lazy
    assert exports.all


@pytest.mark.parametrize("package", lazy_packages())
def test_each_lazy_name_is_its_modules_export_and_the_packages_attribute(package: str) -> None:
    module = importlib.import_module(package)
    for name, home in read_exports(init_source(package)).lazy.items():
        source = importlib.import_module(home)
        assert name in source.__all__, f"{package}.{name}: {home} does not export it"
        assert getattr(module, name) is getattr(source, name), f"{package}.{name}"
        assert name in dir(module)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # A name added to the table only, to the imports only, to __all__ only.
        (
            ("_LAZY = {\n", '_LAZY = {\n    "Extra": "agentrt.messages",\n'),
            ["Extra: in _LAZY (agentrt.messages), not imported under TYPE_CHECKING"],
        ),
        (
            (
                "TYPE_CHECKING:\n",
                "TYPE_CHECKING:\n    from agentrt.messages import Extra as Extra\n",
            ),
            ["Extra: imported under TYPE_CHECKING (agentrt.messages), not in _LAZY"],
        ),
        (("__all__ = (\n", '__all__ = (\n    "Extra",\n'), ["Extra: in __all__, not exported"]),
        # An import not spelled as a re-export.
        (
            (
                "TYPE_CHECKING:\n",
                "TYPE_CHECKING:\n    from agentrt.messages import Extra\n",
            ),
            [
                "Extra: imported under TYPE_CHECKING (agentrt.messages), not in _LAZY",
                "TYPE_CHECKING: import Extra as Extra (a re-export)",
            ],
        ),
    ],
)
def test_the_check_fails_when_one_list_is_edited_without_the_others(
    edit: tuple[str, str], expected: list[str]
) -> None:
    old, new = edit
    source = init_source("agentrt")
    assert source.count(old) == 1
    assert export_problems(source.replace(old, new), "agentrt") == expected


def test_the_check_fails_when_a_name_moves_in_one_list_only() -> None:
    source = init_source("agentrt.stream")
    moved = source.replace(
        '"EventLog": "agentrt.stream._log"', '"EventLog": "agentrt.stream.events"'
    )
    assert export_problems(moved, "agentrt.stream") == [
        "EventLog: TYPE_CHECKING imports it from agentrt.stream._log, _LAZY agentrt.stream.events"
    ]
    dropped = source.replace('    "EventLog",\n', "")
    assert export_problems(dropped, "agentrt.stream") == ["EventLog: exported, not in __all__"]
    twice = source.replace('    "EventLog",\n', '    "EventLog",\n    "EventLog",\n')
    assert export_problems(twice, "agentrt.stream") == ["__all__: EventLog twice"]
    # Outside agentrt's narrow __all__, a name in the table alone is missing from both.
    added = source.replace("_LAZY = {\n", '_LAZY = {\n    "Extra": "agentrt.messages",\n')
    assert export_problems(added, "agentrt.stream") == [
        "Extra: exported, not in __all__",
        "Extra: in _LAZY (agentrt.messages), not imported under TYPE_CHECKING",
    ]


# -- what the docs name exists -------------------------------------------------------------

CHECKOUT = PACKAGE_ROOT.parent
DOCS = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md"))]
# A file or folder of the package (`agentrt/stream/_live.py`, `agentrt/server/`), a module
# imported or run (`from agentrt.stream import ...`, `python -m agentrt.events.generate`),
# a cross-reference in a docstring (:mod:`agentrt.stream.codec`, :class:`~agentrt.Agent`).
PATH = re.compile(r"\bagentrt/[\w/]*?\w+(?:\.py|\.html|/)")
MODULE = re.compile(r"(?:\bfrom|\bimport|python -m) (agentrt[\w.]*)")
ROLE = re.compile(r":(?:mod|class|func|data|meth|attr|exc|obj):`(?:[^`<]*<|~)?(agentrt[\w.]*)")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a name (or a field) reached from one."""
    parts = dotted.rstrip(".").split(".")
    value: object = importlib.import_module(parts[0])
    for index, part in enumerate(parts[1:], 1):
        module = ".".join(parts[: index + 1])
        if hasattr(value, "__path__") and importlib.util.find_spec(module) is not None:
            value = importlib.import_module(module)
            continue
        fields = getattr(value, "__dataclass_fields__", {}) | getattr(value, "model_fields", {})
        if part in fields:
            return True
        if not hasattr(value, part):
            return False
        value = getattr(value, part)
    return True


def test_every_module_and_file_the_docs_name_exists() -> None:
    missing = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        missing += [p for p in PATH.findall(text) if not (CHECKOUT / p).exists()]
        missing += [m for m in MODULE.findall(text) if importlib.util.find_spec(m) is None]
    assert missing == []


def test_every_cross_reference_in_the_packages_docstrings_resolves() -> None:
    unresolved = []
    checked = 0
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for dotted in ROLE.findall(line):
                checked += 1
                if not _resolves(dotted):
                    unresolved.append(f"{path.relative_to(CHECKOUT)}:{number}: {dotted}")
    assert unresolved == []
    assert checked > 100


# -- the layout says what is public ----------------------------------------------------------

# Every module a program may import. Any other module (a name starting with "_", or inside
# such a package) is implementation: its names are imported from the package exporting them.
PUBLIC_MODULES = (
    "agentrt",
    "agentrt.a2a",
    "agentrt.a2a.remote",
    "agentrt.a2a.server",
    "agentrt.agent",
    "agentrt.bus",
    "agentrt.cli",
    "agentrt.control",
    "agentrt.conversation",
    "agentrt.deferred",
    "agentrt.durable",
    "agentrt.events",
    "agentrt.events.catalogue",
    "agentrt.events.generate",
    "agentrt.events.names",
    "agentrt.events.params",
    "agentrt.exceptions",
    "agentrt.hooks",
    "agentrt.mcp",
    "agentrt.messages",
    "agentrt.models",
    "agentrt.models.base",
    "agentrt.models.local",
    "agentrt.models.openai",
    "agentrt.models.scripted",
    "agentrt.server",
    "agentrt.server.agui",
    "agentrt.server.agui_events",
    "agentrt.server.app",
    "agentrt.server.backend",
    "agentrt.server.durable",
    "agentrt.server.limits",
    "agentrt.server.memory",
    "agentrt.server.openapi",
    "agentrt.server.security",
    "agentrt.server.session_errors",
    "agentrt.server.sessions",
    "agentrt.server.store",
    "agentrt.settings",
    "agentrt.shell",
    "agentrt.stream",
    "agentrt.stream.codec",
    "agentrt.stream.confirm",
    "agentrt.stream.events",
    "agentrt.stream.attribution",
    "agentrt.stream.session",
    "agentrt.stream.state",
    "agentrt.stream.validate",
    "agentrt.structured",
    "agentrt.team",
    "agentrt.testing",
    "agentrt.tools",
    "agentrt.toolsets",
    "agentrt.tracing",
)


def modules_without_a_leading_underscore() -> list[str]:
    found = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        parts = path.relative_to(CHECKOUT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            found.append(".".join(parts))
    return found


def test_the_public_modules_are_exactly_those_without_a_leading_underscore() -> None:
    assert modules_without_a_leading_underscore() == sorted(PUBLIC_MODULES)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_a_public_module_is_documented_and_declares_what_it_exports(name: str) -> None:
    module = importlib.import_module(name)
    assert inspect.getdoc(module), f"{name} has no docstring"
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, tuple), f"{name} has no __all__ tuple"
    for symbol in exported:
        assert hasattr(module, symbol), f"{name}.__all__ names missing {symbol!r}"
