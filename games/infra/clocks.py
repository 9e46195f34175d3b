"""Turn clocks in one Redis sorted set: each table's deadline, set after its commit, claimed when due.

A table has at most one entry (member: the table id, score: the deadline as a Unix time), replaced
by every commit that sets a new deadline and removed by one that clears it, so a clock that a move
made stale is gone rather than left to fire for nothing (an ETA task per move fired once per move,
and most of them did nothing: at 20 people acting per second, the clock worker fell seconds behind).
The clock lane's workers drain the set (`drain`, a thread in each worker that consumes the `clocks`
queue): every 50 ms one Lua call claims the due tables atomically (two workers never claim the same
entry), and each is sent to the `clocks` queue as `games.enforce_clock`, which acts only if the
table's deadline in the database has passed. The database is the truth and the sweep the safety net:
an entry lost with Redis, or claimed by a worker killed before it sent the task, is found by the
sweep 0.5 s after its deadline.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

log = logging.getLogger(__name__)
KEY = "hearts:clocks"
TICK = 0.05  # seconds between two claims when nothing was due
BATCH = 200  # most tables claimed at once

_CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return due
"""


def stage(pipe: Any, table_id: int, deadline: dt.datetime | None) -> None:
    """Add the table's clock to a pipeline: set to `deadline`, or cleared when it is None."""
    if deadline is None:
        pipe.zrem(KEY, table_id)
    else:
        pipe.zadd(KEY, {str(table_id): deadline.timestamp()})


def claim_due(client: redis.Redis, now: float, limit: int = BATCH) -> list[int]:
    """The tables whose clock is due at `now`, removed from the set (by this caller only)."""
    due: list[bytes] = client.eval(_CLAIM, 1, KEY, str(now), str(limit))  # type: ignore[assignment]  # redis-py: Awaitable | Any
    return [int(member) for member in due]


def drain(client: redis.Redis, send: Callable[[int], None], stop: threading.Event) -> None:
    """Until `stop`: claim the due clocks and `send` each table id on. Redis errors are logged
    and retried with backoff; the sweep covers the clocks that come due meanwhile."""
    pause = TICK
    while not stop.is_set():
        try:
            due = claim_due(client, time.time())
            pause = TICK
        except redis.RedisError as exc:
            log.warning("clocks: cannot claim due clocks: %s", exc)
            pause = min(5.0, pause * 2)
            stop.wait(pause)
            continue
        for table_id in due:
            try:
                send(table_id)
            except Exception:  # the sweep acts on it 0.5 s after its deadline
                log.exception("clocks: table %s claimed but its task not sent", table_id)
        if len(due) < BATCH:
            stop.wait(TICK)


def start_draining(client: redis.Redis, send: Callable[[int], None]) -> threading.Event:
    """`drain` in a daemon thread; set the returned event to stop it."""
    stop = threading.Event()
    threading.Thread(target=drain, args=(client, send, stop), name="clocks", daemon=True).start()
    return stop
