"""Which players have a live stream or subscription on which table, across every web process (Redis).

A push (games.push) is not sent to a player who is watching the table: their stream already tells
them. Each open player stream is one member of the sorted set `hearts:present:<table>:<player>` per
table it follows, scored with the time the entry expires; the stream adds itself when it follows a
table and removes itself when it stops or closes, and its process refreshes its entries every
STREAM_POLL_SECONDS (games/live/fanout.py), so a process that died leaves entries that expire within
TTL seconds, and a web process whose Redis came back empty (a restart) adds its entries again at
once. Without Redis (the embedded run, one process) the entries are kept in the process. While
Redis cannot say, a push waits (games.push.sending) rather than guess.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from django.conf import settings

from games.infra.notify import shared_redis

log = logging.getLogger(__name__)

TTL = 30.0  # seconds an entry lives without a refresh

Entry = tuple[int, int, str]  # (table, player, stream)

_lock = threading.Lock()
_local: dict[tuple[int, int], set[str]] = {}  # without Redis: the streams of this process


def key(table_id: int, player_id: int) -> str:
    return f"hearts:present:{table_id}:{player_id}"


def opened(entries: Iterable[Entry]) -> None:
    """These streams follow these tables for these players: add the entries, or push back their expiry."""
    entries = list(entries)
    if not entries:
        return
    client = shared_redis()
    if client is None:
        with _lock:
            for table_id, player_id, stream in entries:
                _local.setdefault((table_id, player_id), set()).add(stream)
        return
    expires = time.time() + TTL
    try:
        pipe = client.pipeline(transaction=False)
        for table_id, player_id, stream in entries:
            pipe.zadd(key(table_id, player_id), {stream: expires})
            pipe.expire(key(table_id, player_id), int(TTL) + 1)
        pipe.execute()
    except Exception as exc:  # presence only spares a push: never fail a stream over it
        log.warning("presence: Redis unavailable: %s", exc)


def refresh(entries: Iterable[Entry]) -> None:
    """Push back the expiry of these open entries (with Redis; in-process entries never expire)."""
    if shared_redis() is not None:
        opened(entries)


def closed(entries: Iterable[Entry]) -> None:
    entries = list(entries)
    if not entries:
        return
    client = shared_redis()
    if client is None:
        with _lock:
            for table_id, player_id, stream in entries:
                streams = _local.get((table_id, player_id))
                if streams is not None:
                    streams.discard(stream)
                    if not streams:
                        del _local[(table_id, player_id)]
        return
    try:
        pipe = client.pipeline(transaction=False)
        for table_id, player_id, stream in entries:
            pipe.zrem(key(table_id, player_id), stream)
        pipe.execute()
    except Exception as exc:
        log.warning("presence: Redis unavailable: %s", exc)


def watching(table_id: int, player_id: int) -> bool | None:
    """Whether the player has a live stream or subscription following the table now; None when
    Redis cannot say (the caller waits and asks again rather than guess)."""
    if not settings.REDIS_URL:
        with _lock:
            return bool(_local.get((table_id, player_id)))
    client = shared_redis()
    if client is None:
        return None
    try:
        return int(client.zcount(key(table_id, player_id), time.time(), "+inf")) > 0  # type: ignore[arg-type]
    except Exception as exc:
        log.warning("presence: Redis unavailable: %s", exc)
        return None
