"""Turn clocks in Redis (games/infra/clocks.py): one entry per table, replaced and cleared by commits,
claimed exactly once when due, drained on time."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid

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
