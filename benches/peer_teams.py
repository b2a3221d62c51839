"""Workload 7 of bench_peers.py: a team, one delegation (issue 25).

A lead agent gives the prompt to a sub-agent, the sub-agent calls ``add`` and
answers, and the lead passes the answer on: four model calls, one tool call, one
delegation. The sub-agent is workload 2's agent (peer_runs.py: the same scripted
model, tool and tool-call-before hook); the lead's zero-latency scripted model calls
it as a tool with PROMPT as the task and, once it answered, says what it said
(peer_common: SUB_AGENT, LEAD_CALL_ID). The answer is checked on every run.

* agentrt: ``Agent(sub_agents=[adder])``, whose model calls ``transfer_task``
  (``agent``, ``task``), and the same with the lead's tool ``adder.as_tool()``.
  Each call runs a fresh member of the sub-agent, on a conversation of its own.
* openai-agents: ``Agent.as_tool`` (the SDK's agents as tools), the nested run on
  the sub-agent with the SDK's own fresh input.
* strands-agents: ``Agent.as_tool`` (strands' agents as tools), which resets the
  sub-agent's conversation before each call.
* The floor: bench_agent's ``floor_run`` whose tool is another ``floor_run``.

Rows, every figure of the first three from the same interleaved rounds:

* µs per team run, reused agents (the lead's conversation reset between runs);
  agentrt's ``transfer_task`` in one row, its ``as_tool`` in the next, beside the
  same peer figures. Target: at least 10x ahead of the fastest peer.
* µs per plain run of workload 2 (one tool call, no team) in the same rounds, and
  what a delegation costs over it: the median of each round's difference.
* 1,000 concurrent team runs, a lead and a sub-agent each (built before the clock
  starts), the models sleeping 10 ms per call (ideal wall time 40 ms), each
  framework in a fresh process (``python peer_teams.py --concurrent FRAMEWORK N``,
  see peer_runs.py's workload 3): wall time and peak RSS.

Run alone: ``python peer_teams.py [--quick]`` (from benches/); the suite's runner
(bench_peers.py) calls ``collect``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import statistics
from typing import TYPE_CHECKING, Any

from _harness import PeerRow, Runner, peer_note, sample_many
from peer_common import LEAD_CALL_ID, PROMPT, SUB_AGENT
from peer_runs import (
    LATENCY,
    Subject,
    agentrt_agent,
    agentrt_close,
    agentrt_run,
    calibrate,
    check,
    check_output,
    floor_agent,
    processes,
    script_main,
    sleepy_model,
    subject,
)

if TYPE_CHECKING:
    from agentrt import Agent, ModelRequest, ToolCall

FRAMEWORKS = ("floor", "agentrt", "openai-agents", "strands-agents")
PEERS = ("openai-agents", "strands-agents")
PEER_MODULES = {"openai-agents": "peer_openai_agents", "strands-agents": "peer_strands"}
IDEAL_MS = 4 * LATENCY * 1000  # four model calls per team run
WORKLOAD = "team: lead -> sub-agent -> add -> answer"
WORKLOAD_CONCURRENT = "concurrent team runs, model sleeps 10 ms per call"
AHEAD = 10.0  # agentrt's single team run: at least this many times faster than any peer


# -- the floor ---------------------------------------------------------------------------------


async def floor_lead_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if messages[-1]["role"] == "user":
        task = json.dumps({"agent": SUB_AGENT, "task": messages[-1]["content"]})
        return {"tool_calls": [{"id": LEAD_CALL_ID, "name": "transfer", "arguments": task}]}
    return {"content": messages[-1]["content"]}


async def floor_transfer(agent: str, task: str) -> str:
    from bench_agent import floor_run

    return await floor_run(task)


async def floor_team_run(prompt: str) -> str:
    """bench_agent's ``floor_run`` as the lead: its tool runs the sub-agent's."""
    from bench_agent import floor_run

    return await floor_run(prompt, model=floor_lead_model, tool=floor_transfer)


def floor_subject() -> Subject:
    """The floor's team run: the waits of its four model calls, then floor_team_run's steps."""

    async def run(latency: float) -> str:
        for _ in range(4):
            await asyncio.sleep(latency)
        return await floor_team_run(PROMPT)

    return Subject(floor_agent, run)


# -- agentrt -----------------------------------------------------------------------------------


def lead_respond(request: ModelRequest) -> ToolCall | str:
    """The lead's script: delegate the prompt (by ``transfer_task``), pass the answer on."""
    from agentrt import ToolCall

    last = request.messages[-1]
    if last.role == "tool":
        return last.content
    arguments = {"agent": SUB_AGENT, "task": PROMPT}
    return ToolCall(id=LEAD_CALL_ID, name="transfer_task", arguments=arguments)


def tool_lead_respond(request: ModelRequest) -> ToolCall | str:
    """The same script calling the sub-agent as a tool (``as_tool``: argument ``task``)."""
    from agentrt import ToolCall

    last = request.messages[-1]
    if last.role == "tool":
        return last.content
    return ToolCall(id=LEAD_CALL_ID, name=SUB_AGENT, arguments={"task": PROMPT})


def agentrt_team(as_tool: bool) -> Subject:
    """A lead with workload 2's agent as its sub-agent (or, ``as_tool``, as its tool)."""
    from agentrt import Agent

    def build(latency: float) -> Agent:
        sub = agentrt_agent(latency, name=SUB_AGENT, description="Adds numbers.")
        if as_tool:
            model = sleepy_model(tool_lead_respond, latency)
            return Agent(model=model, tools=[sub.as_tool()], instructions="You delegate.")
        model = sleepy_model(lead_respond, latency)
        return Agent(model=model, sub_agents=[sub], instructions="You delegate.")

    return Subject(build, agentrt_run, agentrt_close)


def team_subject(framework: str) -> Subject:
    """The framework's team as a Subject; imports the framework (ImportError if missing)."""
    if framework == "floor":
        return floor_subject()
    if framework == "agentrt":
        return agentrt_team(as_tool=False)
    if framework == "agentrt as_tool":
        return agentrt_team(as_tool=True)
    if framework in PEER_MODULES:
        module = importlib.import_module(PEER_MODULES[framework])
        return Subject(module.new_team, module.run)
    raise ValueError(f"unknown framework {framework!r}")


# -- one team run, and a plain run beside it ---------------------------------------------------


def runs_of(framework: str, s: Subject) -> Runner:
    """Runs on one reused team (or agent), each answer checked."""
    agent = s.new_agent(0.0)

    async def runs(n: int) -> None:
        for _ in range(n):
            check_output(framework, await s.run(agent))

    return runs


def floor_runner(team: bool) -> Runner:
    from bench_agent import floor_run

    run = floor_team_run if team else floor_run

    async def runs(n: int) -> None:
        for _ in range(n):
            check_output("floor", await run(PROMPT))

    return runs


async def available() -> dict[str, tuple[Subject, Subject]]:
    """Each framework's team and plain Subjects, those that import and pass a checked run."""
    subjects = {}
    for framework in ("agentrt", "agentrt as_tool", *PEERS):
        try:
            team = team_subject(framework)
            await check(framework, team)
            plain = subject(framework.removesuffix(" as_tool"))
        except Exception as error:
            peer_note(framework, f"{WORKLOAD} (import and check run)", error)
            continue
        subjects[framework] = (team, plain)
    return subjects


async def one_run_rows(quick: bool) -> list[PeerRow]:
    seconds, rounds = (0.05, 3) if quick else (0.25, 9)
    subjects = await available()
    runners = {"floor team": floor_runner(True), "floor": floor_runner(False)}
    for framework, (team, plain) in subjects.items():
        runners[f"{framework} team"] = runs_of(framework, team)
        if framework != "agentrt as_tool":  # its plain run is agentrt's
            runners[framework] = runs_of(framework, plain)
    counts = {name: await calibrate(runner, seconds) for name, runner in runners.items()}
    samples = await sample_many(runners, n=counts, rounds=rounds)
    medians = {name: statistics.median(values) for name, values in samples.items()}

    def team_row(case: str, agentrt: str) -> PeerRow:
        figures = {"floor": medians["floor team"]}
        if f"{agentrt} team" in medians:
            figures["agentrt"] = medians[f"{agentrt} team"]
        figures.update({p: medians[f"{p} team"] for p in PEERS if f"{p} team" in medians})
        return PeerRow(WORKLOAD, case, "µs", figures, f">= {AHEAD:.0f}x ahead", ahead(figures))

    plains = {name: medians[name] for name in FRAMEWORKS if name in medians}
    costs = {}
    for name in FRAMEWORKS:
        if name in medians:
            team_name = "floor team" if name == "floor" else f"{name} team"
            paired = zip(samples[team_name], samples[name], strict=True)
            costs[name] = statistics.median(t - p for t, p in paired)
    return [
        team_row("one run, transfer_task (peers: as_tool)", "agentrt"),
        team_row("one run, as_tool", "agentrt as_tool"),
        PeerRow(WORKLOAD, "one plain run (workload 2), same rounds", "µs", plains),
        PeerRow(WORKLOAD, "delegation over a plain run (per round)", "µs", costs),
    ]


def ahead(figures: dict[str, float]) -> bool | None:
    """Whether agentrt is at least AHEAD times faster than every peer with a figure."""
    agentrt = figures.get("agentrt")
    peers = [figures[p] for p in PEERS if p in figures]
    if agentrt is None or not peers:
        return None
    return agentrt * AHEAD <= min(peers)


# -- concurrent team runs, one process per framework -------------------------------------------


def concurrent_rows(frameworks: list[str], quick: bool) -> list[PeerRow]:
    walls: dict[str, float] = {}
    peaks: dict[str, float] = {}
    for framework in frameworks:
        try:
            walls[framework], peaks[framework], _ = processes(
                framework, 1_000, repeat=not quick, script=__file__
            )
        except Exception as error:
            peer_note(framework, f"{WORKLOAD_CONCURRENT}, 1,000 runs", error)
    return [
        PeerRow(WORKLOAD_CONCURRENT, f"1,000 runs: wall (ideal {IDEAL_MS:.0f} ms)", "ms", walls),
        PeerRow(WORKLOAD_CONCURRENT, "1,000 runs: peak RSS", "MiB", peaks),
    ]


# -- the module interface ----------------------------------------------------------------------


def collect(quick: bool) -> list[PeerRow]:
    """The team workload on agentrt and the peers; ``quick``: fewer rounds."""
    rows = asyncio.run(one_run_rows(quick))
    ran = [name for name in FRAMEWORKS[1:] if name in rows[2].figures]
    return rows + concurrent_rows(["floor", *ran], quick)


def main() -> None:
    script_main(__doc__, collect, FRAMEWORKS, team_subject)


if __name__ == "__main__":
    main()
