"""After a commit, tell every web process that a table changed (Redis pub/sub), so open streams wake."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import redis
from django.conf import settings

log = logging.getLogger(__name__)
_lock = threading.Lock()
_client: redis.Redis | None = None


def table_channel(table_id: int) -> str:
    return f"hearts:table:{table_id}"


def player_channel(player_id: int) -> str:
    return f"hearts:player:{player_id}"


def _redis() -> redis.Redis | None:
    global _client
    if not settings.REDIS_URL:
        return None
    with _lock:
        if _client is None:
            _client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
        return _client


def publish(table_id: int, version: int, player_ids: Iterable[int]) -> None:
    """Announce that `table_id` reached `version` on the table's channel and each seated player's.
    The message is only a wake-up: streams read what changed from the database, so a lost
    message (Redis restarting) delays a stream by at most its poll interval, and never loses or
    repeats an event. Without Redis (the embedded run) streams poll, and this does nothing."""
    client = _redis()
    if client is None:
        return
    message = str(version)
    try:
        with client.pipeline(transaction=False) as pipe:
            pipe.publish(table_channel(table_id), message)
            for player_id in set(player_ids):
                pipe.publish(player_channel(player_id), f"{table_id}:{version}")
            pipe.execute()
    except redis.RedisError as exc:  # never fail a committed action because a wake-up was lost
        log.warning("stream wake-up for table %s not published: %s", table_id, exc)
