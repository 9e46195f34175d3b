"""The reference web client (/play/) end to end in headless Chromium, against a real uvicorn server,
PostgreSQL, Redis and a Celery worker for the bots:

- on a desktop screen a person starts a table against three bots, passes, plays a whole hand by
  clicking (and once from the keyboard) only the cards the page enables, reviews the last trick,
  and reads the same scoresheet, totals chart and revealed passes on screen as the REST API answers;
- on a phone-sized screen (390x844) nothing overflows sideways and the hand and the trick are in
  view; the language switch changes the page's words; a second browser watches the table as a
  spectator (no hidden card reaches it), following the stream, or polling when streams fail;
- after a finished game the Rematch button moves the page to the new table;
- every logged event type of the contract, its OpenAPI example fed to a polling page, has its line
  in the event log, in English and in Māori.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
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
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ROOT / "web" / "i18n"
# Chromium logs a refused request (a 409 or 422 provoked on purpose, an aborted ticket) as a console
# error of its own.
FAILED_LOAD = re.compile(
    r"^console error: Failed to load resource: "
    r"(the server responded with a status of 4(09|22)|net::ERR_FAILED)"
)


def _sort_key(card: str) -> tuple[int, int]:
    return SUIT_ORDER.index(card[-1]), RANKS.index(card[0])


def _with_stale_version(route: Any) -> None:
    """Send the page's action as if it had read the table one version earlier: a real 409."""
    body = json.loads(route.request.post_data or "{}")
    body["expected_version"] -= 1
    route.continue_(post_data=json.dumps(body))


def _catalog(lang: str) -> dict[str, str]:
    return json.loads((CATALOGS / f"{lang}.json").read_text(encoding="utf-8"))


@contextmanager
def _chromium() -> Iterator[Any]:
    """A headless Chromium (Debian's)."""
    if not os.access(CHROMIUM, os.X_OK):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def _page(context: Any, problems: list[str], name: str) -> Any:
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: problems.append(f"{name} page error: {e}"))
    return page


def _until(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    """Wait for `check()` (the page's policy forbids the strings page.wait_for_function evaluates)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _no_sideways_scroll(page: Any) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    if widths[0] > widths[1]:
        wide = page.eval_on_selector_all(
            "body *",
            f"b => b.filter(x => x.getBoundingClientRect().right > {widths[1]})"
            ".map(x => x.id || x.className)",
        )
        raise AssertionError(f"the page scrolls sideways: {widths}, past the edge: {wide[:8]}")


def _in_view(page: Any, selector: str) -> None:
    """The element is on the screen, not cut off at either side. Read once it is drawn: a stream
    event can redraw the hand between finding a card and measuring it (a CI run read no box)."""
    box = None
    for _ in range(20):
        found = page.locator(selector).first
        found.wait_for(state="visible")
        box = found.bounding_box()
        if box is not None:
            break
        page.wait_for_timeout(50)
    width = page.viewport_size["width"]
    assert box is not None and box["width"] > 0 and box["height"] > 0, selector
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (selector, box, width)


def _goto(page: Any, url: str) -> None:
    """Open the page and wait until its script has set every control up."""
    page.goto(url)
    page.wait_for_selector("#app[data-ready]", state="attached")


def _start_table(page: Any, base: str, name: str, clock: str = "300") -> tuple[int, dict[str, str]]:
    _goto(page, f"{base}/play/")
    page.fill("#name", name)
    page.select_option("#level", "basic")
    page.select_option("#clock", clock)
    page.click("#create")
    page.wait_for_selector('#app[data-my-turn="pass"]')
    table_id = int(page.get_attribute("#app", "data-table") or 0)
    token = page.evaluate("localStorage.getItem('hearts.token')")
    return table_id, {"Authorization": f"Bearer {token}"}


def test_a_person_plays_a_hand_in_the_browser(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    workers()
    base = web()
    problems: list[str] = []
    started = time.monotonic()
    with _chromium() as browser:
        page = _page(browser.new_context(viewport=DESKTOP), problems, "player")
        # The page made a guest, a table against three basic bots, and sat us at seat 0.
        table_id, auth = _start_table(page, base, "Ada")

        def rest() -> dict[str, Any]:
            return httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()

        body = rest()
        assert body["your_seat"] == 0
        assert [s["bot"] for s in body["seats"]] == [None, "basic", "basic", "basic"]
        assert body["clocks"]["play"] == 300 and body["seats"][0]["name"] == "Ada"
        assert page.get_attribute("#app", "data-feed") == "stream"  # EventSource with a ticket

        # Seats around the table: you at the bottom, West on the left, North at the top, East
        # on the right.
        for i in range(4):  # drawn with the table (a render may still be under way): wait for each
            page.locator(f'#seats [data-seat="{i}"]').wait_for(state="visible", timeout=10_000)
        boxes = [page.locator(f'#seats [data-seat="{i}"]').bounding_box() for i in range(4)]
        assert all(b is not None for b in boxes)
        centre = [(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2) for b in boxes if b]
        assert centre[0][1] > centre[1][1] > centre[2][1] and centre[0][1] > centre[3][1] > centre[2][1]
        assert centre[1][0] < centre[0][0] < centre[3][0]
        assert page.inner_text('#seats [data-seat="1"]').startswith("West\nbasic bot")

        # The hand, sorted by suit, with card names for screen readers; the clock counts down.
        hand = page.locator("#hand [data-card]")
        shown = [hand.nth(i).get_attribute("data-card") or "" for i in range(hand.count())]
        assert shown == sorted(body["game"]["hand"], key=_sort_key)
        assert all(CARD_NAME.match(hand.nth(i).get_attribute("aria-label") or "") for i in range(13))
        assert re.search(r"\d+ s left on your turn", page.inner_text("#clock-line"))
        assert "pass left to West" in page.inner_text("#pass-direction")
        _no_sideways_scroll(page)
        page.screenshot(path=str(tmp_path / "desktop-pass.png"))

        # Pass: the button is enabled only with exactly three cards chosen.
        passed = shown[-3:]
        for card in passed:
            assert page.is_disabled("#pass")
            page.click(f'#hand [data-card="{card}"]')
        assert page.is_enabled("#pass")
        page.click(f'#hand [data-card="{shown[0]}"]')  # a fourth is not taken
        assert page.get_attribute(f'#hand [data-card="{shown[0]}"]', "aria-pressed") == "false"
        page.click("#pass")
        # Your own pass is in the passes panel at once (what you received, once all have passed).
        mine = page.locator('#passes .pass-hand[data-hand="1"] li[data-from="0"] .mini')
        _until(lambda: mine.count() == 3, "our pass in the passes panel")
        assert sorted(mine.nth(i).inner_text() for i in range(3)) == sorted(
            (c[0].replace("T", "10") + {"C": "♣", "D": "♦", "S": "♠", "H": "♥"}[c[1]]) for c in passed
        )

        # Play the whole hand, clicking an enabled card whenever it is our turn (one from the
        # keyboard), and review the last trick once.
        compared = plays = 0
        reviewed = by_keyboard = False
        first_row = '#scoresheet tr[data-hand="1"]'
        while not page.locator(first_row).count():
            assert time.monotonic() - started < 90, "the hand took too long"
            try:
                page.wait_for_selector(f'#app[data-my-turn="play"], #app[data-my-turn="moon"], {first_row}')
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
            enabled = page.eval_on_selector_all(
                "#hand [data-card]:not(:disabled)", "b => b.map(x => x.dataset.card)"
            )
            disabled = set(
                page.eval_on_selector_all("#hand [data-card]:disabled", "b => b.map(x => x.dataset.card)")
            )
            body = rest()
            if body["version"] == version:  # the page and REST see the same moment
                legal = set(body["game"]["legal_actions"]["cards"])
                assert set(enabled) == legal
                assert disabled == set(body["game"]["hand"]) - legal
                assert cards.count() == len(body["game"]["hand"])
                compared += 1
                if body["game"]["tricks"] and not reviewed:
                    # The last trick, laid out again by the seats that played it.
                    page.click("#last-trick")
                    page.wait_for_selector('#trick[data-review="true"] [data-played]')
                    last = body["game"]["tricks"][-1]
                    on_table = page.eval_on_selector_all(
                        "#trick [data-played]", "b => b.map(x => [Number(x.dataset.seat), x.dataset.played])"
                    )
                    assert sorted(map(tuple, on_table)) == sorted(
                        (c["seat"], c["card"]) for c in last["cards"]
                    )
                    assert f"trick {len(body['game']['tricks'])}" in page.inner_text("#trick-note")
                    page.click("#last-trick")
                    page.wait_for_selector('#trick[data-review="false"]')
                    reviewed = True
            card = sorted(enabled, key=_sort_key)[0]
            if plays == 0:  # a refused action shows the API's code and detail in the status line
                page.route("**/actions", _with_stale_version)
                page.click(f'#hand [data-card="{card}"]')
                page.wait_for_selector('#status[data-kind="error"]')
                assert page.inner_text("#status").startswith("stale_version: ")
                page.unroute("**/actions", _with_stale_version)
                page.wait_for_selector(f'#hand [data-card="{card}"]:not(:disabled)')
            if plays >= 1 and not by_keyboard and len(enabled) >= 2:
                # From the keyboard: the arrow keys move between the playable cards, Enter plays.
                ordered = page.eval_on_selector_all(
                    "#hand [data-card]:not(:disabled)", "b => b.map(x => x.dataset.card)"
                )
                page.focus(f'#hand [data-card="{ordered[0]}"]')
                page.keyboard.press("ArrowRight")
                assert page.evaluate("document.activeElement.dataset.card") == ordered[1]
                assert (
                    page.evaluate("getComputedStyle(document.activeElement.firstChild).outlineStyle")
                    != "none"
                )
                page.keyboard.press("Enter")
                page.wait_for_selector(f'#app:not([data-version="{version}"])')
                assert ordered[1] not in rest()["game"]["hand"]
                by_keyboard = True
                plays += 1
                continue
            page.click(f'#hand [data-card="{card}"]')
            page.wait_for_selector(f'#app:not([data-version="{version}"])')  # the play was answered
            plays += 1
        assert plays == 13 and compared >= 1 and reviewed and by_keyboard

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

        # The chart of running totals: one line per seat, through the scoresheet's totals.
        lines = page.locator("#chart svg polyline[data-seat]")
        assert lines.count() == 4
        assert [lines.nth(i).get_attribute("data-totals") for i in range(4)] == [
            str(t) for t in row["totals"]
        ]
        # Hand 1 is over: every seat's pass is revealed, as the hand's record has it.
        record = httpx.get(f"{base}/api/v1/tables/{table_id}/hands/1", headers=auth).json()["record"]
        page.wait_for_selector('#passes .pass-hand[data-hand="1"] li[data-from="3"] .mini')
        for seat, pass_ in enumerate(record["passes"]):
            item = page.locator(f'#passes .pass-hand[data-hand="1"] li[data-from="{seat}"]')
            assert item.get_attribute("data-to") == str(pass_["to"])
            assert item.locator(".mini").count() == 3
        # Between hands the last trick is hand 1's last, from its record.
        if not rest()["game"]["tricks"]:
            page.click("#last-trick")
            last = record["tricks"][-1]
            page.wait_for_selector('#trick[data-review="true"] [data-played]')
            on_table = page.eval_on_selector_all("#trick [data-played]", "b => b.map(x => x.dataset.played)")
            assert sorted(on_table) == sorted(last["cards"])
            page.click("#last-trick")
        page.screenshot(path=str(tmp_path / "desktop-after-hand.png"), full_page=True)
    # The provoked 409 answer is logged by Chromium itself: that one, and nothing else.
    assert len([p for p in problems if FAILED_LOAD.match(p)]) == 1
    assert [p for p in problems if not FAILED_LOAD.match(p)] == []


def test_phone_screen_languages_and_a_spectator(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    workers()
    base = web()
    problems: list[str] = []
    mi = _catalog("mi")
    with _chromium() as browser:
        phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
        page = _page(phone, problems, "player")
        table_id, auth = _start_table(page, base, "Aroha", clock="none")
        body = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()
        hidden = set(body["game"]["hand"])

        # At 390x844: no sideways scrolling, the table, the hand and every card on the screen.
        page.screenshot(path=str(tmp_path / "phone-pass.png"), full_page=True)
        _no_sideways_scroll(page)
        _in_view(page, "#felt")
        for i in range(13):
            _in_view(page, f"#hand [data-card] >> nth={i}")
        for seat in range(4):
            _in_view(page, f'#seats [data-seat="{seat}"]')

        # A second browser opens the table's address: it watches, and sees no hidden card.
        watcher = browser.new_context(viewport=DESKTOP, reduced_motion="reduce")
        answers: list[Any] = []
        spectator = _page(watcher, problems, "spectator")
        spectator.on("response", lambda r: answers.append(r) if "/api/v1/tables/" in r.url else None)
        _goto(spectator, f"{base}/play/?table={table_id}")
        spectator.wait_for_selector('#app[data-role="spectator"][data-feed="stream"]')
        assert spectator.locator("#hand [data-card]").count() == 0
        assert spectator.is_visible("#role") and spectator.is_hidden("#pass-panel")

        # The player passes three cards, chosen by tapping (the bots have passed already, so play
        # begins); the spectator learns that seat 0 passed, but not what.
        passed = sorted(hidden, key=_sort_key)[:3]
        for card in passed:
            page.tap(f'#hand [data-card="{card}"]')
        page.tap("#pass")
        spectator.wait_for_selector('#app:not([data-phase="passing"])')
        spectator.wait_for_selector('#passes li[data-from="0"]:not(.muted)')
        assert spectator.locator('#passes li[data-from="0"] .mini').count() == 0

        # A second spectator page whose streams fail follows the table by polling its events.
        polling = _page(watcher, problems, "polling spectator")
        polling.route("**/stream-tickets", lambda route: route.abort())
        _goto(polling, f"{base}/play/?table={table_id}")
        polling.wait_for_selector('#app[data-role="spectator"][data-feed="poll"]')
        version = int(polling.get_attribute("#app", "data-version") or 0)
        page.wait_for_selector('#app[data-my-turn="play"]')
        card = page.eval_on_selector_all(
            "#hand [data-card]:not(:disabled)", "b => b.map(x => x.dataset.card)"
        )[0]
        before = page.get_attribute("#app", "data-version")
        page.tap(f'#hand [data-card="{card}"]')
        # Both see the card on the table, or (once the trick is taken) among this hand's tricks.
        seen_played = f'#trick [data-played="{card}"], #tricks [data-mini="{card}"]'
        spectator.wait_for_selector(seen_played)
        polling.wait_for_selector(seen_played)
        assert int(polling.get_attribute("#app", "data-version") or 0) > version
        # On our next turn a trick has been taken: reviewed, its four cards are all on the screen.
        page.wait_for_selector(f'#app[data-my-turn="play"]:not([data-version="{before}"])')
        page.tap("#last-trick")
        page.wait_for_selector('#trick[data-review="true"] [data-played]')
        assert page.locator("#trick [data-played]").count() == 4
        for i in range(4):
            _in_view(page, f"#trick [data-played] >> nth={i}")
        _no_sideways_scroll(page)
        page.screenshot(path=str(tmp_path / "phone-play.png"), full_page=True)
        # Cards move by CSS transitions, except for a spectator who asked for reduced motion.
        durations = "b => b.map(x => getComputedStyle(x).transitionDuration)"
        assert "0s" not in page.eval_on_selector_all("#trick [data-played]", durations)
        page.tap("#last-trick")
        spectator.click("#last-trick")
        spectator.wait_for_selector('#trick[data-review="true"] [data-played]')
        assert set(spectator.eval_on_selector_all("#trick [data-played]", durations)) == {"0s"}
        spectator.click("#last-trick")
        spectator.screenshot(path=str(tmp_path / "spectator.png"), full_page=True)

        # Nothing the spectator's pages show or name is a card that was not played yet (a card in
        # anyone's hand); everything their API answers was redacted for a spectator.
        seen = []
        for watching in (spectator, polling):
            cards = watching.eval_on_selector_all(
                "[data-card], [data-played], [data-mini]",
                "b => b.map(x => x.dataset.card || x.dataset.played || x.dataset.mini)",
            )
            labels = watching.eval_on_selector_all(
                "[aria-label], [title]",
                "b => b.map(x => `${x.getAttribute('aria-label') || ''} ${x.getAttribute('title') || ''}`)",
            )
            seen.append((set(cards), " ".join(labels)))
        game = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()["game"]
        played = {c["card"] for trick in [*game["tricks"], {"cards": game["trick"]}] for c in trick["cards"]}
        unplayed = [f"{rank}{suit}" for rank in RANKS for suit in SUIT_ORDER if f"{rank}{suit}" not in played]
        for cards, labels in seen:
            assert cards <= played
            assert [c for c in unplayed if _english_name(c) in labels] == []
        for answer in answers:
            if (
                answer.request.method != "GET"
                or not answer.ok
                or "json" not in (answer.headers.get("content-type") or "")
            ):
                continue
            data = answer.json()
            game = data.get("game") or {}
            assert not {"hand", "my_pass", "received", "legal_actions"} & set(game), answer.url
            private = {"cards_dealt", "cards_passed", "cards_received"}
            assert not [e for e in data.get("events", []) if e["type"] in private], answer.url

        # The language switch: the page's words come from the chosen catalog, kept for next time.
        page.select_option("#lang", "mi")
        page.wait_for_selector("html[lang='mi']")
        assert page.inner_text("#hand-title").startswith(mi["hand.title"])
        assert page.inner_text("#log-title") == mi["log.title"]
        assert page.inner_text('#seats [data-seat="1"] .seat-name').startswith(mi["compass.1"])
        labels = page.eval_on_selector_all(
            "#hand [data-card]", "b => b.map(x => x.getAttribute('aria-label'))"
        )
        assert all(not CARD_NAME.match(label) for label in labels)
        assert page.evaluate("localStorage.getItem('hearts.lang')") == "mi"
        _no_sideways_scroll(page)
        page.screenshot(path=str(tmp_path / "phone-mi.png"), full_page=True)
        page.reload()
        page.wait_for_selector("#app[data-table]")
        assert page.input_value("#lang") == "mi" and page.inner_text("#log-title") == mi["log.title"]
        assert mi["rules.moon"] in page.evaluate("document.getElementById('rules-text').textContent")
        # The service answers in the page's language: every API call sends Accept-Language.
        page.select_option("#lang", "eu")
        page.wait_for_selector("html[lang='eu']")
        with page.expect_request(lambda r: "/api/v1/tables/" in r.url) as request:
            page.reload()
        assert request.value.all_headers().get("accept-language") == "eu"
    assert [p for p in problems if not FAILED_LOAD.match(p)] == []


def _english_name(card: str) -> str:
    ranks = {"T": "10", "J": "Jack", "Q": "Queen", "K": "King", "A": "Ace"}
    suits = {"C": "clubs", "D": "diamonds", "S": "spades", "H": "hearts"}
    return f"{ranks.get(card[0], card[0])} of {suits[card[1]]}"


def test_a_rematch_moves_the_page_to_the_new_table(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    workers()
    base = web()
    api = f"{base}/api/v1"
    token = httpx.post(f"{api}/guests", json={"name": "Rangi"}).json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    created = httpx.post(
        f"{api}/tables",
        json={
            "options": {"target_score": 50},
            "bots": {"1": "random", "2": "random", "3": "random"},
            "clocks": {"pass": None, "play": None, "moon": None},
        },
        headers=auth,
    ).json()
    httpx.post(f"{api}/tables/{created['id']}/join", json={}, headers=auth).raise_for_status()
    # The game, played to its end over REST (the lowest legal card, the three highest to pass).
    started = time.monotonic()
    with httpx.Client(base_url=api, headers=auth) as client:
        while True:
            assert time.monotonic() - started < 60, "the game took too long"
            table = client.get(f"/tables/{created['id']}").json()
            if table["status"] == "finished":
                break
            legal = table["game"]["legal_actions"]
            if legal is None:
                time.sleep(0.02)
                continue
            if legal["type"] == "pass":
                action = {"type": "pass", "cards": sorted(legal["from"], key=_sort_key)[-3:]}
            elif legal["type"] == "play":
                action = {"type": "play", "card": sorted(legal["cards"], key=lambda c: RANKS.index(c[0]))[0]}
            else:
                action = {"type": "moon", "choice": "subtract"}
            client.post(
                f"/tables/{created['id']}/actions", json={**action, "expected_version": table["version"]}
            )
    rows = table["game"]["scoresheet"]

    problems: list[str] = []
    with _chromium() as browser:
        context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        context.add_init_script(  # the page is opened by the guest that played the game
            f"localStorage.setItem('hearts.token', {json.dumps(token)});"
            "localStorage.setItem('hearts.name', 'Rangi');"
        )
        page = _page(context, problems, "player")
        _goto(page, f"{base}/play/?table={created['id']}")
        page.wait_for_selector("#over-panel:not([hidden]) #rematch:not([hidden])")
        # The chart of the whole game: a point per hand for each seat, ending at the final totals.
        lines = page.locator("#chart svg polyline[data-seat]")
        assert lines.count() == 4
        for seat in range(4):
            assert lines.nth(seat).get_attribute("data-totals") == ",".join(
                str(r["totals"][seat]) for r in rows
            )
        assert page.locator("#scoresheet tbody tr").count() == len(rows)
        assert "Game over" in page.inner_text("#game-over")
        _no_sideways_scroll(page)
        page.screenshot(path=str(tmp_path / "phone-game-over.png"), full_page=True)

        page.tap("#rematch")  # the bots accept by themselves: the rematch starts at once
        page.wait_for_selector(f'#app[data-table]:not([data-table="{created["id"]}"])')
        new_id = int(page.get_attribute("#app", "data-table") or 0)
        page.wait_for_selector("#hand [data-card]")
        new = httpx.get(f"{api}/tables/{new_id}", headers=auth).json()
        assert new["rematch_of"] == created["id"] and new["your_seat"] is not None
        assert f"table={new_id}" in page.url
        old = httpx.get(f"{api}/tables/{created['id']}", headers=auth).json()
        assert old["rematch"]["table"] == new_id
    assert problems == []


def _translated(lang: str, code: str) -> str:
    """The service's error detail for `code` in `lang` (its message catalog, games/locale)."""
    import polib

    from games.messages import MESSAGES

    catalog = polib.pofile(str(ROOT / "games" / "locale" / lang / "LC_MESSAGES" / "django.po"))
    entry = catalog.find(MESSAGES[code][-1])
    assert entry is not None and entry.msgstr, (lang, code)
    return str(entry.msgstr)


def _wait_seconds(seconds: int) -> Callable[[Any], None]:
    """Send the page's quick-play request with a shorter wait for people than the page's own."""

    def shorten(route: Any) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        body = json.loads(route.request.post_data or "{}")
        route.continue_(post_data=json.dumps({**body, "wait_seconds": seconds}))

    return shorten


def test_quick_play_and_an_invite(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    workers()
    base = web()
    problems: list[str] = []
    with _chromium() as browser:
        ada = _page(browser.new_context(viewport=DESKTOP), problems, "Ada")
        bea = _page(browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True), problems, "Bea")
        for page, name in ((ada, "Ada"), (bea, "Bea")):
            _goto(page, f"{base}/play/")
            page.fill("#name", name)
            page.select_option("#clock", "none")

        # Quick play: the page waits at a table for people, counting down; waiting can be stopped.
        ada.click("#quick-play")
        ada.wait_for_selector('#app[data-phase="open"] #wait-panel #quick-cancel:not([hidden])')
        first = int(ada.get_attribute("#app", "data-table") or 0)
        assert re.search(r"in \d+ s unless people come first", ada.inner_text("#wait-note"))
        ada.screenshot(path=str(tmp_path / "quick-play-waiting.png"))
        ada.click("#quick-cancel")
        ada.wait_for_selector("#lobby:not([hidden])")
        token = ada.evaluate("localStorage.getItem('hearts.token')")
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/api/v1/quick-play", headers=auth).status_code == 404  # not waiting
        assert httpx.get(f"{base}/api/v1/tables/{first}", headers=auth).json()["status"] == "abandoned"

        # Two people asking for the same game sit at one table; when the wait is over, bots take
        # the other seats and the game starts for both.
        for page in (ada, bea):
            page.route("**/api/v1/quick-play", _wait_seconds(4))
        ada.click("#quick-play")
        ada.wait_for_selector('#app[data-phase="open"]')
        bea.tap("#quick-play")
        bea.wait_for_selector("#app[data-table]")
        table_id = ada.get_attribute("#app", "data-table")
        assert bea.get_attribute("#app", "data-table") == table_id != str(first)
        for page in (ada, bea):
            page.wait_for_selector('#app[data-my-turn="pass"]')
        body = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()
        assert sorted(s["name"] for s in body["seats"] if s["player"]) == ["Ada", "Bea"]
        assert len([s for s in body["seats"] if s["bot"] == "basic"]) == 2

        # An invite: Ada opens a private table with a seat for one friend and sends Bea its link;
        # with Bea seated the table is full and starts by itself.
        ada.click("#leave")
        ada.select_option("#friends", "1")
        ada.click("#create")
        ada.wait_for_selector('#app[data-phase="open"] #invite:not([hidden])')
        private = int(ada.get_attribute("#app", "data-table") or 0)
        assert ada.locator("#seats .seat.empty").count() == 1
        ada.click("#invite")
        ada.wait_for_selector("#invite-out:not([hidden])")
        link = ada.input_value("#invite-link")
        assert link.startswith(f"{base}/play/?invite=")
        ada.screenshot(path=str(tmp_path / "invite.png"))
        stranger = httpx.post(f"{base}/api/v1/guests", json={"name": "Cy"}).json()["token"]
        seen = httpx.get(f"{base}/api/v1/tables/{private}", headers={"Authorization": f"Bearer {stranger}"})
        assert seen.status_code == 404  # private: nobody else finds it
        # In Malay, a wrong code is refused with the service's detail in Malay.
        _goto(bea, f"{base}/play/")
        bea.select_option("#lang", "ms")
        bea.wait_for_selector("html[lang='ms']")
        assert bea.inner_text("#lobby-title") == _catalog("ms")["lobby.title"]
        bea.fill("#invite-code", "NoSuchCode0123456789ab")
        bea.tap("#invite-join")
        bea.wait_for_selector('#status[data-kind="error"]')
        assert bea.inner_text("#status") == f"invite_invalid: {_translated('ms', 'invite_invalid')}"
        _goto(bea, link)
        assert bea.input_value("#name") == "Bea" and bea.input_value("#invite-code") == link.split("=", 1)[1]
        bea.tap("#invite-join")
        bea.wait_for_selector(f'#app[data-table="{private}"][data-my-turn="pass"]')
        ada.wait_for_selector(f'#app[data-table="{private}"][data-my-turn="pass"]')
        assert "invite=" not in bea.url
        seats = httpx.get(f"{base}/api/v1/tables/{private}", headers=auth).json()["seats"]
        assert [s["name"] for s in seats[:2]] == ["Ada", "Bea"] and seats[2]["bot"] and seats[3]["bot"]
        assert bea.get_attribute("#app", "data-role") == "player"
        assert not set(
            ada.eval_on_selector_all("#hand [data-card]", "b => b.map(x => x.dataset.card)")
        ) & set(bea.eval_on_selector_all("#hand [data-card]", "b => b.map(x => x.dataset.card)"))
    assert len([p for p in problems if FAILED_LOAD.match(p)]) == 1  # the wrong code's 422
    assert [p for p in problems if not FAILED_LOAD.match(p)] == []


def test_the_log_tells_every_event_type_in_the_pages_language(
    web: Callable[..., str], tmp_path: Path
) -> None:
    """Every logged event type of the contract, its OpenAPI example put into the page's events
    answer (the page polls: its stream tickets are refused), has its line in the log, in English
    and again in Māori: bot_fallback, ratings_changed and the tournament events too."""
    from tests.e2e.test_web_events import _handlers

    base = web()
    api = f"{base}/api/v1"
    token = httpx.post(f"{api}/guests", json={"name": "Mere"}).json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    created = httpx.post(f"{api}/tables", json={"options": {"target_score": 50}}, headers=auth).json()
    httpx.post(f"{api}/tables/{created['id']}/join", json={"position": 0}, headers=auth).raise_for_status()
    schemas = httpx.get(f"{base}/api/schema/?format=json").json()["components"]["schemas"]
    logged = list(schemas["Event"]["discriminator"]["mapping"])
    examples = [schemas[f"Event_{kind}"]["example"] for kind in logged]
    told = [kind for kind, entry in _handlers().items() if kind in logged and "log:" in entry]
    assert {"bot_fallback", "ratings_changed", "tournament_next_table"} <= set(told)
    fed: list[str] = []

    def with_examples(route: Any) -> None:
        """The first events answer, with one example of each logged type after its own events."""
        answer = route.fetch()
        if fed:
            route.fulfill(response=answer)
            return
        body = answer.json()
        fed.append(route.request.url)
        route.fulfill(response=answer, json={**body, "events": [*body["events"], *examples]})

    problems: list[str] = []
    with _chromium() as browser:
        context = browser.new_context(viewport=DESKTOP)
        context.add_init_script(
            f"localStorage.setItem('hearts.token', {json.dumps(token)});"
            "localStorage.setItem('hearts.name', 'Mere'); localStorage.setItem('hearts.lang', 'en');"
        )
        page = _page(context, problems, "player")
        page.route("**/stream-tickets", lambda route: route.abort())
        page.route(f"**/tables/{created['id']}/events?after=*", with_examples)
        _goto(page, f"{base}/play/?table={created['id']}")
        page.wait_for_selector('#app[data-feed="poll"]')
        page.wait_for_selector('#log li[data-type="tournament_next_table"]')
        in_log = page.eval_on_selector_all("#log li", "b => b.map(x => x.dataset.type)")
        assert sorted(set(told) - set(in_log)) == []
        for lang in ("en", "mi"):
            if lang != "en":
                page.select_option("#lang", lang)
                page.wait_for_selector(f"html[lang='{lang}']")
            words = _catalog(lang)
            fallback = words["log.botFallback.timeout"].replace("{who}", words["compass.1"])
            assert page.inner_text('#log li[data-type="bot_fallback"]') == fallback
            rating = words["log.rating"].format(who=words["you"], mu="26.2", sigma="8.2")
            assert page.inner_text('#log li[data-type="ratings_changed"]') == words[
                "log.ratingsChanged"
            ].replace("{ratings}", rating)
            assert page.inner_text('#log li[data-type="tournament_next_table"]') == words[
                "log.tournamentNext"
            ].format(tournament=3, table=44)
        page.screenshot(path=str(tmp_path / "every-event.png"), full_page=True)
    assert fed and [p for p in problems if not FAILED_LOAD.match(p)] == []
