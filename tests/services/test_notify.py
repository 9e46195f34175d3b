"""Stream wake-ups (games/infra/notify.py) reach the streams of their own Redis database only, and a
process's shared Redis client opens no more connections than REDIS_POOL_SIZE, however many threads."""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from games.infra import notify

pytestmark = pytest.mark.needs_redis


def _on_database(url: str, db: int) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


def _heard(listener: Any, count: int) -> list[tuple[str, str]]:
    """The first `count` messages (channel, data) the listener gets within 5 s."""
    heard: list[tuple[str, str]] = []
    deadline = time.monotonic() + 5
    while len(heard) < count and time.monotonic() < deadline:
        message = listener.get_message(timeout=0.2)
        if message:
            heard.append((message["channel"].decode(), message["data"].decode()))
    return heard


def test_two_databases_of_one_redis_server_never_wake_each_others_streams(
    redis_url: str, settings: Any
) -> None:
    """Pub/sub channels belong to the server, not to a database: without the database's number in
    the channel, a deployment (or a test run) on database 8 would wake streams on database 9."""
    mine, theirs = _on_database(redis_url, 8), _on_database(redis_url, 9)
    settings.REDIS_URL = mine
    my_table, my_player = notify.table_channel(42), notify.player_channel(7)
    assert (my_table, my_player) == ("hearts:8:table:42", "hearts:8:player:7")
    listener = redis.Redis.from_url(mine).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(my_table, my_player)
    try:
        settings.REDIS_URL = theirs  # the same table and player ids, on the other database
        notify.send([notify._Note(42, 5, frozenset({7}), clock=False)])
        settings.REDIS_URL = mine
        notify.send([notify._Note(42, 6, frozenset({7}), clock=False)])
        heard = _heard(listener, 2)
        time.sleep(0.2)  # anything from the other database would have arrived by now
        while message := listener.get_message(timeout=0.1):
            heard.append((message["channel"].decode(), message["data"].decode()))
        assert heard == [(my_table, "6"), (my_player, "42:6")]
    finally:
        listener.close()


def test_a_carried_change_goes_on_the_tables_channel_only(redis_url: str, settings: Any) -> None:
    """`<version>;;<change>` on the table's channel (no traceparent: tracing off); the player's
    channel says only which table moved."""
    settings.REDIS_URL = _on_database(redis_url, 8)
    listener = redis.Redis.from_url(settings.REDIS_URL).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(notify.table_channel(43), notify.player_channel(8))
    try:
        notify.send([notify._Note(43, 9, frozenset({8}), clock=False, change='{"v":9}')])
        heard = _heard(listener, 2)
        assert heard == [(notify.table_channel(43), '9;;{"v":9}'), (notify.player_channel(8), "43:9")]
    finally:
        listener.close()


def test_without_a_database_number_the_channels_are_database_0s(settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:6379"
    assert notify.table_channel(1) == "hearts:0:table:1"
    settings.REDIS_URL = ""  # the embedded run publishes nothing, but the names stay well formed
    assert notify.player_channel(1) == "hearts:0:player:1"


def test_many_threads_share_at_most_redis_pool_size_connections(
    redis_url: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The streams' thread pool, the publisher and request threads all use one client: 24 threads at
    once get every answer through 2 connections (a thread waits for a free one, it does not open one)."""
    # A database no other test uses: the only "hearts-shared" connections on it are this pool's.
    url = _on_database(redis_url, 10)
    settings.REDIS_URL, settings.REDIS_POOL_SIZE = url, 2
    monkeypatch.setattr(notify, "_clients", {})
    client = notify.shared_redis()
    assert client is not None
    # A thread waits up to 0.5 s for a free connection, then fails open (False): on a loaded CI
    # machine 24 threads on 2 connections can wait longer, and what is checked here is that they
    # share the 2 connections, not how fast: give them time.
    client.connection_pool.timeout = 10  # type: ignore[attr-defined]  # a BlockingConnectionPool
    start, answers = threading.Barrier(24), []

    def ping_often() -> None:
        start.wait()
        # Each thread collects its own answers and hands them over in one append: list.extend from a
        # generator that releases the GIL (a network call per item) is not atomic across threads.
        mine = [client.ping() for _ in range(50)]
        answers.append(mine)

    threads = [threading.Thread(target=ping_often) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [answer for mine in answers for answer in mine] == [True] * 24 * 50
    listed = redis.Redis.from_url(url).client_list()
    ours = [c for c in listed if (c["name"], c["db"]) == ("hearts-shared", "10")]
    assert 1 <= len(ours) <= 2
    client.connection_pool.disconnect()
