"""Back pressure: whether work people wait for is queueing, so that throughput work yields to it.

Past capacity a machine must serve people first (issue 37): a person's request, and the bot moves
at their table, before the moves of tables where only bots play. Two signals say that people are
waiting, each checked in one Redis round trip:
- a web process whose requests queue for a slot (hearts_service.asgi's limit on the requests it
  runs at once) marks the pressure for PRESSURE_MS (`mark`, at most every MARK_EVERY seconds);
- the people lane's queue holds more than PEOPLE_BACKLOG tasks waiting for a worker.
A task of the bot lane (bot-only tables) checks them before it plays (`yield_to_people`) and, while
either holds, waits in steps of STEP seconds, for at most BOTS_YIELD_SECONDS in all, then plays
anyway: a flood of bot tables slows down while people wait, and never stops (games.tasks yields
only for a table that moved within BOT_GRACE, so each still moves every few seconds). Without Redis (the
embedded run) there is no pressure to read, and nothing waits.

A request's slot among its web process's WEB_MAX_CONCURRENT_REQUESTS (`Slot`, taken and given
back by hearts_service.asgi) is lent back while the request waits for another lane's answer
(`lend_slot`, games.infra.answers): a request waiting for a hint holds no place a play could use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar

import redis
from django.conf import settings

from games.infra import metrics, notify

log = logging.getLogger(__name__)
KEY = "hearts:pressure"
PRESSURE_MS = 500  # how long one mark says people are waiting
MARK_EVERY = 0.1  # seconds: a process marks at most this often
STEP = 0.05  # seconds between two looks while the bot lane yields
PEOPLE_QUEUE = "people"  # games.infra.jobs.PEOPLE_QUEUE (kombu's Redis transport: a list of that name)

_last_mark = 0.0
_mark_lock = threading.Lock()


def mark() -> None:
    """People's requests are queueing in this process: say so to the bot lane (fails open)."""
    global _last_mark
    now = time.monotonic()
    with _mark_lock:
        if now - _last_mark < MARK_EVERY:
            return
        _last_mark = now
    client = notify.shared_redis()
    if client is None:
        return
    try:
        client.set(KEY, "1", px=PRESSURE_MS)
    except redis.RedisError as exc:
        log.debug("pressure not marked: %s", exc)


def people_waiting(client: redis.Redis) -> bool:
    """Whether a web process marked the pressure lately or the people lane has a backlog."""
    with client.pipeline(transaction=False) as pipe:
        pipe.exists(KEY)
        pipe.llen(PEOPLE_QUEUE)
        marked, backlog = pipe.execute()
    return bool(marked) or int(backlog) > settings.PEOPLE_BACKLOG


def yield_to_people() -> float:
    """Before a bot-lane task plays: wait while people's work is queueing, at most
    BOTS_YIELD_SECONDS; the seconds waited."""
    limit = float(settings.BOTS_YIELD_SECONDS)
    client = notify.shared_redis()
    if client is None or limit <= 0:
        return 0.0
    started = time.monotonic()
    try:
        while people_waiting(client):
            if time.monotonic() - started >= limit:
                break
            time.sleep(STEP)
    except redis.RedisError:
        pass  # no signal: play
    waited = time.monotonic() - started
    if waited >= STEP:
        metrics.bot_lane_yielded(waited)
    return waited


class Slot:
    """One request's place among its process's WEB_MAX_CONCURRENT_REQUESTS: taken in the event
    loop before it runs (`take`), given back once its answer starts (`give_back`, idempotent), and
    lent back from the request's thread while it waits on another lane (`lent`)."""

    def __init__(self, limit: asyncio.Semaphore) -> None:
        self.limit, self.loop = limit, asyncio.get_running_loop()
        self.held = False
        self._lock = threading.Lock()

    async def take(self) -> None:
        await self.limit.acquire()
        with self._lock:
            self.held = True

    def _drop(self) -> bool:
        with self._lock:
            held, self.held = self.held, False
        return held

    def give_back(self) -> None:
        """In the event loop: the request is done, or its answer is being sent."""
        if self._drop():
            self.limit.release()

    @contextlib.contextmanager
    def lent(self) -> Iterator[None]:
        """In the request's thread: the slot is free for another request while this one waits,
        and taken again (in turn, behind requests already queueing) before it goes on."""
        held = self._drop()
        if held:
            self.loop.call_soon_threadsafe(self.limit.release)
        try:
            yield
        finally:
            if held:
                asyncio.run_coroutine_threadsafe(self.take(), self.loop).result()


SLOT: ContextVar[Slot | None] = ContextVar("hearts_request_slot", default=None)  # set by the ASGI app


def lend_slot() -> contextlib.AbstractContextManager[None]:
    """While the request running here waits for another lane: its slot lent back (no-op outside a
    served request: tests, workers, the WebSocket)."""
    slot = SLOT.get()
    return slot.lent() if slot is not None else contextlib.nullcontext()
