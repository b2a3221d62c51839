"""Issue 25: the page shows who is speaking in a team, served by ``agentrt serve``.

A real ``agentrt serve`` (tests/page_team.py:make_team) and Debian's chromium
(``nox -s browser``, ``AGENTRT_BROWSER=1``). The desk hands off to billing, which gives
two tasks at once: each sub-agent's run shows inside the card of the call that gave it
the task, under the sub-agent's name, at any depth; the auditor's confirmation, two
levels under billing's turn, is answered on its card; a reload shows the same.
"""

from pathlib import Path
from typing import Any

from tests.cli.support import serving
from tests.page_support import PHONE, chromium, screenshot
from tests.test_server_browser import pytestmark

__all__ = ("pytestmark",)

TEAM = f"{Path(__file__).with_name('page_team.py')}:make_team"


def card(scope: Any, call_id: str) -> Any:
    return scope.locator(f'.tool[data-id="{call_id}"]')


def run_of(scope: Any, call_id: str, agent: str) -> Any:
    """The box of the run that call ``call_id`` delegated to ``agent``."""
    return card(scope, call_id).locator(f':scope > .subrun[data-agent="{agent}"]')


async def see_the_team(page: Any, expect: Any) -> None:
    """What the first message's run shows, once it is over."""
    log = page.locator("#log")
    await expect(log.locator(".note.team").first).to_have_text(
        "Team: desk, billing, ledger, mailer, auditor · desk answers"
    )
    # The turn's own speakers, each named where they start: the desk, then billing.
    turn = log.locator(".turn").first
    await expect(turn.locator(":scope > .who")).to_have_text(["desk", "billing"])
    await expect(turn.locator(":scope > .text")).to_have_text(
        ["Billing will help you.", "Done: order 42 is refunded and the customer knows."]
    )
    await expect(turn.locator(":scope > .note.switch")).to_have_text("desk hands over to billing")
    # Each delegated run inside its call's card, under its agent's name; the two runs of
    # billing's turn keep their text apart.
    ledger = run_of(turn, "t1", "ledger")
    mailer = run_of(turn, "t2", "mailer")
    await expect(ledger.locator(":scope > .who")).to_have_text("ledger")
    await expect(ledger.locator(":scope > .text")).to_have_text(
        ["Asking the auditor.", "Order 42 is refunded."]
    )
    await expect(mailer.locator(":scope > .who")).to_have_text("mailer")
    await expect(mailer.locator(":scope > .text")).to_have_text("Email to the customer sent.")
    await expect(card(turn, "t1").locator(":scope > .result")).to_have_text(
        "Order 42 is refunded."
    )
    await expect(card(turn, "t2").locator(":scope > .result")).to_have_text(
        "Email to the customer sent."
    )
    # Two levels down: the auditor's run in the ledger's call, its refund in it.
    auditor = run_of(ledger, "t3", "auditor")
    await expect(auditor.locator(":scope > .text")).to_have_text(
        "Refund of order 42 approved and done."
    )
    refund = card(auditor, "r1")
    await expect(refund.locator(".result")).to_have_text("order 42 refunded")
    await expect(refund.locator(".state")).to_have_text("approved · done")


async def test_the_page_names_who_speaks_and_answers_a_confirmation_two_levels_down(
    tmp_path: Path,
) -> None:
    with serving(TEAM) as served:
        async with chromium(tmp_path) as browser:
            expect = browser.expect
            page = await browser.open(served.url + "/")
            await expect(page.locator("#status")).to_have_text("ready")
            await page.locator("#input").fill("Please refund order 42.")
            await page.locator("#input").press("Enter")

            # The auditor asks, under the ledger, under billing's call: answered there.
            refund = card(
                run_of(run_of(page.locator("#log"), "t1", "ledger"), "t3", "auditor"), "r1"
            )
            await expect(refund.locator(".state")).to_have_text("waiting for your approval")
            await expect(refund.locator(".arguments")).to_contain_text('"order": 42')
            await expect(page.locator("#status")).to_have_text("waiting for you")
            await screenshot(page, "team-waiting-desktop")
            await refund.locator("button.approve").click()
            await expect(page.locator("#status")).to_have_text("ready")
            await see_the_team(page, expect)
            await screenshot(page, "team-desktop")

            # The next message goes to billing, which spoke last: the page says so.
            await page.locator("#input").fill("Thanks!")
            await page.locator("#input").press("Enter")
            second = page.locator("#log .turn").nth(1)
            await expect(second.locator(":scope > .text")).to_have_text("You are welcome.")
            await expect(second.locator(":scope > .who")).to_have_text("billing")
            await expect(page.locator("#log .note.team")).to_have_text(
                [
                    "Team: desk, billing, ledger, mailer, auditor · desk answers",
                    "Team: desk, billing, ledger, mailer, auditor · billing answers",
                ]
            )

            # A reload replays the session's events: the same nesting, the same names.
            await page.reload()
            await expect(page.locator("#status")).to_have_text("ready")
            await see_the_team(page, expect)
            await page.set_viewport_size(PHONE)
            await screenshot(page, "team-phone")
        assert browser.problems == []
