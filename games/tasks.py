"""Celery tasks that move tables on without a client: bot moves, turn clocks, webhook sends, and the sweep."""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.db import DatabaseError, InterfaceError, OperationalError
from django.db.models import Q
from django.utils import timezone

from games import services, webhooks
from games.errors import ServiceError
from games.models import Table

log = logging.getLogger(__name__)

# Reliability: a task is acknowledged only when it has finished (a worker killed mid-task leaves
# it to another worker), retried with backoff when the database is briefly unavailable, and
# stopped if it runs away. Every task is safe to run twice: it acts only for the version it
# was queued for.
RELIABLE = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError, DatabaseError),
    "retry_backoff": 0.5,
    "retry_backoff_max": 10,
    "retry_jitter": True,
    "max_retries": 8,
    "soft_time_limit": 60,
    "time_limit": 90,
}
BOT_GRACE = dt.timedelta(seconds=2)  # a bot move owed for longer than this has lost its task
CLOCK_GRACE = dt.timedelta(milliseconds=500)  # a clock overdue by more has lost its ETA task


# Redis keeps a list per priority (kombu's steps 0, 3, 6, 9; 0 is taken first): bot moves go after
# clocks and sweeps, so a backlog of bot work never makes a turn clock late.
BOT_PRIORITY = 6
# Moves per bot task on a worker: a worker goes back to the queue often, so a clock task waits for
# at most this many bot moves (eager runs, in one process, play the whole hand at once).
MOVES_PER_TASK = 8


@shared_task(name="games.play_bots", priority=BOT_PRIORITY, **RELIABLE)
def play_bots(table_id: int, version: int) -> int:
    """The moves bots owe at `table_id` as of `version`; returns how many versions it advanced."""
    try:
        limit = None if play_bots.request.is_eager else MOVES_PER_TASK
        out = services.bots_play(table_id=table_id, version=version, limit=limit)
    except ServiceError as exc:  # the table is gone (deleted): nothing is owed
        log.info("play_bots for table %s: %s", table_id, exc.code)
        return 0
    return 0 if out.table is None else out.table.version - version


@shared_task(name="games.enforce_clock", **RELIABLE)
def enforce_clock(table_id: int, version: int) -> int:
    """Queued with an ETA at the deadline: acts for the late seats unless the table moved on."""
    try:
        out = services.clock_expired(table_id=table_id, version=version)
    except ServiceError as exc:  # the table is gone (deleted): no clock to enforce
        log.info("enforce_clock for table %s: %s", table_id, exc.code)
        return 0
    return 0 if out.table is None else out.table.version - version


@shared_task(name="games.sweep", **RELIABLE)
def sweep(limit: int = 500, inline: bool = False) -> int:
    """The safety net for lost messages (a Redis restart, a worker killed before it queued the
    next task): every clock overdue by more than CLOCK_GRACE, and every bot move owed for longer
    than BOT_GRACE, gets a task again (acted on here with `inline`, as the embedded worker does).
    On-time clocks are left to their ETA tasks, so the sweep does not compete with them."""
    now = timezone.now()
    closed = [Table.Status.OPEN, Table.Status.FINISHED, Table.Status.ABANDONED]
    active = Table.objects.exclude(status__in=closed)
    due = active.filter(
        Q(deadline__lte=now - CLOCK_GRACE) | Q(bot_turn=True, updated_at__lte=now - BOT_GRACE)
    )
    found = 0
    for table_id, version, deadline in due.values_list("pk", "version", "deadline")[:limit]:
        overdue = deadline is not None and deadline <= now
        if inline:
            run = services.clock_expired if overdue else services.bots_play
            found += run(table_id=table_id, version=version).table is not None
            continue
        (enforce_clock if overdue else play_bots).delay(table_id, version)
        found += 1
    if found:
        log.info("sweep found %d tables owed a move", found)
    return found + webhooks.sweep(inline=inline)  # webhook deliveries whose task was lost


@shared_task(name="games.deliver_webhook", **{**RELIABLE, "soft_time_limit": 30, "time_limit": 45})
def deliver_webhook(delivery_id: str) -> str:
    """One attempt at a webhook delivery (routed to the `webhooks` queue). Safe to run twice:
    it claims the delivery first, and does nothing when it is done, claimed or not yet due."""
    return webhooks.attempt(delivery_id)
