"""The web page of a server started with a token, in a real headless chromium.

The token comes once: through the one-time URL ``/?token=...`` that ``agentrt serve``
prints (as Jupyter does: the page removes it from the address bar, and a cookie lets the
page in again), or typed into the page's own form, which a page without a token (or
with a wrong one) shows, saying so when the token was wrong. A new tab asks for it
once. Then the page works as without a token. Runs with ``AGENTRT_BROWSER=1``
(``nox -s browser``), like tests/test_server_browser.py.
"""

import importlib
import re
from pathlib import Path
from typing import Any

from agentrt.server import make_server
from tests.cli.support import AGENT_FILE, serving, write
from tests.page_support import PHONE, chromium, screenshot
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


def _beyond_the_401s(problems: list[str]) -> list[str]:
    """The problems a page reported, but the 401s that made it ask for the token."""
    return [p for p in problems if "responded with a status of 401 (Unauthorized)" not in p]


async def _token_form(page: Any, expect: Any, *, wrong: bool) -> None:
    """The page's one form: its heading, a labelled field, and whether it says "wrong"."""
    await expect(page.get_by_role("heading", name="Access token")).to_be_visible()
    await expect(page.get_by_label("Token", exact=True)).to_be_focused()
    said = page.get_by_role("alert")
    if wrong:
        await expect(said).to_have_text("That token was not accepted: check it and try again.")
        await expect(page.get_by_label("Token", exact=True)).to_have_attribute(
            "aria-invalid", "true"
        )
    else:
        await expect(said).to_be_hidden()


async def test_the_form_asks_for_the_token_and_a_new_tab_asks_once(tmp_path: Path) -> None:
    server = make_server(make_agent, port=0, log_level="warning", token=TOKEN)
    async with running(server), chromium(tmp_path) as browser:
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/")
        await _token_form(page, expect, wrong=False)
        await screenshot(page, "token-desktop")
        await page.get_by_label("Token", exact=True).fill(TOKEN)
        await page.get_by_role("button", name="Open").click()
        await _chat(page, expect)
        # A new tab (the cookie lets the page in; its storage is empty) asks with the
        # same form, once.
        tab = await browser.open(f"http://127.0.0.1:{server.port}/")
        await _token_form(tab, expect, wrong=False)
        await tab.get_by_label("Token", exact=True).fill(TOKEN)
        await tab.get_by_label("Token", exact=True).press("Enter")
        await expect(tab.locator("#status")).to_have_text("ready")
        await tab.reload()
        await expect(tab.locator("#status")).to_have_text("ready")
        await expect(tab.get_by_role("heading", name="Access token")).to_be_hidden()
    # No prompt of the browser's own, no console error.
    assert _beyond_the_401s(browser.problems) == []


async def test_a_wrong_token_is_said_to_be_wrong_and_leaves_the_address(tmp_path: Path) -> None:
    server = make_server(make_agent, port=0, log_level="warning", token=TOKEN)
    async with running(server), chromium(tmp_path) as browser:
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/?token=not-the-token")
        await _token_form(page, expect, wrong=True)
        assert page.url == f"http://127.0.0.1:{server.port}/"
        # Typed wrong: said again; typed right: the page opens.
        await page.get_by_label("Token", exact=True).fill("still-not-the-token")
        await page.get_by_role("button", name="Open").click()
        await _token_form(page, expect, wrong=True)
        await page.get_by_label("Token", exact=True).fill(TOKEN)
        await page.get_by_role("button", name="Open").click()
        await _chat(page, expect)
    assert _beyond_the_401s(browser.problems) == []


async def test_the_token_form_fits_a_phone(tmp_path: Path) -> None:
    server = make_server(make_agent, port=0, log_level="warning", token=TOKEN)
    async with running(server), chromium(tmp_path) as browser:
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/?token=wrong-token", PHONE)
        await _token_form(page, expect, wrong=True)
        await screenshot(page, "token-phone")
        assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        for part in ("#token-form", "#token", "#token-form button"):
            box = await page.locator(part).bounding_box()
            assert box["x"] >= 8, (part, box)
            assert box["x"] + box["width"] <= PHONE["width"] - 8, (part, box)
        # Readable without zooming: the field is a comfortable size for a thumb.
        field = await page.get_by_label("Token", exact=True).bounding_box()
        assert field["height"] >= 32
        await page.get_by_label("Token", exact=True).fill(TOKEN)
        await page.get_by_role("button", name="Open").click()
        await expect(page.locator("#status")).to_have_text("ready")
    assert _beyond_the_401s(browser.problems) == []


async def test_the_url_agentrt_serve_prints_opens_the_page(tmp_path: Path) -> None:
    target = write(tmp_path / "agents.py", AGENT_FILE)
    with serving(f"{target}:make_agent", env={"AGENTRT_TOKEN": TOKEN}) as served:
        printed = re.search(r"open (http://\S+/\?token=)<your token>", "".join(served.log))
        assert printed is not None, served.log
        async with chromium(tmp_path) as browser:
            expect = browser.expect
            page = await browser.open(printed.group(1) + TOKEN)
            await expect(page.locator("#status")).to_have_text("ready")
            assert TOKEN not in page.url
            await page.locator("#input").fill("Add 2 and 3")
            await page.locator("#input").press("Enter")
            await expect(page.locator(".text").last).to_have_text("The sum is 5.")
            await page.reload()
            await expect(page.locator(".text").last).to_have_text("The sum is 5.")
        assert browser.problems == []
    log = "".join(served.log)
    # The one-time URL reached the access log redacted.
    assert "GET /?token=[redacted] HTTP/1.1" in log
    assert TOKEN not in log
