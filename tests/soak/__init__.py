"""Load and soak tests (issue 8): marked slow, run by ``nox -s soak``."""
