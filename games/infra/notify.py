"""After a commit: wake every web process's streams of the table (Redis pub/sub), and set its turn clock."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterable

import redis
from django.conf import settings

from games.infra import clocks

log = logging.getLogger(__name__)
_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}


def table_channel(table_id: int) -> str:
    return f"hearts:table:{table_id}"


def player_channel(player_id: int) -> str:
    return f"hearts:player:{player_id}"


def shared_redis() -> redis.Redis | None:
    """This process's Redis client for REDIS_URL (None without Redis); short timeouts, because a
    slow Redis must not hold up a request (wake-ups and rate limits both fail open)."""
    url = settings.REDIS_URL
    if not url:
        return None
    with _lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
        return _clients[url]


def publish(
    table_id: int, version: int, player_ids: Iterable[int], *, clock: dt.datetime | bool | None = False
) -> None:
    """Announce that `table_id` reached `version` on the table's channel and each seated player's,
    and (unless `clock` is False) set the table's turn clock to `clock` or clear it (None), in the
    same round trip (games.infra.clocks). The message is only a wake-up: streams read what changed
    from the database, so a lost message (Redis restarting) delays a stream by at most its poll
    interval, and never loses or repeats an event; a lost clock is found by the sweep. Without
    Redis (the embedded run) streams poll, the sweeping thread enforces clocks, and this does nothing."""
    client = shared_redis()
    if client is None:
        return
    message = str(version)
    try:
        with client.pipeline(transaction=False) as pipe:
            pipe.publish(table_channel(table_id), message)
            for player_id in set(player_ids):
                pipe.publish(player_channel(player_id), f"{table_id}:{version}")
            if clock is not False:
                clocks.stage(pipe, table_id, clock if isinstance(clock, dt.datetime) else None)
            pipe.execute()
    except redis.RedisError as exc:  # never fail a committed action because a wake-up was lost
        log.warning("stream wake-up for table %s not published: %s", table_id, exc)
