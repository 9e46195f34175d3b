"""How many spectator streams each table has open, across every web process (Redis sorted sets).

Each open spectator stream is one member of its table's sorted set `hearts:spectators:<table>`,
scored with the time its entry expires. A stream adds itself when it opens and removes itself when
it closes; its process refreshes all its entries every STREAM_POLL_SECONDS (games/api/fanout.py),
so the entries of a process that died expire within TTL seconds. The count is the number of
members not expired; a process keeps each table's count for CACHE_SECONDS, so reading it costs a
Redis round trip at most once a second per table and process. Without Redis (the embedded run, one
process) the streams are counted in the process. Redis failing makes the count 0, never an error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import cast

from django.conf import settings

from games.infra.notify import shared_redis

log = logging.getLogger(__name__)

TTL = 30.0  # seconds an entry lives without a refresh
CACHE_SECONDS = 1.0  # how long a process reuses a table's count

_lock = threading.Lock()
_local: dict[int, set[str]] = {}  # without Redis: the streams of this process
_cache: dict[int, tuple[float, int]] = {}


def key(table_id: int) -> str:
    return f"hearts:spectators:{table_id}"


def opened(entries: Iterable[tuple[int, str]]) -> None:
    """These (table, stream) entries are open: add them, or refresh their expiry."""
    entries = list(entries)
    if not entries:
        return
    client = shared_redis()
    if client is None:
        with _lock:
            for table_id, stream in entries:
                _local.setdefault(table_id, set()).add(stream)
                _cache.pop(table_id, None)
        return
    expires = time.time() + TTL
    try:
        pipe = client.pipeline(transaction=False)
        for table_id, stream in entries:
            pipe.zadd(key(table_id), {stream: expires})
            pipe.expire(key(table_id), int(TTL) + 1)
        pipe.execute()
    except Exception as exc:  # the count is informative: never fail a stream over it
        log.warning("spectators: Redis unavailable: %s", exc)


def refresh(entries: Iterable[tuple[int, str]]) -> None:
    """Push back the expiry of these open entries (with Redis; in-process entries never expire)."""
    if shared_redis() is not None:
        opened(entries)


def closed(table_id: int, stream: str) -> None:
    client = shared_redis()
    if client is None:
        with _lock:
            _local.get(table_id, set()).discard(stream)
            _cache.pop(table_id, None)
        return
    try:
        client.zrem(key(table_id), stream)
    except Exception as exc:
        log.warning("spectators: Redis unavailable: %s", exc)


def count(table_id: int) -> int:
    """The table's open spectator streams (at most CACHE_SECONDS old)."""
    now = time.monotonic()
    with _lock:
        cached = _cache.get(table_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        if not settings.REDIS_URL:
            return len(_local.get(table_id, ()))
    client = shared_redis()
    try:
        found = int(cast(int, client.zcount(key(table_id), time.time(), "+inf"))) if client is not None else 0
    except Exception as exc:
        log.warning("spectators: Redis unavailable: %s", exc)
        found = 0
    with _lock:
        _cache[table_id] = (now + CACHE_SECONDS, found)
    return found
