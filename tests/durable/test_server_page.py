"""Issue 29: the web page on a durable ``agentrt serve`` killed with ``kill -9`` mid-run.

A real chromium follows a run while its server process is killed and started again on
the same store and port (tests/durable/server_app.py): the output the crash abandoned
looks abandoned and the re-made answer has a bubble of its own; an answer that could
not reach the dead server can be given again, and leaves no error behind. Runs with
``AGENTRT_BROWSER=1`` (``nox -s browser``), like tests/test_server_browser.py.
"""

from pathlib import Path
from typing import Any

from tests.page_support import chromium, screenshot
from tests.test_server_browser import pytestmark

from .conftest import ServerProcess, Servers
from .server_app import WEATHER, WEATHER_CUT, WEATHER_REASONING

__all__ = ("pytestmark",)

RESTART_MS = 90_000  # a server start on a loaded machine, then the page's next try


def _port(server: ServerProcess) -> int:
    return int(server.url.rsplit(":", 1)[1])


# What chromium says of the requests a killed server could not answer: the stream it
# cut, a connection it dropped or closed (which of these depends on the moment of the
# kill), and the tries while it was down.
DOWN = (
    "net::ERR_CONNECTION_REFUSED",
    "net::ERR_CONNECTION_RESET",
    "net::ERR_CONNECTION_CLOSED",
    "net::ERR_CONNECTION_ABORTED",
    "net::ERR_SOCKET_NOT_CONNECTED",
    "net::ERR_EMPTY_RESPONSE",
    "net::ERR_INCOMPLETE_CHUNKED_ENCODING",
)


def _beyond_the_restart(problems: list[str]) -> list[str]:
    """The problems a page reported, but its requests to the server while it was down."""
    return [p for p in problems if not any(error in p for error in DOWN)]


async def _abandoned_and_made_again(page: Any, expect: Any) -> None:
    turn = page.locator(".turn").last
    abandoned = turn.locator("details.abandoned")
    await expect(abandoned).to_have_count(1)
    await expect(abandoned.locator("summary").first).to_have_text(
        "The server restarted during this step: its output so far is abandoned, "
        "and the step runs again"
    )
    # Kept, folded away and struck through.
    assert await abandoned.get_attribute("open") is None
    await expect(abandoned.locator(".text")).to_have_text(WEATHER_CUT.strip())
    await expect(abandoned.locator("details.reasoning")).to_contain_text(WEATHER_REASONING)
    decoration = await abandoned.locator(".text").evaluate(
        "node => getComputedStyle(node).textDecorationLine"
    )
    assert decoration == "line-through"
    # The answer made again: a bubble of its own, its reasoning shown once.
    await expect(turn.locator(":scope > .text")).to_have_text([WEATHER])
    await expect(turn.locator(":scope > details.reasoning")).to_have_count(1)
    await expect(page.locator(".error")).to_have_count(0)


async def _asked_to_approve(browser: Any, url: str) -> tuple[Any, Any, Any]:
    """The page at ``url``, its ``confirm`` message sent and waiting for approval: the
    page, its status line, and the card of the call that waits."""
    expect = browser.expect
    page = await browser.open(url + "/")
    status = page.locator("#status")
    await expect(status).to_have_text("ready")
    await page.locator("#input").fill("confirm")
    await page.locator("#input").press("Enter")
    card = page.locator('.tool[data-id="call-delete-1"]')
    await expect(status).to_have_text("waiting for you")
    return page, status, card


async def test_output_a_crash_abandoned_looks_abandoned_and_the_answer_starts_afresh(
    sqlite_servers: Servers, tmp_path: Path
) -> None:
    servers = sqlite_servers
    first = servers.start("exec-a", block=True)
    async with chromium(tmp_path) as browser:
        expect = browser.expect
        page = await browser.open(first.url + "/")
        status = page.locator("#status")
        await expect(status).to_have_text("ready")
        await page.locator("#input").fill("weather")
        await page.locator("#input").press("Enter")
        # The answer streams up to where the model stops; the server dies there.
        await expect(page.locator(".text")).to_have_text(WEATHER_CUT.strip())
        servers.wait_for("stream.started")
        servers.kill(first)
        await expect(status).to_have_text("reconnecting…")

        servers.start("exec-a", port=_port(first))
        await expect(status).to_have_text("ready", timeout=RESTART_MS)
        await _abandoned_and_made_again(page, expect)
        await page.locator(".turn details.abandoned > summary").click()
        await screenshot(page, "abandoned-desktop")

        # A reload replays the session's log: the same.
        await page.reload()
        await expect(status).to_have_text("ready")
        await _abandoned_and_made_again(page, expect)
    assert _beyond_the_restart(browser.problems) == []


async def test_an_answer_that_did_not_reach_a_dead_server_is_given_again_and_leaves_no_error(
    sqlite_servers: Servers, tmp_path: Path
) -> None:
    servers = sqlite_servers
    first = servers.start("exec-a")
    async with chromium(tmp_path) as browser:
        expect = browser.expect
        page, status, card = await _asked_to_approve(browser, first.url)
        servers.kill(first)
        await expect(status).to_have_text("reconnecting…")

        # Approved while the server is down: the card says the answer did not go.
        await card.locator("button.approve").click()
        problem = card.locator(".problem")
        await expect(problem).to_have_text(
            "Your answer did not reach the server (the server did not answer); try again."
        )
        await expect(card.locator("button.approve")).to_be_enabled()

        # The server is back, the run recovered and still waits: approved again, it goes.
        servers.start("exec-a", port=_port(first))
        await expect(status).to_have_text("waiting for you", timeout=RESTART_MS)
        await card.locator("button.approve").click()
        await expect(card.locator(".state")).to_have_text("approved · done")
        await expect(card.locator(".result")).to_have_text("deleted notes.txt")
        await expect(page.locator(".text").last).to_have_text("all done: deleted notes.txt")
        await expect(status).to_have_text("ready")
        await expect(problem).to_be_hidden()
        await expect(page.locator(".error")).to_have_count(0)
    assert servers.lines("delete.count") == ["notes.txt"]
    assert _beyond_the_restart(browser.problems) == []


async def test_stop_while_a_confirmation_waits_cancels_the_call_and_the_header_is_ready_again(
    sqlite_servers: Servers, tmp_path: Path
) -> None:
    servers = sqlite_servers
    server = servers.start("exec-a")
    async with chromium(tmp_path) as browser:
        expect = browser.expect
        page, status, card = await _asked_to_approve(browser, server.url)
        await page.locator("#stop").click()
        await expect(card.locator(".state")).to_have_text("cancelled")
        await expect(card).to_have_class("tool cancelled")
        await expect(page.locator(".note.stopped")).to_have_text(
            "Stopped: the run was cancelled before it finished."
        )
        await expect(page.locator("#send")).to_be_enabled()
        # Whichever came first, the end of the run or the answer to Stop: ready.
        await expect(status).to_have_text("ready")
        await page.locator("#input").fill("weather")
        await page.locator("#input").press("Enter")
        await expect(page.locator(".text").last).to_have_text(WEATHER)
        await expect(status).to_have_text("ready")
    assert servers.lines("delete.count") == []
    assert browser.problems == []
