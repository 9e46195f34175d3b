"""The web client's hints and hand review (issue 39) end to end in headless Chromium, against a real
uvicorn server, PostgreSQL, Redis and Celery workers (the game's lanes and the hints lane): a person
creates a table with "allow hints" against three bots, asks a hint on their turn to pass and to play
(the suggested cards are highlighted, each playable card carries its estimated points, and it all
goes once the turn is taken), a hint over the allowance is refused in the status line like any other
refusal, in the page's language, and after the hand the review panel charts one bar per trick, as
the review the service answered and the hand's record say."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from games.infra import jobs
from tests.e2e.test_web_client import DESKTOP, RANKS, _chromium, _goto, _page, _sort_key, _until
from tests.live import GAME_LANES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
ROOT = Path(__file__).resolve().parents[2]
HINTS = 3  # the hints the test asks within the allowance (HINT_RATE below): the pass and two plays
# Chromium logs a refused request as a console error of its own: the 429 of the hint over the rate.
REFUSED = re.compile(r"^console error: Failed to load resource: the server responded with a status of 429")


def _detail_pattern(lang: str, code: str) -> re.Pattern[str]:
    """The service's error detail for `code` in `lang` (any of its wordings; numbers as digits)."""
    import polib

    from games.messages import MESSAGES

    catalog = polib.pofile(str(ROOT / "games" / "locale" / lang / "LC_MESSAGES" / "django.po"))
    wordings = []
    for english in MESSAGES[code]:
        entry = catalog.find(str(english))
        assert entry is not None and entry.msgstr, (lang, code, english)
        wordings.append(re.sub(r"%\\\(\w+\\\)s", r"\\d+", re.escape(entry.msgstr)))
    return re.compile(f"^{code}: (?:{'|'.join(wordings)})$")


def _hinted(page: Any) -> list[str]:
    return sorted(page.eval_on_selector_all("#hand [data-hinted]", "b => b.map(x => x.dataset.card)"))


def _ask_hint(page: Any) -> dict[str, Any]:
    """Click Hint and return the service's answer, once the page shows it."""
    with page.expect_response(lambda r: "/hint" in r.url) as answer:
        page.click("#hint")
    assert answer.value.status == 200, answer.value.text()
    hint: dict[str, Any] = answer.value.json()
    page.wait_for_selector('#hint-box[data-state="shown"]')
    return hint


def _forget_advice(redis_url: str) -> None:
    """Drop hints and reviews an earlier run left in the shared Redis cache: they are keyed by table
    id, and this run's database numbers its tables from 1 again."""
    client = redis.Redis.from_url(redis_url)
    for pattern in ("*hearts:hint:*", "*hearts:review:*"):
        for key in client.scan_iter(pattern):
            client.delete(key)
    client.close()


def test_a_hint_on_your_turn_and_the_review_of_the_hand(
    web: Callable[..., str], workers: Callable[..., object], redis_url: str, tmp_path: Path
) -> None:
    _forget_advice(redis_url)
    workers(queues=f"{GAME_LANES},{jobs.HINTS_QUEUE}")
    base = web(HINT_RATE=f"{HINTS}/day")  # a day's window: the test never straddles two
    problems: list[str] = []
    started = time.monotonic()
    with _chromium() as browser:
        page = _page(browser.new_context(viewport=DESKTOP), problems, "player")
        _goto(page, f"{base}/play/")
        page.fill("#name", "Hemi")
        page.select_option("#level", "basic")
        page.select_option("#clock", "none")
        page.check("#hints")
        page.click("#create")
        page.wait_for_selector('#app[data-my-turn="pass"]')
        table_id = int(page.get_attribute("#app", "data-table") or 0)
        token = page.evaluate("localStorage.getItem('hearts.token')")
        auth = {"Authorization": f"Bearer {token}"}

        def rest() -> dict[str, Any]:
            return httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()

        # The table was created with hints on, and says so to whoever reads it.
        assert rest()["hints"] is True
        assert page.is_visible("#hints-on")
        assert page.is_visible("#hint-box") and page.is_enabled("#hint")

        # A hint for the pass: the suggested cards stand out, every option is listed with its points.
        hint = _ask_hint(page)
        assert hint["choice"]["type"] == "pass" and hint["seat"] == 0
        assert _hinted(page) == sorted(hint["choice"]["cards"])
        listed = page.eval_on_selector_all(
            "#hint-options li", "b => b.map(x => [x.dataset.action, Number(x.dataset.points)])"
        )
        assert sorted(listed, key=lambda item: item[1]) == listed  # the best first
        assert sorted(p for _, p in listed) == sorted(o["points"] for o in hint["options"])
        chosen = page.get_attribute("#hint-options li.chosen", "data-action") or ""
        assert sorted(chosen.split()) == sorted(hint["choice"]["cards"])
        assert page.is_disabled("#hint")  # one hint a turn: it is on screen
        for card in hint["choice"]["cards"]:
            page.click(f'#hand [data-card="{card}"]')
        page.click("#pass")
        page.wait_for_selector('#app:not([data-my-turn="pass"])')
        # The turn was taken: the hint went with it (the box is back, empty, if we lead the 2 of clubs).
        assert _hinted(page) == [] and page.locator("#hint-options li").count() == 0
        assert page.get_attribute("#hint-box", "data-state") == "none"
        assert page.is_hidden("#hint-box") or page.is_enabled("#hint")

        asked = 1
        refused = False
        first_row = '#scoresheet tr[data-hand="1"]'
        while not page.locator(first_row).count():
            assert time.monotonic() - started < 120, "the hand took too long"
            page.wait_for_selector(f'#app[data-my-turn="play"], #app[data-my-turn="moon"], {first_row}')
            turn = page.get_attribute("#app", "data-my-turn")
            if page.locator(first_row).count():
                break
            if turn == "moon":
                page.click('[data-moon="subtract"]')
                page.wait_for_selector('#app:not([data-my-turn="moon"])')
                continue
            version = int(page.get_attribute("#app", "data-version") or 0)
            enabled = page.eval_on_selector_all(
                "#hand [data-card]:not(:disabled)", "b => b.map(x => x.dataset.card)"
            )
            card = sorted(enabled, key=_sort_key)[0]
            if asked < HINTS:
                # A hint to play: the card is highlighted, and every playable card carries its
                # estimate, the points the service gave it (and the same in its screen-reader name).
                hint = _ask_hint(page)
                asked += 1
                assert hint["choice"]["type"] == "play"
                assert _hinted(page) == [hint["choice"]["card"]]
                estimates = {o["action"]["card"]: o["points"] for o in hint["options"]}
                assert set(estimates) == set(enabled)
                on_cards = page.eval_on_selector_all(
                    "#hand [data-estimate]", "b => b.map(x => [x.dataset.card, Number(x.dataset.estimate)])"
                )
                assert dict(on_cards) == estimates
                assert page.locator("#hand .estimate").count() == len(estimates)
                label = (
                    page.get_attribute(f'#hand [data-card="{hint["choice"]["card"]}"]', "aria-label") or ""
                )
                assert label.endswith(" points") and "hint: about" in label
                card = hint["choice"]["card"]
                if asked == 2:
                    page.screenshot(path=str(tmp_path / "hint-play.png"), full_page=True)
            elif not refused:
                # Over the allowance, in Māori: refused, in the status line as every refusal is.
                page.select_option("#lang", "mi")
                page.wait_for_selector('html[lang="mi"]')
                with page.expect_response(lambda r: "/hint" in r.url) as answer:
                    page.click("#hint")
                assert answer.value.status == 429 and answer.value.json()["code"] == "rate_limited"
                page.wait_for_selector('#status[data-kind="error"]')
                assert _detail_pattern("mi", "rate_limited").match(page.inner_text("#status"))
                assert _hinted(page) == [] and page.is_enabled("#hint")  # nothing shown; ask again later
                page.select_option("#lang", "en")
                page.wait_for_selector('html[lang="en"]')
                refused = True
            page.click(f'#hand [data-card="{card}"]')
            page.wait_for_selector(f'#app:not([data-version="{version}"])')
            # The turn passed: no card is hinted and no estimate is left on the cards.
            _until(lambda: page.locator("#hand [data-hinted], #hand .estimate").count() == 0, "the hint gone")
        assert asked == HINTS and refused

        # The hand is over: its review, for our own seat (the game goes on: no other seat offered).
        page.wait_for_selector("#review-panel:not([hidden])")
        assert page.input_value("#review-hand") == "1"
        assert page.is_hidden("#review-seat-line")
        with page.expect_response(lambda r: "/review" in r.url) as answer:
            page.click("#review-go")
        assert answer.value.status == 200, answer.value.text()
        review = answer.value.json()
        assert answer.value.url.endswith("/hands/1/review?seat=0")
        page.wait_for_selector("#review-out svg.losses")
        assert review["hand"] == 1 and review["seat"] == 0 and len(review["tricks"]) == 13
        # The chart: one bar per trick, as high as the points lost there; the total under it.
        bars = page.eval_on_selector_all(
            "#review-out rect.bar", "b => b.map(x => [Number(x.dataset.trick), Number(x.dataset.pointsLost)])"
        )
        assert bars == [[t["trick"], t["points_lost"]] for t in review["tricks"]]
        total = page.inner_text("#review-out .review-total")
        # Shown to one decimal: off by half a tenth at most (6.35 shows as 6.4; 1e-9 for the floats).
        assert float(total) == pytest.approx(review["total_points_lost"], abs=0.05 + 1e-9)
        assert page.inner_text("#review-out .loss-total") == f"Total points lost: {total}"
        # The table under it: per trick our card and the bot's, as the review has them; our
        # cards are the ones the hand's record says seat 0 played.
        rows = page.eval_on_selector_all(
            "#review-out tbody tr",
            "b => b.map(x => [...x.querySelectorAll('[data-mini]')].map(m => m.dataset.mini))",
        )
        assert rows == [[t["card"], t["bot_card"]] for t in review["tricks"]]
        record = httpx.get(f"{base}/api/v1/tables/{table_id}/hands/1", headers=auth).json()["record"]
        played = [trick["cards"][(0 - trick["leader"]) % 4] for trick in record["tricks"]]
        assert [t["card"] for t in review["tricks"]] == played
        page.locator("#review-panel").screenshot(path=str(tmp_path / "review.png"))
    assert [p for p in problems if not REFUSED.match(p)] == []
    assert len([p for p in problems if REFUSED.match(p)]) == 1


def test_after_the_game_a_spectator_reviews_any_seat(
    web: Callable[..., str], workers: Callable[..., object], redis_url: str, tmp_path: Path
) -> None:
    _forget_advice(redis_url)
    workers(queues=f"{GAME_LANES},{jobs.HINTS_QUEUE}")
    base = web()
    api = f"{base}/api/v1"
    token = httpx.post(f"{api}/guests", json={"name": "Aroha"}).json()["token"]
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
    table_id = created["id"]
    httpx.post(f"{api}/tables/{table_id}/join", json={}, headers=auth).raise_for_status()
    # The game, played to its end over REST (the lowest legal card, the three highest to pass).
    started = time.monotonic()
    with httpx.Client(base_url=api, headers=auth) as client:
        while True:
            assert time.monotonic() - started < 90, "the game took too long"
            table = client.get(f"/tables/{table_id}").json()
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
            client.post(f"/tables/{table_id}/actions", json={**action, "expected_version": table["version"]})
    hands = len(table["game"]["scoresheet"])

    problems: list[str] = []
    with _chromium() as browser:
        # Someone with no seat there (the page makes them a guest): every seat's review is theirs.
        page = _page(browser.new_context(viewport=DESKTOP), problems, "spectator")
        _goto(page, f"{base}/play/?table={table_id}")
        page.wait_for_selector('#app[data-role="spectator"] #review-panel:not([hidden])')
        assert page.is_hidden("#hint-box")  # no seat, no turn, no hints at this table
        offered = page.eval_on_selector_all("#review-hand option", "b => b.map(x => Number(x.value))")
        assert offered == list(range(1, hands + 1)) and page.input_value("#review-hand") == str(hands)
        assert page.is_visible("#review-seat-line")
        seats = page.eval_on_selector_all("#review-seat option", "b => b.map(x => Number(x.value))")
        assert seats == [0, 1, 2, 3]
        page.select_option("#review-hand", "1")
        page.select_option("#review-seat", "2")
        with page.expect_response(lambda r: "/review" in r.url) as answer:
            page.click("#review-go")
        assert answer.value.status == 200, answer.value.text()
        assert answer.value.url.endswith("/hands/1/review?seat=2")
        review = answer.value.json()
        page.wait_for_selector('#review-out[data-seat="2"] svg.losses')
        bars = page.eval_on_selector_all(
            "#review-out rect.bar", "b => b.map(x => [Number(x.dataset.trick), Number(x.dataset.pointsLost)])"
        )
        assert bars == [[t["trick"], t["points_lost"]] for t in review["tricks"]] and len(bars) == 13
        record = httpx.get(f"{api}/tables/{table_id}/hands/1", headers=auth).json()["record"]
        played = [trick["cards"][(2 - trick["leader"]) % 4] for trick in record["tricks"]]
        assert [t["card"] for t in review["tricks"]] == played
        assert page.inner_text("#review-out h4").startswith(
            "Seat 3, hand 1"
        )  # a spectator names seats by number
        page.screenshot(path=str(tmp_path / "spectator-review.png"), full_page=True)
    assert problems == []
