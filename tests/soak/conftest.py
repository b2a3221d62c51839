"""The figures of the load and soak tests, and the order the tests run in.

A test records a line with the ``figures`` fixture; ``nox -s soak`` shows every line
under "load and soak figures", whether the test passed or not (the figures are what
a failure is diagnosed from), without ``-s``.

A module that measures resident memory in the test process says so with
``RSS_IN_PROCESS = True``; its tests run first. The load test leaves a few hundred
MiB of freed memory in the process, which later allocations reuse before the
resident size grows: a leak measured after it would not show.
"""

from collections.abc import Callable

import pytest

_FIGURES = pytest.StashKey[list[str]]()

Figures = Callable[[str], None]
"""Record one line of figures: ``figures("RSS start 45.1 MiB ...")``."""


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Figures:
    """Record lines of figures under the test's name."""
    lines = request.config.stash.setdefault(_FIGURES, [])
    name = request.node.name

    def record(line: str) -> None:
        lines.append(f"{name}: {line}")

    return record


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests of ``RSS_IN_PROCESS`` modules first, the rest in their order."""
    items.sort(
        key=lambda item: (
            not (
                isinstance(item, pytest.Function) and getattr(item.module, "RSS_IN_PROCESS", False)
            )
        )
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the recorded figures in a section of their own."""
    lines = terminalreporter.config.stash.get(_FIGURES, [])
    if lines:
        terminalreporter.section("load and soak figures")
        for line in lines:
            terminalreporter.write_line(line)
