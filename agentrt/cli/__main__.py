"""``python -m agentrt.cli``: the ``agentrt`` command."""

from agentrt.cli import main

raise SystemExit(main())
