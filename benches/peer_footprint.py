"""Workloads 5 and 6, footprint: import time, and memory per idle agent holding a conversation.

Import (ms): the wall time of ``python -I -c "import PACKAGE"`` minus that of
``python -I -c "pass"`` (the bare interpreter's start-up), each a fresh interpreter, runs
interleaved, median of several rounds after one warm-up round that also writes the
bytecode caches. This is the delay a user's program sees, not ``-X importtime``'s sum,
which leaves out the interpreter but adds the cost of its own reporting to every module.
The packages: ``agentrt``, ``pydantic`` (what agentrt builds on; ``import pydantic`` alone
loads little, its names load on first use), ``pydantic_ai``, ``agents`` (openai-agents) and
``strands`` (strands-agents). The floor is a fresh interpreter that defines one pydantic
model (``defer_build``, so no validator is built): what any program pays that defines a
pydantic model at import, as agentrt does for its messages.

Import and first run (ms): the wall time of a fresh interpreter that imports the framework,
builds workload 2's agent (peer_runs.py's, zero-latency model) and runs it once, minus that
of one that imports only the harness (peer_runs.py, which imports asyncio), runs
interleaved as above. This is
what a short-lived program (a command, a test, a serverless call) waits before its first
answer: the import, and what the framework leaves for first use (validators built on
demand, lazily imported modules). The floor is the import row's, plus validating one
instance of its model.

Memory (KB = 1,000 bytes, per agent): a fresh process per framework builds one agent per
conversation, each with its own zero-latency scripted model, and has it hold a 20-message
conversation made by 5 runs of prompt -> tool call (``add``) -> answer, 4 messages a run,
prompts, ids and answers fresh strings as a real model's would be. The ``add`` tool is made
once by the framework's own decorator and shared by all the agents, as an application
defines its tools once. After one agent built the same way as a warm-up (imports,
caches), the process builds ``N`` more and keeps them all; the figure is what it holds
more, divided by ``N``, after a garbage collection, measured two ways in two processes:
the resident set size (everything: Python objects, pydantic-core's validators, allocator
slack) and tracemalloc (Python allocations only). Each framework's idle agent is:

* agentrt: the ``Agent``, which holds its conversation (plus its system message);
* strands-agents: the ``Agent``, which holds its conversation (``agent.messages``);
* pydantic-ai: an ``Agent`` and the ``Conversation`` its last run returned, which is
  what pydantic-ai carries from one run to the next (its agents hold no conversation);
* openai-agents: an ``Agent`` and the input list of its last run (``to_input_list()``),
  since its agents hold no conversation either; the agent is kept as ``agent.clone()``
  with an unused ``agents.testing.ScriptedModel``, because the one that ran records
  every call it received, which a real model does not.

The scripted models come from each framework's public test API: agentrt's
``ScriptedModel``, pydantic-ai's ``FunctionModel``, ``agents.testing.ScriptedModel``;
strands-agents has none, so its model is a subclass of its public ``Model`` class that
streams the same two answers.

Run with ``nox -s bench`` (through ``bench_peers.py``) or
``python benches/peer_footprint.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from _harness import PeerRow, peer_note, print_peer_rows

if TYPE_CHECKING:
    from pydantic import BaseModel
    from strands.types.content import ContentBlockStart, Messages
    from strands.types.streaming import StreamEvent
    from strands.types.tools import ToolSpec

T = TypeVar("T", bound="BaseModel")

# The module each framework's users import.
PACKAGES = {
    "agentrt": "agentrt",
    "pydantic": "pydantic",
    "pydantic-ai": "pydantic_ai",
    "openai-agents": "agents",
    "strands-agents": "strands",
}
FRAMEWORKS = ("floor", *PACKAGES)
# The import row's floor: one pydantic model, its validator deferred as agentrt's are.
ONE_PYDANTIC_MODEL = (
    "from pydantic import BaseModel, ConfigDict\n"
    "class Model(BaseModel):\n"
    "    model_config = ConfigDict(frozen=True, defer_build=True)\n"
    "    text: str\n"
)
# The first-run row's floor: the import floor, and the model's validator built and used once.
ONE_VALIDATED_MODEL = ONE_PYDANTIC_MODEL + "Model(text='The answer is 3.')\n"
AGENT_FRAMEWORKS = ("agentrt", "pydantic-ai", "openai-agents", "strands-agents")
TURNS = 5  # 4 messages a run: 20 messages
IMPORT_TARGET_MS = 80.0
MEMORY_TARGET_KB = 20.0
METHODS = {"rss": "RSS", "heap": "tracemalloc"}
CHILD_TIMEOUT_S = 300.0  # a peer that hangs costs its cell, not the run


# -- import time ------------------------------------------------------------------------------


def interpreter_ms(code: str) -> float:
    """Wall time of a fresh interpreter running ``code``, in ms."""
    start = time.perf_counter_ns()
    # -I: neither the working directory nor PYTHONPATH can shadow a package.
    subprocess.run(
        [sys.executable, "-I", "-c", code],
        check=True,
        capture_output=True,
        timeout=CHILD_TIMEOUT_S,
    )
    return (time.perf_counter_ns() - start) / 1e6


def interleaved_ms(codes: dict[str, str], start: str, quick: bool) -> dict[str, float]:
    """Each code's median wall time minus that of ``codes[start]`` (kept, as itself).

    Fresh interpreters, run interleaved: each round starts with a different code, so
    that a slower stretch of the machine falls on all of them alike.
    """
    samples: dict[str, list[float]] = {name: [] for name in codes}
    names = list(codes)
    for i in range(2 if quick else 7):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(interpreter_ms(codes[name]))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return {
        name: value if name == start else value - medians[start] for name, value in medians.items()
    }


def import_row(quick: bool) -> PeerRow:
    codes = {"bare": "pass", "floor": ONE_PYDANTIC_MODEL}
    for name, module in PACKAGES.items():
        try:
            interpreter_ms(f"import {module}")  # the warm-up round: also writes the .pyc files
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            peer_note(name, "import", _last_line(exc))
            continue
        codes[name] = f"import {module}"
    figures = interleaved_ms(codes, "bare", quick)
    return PeerRow(
        workload="import",
        case=(
            f"import the package (bare start-up {figures.pop('bare'):.0f} ms subtracted; "
            "floor: define one pydantic model)"
        ),
        unit="ms",
        figures=figures,
        target=f"<= {IMPORT_TARGET_MS:.0f} ms",
        met=figures["agentrt"] <= IMPORT_TARGET_MS if "agentrt" in figures else None,
    )


def first_run_row(quick: bool) -> PeerRow:
    """Import, build workload 2's agent and run it once, in a fresh interpreter (ms)."""
    benches = os.path.dirname(os.path.abspath(__file__))
    harness = f"import sys\nsys.path.insert(0, {benches!r})\nimport peer_runs\n"
    codes = {"harness": harness, "floor": harness + ONE_VALIDATED_MODEL}
    for name in AGENT_FRAMEWORKS:
        code = (
            f"{harness}import asyncio\n"
            f"subject = peer_runs.subject({name!r})\n"
            "output = asyncio.run(subject.run(subject.new_agent(0.0)))\n"
            f"peer_runs.check_output({name!r}, output)\n"
        )
        try:
            interpreter_ms(code)  # the warm-up round
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            peer_note(name, "import and first run", _last_line(exc))
            continue
        codes[name] = code
    figures = interleaved_ms(codes, "harness", quick)
    harness_ms = figures.pop("harness")
    return PeerRow(
        workload="import",
        case=(
            f"import, build an agent, run it once (start-up with asyncio and the harness, "
            f"{harness_ms:.0f} ms, subtracted; floor: define, build and use one pydantic model)"
        ),
        unit="ms",
        figures=figures,
    )


def _last_line(exc: subprocess.CalledProcessError | subprocess.TimeoutExpired) -> str:
    if isinstance(exc, subprocess.TimeoutExpired):
        return str(exc)
    lines = exc.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit {exc.returncode}"


# -- idle agents holding a conversation (each framework in a fresh process) -------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def prompt(turn: int) -> str:
    return f"What is 1 + {turn}?"


def answer(count: int) -> str:
    # Built at run time: a literal would be one string shared by every agent.
    return f"The answer is {count}."


def call_id(count: int) -> str:
    return f"call_{count}"


# Each framework's tool is made once, by its own decorator, and shared by all the agents,
# as an application defines its tools once at module level: the figure is the agents' own.
@functools.cache
def shared_tool(framework: str) -> Any:
    if framework == "agentrt":
        from agentrt import tool

        return tool(add)
    if framework == "pydantic-ai":
        from pydantic_ai import Tool

        return Tool(add)
    if framework == "openai-agents":
        from agents import function_tool

        return function_tool(add)
    from strands import tool as strands_tool

    return strands_tool(add)


async def agentrt_agent() -> object:
    from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall

    def respond(request: ModelRequest) -> ToolCall | str:
        count = len(request.messages)
        if request.messages[-1].role == "user":
            return ToolCall(id=call_id(count), name="add", arguments={"a": 1, "b": 2})
        return answer(count)

    model = ScriptedModel(respond, record=False)
    agent = Agent(model=model, tools=[shared_tool("agentrt")], instructions="You add numbers.")
    for turn in range(TURNS):
        await agent.execute(prompt(turn))
    assert len(agent.messages) == 4 * TURNS + 1  # and the system message
    return agent


async def pydantic_ai_agent() -> object:
    from pydantic_ai import Agent, ModelRequest, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelMessage, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and isinstance(last.parts[-1], UserPromptPart):
            part = ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id=call_id(len(messages)))
            return ModelResponse(parts=[part])
        return ModelResponse(parts=[TextPart(answer(len(messages)))])

    agent = Agent(
        FunctionModel(respond), tools=[shared_tool("pydantic-ai")], instructions="You add numbers."
    )
    conversation: Conversation | None = None
    for turn in range(TURNS):
        conversation = (await agent.run(prompt(turn), conversation=conversation)).conversation
    assert conversation is not None
    assert len(conversation.messages) == 4 * TURNS
    return agent, conversation


async def openai_agents_agent() -> object:
    from agents import Agent, Runner, TResponseInputItem
    from agents.testing import ScriptedModel, assistant_message, function_call

    steps = []
    for turn in range(TURNS):
        steps.append([function_call("add", {"a": 1, "b": 2}, call_id=call_id(4 * turn + 1))])
        steps.append([assistant_message(answer(4 * turn + 3))])
    agent = Agent(
        name="adder",
        instructions="You add numbers.",
        tools=[shared_tool("openai-agents")],
        model=ScriptedModel(steps),
    )
    conversation: list[TResponseInputItem] = []
    for turn in range(TURNS):
        conversation.append({"role": "user", "content": prompt(turn)})
        conversation = (await Runner.run(agent, conversation)).to_input_list()
    assert len(conversation) == 4 * TURNS
    return agent.clone(model=ScriptedModel()), conversation


def strands_model() -> Any:
    """A strands ``Model`` streaming the tool call, then the answer: its public model API."""
    from strands.models.model import Model

    class ScriptedStrandsModel(Model):
        def update_config(self, **model_config: Any) -> None:
            return None

        def get_config(self) -> dict[str, Any]:
            return {}

        def structured_output(
            self,
            output_model: type[T],
            prompt: Messages,
            system_prompt: str | None = None,
            **kwargs: Any,
        ) -> AsyncGenerator[dict[str, T | Any], None]:
            raise NotImplementedError("the benchmark's scripted model has no structured output")

        async def stream(
            self,
            messages: Messages,
            tool_specs: list[ToolSpec] | None = None,
            system_prompt: str | None = None,
            **kwargs: Any,
        ) -> AsyncIterator[StreamEvent]:
            count = len(messages)
            yield {"messageStart": {"role": "assistant"}}
            if any("text" in block for block in messages[-1]["content"]):
                start: ContentBlockStart = {
                    "toolUse": {"name": "add", "toolUseId": call_id(count)}
                }
                yield {"contentBlockStart": {"start": start}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"a": 1, "b": 2}'}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
            else:
                yield {"contentBlockDelta": {"delta": {"text": answer(count)}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}

    return ScriptedStrandsModel()


async def strands_agent() -> object:
    from strands import Agent

    agent = Agent(
        model=strands_model(),
        tools=[shared_tool("strands-agents")],
        system_prompt="You add numbers.",
        callback_handler=None,  # the default prints every streamed token
    )
    for turn in range(TURNS):
        await agent.invoke_async(prompt(turn))
    assert len(agent.messages) == 4 * TURNS
    return agent


BUILDERS: dict[str, Callable[[], Awaitable[object]]] = {
    "agentrt": agentrt_agent,
    "pydantic-ai": pydantic_ai_agent,
    "openai-agents": openai_agents_agent,
    "strands-agents": strands_agent,
}


def rss_bytes() -> int:
    """The resident set size now (not the peak): Linux's /proc/self/statm."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def bytes_per_agent(framework: str, count: int, method: str) -> float:
    """In this process: what ``count`` idle agents hold, per agent, by ``method``."""
    if framework == "openai-agents":
        from agents import set_tracing_disabled

        # Traces are exported to OpenAI by default: queued spans would count as agents.
        set_tracing_disabled(True)
    build = BUILDERS[framework]
    # Kept until the end: memory it freed during the measurement would go to the agents
    # measured, and lower their figure.
    warm = await build()
    gc.collect()
    if method == "heap":
        tracemalloc.start()
    before = rss_bytes()
    agents = [await build() for _ in range(count)]
    gc.collect()
    if method == "heap":
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    else:
        held = rss_bytes() - before
    assert len(agents) == count
    del warm
    return held / count


def memory_in_child(framework: str, count: int, method: str) -> float:
    """KB per agent, measured in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", framework, str(count), method],
        check=True,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    ).stdout
    return float(json.loads(out)) / 1000.0


def memory_rows(quick: bool) -> list[PeerRow]:
    count = 10 if quick else 150
    rows = []
    for method, label in METHODS.items():
        figures: dict[str, float] = {}
        for framework in AGENT_FRAMEWORKS:
            try:
                figures[framework] = memory_in_child(framework, count, method)
            except subprocess.CalledProcessError as exc:
                error = exc.stderr.strip().splitlines()
                reason = error[-1] if error else f"exit {exc.returncode}"
                peer_note(framework, f"memory ({label})", reason)
            except subprocess.TimeoutExpired as exc:
                peer_note(framework, f"memory ({label})", exc)
        rows.append(
            PeerRow(
                workload="memory",
                case=f"idle agent, 20-message conversation ({label}, {count} agents)",
                unit="KB",
                figures=figures,
                target=f"<= {MEMORY_TARGET_KB:.0f} KB",
                met=figures["agentrt"] <= MEMORY_TARGET_KB if "agentrt" in figures else None,
            )
        )
    return rows


def collect(quick: bool) -> list[PeerRow]:
    """The import rows (the package; the first run) and the two memory rows (RSS, tracemalloc)."""
    return [import_row(quick), first_run_row(quick), *memory_rows(quick)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        framework, count, method = args.memory_child
        print(json.dumps(asyncio.run(bytes_per_agent(framework, int(count), method))))
        return
    print_peer_rows(collect(args.quick), FRAMEWORKS)


if __name__ == "__main__":
    main()
