"""The ``agentrt`` command line: ``demo``, ``run TARGET PROMPT`` and ``serve TARGET``.

::

    agentrt demo                                  # the bundled agent, on the best model here
    agentrt demo --model scripted --yes           # offline and deterministic, approving
    agentrt run myapp.agents:support "Hello"      # your Agent, or a function making one
    agentrt run ./bot.py:make_agent "Hi" --json   # the stream as NDJSON
    python -m agentrt ...                         # the same

Modules: :mod:`~agentrt.cli.app` (arguments, exit codes), :mod:`~agentrt.cli.commands`
(``demo`` and ``run``), :mod:`~agentrt.cli.serve` (``serve``), :mod:`~agentrt.cli.demo` (the
demo agent and its models), :mod:`~agentrt.cli.targets` (loading ``TARGET``),
:mod:`~agentrt.cli.specs` (``--model``), :mod:`~agentrt.cli.render` (the terminal),
:mod:`~agentrt.cli.prompt` (asking for confirmations).
"""

from agentrt.cli.app import main as main

__all__ = ("main",)
