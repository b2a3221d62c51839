"""The web page of a server started with a token, in a real headless chromium.

The token comes once: through the one-time URL ``/#token=...`` (the fragment never
reaches the server, and the page removes it from the address bar), or typed in when the
server first answers 401. Then the page works as without a token. Runs with
``AGENTRT_BROWSER=1`` (``nox -s browser``), like tests/test_server_browser.py.
"""

import importlib
from pathlib import Path
from typing import Any

from agentrt.server import make_server
from tests.test_server_browser import (
    CHROMIUM,
    FLAGS,
    TIMEOUT_MS,
    make_agent,
    pytestmark,
    running,
)

__all__ = ("pytestmark",)

TOKEN = "browser-token-0123456789"


async def _chat(page: Any, expect: Any) -> None:
    """Send a message, approve the tool call, read the answer."""
    await expect(page.locator("#status")).to_have_text("ready")
    await page.locator("#input").fill("Please delete notes.txt")
    await page.locator("#input").press("Enter")
    card = page.locator('.tool[data-id="call-1"]')
    await card.locator("button.approve").click()
    await expect(card.locator(".result")).to_have_text("deleted notes.txt")
    await expect(page.locator(".text").nth(1)).to_have_text("The file is gone.")


async def test_the_page_takes_the_token_from_a_one_time_url(tmp_path: Path) -> None:
    playwright_api: Any = importlib.import_module("playwright.async_api")
    expect = playwright_api.expect
    seen: list[str] = []
    server = make_server(make_agent, port=0, log_level="warning", token=TOKEN)
    async with running(server), playwright_api.async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        try:
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.on("request", lambda request: seen.append(request.url))
            await page.goto(f"http://127.0.0.1:{server.port}/#token={TOKEN}")
            await _chat(page, expect)
            assert TOKEN not in page.url  # removed from the address bar
        finally:
            await context.close()
    assert seen
    assert not [url for url in seen if TOKEN in url]  # never in a URL the server saw


async def test_the_page_asks_for_the_token_once(tmp_path: Path) -> None:
    playwright_api: Any = importlib.import_module("playwright.async_api")
    expect = playwright_api.expect
    asked: list[str] = []
    server = make_server(make_agent, port=0, log_level="warning", token=TOKEN)
    async with running(server), playwright_api.async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        try:
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT_MS)

            async def answer(dialog: Any) -> None:
                asked.append(dialog.message)
                await dialog.accept(TOKEN)

            page.on("dialog", answer)
            await page.goto(f"http://127.0.0.1:{server.port}/")
            await _chat(page, expect)
        finally:
            await context.close()
    assert asked == ["This server needs its access token:"]
