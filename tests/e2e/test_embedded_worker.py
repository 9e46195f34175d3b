"""The embedded worker (games.embedded) on a live `make run` server: a request never plays bots, a
turn clock is enforced while bots think elsewhere, and streams wake on the worker's commits without
the safety poll."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_embedded import ROOT, _call, _free_port

pytestmark = pytest.mark.slow
STRONG_THINK_MS = 2000  # each move of an expert bot takes this long


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`make run`'s server on SQLite, its safety poll set to ten minutes: a stream that sees an
    event within the test's time saw it through a wake-up."""
    db = tmp_path_factory.mktemp("embedded") / "db.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CI")}
    env |= {"DATABASE_URL": f"sqlite:///{db}", "STREAM_POLL_SECONDS": "600"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    port = _free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)),
            *("--lifespan", "off", "--ws", "websockets", "--log-level", "warning"),
        ],
        cwd=ROOT,
        env={**env, "HEARTS_EMBEDDED_WORKER": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                _call(base, "GET", "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        yield base, db
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # a test's stream still open: uvicorn waits for it
            proc.kill()
            proc.wait(10)


def _guest(base: str) -> str:
    return str(_call(base + "/api/v1", "POST", "/guests", {"name": "solo"})["token"])


def _moves(db: Path, table_id: int) -> list[tuple[str, int | None]]:
    """The table's move log read from the database (an API read of an overdue table would act)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT kind, position FROM games_move WHERE table_id = ? ORDER BY seq", (table_id,)
        ).fetchall()
    return [(str(kind), position) for kind, position in rows]


def _until(found: Any, seconds: float) -> Any:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = found()
        if value:
            return value
        time.sleep(0.1)
    return found()


def test_a_table_of_thinking_bots_is_answered_before_they_move_and_they_play_on(
    server: tuple[str, Path],
) -> None:
    base, db = server
    api, token = base + "/api/v1", _guest(base)
    bots = {str(s): "expert" for s in range(4)}
    made = _call(api, "POST", "/tables", {"bots": bots, "bot_think_ms": STRONG_THINK_MS}, token)
    # The answer is the table as created and started: four bots seated, not one card passed.
    assert made["status"] == "passing" and made["game"]["passed"] == [False] * 4
    kinds = [kind for kind, _ in _moves(db, made["id"])]
    assert "pass" not in kinds  # (at most STRONG_THINK_MS later the first bot has passed)
    # On their own, with nobody asking: the bot lane plays them.
    passed = _until(lambda: [k for k, _ in _moves(db, made["id"])].count("pass") >= 2, 30)
    assert passed, _moves(db, made["id"])


def test_a_turn_clock_is_enforced_while_another_tables_bots_think(server: tuple[str, Path]) -> None:
    base, db = server
    api, token = base + "/api/v1", _guest(base)
    for _ in range(2):  # two tables of experts thinking on the bot lane the whole time
        _call(
            api,
            "POST",
            "/tables",
            {"bots": {str(s): "expert" for s in range(4)}, "bot_think_ms": 5000},
            token,
        )
    person = _guest(base)
    table = _call(
        api,
        "POST",
        "/tables",
        {"bots": {"1": "strong", "2": "strong", "3": "strong"}, "clocks": {"pass": 5}},
        person,
    )
    joined = _call(api, "POST", f"/tables/{table['id']}/join", {}, person)  # answered: no bot plays in it
    assert joined["your_seat"] == 0
    # Nobody acts for the person: the clock lane passes for them when the 5 s run out.
    acted = _until(lambda: ("pass", 0) in _moves(db, table["id"]), 20)
    assert acted, _moves(db, table["id"])


def test_streams_see_the_bots_moves_through_wake_ups_not_the_poll(server: tuple[str, Path]) -> None:
    """The server polls every ten minutes: each event here came from the commit's wake-up, over SSE
    (the SDK's table stream) and over a GraphQL subscription (the SDK's socket) alike."""
    sys.path.insert(0, str(ROOT / "clients" / "python"))
    from hearts_client import HeartsClient

    client = HeartsClient.as_guest(server[0], "watcher")
    # A bots-only table played a card every 200 ms (its pace): the lane's timer, then a commit.
    table = client.tables.create(bots=dict.fromkeys(range(4), "basic"), bot_pace_ms=200)
    seen: dict[str, list[str]] = {"sse": [], "socket": []}

    def until_eight_cards(events: Any, kind: str) -> None:
        for event in events:
            seen[kind].append(event["type"])
            if seen[kind].count("card_played") >= 8:
                return

    def follow(kind: str) -> None:
        if kind == "sse":
            until_eight_cards(client.streams.table(table["id"]), kind)
            return
        with client.socket() as socket:
            until_eight_cards(socket.subscribe_table_events(table["id"]), kind)

    threads = [threading.Thread(target=follow, args=(kind,), daemon=True) for kind in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert seen["sse"].count("card_played") >= 8, seen["sse"]
    assert seen["socket"].count("card_played") >= 8, seen["socket"]
