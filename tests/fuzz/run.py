"""Fuzz every route of a real ``agentrt serve`` from its OpenAPI document.

Starts the server on 127.0.0.1 (a free port), without and then with a token, runs
``schemathesis run`` with every check (no 5xx, responses conform to the document, ...)
plus :mod:`tests.fuzz.hooks`' session-isolation check, then checks the server still
answers its health check. Prints the number of cases run; exits non-zero on any failure.

    python -m tests.fuzz.run [MAX_EXAMPLES]
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

TOKEN = "fuzz-token-0123456789"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # bounded: the server starts in about a second
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not start within 60 s")


def fuzz(token: str | None, max_examples: int) -> int:
    """One schemathesis run against a fresh server; the number of cases it ran."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    # In memory, as without the durable extra (the fuzz session's install): no store
    # file in the working directory, the repository.
    command = [sys.executable, "-m", "agentrt", "serve", "tests.fuzz.target:make"]
    command += ["--port", str(port), "--store", "memory"]
    command += ["--token", token] if token else []
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_ready(base, server)
        config = os.path.join(os.path.dirname(__file__), "schemathesis.toml")
        # The schemathesis installed beside this interpreter (a nox venv's bin).
        binary = os.path.join(os.path.dirname(sys.executable), "schemathesis")
        run = [binary, "--config-file", config, "run", f"{base}/openapi.json"]
        run += ["--checks", "all"]
        run += ["--max-examples", str(max_examples), "--workers", "2", "--seed", "17"]
        run += ["--phases", "examples,coverage,fuzzing,stateful", "--no-color"]
        if token:
            run += ["-H", f"Authorization: Bearer {token}"]
        env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.fuzz.hooks"}
        result = subprocess.run(run, env=env, capture_output=True, text=True, check=False)
        print(result.stdout if result.returncode else result.stdout[-3000:])
        print(result.stderr[-3000:], file=sys.stderr)
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as answer:
            assert answer.status == 200, "the server stopped answering"
        if result.returncode != 0:
            raise SystemExit(f"schemathesis failed (token={'yes' if token else 'no'})")
        counts = re.findall(r"(\d+) generated", result.stdout)
        return sum(int(count) for count in counts)
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    """Fuzz without and with a token; print the cases run."""
    max_examples = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    total = 0
    for token in (None, TOKEN):
        cases = fuzz(token, max_examples)
        print(f"fuzz: {cases} cases {'with' if token else 'without'} a token")
        total += cases
    print(f"fuzz: {total} cases in all, no failure")


if __name__ == "__main__":
    main()
