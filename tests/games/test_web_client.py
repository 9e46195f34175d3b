"""The reference web client (/play/) end to end: a person opens the page in headless Chromium,
starts a table against three bots, passes, plays a whole hand by clicking only the cards the page
enables, and reads the same scoresheet on screen as the REST API answers. Real uvicorn server,
PostgreSQL, Redis and a Celery worker for the bots."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import skip_or_fail

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright's own browser download is not used
CARD_NAME = re.compile(r"^(?:[2-9]|10|Jack|Queen|King|Ace) of (?:clubs|diamonds|spades|hearts)$")
SUIT_ORDER = "CDSH"
RANKS = "23456789TJQKA"


def _sort_key(card: str) -> tuple[int, int]:
    return SUIT_ORDER.index(card[-1]), RANKS.index(card[0])


def _with_stale_version(route: Any) -> None:
    """Send the page's action as if it had read the table one version earlier: a real 409."""
    body = json.loads(route.request.post_data or "{}")
    body["expected_version"] -= 1
    route.continue_(post_data=json.dumps(body))


def test_a_person_plays_a_hand_in_the_browser(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    workers()
    base = web()
    problems: list[str] = []
    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            page.on(
                "console",
                lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

            page.goto(f"{base}/play/")
            page.fill("#name", "Ada")
            page.select_option("#level", "basic")
            page.select_option("#clock", "300")
            page.click("#create")
            page.wait_for_selector('#app[data-my-turn="pass"]')

            # The page made a guest, a table against three basic bots, and sat us at seat 0.
            table_id = int(page.get_attribute("#app", "data-table") or 0)
            token = page.evaluate("localStorage.getItem('hearts.token')")
            auth = {"Authorization": f"Bearer {token}"}

            def rest() -> dict[str, Any]:
                return httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()

            body = rest()
            assert body["your_seat"] == 0
            assert [s["bot"] for s in body["seats"]] == [None, "basic", "basic", "basic"]
            assert body["clocks"]["play"] == 300 and body["seats"][0]["name"] == "Ada"

            # The hand, sorted by suit, with card names for screen readers; the clock counts down.
            hand = page.locator("#hand [data-card]")
            shown = [hand.nth(i).get_attribute("data-card") or "" for i in range(hand.count())]
            assert shown == sorted(body["game"]["hand"], key=_sort_key)
            assert all(CARD_NAME.match(hand.nth(i).get_attribute("aria-label") or "") for i in range(13))
            assert re.search(r"\d+ s left on your turn", page.inner_text("#clock-line"))
            assert "pass left to West" in page.inner_text("#pass-direction")

            # Pass: the button is enabled only with exactly three cards chosen.
            for card in shown[-3:]:
                assert page.is_disabled("#pass")
                page.click(f'#hand [data-card="{card}"]')
            assert page.is_enabled("#pass")
            page.click(f'#hand [data-card="{shown[0]}"]')  # a fourth is not taken
            assert page.get_attribute(f'#hand [data-card="{shown[0]}"]', "aria-pressed") == "false"
            page.click("#pass")

            # Play the whole hand, clicking an enabled card whenever it is our turn.
            compared = plays = 0
            first_row = '#scoresheet tr[data-hand="1"]'
            while not page.locator(first_row).count():
                assert time.monotonic() - started < 90, "the hand took too long"
                try:
                    page.wait_for_selector(
                        f'#app[data-my-turn="play"], #app[data-my-turn="moon"], {first_row}'
                    )
                except Exception as exc:  # say what the page and the API showed
                    on_page = {
                        k: page.get_attribute("#app", f"data-{k}") for k in ("version", "phase", "my-turn")
                    }
                    now = rest()
                    state = {k: now["game"][k] for k in ("phase", "to_act", "legal_actions")}
                    raise AssertionError(
                        f"page {on_page} {page.inner_text('#turn')!r} {page.inner_text('#status')!r}; "
                        f"REST version {now['version']} {state}; console {problems}"
                    ) from exc
                turn = page.get_attribute("#app", "data-my-turn")
                if page.locator(first_row).count():
                    break
                if turn == "moon":  # we shot the moon
                    page.click('[data-moon="subtract"]')
                    page.wait_for_selector('#app:not([data-my-turn="moon"])')
                    continue
                version = int(page.get_attribute("#app", "data-version") or 0)
                cards = page.locator("#hand [data-card]")
                enabled = set(
                    page.eval_on_selector_all(
                        "#hand [data-card]:not(:disabled)", "b => b.map(x => x.dataset.card)"
                    )
                )
                disabled = set(
                    page.eval_on_selector_all("#hand [data-card]:disabled", "b => b.map(x => x.dataset.card)")
                )
                body = rest()
                if body["version"] == version:  # the page and REST see the same moment
                    legal = set(body["game"]["legal_actions"]["cards"])
                    assert enabled == legal
                    assert disabled == set(body["game"]["hand"]) - legal
                    assert cards.count() == len(body["game"]["hand"])
                    compared += 1
                card = sorted(enabled, key=_sort_key)[0]
                if plays == 0:  # a refused action shows the API's code and detail in the status line
                    page.route("**/actions", _with_stale_version)
                    page.click(f'#hand [data-card="{card}"]')
                    page.wait_for_selector('#status[data-kind="error"]')
                    assert page.inner_text("#status").startswith("stale_version: ")
                    page.unroute("**/actions", _with_stale_version)
                    page.wait_for_selector(f'#hand [data-card="{card}"]:not(:disabled)')
                page.click(f'#hand [data-card="{card}"]')
                page.wait_for_selector(f'#app:not([data-version="{version}"])')  # the play was answered
                plays += 1
            assert plays == 13 and compared >= 1

            # The scoresheet on screen is the REST scoresheet of hand 1.
            sheet = httpx.get(f"{base}/api/v1/tables/{table_id}/scoresheet", headers=auth).json()
            row = sheet["hands"][0]
            assert row["hand"] == 1
            cells = page.locator(f"{first_row} td[data-seat]")
            on_screen = [
                (
                    int(cells.nth(i).get_attribute("data-points") or -1),
                    int(cells.nth(i).get_attribute("data-total") or -1),
                )
                for i in range(cells.count())
            ]
            assert on_screen == list(zip(row["points"], row["totals"], strict=True))
            assert [int(t) for t in re.findall(r"\((-?\d+)\)", page.inner_text(first_row))] == row["totals"]
            assert page.inner_text("#status") == ""  # the error went with the next action
            assert page.locator("#log li[data-type='trick_won']").count() >= 13
        finally:
            browser.close()
    # Chromium logs the provoked 409 answer as a console error itself: that one, and nothing else.
    provoked = "console error: Failed to load resource: the server responded with a status of 409 (Conflict)"
    assert problems.count(provoked) == 1
    assert [p for p in problems if p != provoked] == []
