"""What the browser tests of the web page share: a chromium, a page, a model that waits.

The tests drive Debian's chromium through Playwright (``nox -s browser``), as a person
would: they type, click, scroll with the mouse wheel and reload. With
``AGENTRT_SCREENSHOTS=DIR`` set, they also save screenshots of what they saw there.
"""

import importlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from agentrt.messages import Usage
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    UsageChunk,
)
from tests.test_server_browser import CHROMIUM, FLAGS, TIMEOUT_MS

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def playwright_api() -> Any:
    # Imported here, and not skipped when missing: with AGENTRT_BROWSER=1 a missing
    # playwright is a failure, not a quiet skip.
    return importlib.import_module("playwright.async_api")


@dataclass
class Browser:
    """A fresh chromium profile, and what its pages reported as wrong."""

    context: Any
    expect: Any
    problems: list[str] = field(default_factory=list)

    async def open(self, url: str, viewport: dict[str, int] = DESKTOP) -> Any:
        """A new tab of ``viewport``'s size on ``url``; its console errors become problems."""
        page = await self.context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        await page.set_viewport_size(viewport)

        def on_console(message: Any) -> None:
            # A CSP violation shows up here: the page must run under its own policy.
            if message.type in ("error", "warning"):
                self.problems.append(f"console {message.type}: {message.text}")

        page.on("console", on_console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("dialog", lambda dialog: self.problems.append(f"dialog: {dialog.message}"))
        if url:
            await page.goto(url)
        return page


@asynccontextmanager
async def chromium(tmp_path: Path) -> AsyncIterator[Browser]:
    """Chromium on a fresh profile: nothing cached, nothing signed in."""
    api = playwright_api()
    async with api.async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        try:
            yield Browser(context, api.expect)
        finally:
            await context.close()


async def screenshot(page: Any, name: str) -> None:
    """Save what ``page`` shows as ``$AGENTRT_SCREENSHOTS/name.png``, when that is set."""
    folder = os.environ.get("AGENTRT_SCREENSHOTS")
    if folder:
        # Playwright makes the folder.
        await page.screenshot(path=str(Path(folder) / f"{name}.png"))


async def log_position(page: Any) -> dict[str, float]:
    """Where the conversation is scrolled: its top, and how far that is from the bottom."""
    position: dict[str, float] = await page.evaluate(
        """() => {
            const log = document.getElementById("log");
            return { top: log.scrollTop,
                     fromBottom: log.scrollHeight - log.scrollTop - log.clientHeight };
        }"""
    )
    return position


class PacedModel:
    """Streams its parts in order, and at each :class:`anyio.Event` waits until it is set.

    The test sees the page at that point of the answer, then lets the model go on.
    """

    name = "paced"

    def __init__(self, *parts: StreamChunk | anyio.Event) -> None:
        self.parts = parts

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        for part in self.parts:
            if isinstance(part, anyio.Event):
                await part.wait()
            else:
                yield part
        yield UsageChunk(Usage(1, 1, requests=1))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        text = reasoning = ""
        async for chunk in self.stream(request):
            if isinstance(chunk, TextDelta):
                text += chunk.text
            elif isinstance(chunk, ReasoningDelta):
                reasoning += chunk.text
        return ModelResponse(content=text, reasoning=reasoning or None)
