"""Queueing the background work by task name, so that the domain never imports the workers.

The services and webhooks decide *what* work a table needs (a bot move, a turn clock, a webhook
send); `games.tasks` is the worker adapter that does it and calls the services back. Sending by
the registered name keeps that one-way: tasks -> services -> jobs, never services -> tasks.

Where a task runs: with Redis, on the Celery workers of its queue. In the serving process of the
embedded run (games.embedded), on that process's lane threads (`run_here`): a request only queues,
so its answer never waits for a bot, and a clock never waits behind a thinking bot. In the tests
(eager mode, no embedded worker started) `apply_async` runs the task at once, as before.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from celery import current_app
from django.conf import settings
from kombu.exceptions import KombuError

from games.infra import broker

PLAY_BOTS = "games.play_bots"
ENFORCE_CLOCK = "games.enforce_clock"
DELIVER_WEBHOOK = "games.deliver_webhook"
DELIVER_PUSH = "games.deliver_push"
RUN_EXPORT = "games.run_export"
SET_UP_TOURNAMENT = "games.set_up_tournament"
REVIEW_HAND = "games.review_hand"
COMPUTE_HINT = "games.compute_hint"

# The lanes (docs/operations.md#lanes): each is a queue with workers of its own, so that work a
# person waits for never waits behind throughput work.
CLOCKS_QUEUE = "clocks"  # turn clocks (claimed when due, games.infra.clocks) and the sweep
PEOPLE_QUEUE = "people"  # bot moves at tables where a person sits
BOTS_QUEUE = "bots"  # bot-only tables: one sub-queue per app (bots.0 ... bots.N-1), taken in turn
WEBHOOKS_QUEUE = "webhooks"  # webhook sends (a slow endpoint holds only this lane)
PUSH_QUEUE = "push"  # push notifications (a slow provider holds only this lane)
BULK_QUEUE = "bulk"  # throughput work nobody waits on: exports, housekeeping
HINTS_QUEUE = "hints"  # hints and hand reviews: bots' estimates a person asked for, never on a turn's path
LANES = (CLOCKS_QUEUE, PEOPLE_QUEUE, BOTS_QUEUE, WEBHOOKS_QUEUE, PUSH_QUEUE, BULK_QUEUE, HINTS_QUEUE)


def _task(name: str) -> Any:
    return current_app.tasks[name]  # registered when games.tasks is imported (at Django start)


# The embedded worker's hand-off (games.embedded): put(task name, args, queue, delay in seconds).
Hand = Callable[[str, tuple[Any, ...], str, float], None]
_here: Hand | None = None


def run_here(hand: Hand | None) -> None:
    """From now on (None: no longer) hand every task to `hand` instead of Celery: the embedded
    worker's lane threads run them in this process."""
    global _here
    _here = hand


def send(
    name: str, args: tuple[Any, ...], *, queue: str, delay: float = 0.0, expires: float | None = None
) -> None:
    """Queue task `name` on `queue`, `delay` seconds from now: to the embedded worker's lanes when
    it runs in this process, else to Celery (which runs it at once in eager mode: the tests). With
    `expires`, a worker that has not started it within that many seconds drops it (Celery's
    `expires`: the request waiting for it has given up; the embedded lanes run it anyway)."""
    hand = _here
    if hand is not None:
        hand(name, args, queue, max(0.0, delay))
        return
    _task(name).apply_async(args, queue=queue, countdown=delay if delay > 0 else None, expires=expires)


def eager() -> bool:
    """Whether tasks run in the calling process (the embedded run, tests)."""
    return bool(current_app.conf.task_always_eager)


def bot_queues() -> list[str]:
    """The bot lane's sub-queues. A worker started with `-Q bots` takes from all of them in turn
    (kombu's Redis transport rotates the queues it polls after every message)."""
    return [f"{BOTS_QUEUE}.{n}" for n in range(settings.BOT_LANE_QUEUES)]


def lane_of(*, people: bool, app_id: int) -> str:
    """Where a table's bot moves run. The fairness rule: an app's bot-only tables all go to the
    same sub-queue of the bot lane (app id modulo the number of sub-queues), and the bot workers
    take from the sub-queues in turn, so an app flooding the lane with tables slows its own
    sub-queue, not the others: up to BOT_LANE_QUEUES apps each get an equal share of the lane."""
    return PEOPLE_QUEUE if people else f"{BOTS_QUEUE}.{app_id % settings.BOT_LANE_QUEUES}"


def lane_kind(queue: str) -> str:
    """The lane a queue belongs to: PEOPLE_QUEUE, or BOTS_QUEUE for any of its sub-queues."""
    return BOTS_QUEUE if queue.startswith(BOTS_QUEUE) else PEOPLE_QUEUE


def play_bots(table_id: int, version: int, *, lane: str = PEOPLE_QUEUE, delay: float = 0.0) -> None:
    """The bot moves owed at the table as of `version`, `delay` seconds from now (a paced table).
    With workers the delay is a countdown: the message waits in the worker's memory, not in a
    process of its pool, so no worker is held idle. The embedded worker keeps it on its lane until
    it is due. In eager mode without it (tests) a delayed task waits in `_later` until `run_due`."""
    if delay > 0 and _here is None and eager():
        with _later_lock:
            heapq.heappush(_later, (time.monotonic() + delay, table_id, version, lane))
        return
    send(PLAY_BOTS, (table_id, version), queue=lane, delay=delay)


def play_bots_message(
    table_id: int, version: int, *, lane: str, delay: float = 0.0
) -> tuple[str, str] | None:
    """`play_bots`'s task as a Redis list and message for a caller that pushes it in a pipeline of
    its own (games.infra.broker.staged; the commit's wake-ups, games.infra.notify), or None where
    the task goes another way (`play_bots`: the embedded worker, eager mode, another broker) or
    Redis could not be reached for the channel (then `play_bots` tries and fails as it would)."""
    if _here is not None or not broker.stageable(current_app, settings.REDIS_URL):
        return None
    try:
        return broker.staged(current_app, PLAY_BOTS, (table_id, version), lane, delay if delay > 0 else None)
    except (OSError, redis.RedisError, KombuError):  # Redis down as the channel is first made
        return None


_later: list[tuple[float, int, int, str]] = []  # (when, table, version, lane): eager, no embedded worker
_later_lock = threading.Lock()


def run_due(now: float | None = None) -> int:
    """Eager mode without the embedded worker (tests): run the delayed bot tasks that are due; how many."""
    moment = time.monotonic() if now is None else now
    due = []
    with _later_lock:
        while _later and _later[0][0] <= moment:
            due.append(heapq.heappop(_later))
    for _, table_id, version, lane in due:
        send(PLAY_BOTS, (table_id, version), queue=lane)
    return len(due)


def enforce_clock_now(table_id: int, version: int | None = None) -> None:
    """A clock claimed when due (games.infra.clocks, or the embedded worker's clock check):
    enforced at once on the clock lane (for `version` only, when given)."""
    send(ENFORCE_CLOCK, (table_id, version), queue=CLOCKS_QUEUE)


def deliver_webhook(delivery_id: str, countdown: float | None = None) -> None:
    send(DELIVER_WEBHOOK, (delivery_id,), queue=WEBHOOKS_QUEUE, delay=countdown or 0.0)


def deliver_push(message_id: str, countdown: float | None = None) -> None:
    send(DELIVER_PUSH, (message_id,), queue=PUSH_QUEUE, delay=countdown or 0.0)


def run_export(job_uuid: str) -> None:
    """A player's export job (games.services.exports), made on the bulk lane."""
    send(RUN_EXPORT, (job_uuid,), queue=BULK_QUEUE)


def set_up_tournament(tournament_id: int) -> None:
    """Create the tables a tournament still lacks (games.services.tournaments.set_up), on the bulk
    lane: a creation answers at once, however many tables it has."""
    send(SET_UP_TOURNAMENT, (tournament_id,), queue=BULK_QUEUE)


def review_hand(table_id: int, hand: int, seat: int, level: str, *, expires: float | None = None) -> None:
    """A hand's review for one seat (games.services.review), computed on the hints lane and kept
    in the cache, where the request waiting for it finds it; dropped if not started within
    `expires` seconds (the request gave up: its retry asks again)."""
    send(REVIEW_HAND, (table_id, hand, seat, level), queue=HINTS_QUEUE, expires=expires)


def compute_hint(key: str, view: str, level: str, seed: int, *, expires: float | None = None) -> None:
    """A hint (games.services.hints), computed on the hints lane from the seat's view alone (its
    JSON: task arguments stay hashable for the embedded lanes' de-duplication) and kept in the
    cache under `key`, where the request waiting for it finds it; dropped if not started within
    `expires` seconds (the request gave up: its retry asks again)."""
    send(COMPUTE_HINT, (key, view, level, seed), queue=HINTS_QUEUE, expires=expires)


def webhooks_backlog() -> int:
    """How many messages wait in the `webhooks` queue (0 when the broker cannot say)."""
    try:
        with current_app.connection_for_write() as conn:
            return int(conn.default_channel.queue_declare(WEBHOOKS_QUEUE, passive=True).message_count)
    except Exception:  # no such queue yet, or a broker that cannot count: assume none wait
        return 0
