"""A durable run survives the death of its process (``pip install 'agentrt[durable]'``).

The script runs a worker process that starts a run: the model asks to charge an order,
then to ship it. The worker dies hard (``os._exit``, as with ``kill -9``) in the middle
of ``ship``. The script then starts a second process with the same executor id on the
same SQLite store: DBOS recovers the run, the recorded ``charge`` result is reused (the
card is charged once), ``ship`` runs again and sees the same tool-call id, and the run
completes.

Run: ``python examples/durable_run.py``
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from agentrt import Agent, ModelRequest, ScriptedModel, ToolCall
from agentrt.durable import DurableAgent, launch, result
from agentrt.tools import current_tool_context

WORKDIR = Path(os.environ.get("DURABLE_EXAMPLE_DIR", "."))


def charge(order: int) -> str:
    """Charge the customer for an order."""
    with (WORKDIR / "charges.log").open("a") as log:
        log.write(f"{order}\n")
    return f"order {order} charged"


def ship(order: int) -> str:
    """Ship an order; the first worker dies in the middle of it."""
    context = current_tool_context()
    print(f"ship({order}) runs for tool call {context.tool_call_id if context else '?'}")
    if os.environ.get("DURABLE_EXAMPLE_ROLE") == "worker":
        print("worker died during ship()", flush=True)
        os._exit(137)
    return f"order {order} shipped"


def decide(request: ModelRequest) -> str | ToolCall:
    """The model: the same answer in every process, from the conversation alone."""
    done = sum(1 for message in request.messages if message.role == "tool")
    if done == 0:
        return ToolCall(id="call-charge", name="charge", arguments={"order": 42})
    if done == 1:
        return ToolCall(id="call-ship", name="ship", arguments={"order": 42})
    return "order 42 charged and shipped"


# Registered at import, under a stable name: the recovering process needs it too.
shop = DurableAgent(Agent(model=ScriptedModel(decide), tools=[charge, ship]), name="shop")


async def worker() -> None:
    launch(f"sqlite:///{WORKDIR / 'runs.sqlite'}", executor_id="worker-1", log_level="WARNING")
    await shop.execute("Charge and ship order 42", run_id="order-42")


async def recover() -> None:
    # The same executor id: DBOS recovers the runs worker-1 left unfinished.
    launch(f"sqlite:///{WORKDIR / 'runs.sqlite'}", executor_id="worker-1", log_level="WARNING")
    done = await result("order-42")
    print(f"recovered: {done.output}")
    charges = (WORKDIR / "charges.log").read_text().splitlines()
    print(f"charge ran {len(charges)} time(s)")


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        for role in ("worker", "recover"):
            env = {**os.environ, "DURABLE_EXAMPLE_ROLE": role, "DURABLE_EXAMPLE_DIR": workdir}
            subprocess.run([sys.executable, __file__], env=env, check=role == "recover")


if __name__ == "__main__":
    role = os.environ.get("DURABLE_EXAMPLE_ROLE")
    if role == "worker":
        anyio.run(worker)
    elif role == "recover":
        anyio.run(recover)
    else:
        main()
