"""The web client's "Your move at N tables" (/play/) in headless Chromium, against a real uvicorn
server, PostgreSQL, Redis and a Celery worker: the list of the player's correspondence turns, soonest
deadline first, each a link to its table with its time left; read again when the player's own stream
says a table changed (an action made elsewhere, as from the player's phone); in the page's language."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_web_client import DESKTOP, _catalog, _chromium, _goto, _page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
HOUR, DAY = 3600, 86_400
BOTS = {"1": "basic", "2": "basic", "3": "basic"}


def _until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_the_page_shows_your_move_at_n_tables_and_follows_the_players_stream(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    workers()
    base = web()
    api = f"{base}/api/v1"

    def guest(name: str) -> dict[str, str]:
        token = httpx.post(f"{api}/guests", json={"name": name}).json()["token"]
        return {"Authorization": f"Bearer {token}"}

    ada, bea = guest("Ada"), guest("Bea")

    def table(clock: int, bots: dict[str, str], *people: dict[str, str]) -> int:
        clocks = {"pass": clock, "play": clock, "moon": clock}
        made = httpx.post(f"{api}/tables", json={"bots": bots, "clocks": clocks}, headers=ada).json()
        for position, who in enumerate(people):
            joined = httpx.post(f"{api}/tables/{made['id']}/join", json={"position": position}, headers=who)
            assert joined.status_code == 200, joined.text
        return int(made["id"])

    def turns() -> list[dict[str, Any]]:
        return httpx.get(f"{api}/me/turns", headers=ada).json()["turns"]  # type: ignore[no-any-return]

    # Three correspondence tables where Ada is to pass (the bots passed at once): two days, a day, and
    # three days, the last shared with Bea. And one where it is not her move: she passed, Bea has not.
    two_days = table(2 * DAY, BOTS, ada)
    one_day = table(DAY, BOTS, ada)
    shared = table(3 * DAY, {"2": "basic", "3": "basic"}, ada, bea)
    waiting = table(HOUR, {"2": "basic", "3": "basic"}, ada, bea)
    _until(lambda: len(turns()) == 4, "Ada's four passes")
    hand = httpx.get(f"{api}/tables/{waiting}", headers=ada).json()["game"]["hand"]
    passed = httpx.post(
        f"{api}/tables/{waiting}/actions", json={"type": "pass", "cards": hand[:3]}, headers=ada
    )
    assert passed.status_code == 200, passed.text
    assert [t["table"] for t in turns()] == [one_day, two_days, shared]

    problems: list[str] = []
    with _chromium() as browser:
        page = _page(browser.new_context(viewport=DESKTOP), problems, "Ada")
        _goto(page, f"{base}/play/")
        page.evaluate(
            "([token, name]) => { localStorage.setItem('hearts.token', token); "
            "localStorage.setItem('hearts.name', name); }",
            [ada["Authorization"].removeprefix("Bearer "), "Ada"],
        )
        _goto(page, f"{base}/play/")  # a player who comes back: their turns at once
        page.wait_for_selector('#turns[data-count="3"]:not([hidden])')
        assert page.inner_text("#turns-title") == "Your move at 3 tables"
        links = page.locator("#turns-list a")
        assert [int(links.nth(i).get_attribute("data-table") or 0) for i in range(3)] == [
            one_day,
            two_days,
            shared,
        ]
        texts = [links.nth(i).inner_text() for i in range(3)]
        assert re.fullmatch(rf"Table {one_day}: choose your pass, 23 hours left", texts[0]), texts
        assert re.fullmatch(rf"Table {two_days}: choose your pass, 47 hours left", texts[1]), texts
        assert re.fullmatch(rf"Table {shared}: choose your pass, 2 days left", texts[2]), texts
        page.screenshot(path=str(tmp_path / "turns.png"))

        # Ada passes at the shared table from elsewhere (her phone): the page hears of it on her
        # stream and reads the list again; the table waits for Bea now.
        hand = httpx.get(f"{api}/tables/{shared}", headers=ada).json()["game"]["hand"]
        httpx.post(f"{api}/tables/{shared}/actions", json={"type": "pass", "cards": hand[:3]}, headers=ada)
        page.wait_for_selector('#turns[data-count="2"]', timeout=10_000)  # far sooner than the 2-minute read
        assert page.inner_text("#turns-title") == "Your move at 2 tables"

        # In Māori, with its own words; a link opens its table.
        page.select_option("#lang", "mi")
        page.wait_for_selector("html[lang='mi']")
        words = _catalog("mi")
        assert page.inner_text("#turns-title") == words["turns.count.other"].replace("{n}", "2")
        assert words["turns.action.pass"] in page.inner_text("#turns-list")
        page.locator(f'#turns-list a[data-table="{two_days}"]').click()
        page.wait_for_selector(f'#app[data-table="{two_days}"][data-my-turn="pass"]')
    assert problems == []
