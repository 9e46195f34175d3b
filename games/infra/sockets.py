"""Caps on open WebSockets and subscriptions per token and per app, across every web process (Redis).

Each open socket (or subscription) is one member of a sorted set per scope (`hearts:ws:<kind>:<scope>`,
the scope being a credential or an app), scored with the time its entry expires. `acquire` adds an
entry to all its scopes at once, or to none when one of them is full (one Lua script, so two
processes cannot both take the last place); the socket refreshes its entries while it lives, so the
entries of a killed process expire within TTL seconds; `release` removes them. Without Redis (the
embedded run, one process) the entries are counted in the process. A Redis that fails lets the
socket open (a cap protects the service; it must not take it down with Redis).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import cast

from games.infra.notify import shared_redis

log = logging.getLogger(__name__)

TTL = 45.0  # seconds an entry lives without a refresh (a socket refreshes every REFRESH seconds)
REFRESH = 15.0

Scope = tuple[str, int]  # (set key, its limit)

_ACQUIRE = """
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[2])
  if not redis.call('ZSCORE', key, ARGV[1]) and redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then
    return i
  end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[3], ARGV[1])
  redis.call('EXPIRE', key, math.ceil(tonumber(ARGV[3]) - tonumber(ARGV[2])) + 1)
end
return 0
"""

_lock = threading.Lock()
_local: dict[str, set[str]] = {}  # without Redis: the entries of this process


def key(kind: str, scope: str) -> str:
    return f"hearts:ws:{kind}:{scope}"


def acquire(scopes: list[Scope], entry: str) -> Scope | None:
    """Take a place for `entry` in every scope, or in none: None when taken, else the full scope."""
    client = shared_redis()
    if client is None:
        with _lock:
            for name, limit in scopes:
                held = _local.setdefault(name, set())
                if entry not in held and len(held) >= limit:
                    return name, limit
            for name, _ in scopes:
                _local[name].add(entry)
        return None
    now = time.time()
    try:
        keys = [name for name, _ in scopes]
        args = [entry, str(now), str(now + TTL), *(str(limit) for _, limit in scopes)]
        full = int(cast(str, client.eval(_ACQUIRE, len(keys), *keys, *args)))
    except Exception as exc:
        log.warning("socket caps: Redis unavailable, not enforced: %s", exc)
        return None
    return scopes[full - 1] if full else None


def refresh(held: Iterable[tuple[list[Scope], str]]) -> None:
    """Push back the expiry of these entries (each: its scopes and its entry)."""
    client = shared_redis()
    held = list(held)
    if client is None or not held:
        return
    expires = time.time() + TTL
    try:
        pipe = client.pipeline(transaction=False)
        for scopes, entry in held:
            for name, _ in scopes:
                pipe.zadd(name, {entry: expires}, xx=True)
                pipe.expire(name, int(TTL) + 1)
        pipe.execute()
    except Exception as exc:
        log.warning("socket caps: Redis unavailable: %s", exc)


def release(scopes: list[Scope], entry: str) -> None:
    client = shared_redis()
    if client is None:
        with _lock:
            for name, _ in scopes:
                _local.get(name, set()).discard(entry)
        return
    try:
        pipe = client.pipeline(transaction=False)
        for name, _ in scopes:
            pipe.zrem(name, entry)
        pipe.execute()
    except Exception as exc:
        log.warning("socket caps: Redis unavailable: %s", exc)


def count(name: str) -> int:
    """The entries of one scope not expired (tests and the admin read it)."""
    client = shared_redis()
    if client is None:
        with _lock:
            return len(_local.get(name, ()))
    return int(client.zcount(name, time.time(), "+inf"))  # type: ignore[arg-type]
