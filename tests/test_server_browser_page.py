"""Issue 29: the chat page as a person uses it, in a real headless chromium.

Answers render their markdown and nothing in them runs; a tool card says what happened
to its call; long output is folded; the view follows the bottom only while the reader
is there; reasoning shows while it streams; the header says what the page waits for;
the phone layout keeps the input readable. Runs with ``AGENTRT_BROWSER=1``
(``nox -s browser``), like tests/test_server_browser.py.
"""

from pathlib import Path
from typing import Any

import anyio

from agentrt import Agent, AssistantMessage, ScriptedModel, ToolCall, ToolError, tool
from agentrt.models.base import ReasoningDelta, TextDelta
from agentrt.models.scripted import ScriptItem
from agentrt.server import make_server
from tests.page_support import (
    PHONE,
    Browser,
    PacedModel,
    chromium,
    log_position,
    screenshot,
)
from tests.test_server_browser import delete_file, pytestmark, running

__all__ = ("pytestmark",)

# -- 4. markdown, rendered and sanitized ------------------------------------------------------

# What a hostile (or confused) model or tool could put in front of the page.
PAYLOADS = (
    "<img src=x onerror=\"window.pwned = 'img'\">\n\n"
    "[click me](javascript:window.pwned='link')\n\n"
    "<a href=\"javascript:window.pwned='anchor'\">or me</a>\n\n"
    "<script>window.pwned = 'script'</script>\n\n"
    '<form action="javascript:void 0"><input name="password"></form>'
)

ANSWER = (
    "Here is the **plan**, with *care*:\n\n"
    "```python\nprint('hi')\n```\n\n"
    "| city | temp |\n|---|---|\n| Lisbon | 21 |\n\n"
    "- first\n- second\n\n"
    "See [the docs](https://example.com/docs).\n\n" + PAYLOADS
)


@tool
def echo(text: str) -> str:
    """Return the text as is.

    Args:
        text: What to return.
    """
    return text


def markdown_agent() -> Agent:
    script: list[ScriptItem] = [
        AssistantMessage(
            content=ANSWER,
            tool_calls=(ToolCall(id="call-echo", name="echo", arguments={"text": PAYLOADS}),),
        ),
        "Echoed.",
    ]
    return Agent(model=ScriptedModel(script, chunk_size=5), tools=[echo])


async def test_answers_render_their_markdown_and_nothing_in_them_runs(tmp_path: Path) -> None:
    async with (
        running(make_server(markdown_agent, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/")
        await expect(page.locator("#status")).to_have_text("ready")
        await page.locator("#input").fill("Show me everything")
        await page.locator("#input").press("Enter")
        answer = page.locator(".text").first
        await expect(page.locator(".text").last).to_have_text("Echoed.")

        # Markdown, as models write it: a code block in a monospace block, a table, a
        # list, emphasis, a link (which opens elsewhere and tells it nothing).
        code = answer.locator("pre > code")
        await expect(code).to_have_text("print('hi')")
        font = await code.evaluate("node => getComputedStyle(node).fontFamily")
        assert "monospace" in font
        await expect(answer.locator("table th")).to_have_text(["city", "temp"])
        await expect(answer.locator("table td")).to_have_text(["Lisbon", "21"])
        await expect(answer.locator("ul > li")).to_have_text(["first", "second"])
        await expect(answer.locator("strong")).to_have_text("plan")
        await expect(answer.locator("em")).to_have_text("care")
        link = answer.locator('a[href="https://example.com/docs"]')
        await expect(link).to_have_text("the docs")
        await expect(link).to_have_attribute("rel", "noopener noreferrer")

        # The payloads are shown as text, never as markup: no image, script, handler or
        # form, no javascript: link; their links do nothing when clicked.
        await expect(answer).to_contain_text("<script>window.pwned = 'script'</script>")
        await expect(answer).to_contain_text("<img src=x onerror=\"window.pwned = 'img'\">")
        for hostile in ("img", "script", "[onerror]", "form", "input[name=password]"):
            await expect(page.locator(f"#log {hostile}")).to_have_count(0)
        await expect(page.locator('#log a[href^="javascript"]')).to_have_count(0)
        await answer.get_by_text("click me").click()
        await answer.get_by_text("or me").click()
        # The tool's result holds the same text, shown as text.
        result = page.locator('.tool[data-id="call-echo"] .result')
        await expect(result).to_contain_text("<img src=x onerror=")
        await expect(result).to_contain_text("<script>window.pwned = 'script'</script>")
        await screenshot(page, "markdown-desktop")
        # Nothing ran: not the payloads, and no CSP violation either (which would
        # mean markup reached the page and only the policy stopped it).
        assert await page.evaluate("typeof window.pwned") == "undefined"
    assert browser.problems == []


# -- 2. and 8. what a card and the header say ---------------------------------------------------


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page (it always fails here).

    Args:
        url: The page.
    """
    raise ToolError(f"{url} did not answer")


def cards_agent() -> Agent:
    script: list[ScriptItem] = [
        ToolCall(id="call-1", name="delete_file", arguments={"path": "notes.txt"}),
        "Deleted.",
        ToolCall(id="call-2", name="fetch_page", arguments={"url": "http://example.invalid"}),
        "It failed.",
        ToolCall(id="call-3", name="delete_file", arguments={"path": "todo.txt"}),
        "Kept it.",
        ToolCall(id="call-4", name="delete_file", arguments={"path": "all.txt"}),
        "Never said.",
    ]
    return Agent(model=ScriptedModel(script, chunk_size=4), tools=[delete_file, fetch_page])


async def _send(page: Any, expect: Any, message: str) -> None:
    await expect(page.locator("#send")).to_be_enabled()
    await page.locator("#input").fill(message)
    await page.locator("#input").press("Enter")


async def _card_states(page: Any, expect: Any) -> None:
    """What each card says, and its colour's class."""
    for call, words, kind in (
        ("call-1", "approved · done", "done"),
        ("call-2", "failed", "failed"),
        ("call-3", "rejected", "rejected"),
        ("call-4", "cancelled", "cancelled"),
    ):
        card = page.locator(f'.tool[data-id="{call}"]')
        await expect(card.locator(".state")).to_have_text(words)
        await expect(card).to_have_class(f"tool {kind}")


async def test_a_card_says_what_happened_to_its_call_and_the_header_what_the_run_waits_for(
    tmp_path: Path,
) -> None:
    async with (
        running(make_server(cards_agent, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/")
        status = page.locator("#status")
        await expect(status).to_have_text("ready")

        # Approved: the card says so as soon as the call is done, without a reload.
        await _send(page, expect, "Delete notes.txt")
        first = page.locator('.tool[data-id="call-1"]')
        await expect(first.locator(".state")).to_have_text("waiting for your approval")
        await expect(status).to_have_text("waiting for you")
        await first.locator("button.approve").click()
        await expect(first.locator(".result")).to_have_text("deleted notes.txt")
        await expect(first.locator(".state")).to_have_text("approved · done")
        await expect(status).to_have_text("ready")

        # Failed: drawn as failed, not done.
        await _send(page, expect, "Fetch the page")
        await expect(page.locator(".text").last).to_have_text("It failed.")

        # Rejected.
        await _send(page, expect, "Delete todo.txt")
        third = page.locator('.tool[data-id="call-3"]')
        await third.locator("button.reject").click()
        await third.locator("input.reason").fill("I need it")
        await third.locator("button.confirm-reject").click()
        await expect(page.locator(".text").last).to_have_text("Kept it.")

        # Stopped while the confirmation waits: cancelled, said in words, and the
        # header is ready again (not "stopping…") with Send enabled.
        await _send(page, expect, "Delete everything")
        fourth = page.locator('.tool[data-id="call-4"]')
        await expect(status).to_have_text("waiting for you")
        await screenshot(page, "waiting-desktop")

        async def answer_stop_late(route: Any) -> None:
            # As on a slow network: the end of the run reaches the page before the
            # answer to Stop does.
            response = await route.fetch()
            await expect(page.locator("#send")).to_be_enabled()
            await route.fulfill(response=response)

        await page.route("**/sessions/*/run", answer_stop_late)
        await page.locator("#stop").click()
        await expect(fourth.locator(".state")).to_have_text("cancelled")
        await expect(fourth.locator("button")).to_have_count(0)
        await expect(page.locator(".note.stopped")).to_have_text(
            "Stopped: the run was cancelled before it finished."
        )
        await expect(page.locator("#send")).to_be_enabled()
        await expect(status).to_have_text("ready")
        await expect(page.locator("#stop")).to_be_hidden()
        await _card_states(page, expect)
        await expect(page.get_by_text("DELETE /sessions")).to_have_count(0)
        await expect(page.locator(".error")).to_have_count(0)
        await screenshot(page, "cards-desktop")

        # A reload replays the session: every card says the same.
        await page.reload()
        await expect(status).to_have_text("ready")
        await _card_states(page, expect)
    assert browser.problems == []


# -- 5. long tool output --------------------------------------------------------------------

LINES = [f"{n:05d} " + "log line of the service, long enough to wrap" for n in range(400)]
LONG = "\n".join(LINES)  # 20,399 characters


@tool
def read_log() -> str:
    """Read the service's log."""
    return LONG


def long_output_agent() -> Agent:
    script: list[ScriptItem] = [ToolCall(id="call-log", name="read_log"), "That is the log."]
    return Agent(model=ScriptedModel(script, chunk_size=50), tools=[read_log])


async def _folded_card(browser: Browser, url: str, viewport: dict[str, int], name: str) -> None:
    expect = browser.expect
    page = await browser.open(url, viewport)
    await expect(page.locator("#status")).to_have_text("ready")
    await _send(page, expect, "Show me the log")
    await expect(page.locator(".text").last).to_have_text("That is the log.")
    card = page.locator('.tool[data-id="call-log"]')
    result = card.locator(".result")
    # Folded: the first lines and a button, the card a fraction of a screen tall; the
    # whole text is there for "Show all".
    await expect(result).to_contain_text(LINES[0])
    await expect(result).to_contain_text(LINES[-1])
    folded = await card.bounding_box()
    assert folded["height"] < viewport["height"] / 2, folded
    await screenshot(page, f"long-output-{name}")
    await card.get_by_role("button", name="Show all (400 lines, 20,399 characters)").click()
    unfolded = await card.bounding_box()
    assert unfolded["height"] > 3 * viewport["height"], unfolded
    await card.get_by_role("button", name="Show less").click()
    assert (await card.bounding_box())["height"] == folded["height"]
    await page.close()


async def test_long_tool_output_is_folded_on_desktop_and_on_a_phone(tmp_path: Path) -> None:
    async with (
        running(make_server(long_output_agent, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        url = f"http://127.0.0.1:{server.port}/"
        await _folded_card(browser, url, {"width": 1280, "height": 800}, "desktop")
        await _folded_card(browser, url, PHONE, "phone")
    assert browser.problems == []


# -- 6. following the bottom ------------------------------------------------------------------


async def test_streaming_follows_the_bottom_only_while_the_reader_is_there(
    tmp_path: Path,
) -> None:
    halfway = anyio.Event()
    first = [TextDelta(f"Line {n} of the answer.\n\n") for n in range(1, 61)]
    rest = [TextDelta(f"Line {n} of the answer.\n\n") for n in range(61, 121)]

    def make() -> Agent:
        return Agent(model=PacedModel(*first, halfway, *rest))

    async with (
        running(make_server(make, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/")
        await expect(page.locator("#status")).to_have_text("ready")
        await _send(page, expect, "Tell me a long story")
        answer = page.locator(".text").first
        await expect(answer).to_contain_text("Line 60 of the answer.")
        # At the bottom while it streams: the view follows.
        assert (await log_position(page))["fromBottom"] < 40

        # The reader scrolls up to read; the answer goes on below.
        await page.mouse.move(640, 300)
        await page.mouse.wheel(0, -800)
        await page.wait_for_function(
            "() => { const l = document.getElementById('log');"
            " return l.scrollHeight - l.scrollTop - l.clientHeight > 500; }"
        )
        reading = await log_position(page)
        halfway.set()
        await expect(answer).to_contain_text("Line 120 of the answer.")
        await expect(page.locator("#status")).to_have_text("ready")
        # The reader was left where they were reading.
        assert abs((await log_position(page))["top"] - reading["top"]) <= 1

        # Back at the bottom, the next answer is followed again.
        await page.mouse.wheel(0, 100_000)
        await page.wait_for_function(
            "() => { const l = document.getElementById('log');"
            " return l.scrollHeight - l.scrollTop - l.clientHeight < 2; }"
        )
        await _send(page, expect, "Again")
        await expect(page.locator(".text").nth(1)).to_contain_text("Line 120 of the answer.")
        await expect(page.locator("#status")).to_have_text("ready")
        assert (await log_position(page))["fromBottom"] < 40
    assert browser.problems == []


# -- 8. reasoning while it streams; the phone's input ----------------------------------------


async def test_reasoning_shows_while_it_streams_and_folds_when_the_answer_comes(
    tmp_path: Path,
) -> None:
    thought = anyio.Event()

    def make() -> Agent:
        return Agent(
            model=PacedModel(
                ReasoningDelta("The user wants "),
                ReasoningDelta("a haiku about autumn."),
                thought,
                TextDelta("Autumn moonlight, a worm digs silently into the chestnut."),
            )
        )

    async with (
        running(make_server(make, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/")
        await expect(page.locator("#status")).to_have_text("ready")
        await _send(page, expect, "A haiku, please")
        reasoning = page.locator("details.reasoning")
        await expect(reasoning).to_contain_text("The user wants a haiku about autumn.")
        await expect(reasoning).to_have_attribute("open", "")
        await expect(reasoning.locator("pre")).to_be_visible()
        await expect(page.locator("#status")).to_have_text("running…")
        thought.set()
        await expect(page.locator(".text")).to_contain_text("Autumn moonlight")
        await expect(page.locator("#status")).to_have_text("ready")
        assert await reasoning.get_attribute("open") is None
        await expect(reasoning.locator("pre")).to_be_hidden()
    assert browser.problems == []


_PLACEHOLDER_FITS = """() => {
    // The placeholder laid out as the textarea lays it out: does it fit its height?
    const input = document.getElementById("input");
    const style = getComputedStyle(input);
    const probe = document.createElement("div");
    for (const name of ["font", "padding", "border", "boxSizing", "letterSpacing",
                        "lineHeight", "wordSpacing"]) {
        probe.style[name] = style[name];
    }
    probe.style.width = input.getBoundingClientRect().width + "px";
    probe.style.whiteSpace = "pre-wrap";
    probe.style.position = "absolute";
    probe.style.visibility = "hidden";
    probe.textContent = input.placeholder;
    document.body.append(probe);
    const needed = probe.getBoundingClientRect().height;
    probe.remove();
    return { needed, shown: input.getBoundingClientRect().height };
}"""


async def test_on_a_phone_the_input_and_its_placeholder_fit_beside_stop(tmp_path: Path) -> None:
    held = anyio.Event()

    def make() -> Agent:
        return Agent(model=PacedModel(TextDelta("Thinking it over"), held, TextDelta(".")))

    async with (
        running(make_server(make, port=0, log_level="warning")) as server,
        chromium(tmp_path) as browser,
    ):
        expect = browser.expect
        page = await browser.open(f"http://127.0.0.1:{server.port}/", PHONE)
        await expect(page.locator("#status")).to_have_text("ready")
        await _send(page, expect, "Think it over")
        await expect(page.locator(".text")).to_have_text("Thinking it over")
        await expect(page.locator("#stop")).to_be_visible()
        fit = await page.evaluate(_PLACEHOLDER_FITS)
        assert fit["needed"] <= fit["shown"], fit
        # Nothing is wider than the phone: no sideways scrolling.
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"]
        for control in ("#input", "#send", "#stop", "#new"):
            box = await page.locator(control).bounding_box()
            assert box["x"] >= 0, (control, box)
            assert box["x"] + box["width"] <= PHONE["width"], (control, box)
        await screenshot(page, "running-phone")
        held.set()
        await expect(page.locator(".text")).to_have_text("Thinking it over.")
        await expect(page.locator("#status")).to_have_text("ready")
    assert browser.problems == []
