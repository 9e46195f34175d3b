"""Turn clocks in Redis (games/infra/clocks.py): one entry per table, replaced and cleared by commits,
claimed exactly once when due, drained on time."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from games.infra import clocks

pytestmark = pytest.mark.needs_redis


@pytest.fixture
def client(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> redis.Redis:
    monkeypatch.setattr(clocks, "KEY", f"hearts:clocks:test:{uuid.uuid4().hex}")
    c = redis.Redis.from_url(redis_url)
    yield c
    c.delete(clocks.KEY)


def _set(client: redis.Redis, table_id: int, deadline: dt.datetime | None) -> None:
    with client.pipeline(transaction=False) as pipe:
        clocks.stage(pipe, table_id, deadline)
        pipe.execute()


def test_a_table_has_one_clock_replaced_by_each_commit_and_cleared_when_none(client: redis.Redis) -> None:
    now = dt.datetime.now(dt.UTC)
    _set(client, 1, now - dt.timedelta(seconds=1))  # due...
    _set(client, 1, now + dt.timedelta(seconds=60))  # ...until the next commit moved it on
    _set(client, 2, now - dt.timedelta(seconds=1))
    _set(client, 2, None)  # a bot's turn: no clock
    _set(client, 3, now - dt.timedelta(seconds=1))
    assert client.zcard(clocks.KEY) == 2
    assert clocks.claim_due(client, time.time()) == [3]
    assert clocks.claim_due(client, time.time()) == []  # claimed once
    assert clocks.claim_due(client, time.time() + 61) == [1]


def test_racing_claimers_never_claim_the_same_table(client: redis.Redis) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    with client.pipeline(transaction=False) as pipe:
        for table_id in range(1, 1001):
            clocks.stage(pipe, table_id, past)
        pipe.execute()
    claimed: list[list[int]] = [[] for _ in range(4)]

    def claim(n: int) -> None:
        while due := clocks.claim_due(client, time.time(), limit=7):
            claimed[n] += due

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [table_id for part in claimed for table_id in part]
    assert sorted(every) == list(range(1, 1001))  # each exactly once


def test_the_drainer_sends_a_clock_within_a_tick_of_its_deadline(client: redis.Redis) -> None:
    sent: list[tuple[int, float]] = []
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=0.5)
    _set(client, 42, deadline)
    stop = clocks.start_draining(client, lambda table_id: sent.append((table_id, time.time())))
    try:
        for _ in range(40):
            if sent:
                break
            time.sleep(0.05)
    finally:
        stop.set()
    assert [table_id for table_id, _ in sent] == [42]
    assert 0 <= sent[0][1] - deadline.timestamp() < 0.2


@pytest.fixture
def sweep_keys(redis_url: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[redis.Redis]:
    from games import tasks

    settings.REDIS_URL = redis_url
    settings.SWEEP_SECONDS = 0.4  # a sweep's end holds the next ones off for 0.2 s
    monkeypatch.setattr(tasks, "SWEEP_LOCK", f"hearts:sweep:test:{uuid.uuid4().hex}")
    monkeypatch.setattr(tasks, "SWEPT", f"hearts:swept:test:{uuid.uuid4().hex}")
    c = redis.Redis.from_url(redis_url)
    yield c
    c.delete(tasks.SWEEP_LOCK, tasks.SWEPT)


def test_one_sweep_runs_at_a_time_and_the_ones_queued_behind_it_do_nothing(sweep_keys: redis.Redis) -> None:
    """While the database is down a sweep waits for a connection: the next ones (beat sends one a
    second) must not hold the clock lane's other processes, nor run one after another once it is
    back, ahead of the clocks that came due meanwhile."""
    from games import tasks

    with tasks.sweep_turn() as first:
        assert first
        with tasks.sweep_turn() as second:
            assert not second  # another sweep is running
    with tasks.sweep_turn() as third:
        assert not third  # one just ended: this one was queued behind it
    time.sleep(0.25)
    with tasks.sweep_turn() as fourth:
        assert fourth  # half a period later: the next beat's
    ran = []

    def by_a_worker() -> int:
        tasks.sweep.push_request(is_eager=False, called_directly=False)
        try:
            return int(tasks.sweep.run())
        finally:
            tasks.sweep.pop_request()

    time.sleep(0.25)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(tasks, "_sweep", lambda limit, inline: ran.append(limit) or 1)
        assert by_a_worker() == 1 and by_a_worker() == 0  # the second within half a period
        assert tasks.sweep() == 1 and tasks.sweep() == 1  # called directly (tests, embedded): always
    assert ran == [500, 500, 500]
    assert not getattr(tasks.sweep, "autoretry_for", ())  # a failed sweep waits for the next beat


def test_a_sweep_runs_when_redis_cannot_say(settings: Any) -> None:
    """The sweep is the safety net for Redis's own failures: without Redis it runs."""
    from games import tasks
    from games.infra import notify

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    try:
        with tasks.sweep_turn() as mine:
            assert mine
    finally:
        notify._clients.pop(settings.REDIS_URL, None)
