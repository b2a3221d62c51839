"""``agentrt serve`` under load: runs per second through a real server, against a bare route.

The subject is the server of ``agentrt serve`` (:func:`agentrt.server.make_server`: the
app of :func:`~agentrt.server.create_app` under one uvicorn worker; h11, asyncio, no
access log) in a process of its own on loopback. Every session's agent is the same
scripted one: each run makes one tool call (``add(1, 2)``, an ``async def``) and then
streams its answer in 20 text deltas. A client in this process (aiohttp, one keep-alive
connection pool per server) makes a run as a user's client does: ``POST /sessions``,
then ``POST /sessions/{id}/messages`` and reads the SSE stream to its
``stream_stopped``, checking what it read.

The floor is a bare Starlette route in the same kind of process (same uvicorn
settings): the client's one ``POST /run`` streams back as many SSE frames as agentrt's
run, each a JSON object of the same event type and size as agentrt's (copied from one
agentrt run made first), encoded per request. It has no session to create, no agent,
no log: the ratio is what agentrt's server costs beyond Starlette and uvicorn
streaming the same bytes.

Rows (runs per second; rounds interleaved across the servers, their order rotating,
the median over the rounds; a fresh set of server processes per row, so that the
sessions a row leaves behind do not weigh on the next). Beside each, the server
process's CPU time per run (user + system, from ``/proc``), which the client's share
of the two cores does not blur:

* **sequential**: one run at a time;
* **50 concurrent**, **200 concurrent**: that many clients at once, each making its
  runs one after another.

Target: 200 concurrent runs at >= 0.6x the floor's runs per second (issue 24).

``--against REV_OR_PATH`` (repeatable) adds columns: the same agentrt benchmark served
from another checkout (a directory, or a git revision checked out in a temporary ``git
worktree``), in the same rounds, e.g. ``python benches/bench_server.py --against
2394e25``. Run with ``nox -s bench`` or ``python benches/bench_server.py [--quick]
[--against REV ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
PROMPT = "What is 1 + 2?"
DELTAS = 20
CHUNK = 8
ANSWER = ("The answer is 3. " * 10)[: DELTAS * CHUNK]  # 20 deltas of 8 characters
TARGET_200 = 0.6
ROWS = (("sequential", 1), ("50 concurrent", 50), ("200 concurrent", 200))


# -- the servers (each in a process of its own) ----------------------------------------------


def _serve(server: Any, origin: str) -> None:
    """Run uvicorn ``server`` (one worker, on loopback); its port goes to stdout once listening.

    uvicorn binds the socket itself, as ``agentrt serve`` does: asyncio turns Nagle's
    algorithm off only on sockets made with ``IPPROTO_TCP`` (``getaddrinfo``'s), and a
    socket passed in with protocol 0 would add a 40 ms delayed ACK to every response.
    """
    # h11 and asyncio: what `pip install agentrt[server]` gives (no httptools, no uvloop),
    # pinned so that an optional package installed beside it cannot change the figures.
    server.config.http = "h11"
    server.config.loop = "asyncio"
    # The client's connections idle while the other servers take their turn: uvicorn's
    # 5 s keep-alive would close them under it (a ServerDisconnectedError mid-round).
    server.config.timeout_keep_alive = 600
    startup = server.startup

    async def announce(sockets: list[socket.socket] | None = None) -> None:
        await startup(sockets)
        # Once listening: the parent reads this line and starts its requests.
        port = server.servers[0].sockets[0].getsockname()[1]
        print(json.dumps({"port": port, "origin": origin}), flush=True)

    server.startup = announce
    asyncio.run(server.serve())


def serve_agentrt() -> None:
    """``agentrt serve``'s server (``make_server``), from whichever agentrt PYTHONPATH holds."""
    import agentrt
    from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall
    from agentrt.server import create_app, make_server

    call = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})

    # async def: on the event loop in every version (a plain def runs in a worker
    # thread since issue 24, on the loop before), as bench_agent.py's run rows.
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def respond(request: ModelRequest) -> ToolCall | str:
        return call if request.messages[-1].role == "user" else ANSWER

    def new_agent() -> Agent:
        return Agent(model=ScriptedModel(respond, chunk_size=CHUNK, record=False), tools=[add])

    # Unbounded sessions, and no cap on runs or streams where the version has them (the
    # defaults, 32 runs and 256 streams, would turn most of 200 concurrent runs into 429s).
    options: dict[str, Any] = {"max_sessions": None}
    if "limits" in inspect.signature(create_app).parameters:
        from agentrt.server.limits import ServerLimits

        options["limits"] = ServerLimits(max_runs=None, max_streams=None)
    # No access log (log_level): a line per request would be most of what the floor does.
    server = make_server(new_agent, port=0, log_level="warning", **options)
    _serve(server, str(Path(agentrt.__file__).parents[1]))


def serve_floor(template_path: str) -> None:
    """A bare Starlette app streaming frames shaped as ``template_path``'s (see the module)."""
    from collections.abc import AsyncIterator as Chunks

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    template: list[tuple[str, dict[str, Any]]] = json.loads(Path(template_path).read_text())

    async def frames() -> Chunks[bytes]:
        for sequence, (kind, data) in enumerate(template, 1):
            payload = json.dumps(data, separators=(",", ":"))
            yield f"event: {kind}\nid: {sequence}\ndata: {payload}\n\n".encode()

    async def run(request: Request) -> Response:
        await request.json()
        return StreamingResponse(frames(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/run", run, methods=["POST"])])
    # make_server's uvicorn settings, without its app.
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", ws="none"
    )
    _serve(uvicorn.Server(config), "floor")


@dataclass
class Server:
    """A server process: its name, base URL and the agentrt checkout it runs."""

    name: str
    url: str
    origin: str
    process: subprocess.Popen[str]


@contextlib.contextmanager
def server(name: str, args: list[str], pythonpath: Path | None) -> Iterator[Server]:
    env = dict(os.environ)
    if pythonpath is not None:
        # Only this checkout: a PYTHONPATH of the caller's would shadow it.
        env["PYTHONPATH"] = str(pythonpath)
    process = subprocess.Popen(
        [sys.executable, str(HERE), *args], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {name} server did not start (exit {process.wait()})")
        started = json.loads(line)
        if pythonpath is not None and Path(started["origin"]) != pythonpath:
            raise RuntimeError(f"{name} runs agentrt from {started['origin']}, not {pythonpath}")
        yield Server(name, f"http://127.0.0.1:{started['port']}", started["origin"], process)
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def checkout(against: str) -> Iterator[Path]:
    """``against`` as a directory holding an agentrt checkout (a temporary worktree for a rev)."""
    path = Path(against)
    if path.is_dir():
        yield path.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="agentrt-bench-") as parent:
        tree = Path(parent) / "checkout"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(tree), against],
            check=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=True
            )


# -- the client ------------------------------------------------------------------------------


def _frames(body: bytes) -> list[tuple[str, str]]:
    """The ``(event, data)`` of each SSE frame of ``body`` (its data on one line, as sent here)."""
    frames = []
    for block in body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            frames.append((fields["event"], fields.get("data", "")))
    return frames


def _check(url: str, body: bytes, events: int) -> bytes:
    # Cheap enough for every run: the count of frames and the last one. The first run of
    # each server is checked in full (check_first).
    if body.count(b"\n\n") < events or b"event: stream_stopped\n" not in body[-400:]:
        raise RuntimeError(f"{url}: the run's stream is short or did not stop: {body[-200:]!r}")
    return body


async def agentrt_run(http: Any, url: str, events: int) -> bytes:
    """Create a session, post the prompt and read the run's stream to its end."""
    async with http.post(f"{url}/sessions", json={}) as response:
        if response.status != 201:
            raise RuntimeError(f"POST /sessions: {response.status} {await response.text()}")
        session = (await response.json())["id"]
    async with http.post(f"{url}/sessions/{session}/messages", json={"message": PROMPT}) as reply:
        if reply.status != 200:
            raise RuntimeError(f"POST messages: {reply.status} {await reply.text()}")
        return _check(url, await reply.read(), events)


async def floor_run(http: Any, url: str, events: int) -> bytes:
    """Post the prompt to the bare route and read its stream to its end."""
    async with http.post(f"{url}/run", json={"message": PROMPT}) as reply:
        if reply.status != 200:
            raise RuntimeError(f"POST /run: {reply.status} {await reply.text()}")
        return _check(url, await reply.read(), events)


@contextlib.asynccontextmanager
async def client(concurrency: int) -> AsyncIterator[Any]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        yield http


def check_first(body: bytes) -> list[tuple[str, str]]:
    """The frames of a whole run, checked: 20 text deltas making the answer, then the stop."""
    frames = _frames(body)
    kinds = [kind for kind, _ in frames]
    texts = [
        json.loads(data).get("content", "") for kind, data in frames if kind == "agent_choice"
    ]
    if kinds[-1] != "stream_stopped" or "".join(texts) != ANSWER or len(texts) != DELTAS:
        raise RuntimeError(f"unexpected stream: {kinds}")
    return frames


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; else 0)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- measuring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row: each server's runs/s and server CPU ms per run, one figure a round."""

    name: str
    per_round: dict[str, list[float]]
    cpu_ms: dict[str, list[float]]

    def median(self, name: str) -> float:
        return statistics.median(self.per_round[name])

    def ratios(self, name: str, base: str) -> list[float]:
        """``name``'s runs/s over ``base``'s, round by round (the same round's figures)."""
        return [a / b for a, b in zip(self.per_round[name], self.per_round[base], strict=True)]


async def rounds_of(
    name: str, servers: list[Server], concurrency: int, runs: int, rounds: int, events: int
) -> Row:
    """Runs per second of each server, one figure a round, rounds interleaved."""
    from _harness import sample_many

    cpu: dict[str, list[float]] = {s.name: [] for s in servers}
    async with contextlib.AsyncExitStack() as stack:
        https = {s.name: await stack.enter_async_context(client(concurrency)) for s in servers}

        def runner(s: Server) -> Any:
            http, one = https[s.name], floor_run if s.name == "floor" else agentrt_run

            async def run_all(n: int) -> None:
                async def worker(count: int) -> None:
                    for _ in range(count):
                        await one(http, s.url, events)

                share, extra = divmod(n, concurrency)
                before = cpu_seconds(s.process.pid)
                await asyncio.gather(*(worker(share + (i < extra)) for i in range(concurrency)))
                cpu[s.name].append((cpu_seconds(s.process.pid) - before) * 1000 / n)

            return run_all

        for s in servers:
            one = floor_run if s.name == "floor" else agentrt_run
            check_first(await one(https[s.name], s.url, events))
        samples = await sample_many(
            {s.name: runner(s) for s in servers}, n=runs, rounds=rounds, warmup=1
        )
    # µs per run -> runs per second; the warm-up round's CPU figure left out.
    return Row(
        name,
        {key: [1e6 / us for us in values] for key, values in samples.items()},
        {key: values[1:] for key, values in cpu.items()},
    )


def template_of(frames: list[tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
    return [(kind, json.loads(data)) for kind, data in frames]


def measure_row(
    name: str, concurrency: int, quick: bool, others: dict[str, Path]
) -> tuple[Row, list[tuple[str, str]]]:
    runs = {1: 300, 50: 400, 200: 800}[concurrency]
    if quick:
        runs = max(concurrency, runs // 4)
    rounds = 3 if quick else 9
    with contextlib.ExitStack() as stack:
        agentrt = stack.enter_context(server("agentrt", ["--serve", "agentrt"], REPO))

        async def first() -> bytes:
            async with client(1) as http:
                return await agentrt_run(http, agentrt.url, 0)

        frames = check_first(asyncio.run(first()))
        template = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "frames.json"
        template.write_text(json.dumps(template_of(frames)))
        servers = [
            stack.enter_context(server("floor", ["--serve", "floor", str(template)], None)),
            agentrt,
        ]
        for label, path in others.items():
            servers.append(stack.enter_context(server(label, ["--serve", "agentrt"], path)))
        row = asyncio.run(rounds_of(name, servers, concurrency, runs, rounds, len(frames)))
    return row, frames


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def report(rows: list[Row], frames: list[tuple[str, str]], others: list[str]) -> None:
    from _harness import machine

    size = sum(len(data) for _, data in frames)
    print(
        f"### agentrt serve: runs/s ({len(frames)} SSE events a run, {size:,} bytes of data), "
        "against a bare Starlette route"
    )
    print()
    header = "| case | floor runs/s | agentrt runs/s | / floor | per round |"
    rule = "|---|---:|---:|---:|---:|"
    for label in others:
        header += f" `{label}` runs/s | agentrt / `{label}` | per round |"
        rule += "---:|---:|---:|"
    shown = ["floor", "agentrt", *(f"`{label}`" for label in others)]
    header += " server CPU ms/run: " + ", ".join(shown)
    print(header + " | target | |")
    print(rule + "---:|---|---|")
    for row in rows:
        floor, ours = row.median("floor"), row.median("agentrt")
        cells = [
            row.name,
            f"{floor:,.0f}",
            f"{ours:,.0f}",
            f"{ours / floor:.2f}x",
            _range(row.ratios("agentrt", "floor")),
        ]
        for label in others:
            theirs = row.median(label)
            cells += [
                f"{theirs:,.0f}",
                f"{ours / theirs:.2f}x",
                _range(row.ratios("agentrt", label)),
            ]
        names = ["floor", "agentrt", *others]
        cells.append(", ".join(f"{statistics.median(row.cpu_ms[n]):.2f}" for n in names))
        target = verdict = ""
        if row.name == "200 concurrent":
            target = f">= {TARGET_200}x floor"
            verdict = "ok" if ours / floor >= TARGET_200 else "MISSED"
        print("| " + " | ".join([*cells, target, verdict]) + " |")
    print()
    print(
        "Medians over the rounds; the ratios are of the medians, with the range of the "
        "ratios of each round's own figures. Server CPU: user + system time of the "
        "server's process per run (10 ms ticks)."
    )
    print(f"\n{machine()}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    parser.add_argument(
        "--against",
        metavar="REV_OR_PATH",
        action="append",
        default=[],
        help="also serve agentrt from this checkout or git revision (repeatable)",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("template", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "agentrt":
        serve_agentrt()
        return
    if args.serve == "floor":
        serve_floor(args.template)
        return
    print(f"(load average before: {os.getloadavg()[0]:.2f})")
    rows = []
    frames: list[tuple[str, str]] = []
    with contextlib.ExitStack() as stack:
        others = {label: stack.enter_context(checkout(label)) for label in args.against}
        for name, concurrency in ROWS:
            row, frames = measure_row(name, concurrency, args.quick, others)
            rows.append(row)
    report(rows, frames, args.against)


if __name__ == "__main__":
    main()
