"""The web page of a server started with a token, in a real headless chromium.

The token comes once: through the one-time URL ``/?token=...`` (as Jupyter does: the
page removes it from the address bar, and a cookie lets the page in again), or typed into
the form the server answers without it. A new tab, let in by the cookie, asks for it
once. Then the page works as without a token. Runs with
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
            one_time = f"http://127.0.0.1:{server.port}/?token={TOKEN}"
            await page.goto(one_time)
            await _chat(page, expect)
            assert TOKEN not in page.url  # removed from the address bar
            await page.reload()  # the cookie lets the page in again, the tab keeps the token
            await expect(page.locator("#status")).to_have_text("ready")
        finally:
            await context.close()
    assert seen
    # In the one-time URL only, never in a request the page made.
    assert [url for url in seen if TOKEN in url] == [one_time]


async def test_the_form_asks_for_the_token_and_a_new_tab_asks_once(tmp_path: Path) -> None:
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
            await page.locator('input[name="token"]').fill(TOKEN)
            await page.locator('button[type="submit"]').click()
            await _chat(page, expect)
            assert asked == []  # the form was the one question
            tab = await context.new_page()  # the cookie lets it in; its storage is empty
            tab.set_default_timeout(TIMEOUT_MS)
            tab.on("dialog", answer)
            await tab.goto(f"http://127.0.0.1:{server.port}/")
            await expect(tab.locator("#status")).to_have_text("ready")
        finally:
            await context.close()
    assert asked == ["This server needs its access token:"]
