"""Issue 27, fork on the web page: "Edit" resends a user message, "Fork from here" branches.

In a real headless chromium (``nox -s browser``, like tests/test_server_browser.py): a
person edits a message they sent and resends it, and forks the conversation at a tool's
result; each time the page shows the new session, its history then what goes on, and
the model and the tools are called only for what is new. The original session is
untouched.
"""

from pathlib import Path

import httpx

from agentrt.server import make_server
from tests.page_support import chromium, screenshot
from tests.test_server_browser import pytestmark, running
from tests.test_server_fork import CALLS, _fresh_calls, make

__all__ = ("_fresh_calls", "pytestmark")


async def test_edit_and_resend_and_fork_from_here_open_new_sessions(tmp_path: Path) -> None:
    async with (
        running(make_server(make, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        expect = browser.expect
        base = f"http://127.0.0.1:{server.port}"
        page = await browser.open(f"{base}/")
        await expect(page.locator("#status")).to_have_text("ready")
        await page.locator("#input").fill("sum please")
        await page.locator("#input").press("Enter")
        await expect(page.locator(".text")).to_have_text("3, as you asked")
        original = await page.evaluate("JSON.parse(sessionStorage['agentrt.session']).id")
        assert CALLS == ["model", "add 1 2", "model"]
        CALLS.clear()

        # Edit the message and resend it: a new session answers the new one.
        await page.get_by_role("button", name="Edit").click()
        await page.get_by_label("Edited message").fill("delete")
        await page.get_by_role("button", name="Resend").click()
        await expect(page.locator(".user")).to_have_text(["delete"])
        card = page.locator('.tool[data-id="del-1"]')
        await expect(card.locator(".state")).to_have_text("waiting for your approval")
        edited = await page.evaluate("JSON.parse(sessionStorage['agentrt.session']).id")
        assert edited != original
        await card.get_by_role("button", name="Approve", exact=True).click()
        await expect(page.locator(".text")).to_have_text("deleted x, as you asked")
        await screenshot(page, "fork-edited")
        assert CALLS == ["model", "delete x", "model"]
        CALLS.clear()

        # Back to the original (a reload of its id), and fork it at the tool's result:
        # the history up to there, then only the model's answer is made again.
        await page.evaluate(
            "id => sessionStorage.setItem('agentrt.session', JSON.stringify({id, lastSeq: 0}))",
            original,
        )
        await page.reload()
        await expect(page.locator(".text")).to_have_text("3, as you asked")
        assert CALLS == []
        # The button under the tool's card (the first of the turn; its end has one too).
        await page.get_by_role("button", name="Fork from here").first.click()
        await expect(page.locator(".user")).to_have_text(["sum please"])
        await expect(page.locator('.tool[data-id="add-1"] .state')).to_have_text("done")
        await expect(page.locator(".text")).to_have_text("3, as you asked")
        forked = await page.evaluate("JSON.parse(sessionStorage['agentrt.session']).id")
        assert forked not in (original, edited)
        await expect(page.locator("#status")).to_have_text("ready")
        assert CALLS == ["model"]
        await screenshot(page, "fork-from-here")

        # The original is untouched.
        async with httpx.AsyncClient(base_url=base) as client:
            messages = (await client.get(f"/sessions/{original}/messages")).json()["messages"]
        assert [(m["role"], m["content"]) for m in messages] == [
            ("user", "sum please"),
            ("assistant", ""),
            ("tool", "3"),
            ("assistant", "3, as you asked"),
        ]
    assert browser.problems == []
