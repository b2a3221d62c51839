"""The ``agentrt`` command line: ``demo``, ``run TARGET PROMPT`` and ``serve TARGET``.

::

    agentrt demo                                  # the bundled agent, on the best model here
    agentrt demo --model scripted --yes           # offline and deterministic, approving
    agentrt demo --team                           # a team: delegation and a hand-off
    agentrt run myapp.agents:support "Hello"      # your Agent, or a function making one
    agentrt run ./bot.py:make_agent "Hi" --json   # the stream as NDJSON
    python -m agentrt ...                         # the same

The command is the API: :func:`main` runs it with the given arguments. The modules whose
names start with ``_`` are its implementation: ``_app`` (arguments, exit codes),
``_commands`` (``demo`` and ``run``), ``_serve`` (``serve``), ``_demo`` (the demo agent and
its models), ``_demo_team`` (the team of ``demo --team``), ``_targets`` (loading
``TARGET``), ``_specs`` (``--model``), ``_render`` (the terminal), ``_prompt`` (asking for
confirmations).
"""

from agentrt.cli._app import main as main

__all__ = ("main",)
