"""Waiting for a lane's answer (games.infra.answers) and a request's slot (games.infra.pressure.Slot):
a waiting request wakes on the lane's bell, holds no database connection and lends its slot back;
on a served stack a hint waiting on a lane that never answers keeps no play waiting."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from unittest import mock

import httpx
import pytest
from django.core.cache import cache
from django.db import connection

from games.infra import answers, pressure
from tests.live import web  # noqa: F401  (fixture)


def _later(seconds: float, key: str, value: Any) -> threading.Thread:
    """The lane: keeps `value` under `key` after `seconds`, and rings."""

    def lane() -> None:
        time.sleep(seconds)
        cache.set(key, value, 60)
        answers.ring(key)

    thread = threading.Thread(target=lane)
    thread.start()
    return thread


def _counting_gets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    looked: list[str] = []
    real = cache.get

    def get(key: str, default: Any = None) -> Any:
        looked.append(key)
        return real(key, default)

    monkeypatch.setattr(cache, "get", get)
    return looked


@pytest.mark.needs_redis
def test_a_waiting_request_wakes_on_the_bell_and_does_not_poll(
    redis_url: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.REDIS_URL = redis_url
    key = f"hearts:test-answer:{uuid.uuid4()}"
    looked = _counting_gets(monkeypatch)
    lane = _later(0.6, key, {"answer": 42})
    started = time.monotonic()
    assert answers.wait(key, 5) == {"answer": 42}
    took = time.monotonic() - started
    lane.join()
    assert 0.55 < took < 0.6 + 0.2  # woken by the bell, not by the next look
    assert len(looked) <= 5  # a look per BLOCK_SECONDS at most (a 20 ms poll would make 30)
    # A second request for the same answer finds it at once; so does one waiting on the same bell.
    assert answers.wait(key, 5) == {"answer": 42}


def test_without_redis_it_looks_in_the_cache_until_the_answer_or_the_deadline(settings: Any) -> None:
    settings.REDIS_URL = ""
    key = f"hearts:test-answer:{uuid.uuid4()}"
    lane = _later(0.1, key, "found")
    assert answers.wait(key, 5) == "found"
    lane.join()
    started = time.monotonic()
    assert answers.wait(f"{key}:never", 0.2) is None
    assert 0.2 <= time.monotonic() - started < 0.5


def test_a_cache_that_cannot_be_reached_is_an_answer_not_there_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis restarting while a request waits: it goes on waiting (and answers `service_unavailable`
    at its deadline), never a 500."""
    import redis

    def down(*args: Any, **kwargs: Any) -> Any:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(cache, "get", down)
    assert answers.look("hearts:test-answer:any") is None
    assert answers.wait("hearts:test-answer:any", 0.1) is None


@pytest.mark.django_db(transaction=True)
def test_a_waiting_request_gives_its_database_connection_back() -> None:
    """Outside a transaction the connection is given back (to the pool) before the wait; inside one
    (a test's, an atomic block) it is kept."""
    connection.ensure_connection()
    assert connection.connection is not None
    closes = []
    close = connection.close

    def spy() -> None:
        closes.append(True)
        close()

    with mock.patch.object(connection, "close", spy), answers.idle():
        assert closes == [True]
        # Django keeps an in-memory SQLite database open when asked to close it (the `make
        # test-fast` run): closing it would lose the database. Elsewhere the connection is gone.
        in_memory = connection.vendor == "sqlite" and connection.is_in_memory_db()  # type: ignore[attr-defined]
        assert in_memory or connection.connection is None
    connection.ensure_connection()


def test_a_slot_lent_back_while_waiting_lets_another_request_run_then_is_taken_again() -> None:
    async def scenario() -> list[str]:
        limit = asyncio.Semaphore(1)
        order: list[str] = []
        waiting = pressure.Slot(limit)
        await waiting.take()
        pressure.SLOT.set(waiting)

        def in_thread() -> None:  # the waiting request's thread (contextvars copied, as asgiref does)
            with pressure.lend_slot():
                order.append("lent")
                time.sleep(0.2)
            order.append("taken again")

        async def other() -> None:
            slot = pressure.Slot(limit)
            await slot.take()  # only possible while the first slot is lent
            order.append("other ran")
            slot.give_back()

        thread = asyncio.ensure_future(asyncio.to_thread(in_thread))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(other(), 1)
        await thread
        assert waiting.held and limit.locked()
        waiting.give_back()
        waiting.give_back()  # idempotent
        assert not limit.locked()
        return order

    assert asyncio.run(scenario()) == ["lent", "other ran", "taken again"]


@pytest.mark.slow
@pytest.mark.needs_redis
def test_hints_waiting_on_a_silent_lane_keep_no_play_waiting(web: Callable[..., str]) -> None:  # noqa: F811
    """One request slot and one pooled connection per process, no hints worker: three hint
    requests wait their whole HINT_THINK_MS, and meanwhile the table is read at once, many times."""
    from games.accounts import app_create, player_create

    one = {"WEB_MAX_CONCURRENT_REQUESTS": "1", "DB_POOL_MAX_SIZE": "1", "DB_POOL_MIN_SIZE": "0"}
    base = web(**one, HINT_THINK_MS="3000")
    app, _ = app_create(name="waiting")
    tokens = [player_create(app=app, name=f"p{i}")[1] for i in range(4)]
    with httpx.Client(base_url=base + "/api/v1", timeout=30) as http:
        auth = [{"Authorization": f"Bearer {t}"} for t in tokens]
        r = http.post("/tables", json={"hints": True}, headers=auth[0])
        assert r.status_code == 201, r.text
        table = r.json()["id"]
        for a in auth:
            assert http.post(f"/tables/{table}/join", json={}, headers=a).status_code == 200
        seat_of = {http.get(f"/tables/{table}", headers=a).json()["your_seat"]: a for a in auth}
        to_act = http.get(f"/tables/{table}", headers=auth[0]).json()["game"]["to_act"]
        asking = seat_of[to_act[0]]
        hints: list[httpx.Response] = []

        def ask(level: str) -> None:
            with httpx.Client(base_url=base + "/api/v1", timeout=30) as own:
                hints.append(own.get(f"/tables/{table}/hint", params={"level": level}, headers=asking))

        askers = [threading.Thread(target=ask, args=(level,)) for level in ("basic", "strong", "expert")]
        started = time.monotonic()
        for thread in askers:
            thread.start()
        time.sleep(0.5)  # all three waiting on the lane now
        reads = []
        while time.monotonic() - started < 2.5:
            t = time.monotonic()
            assert http.get(f"/tables/{table}", headers=auth[0]).status_code == 200
            reads.append(time.monotonic() - t)
            time.sleep(0.05)  # a client's pace: unpaced, a fast run spends the key's 600/minute
        for thread in askers:
            thread.join()
    assert [r.json()["code"] for r in hints] == ["service_unavailable"] * 3  # nobody computed them
    assert len(reads) >= 10 and max(reads) < 1.0, reads
