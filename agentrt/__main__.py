"""``python -m agentrt``: the ``agentrt`` command (see :mod:`agentrt.cli`)."""

from agentrt.cli import main

raise SystemExit(main())
