"""After a commit: wake the table's streams (Redis pub/sub), set its turn clock and queue its bot task.

All three in one Redis round trip, made by a thread of the process's own (`publish`)."""

from __future__ import annotations

import atexit
import datetime as dt
import functools
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import redis
from django.conf import settings
from redis.connection import parse_url

from games.infra import clocks
from hearts_service import tracing

log = logging.getLogger(__name__)
_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}


def table_channel(table_id: int) -> str:
    return f"{_channel_prefix()}table:{table_id}"


def player_channel(player_id: int) -> str:
    return f"{_channel_prefix()}player:{player_id}"


def _channel_prefix() -> str:
    return _prefix_of(settings.REDIS_URL)


@functools.cache
def _prefix_of(url: str) -> str:
    """`hearts:<db>:`: pub/sub channels belong to the Redis server, not to a database, so the number
    of REDIS_URL's database keeps two deployments (or two test runs) on one server from waking each
    other's streams, as their keys already are kept apart."""
    database = parse_url(url).get("db", 0) if url else 0  # type: ignore[no-untyped-call]
    return f"hearts:{database}:"


def shared_redis() -> redis.Redis | None:
    """This process's Redis client for REDIS_URL (None without Redis); short timeouts, because a
    slow Redis must not hold up a request (wake-ups, rate limits and spectator counts all fail open).

    Its pool holds at most REDIS_POOL_SIZE connections, whatever the number of threads using it (the
    streams' thread pool alone has up to 32): a thread finding them all busy waits for one (a round
    trip is well under a millisecond) and, after the same 0.5 s, fails open like a slow Redis."""
    url = settings.REDIS_URL
    if not url:
        return None
    with _lock:
        if url not in _clients:
            pool = redis.BlockingConnectionPool.from_url(
                url,
                max_connections=settings.REDIS_POOL_SIZE,
                timeout=0.5,
                socket_connect_timeout=0.5,
                socket_timeout=0.5,
                client_name="hearts-shared",  # how an operator tells them apart in CLIENT LIST
            )
            _clients[url] = redis.Redis(connection_pool=pool)
        return _clients[url]


def publish(
    table_id: int,
    version: int,
    player_ids: Iterable[int],
    *,
    clock: dt.datetime | bool | None = False,
    change: str | None = None,
    tasks: tuple[tuple[str, str], ...] = (),
) -> None:
    """Announce that `table_id` reached `version` on the table's channel and each seated player's,
    and (unless `clock` is False) set the table's turn clock to `clock` or clear it (None), in the
    same round trip (games.infra.clocks). `change`: what the commit wrote (games.changes), carried
    on the table's channel so that an up-to-date stream feed needs no read. The message is only a
    wake-up: the move log is the truth, and a feed reads the database whenever the message lacks
    the change or does not continue its last read; a lost message (Redis restarting) delays a
    stream by at most its poll interval, and never loses or repeats an event; a lost clock is
    found by the sweep. Without Redis (the embedded run: one process) the wake-up goes straight to
    this process's stream hubs (`listen_here`), and the sweeping thread enforces clocks.

    `tasks`: Celery task messages the commit owes (games.infra.jobs.play_bots_message: a Redis list
    and a message), LPUSHed in the same round trip; one lost with Redis is queued again by the
    sweep, as a lost clock is. Only with Redis (the caller sends its tasks itself without).

    The round trip is made by this process's publisher thread, in order, several commits' wake-ups
    in one pipeline when they queue up: the request that committed does not wait for Redis."""
    if not settings.REDIS_URL:
        players = frozenset(player_ids)
        for listener in list(_listeners):
            listener(table_id, version, players, change)
        return
    trace = tracing.traceparent() if tracing.ON else None
    _outbox().put(_Note(table_id, version, frozenset(player_ids), clock, trace, change, tasks))


# Without Redis, the stream hubs of this process (one per event loop), called with each wake-up.
Listener = Callable[[int, int, frozenset[int], str | None], None]
_listeners: list[Listener] = []


def listen_here(listener: Listener) -> None:
    """Without Redis: call `listener(table_id, version, player_ids, change)` with every wake-up this
    process publishes (from the thread that committed: the listener hands it to its own loop)."""
    _listeners.append(listener)


@dataclass(frozen=True)
class _Note:
    table_id: int
    version: int
    players: frozenset[int]
    clock: dt.datetime | bool | None
    trace: str | None = None  # the committing span's W3C traceparent, with tracing on
    change: str | None = None  # what the commit wrote (games.changes), for the table's channel
    tasks: tuple[tuple[str, str], ...] = ()  # Celery task messages to LPUSH: (list, message)


class _Outbox:
    """The wake-ups this process has yet to send, and the thread that sends them."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.notes: queue.SimpleQueue[_Note] = queue.SimpleQueue()
        self.pending = 0
        self.idle = threading.Condition()
        threading.Thread(target=self.run, name="hearts-notify", daemon=True).start()

    def put(self, note: _Note) -> None:
        with self.idle:
            self.pending += 1
        self.notes.put(note)

    def run(self) -> None:
        while True:
            batch = [self.notes.get()]
            while True:
                try:
                    batch.append(self.notes.get_nowait())
                except queue.Empty:
                    break
            try:
                send(batch)
            finally:
                with self.idle:
                    self.pending -= len(batch)
                    self.idle.notify_all()

    def flush(self, timeout: float) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.pending == 0, timeout)


_box: _Outbox | None = None


def _outbox() -> _Outbox:
    global _box
    box = _box
    if box is None or box.pid != os.getpid():  # a forked child starts its own thread
        with _lock:
            if _box is None or _box.pid != os.getpid():
                _box = _Outbox()
            box = _box
    return box


def flush(timeout: float = 2.0) -> bool:
    """Wait until this process has sent every wake-up queued so far (at exit, and for tests that
    read Redis right after a commit); False if that took longer than `timeout` seconds."""
    box = _box
    return box is None or box.pid != os.getpid() or box.flush(timeout)


def send(notes: Iterable[_Note]) -> None:
    """One pipeline for these wake-ups, clocks and tasks; a Redis error is logged, never raised."""
    client = shared_redis()
    if client is None:
        return
    try:
        with client.pipeline(transaction=False) as pipe:
            for note in notes:
                for key, message in note.tasks:  # first: a worker may start while the rest is sent
                    pipe.lpush(key, message)
                # `<version>`, `<version>;<traceparent>` with tracing on, and `;<change>` after
                # those two when the change is carried (games.live.fanout reads them all)
                tail = f";{note.trace}" if note.trace else ""
                carried = f"{tail or ';'};{note.change}" if note.change else tail
                pipe.publish(table_channel(note.table_id), f"{note.version}{carried}")
                for player_id in note.players:
                    pipe.publish(player_channel(player_id), f"{note.table_id}:{note.version}{tail}")
                if note.clock is not False:
                    deadline = note.clock if isinstance(note.clock, dt.datetime) else None
                    clocks.stage(pipe, note.table_id, deadline)
            pipe.execute()
    except redis.RedisError as exc:  # never fail a committed action because a wake-up was lost
        log.warning("stream wake-ups not published: %s", exc)


atexit.register(flush)
