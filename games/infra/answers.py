"""A request waiting for a lane's answer (a hint, a hand review), holding no database connection,
no request slot and no Redis polling while it waits.

The lane keeps the answer in the cache under a key and then rings that key's bell (`ring`: a Redis
list, kept BELL_SECONDS); the request (`wait`) looks in the cache, and until the answer is there
blocks on the bell (BLPOP) for at most BLOCK_SECONDS at a time, looking in the cache again after
each, so a bell lost with a Redis restart delays an answer by at most that. A waiter woken rings the
bell again for any other request waiting on the same key. Without Redis (the embedded run) it
looks in the cache every POLL_SECONDS. Before waiting, the request gives its database connection
back to the pool and lends its slot back (games.infra.pressure.lend_slot): under load, hint
requests waiting on a busy lane had held every pooled connection and slot of the web process, and
people's plays waited seconds behind them (bench/load.py --hints, issue 39).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kombu.exceptions
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from games.errors import ServiceError
from games.infra import pressure

log = logging.getLogger(__name__)
BELL_SECONDS = 60  # a rung bell is kept this long, for requests that start waiting late
BLOCK_SECONDS = 0.25  # longest one BLPOP blocks before the cache is looked in again
POLL_SECONDS = 0.02  # without Redis: how often a waiting request looks in the cache
RETRY_AFTER = 2  # seconds, in the answer when the lane's task could not be queued
_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}


def _client() -> redis.Redis | None:
    """This process's client for the bells: connections of its own, since a BLPOP holds one for
    its whole wait (the shared client's small pool serves quick round trips)."""
    url = settings.REDIS_URL
    if not url:
        return None
    with _lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(
                url,
                socket_connect_timeout=0.5,
                socket_timeout=BLOCK_SECONDS + 1,
                client_name="hearts-answers",
            )
        return _clients[url]


def look(key: str) -> Any:
    """The answer kept under `key`, or None: not there yet, or the cache cannot be reached (Redis
    restarting: the request goes on waiting, or answers `service_unavailable` at its deadline)."""
    try:
        return cache.get(key)
    except redis.RedisError as exc:
        log.debug("answer %s not looked up: %s", key, exc)
        return None


def ask(queue: Callable[[], None], what: str) -> None:
    """Queue the lane's task (`queue`), or answer `service_unavailable` if the broker cannot take it."""
    try:
        queue()
    except (kombu.exceptions.OperationalError, redis.RedisError) as exc:
        log.warning("%s not queued: %s", what, exc)
        raise ServiceError(
            "service_unavailable",
            f"the {what} cannot be computed right now: ask again in a moment",
            kind="unavailable",
            retry_after=RETRY_AFTER,
        ) from exc


def _bell(key: str) -> str:
    return f"{key}:ready"


def ring(key: str) -> None:
    """The lane kept the answer under `key` (in the cache): wake the requests waiting for it."""
    client = _client()
    if client is None:
        return
    try:
        with client.pipeline(transaction=False) as pipe:
            pipe.rpush(_bell(key), 1)
            pipe.expire(_bell(key), BELL_SECONDS)
            pipe.execute()
    except redis.RedisError as exc:  # the waiters look in the cache again within BLOCK_SECONDS
        log.debug("bell of %s not rung: %s", key, exc)


def _listen(key: str, seconds: float) -> bool:
    """Block until `key`'s bell rings or `seconds` pass; False without a Redis to block on."""
    client = _client()
    if client is None:
        return False
    try:
        if client.blpop([_bell(key)], timeout=max(0.01, min(seconds, BLOCK_SECONDS))):
            ring(key)  # for the next request waiting on it
        return True
    except redis.RedisError:
        return False


@contextlib.contextmanager
def idle() -> Iterator[None]:
    """Hold no database connection (outside a transaction: back to the pool, or closed) and no
    request slot while the request waits."""
    if not connection.in_atomic_block:
        connection.close()
    with pressure.lend_slot():
        yield


def wait(key: str, seconds: float, *, look_first: bool = True) -> Any:
    """The answer kept under `key` in the cache, waiting up to `seconds` for a lane to keep it;
    None if it did not come in time. A caller that has just looked and then asked passes
    `look_first=False`: the lane cannot have answered yet, and the wait starts on the bell (without
    Redis there is no bell, and an eager lane has answered already: it looks first anyway)."""
    found = look(key) if look_first or _client() is None else None
    if found is not None or seconds <= 0:
        return found
    deadline = time.monotonic() + seconds
    with idle():
        while found is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not _listen(key, left):
                time.sleep(min(left, POLL_SECONDS))
            found = look(key)
    return found
