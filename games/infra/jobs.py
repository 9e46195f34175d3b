"""Queueing the background work by task name, so that the domain never imports the workers.

The services and webhooks decide *what* work a table needs (a bot move, a turn clock, a webhook
send); `games.tasks` is the worker adapter that does it and calls the services back. Sending by
the registered name keeps that one-way: tasks -> services -> jobs, never services -> tasks. In the
embedded run and the tests (eager mode) `apply_async` runs the task at once, as before.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from celery import current_app

PLAY_BOTS = "games.play_bots"
ENFORCE_CLOCK = "games.enforce_clock"
DELIVER_WEBHOOK = "games.deliver_webhook"
WEBHOOKS_QUEUE = "webhooks"


def _task(name: str) -> Any:
    return current_app.tasks[name]  # registered when games.tasks is imported (at Django start)


def eager() -> bool:
    """Whether tasks run in the calling process (the embedded run, tests)."""
    return bool(current_app.conf.task_always_eager)


def play_bots(table_id: int, version: int) -> None:
    _task(PLAY_BOTS).delay(table_id, version)


def enforce_clock(table_id: int, version: int, at: dt.datetime) -> None:
    """A task at the deadline. In eager mode (the embedded run, tests) a task would run at once,
    inside the request, before its deadline, and do nothing but cost queries: there the sweeping
    thread enforces clocks (and a read of an overdue table acts first: services.table_seen)."""
    if eager():
        return
    _task(ENFORCE_CLOCK).apply_async((table_id, version), eta=at)


def deliver_webhook(delivery_id: str, countdown: float | None = None) -> None:
    _task(DELIVER_WEBHOOK).apply_async((delivery_id,), countdown=countdown or None)


def webhooks_backlog() -> int:
    """How many messages wait in the `webhooks` queue (0 when the broker cannot say)."""
    try:
        with current_app.connection_for_write() as conn:
            return int(conn.default_channel.queue_declare(WEBHOOKS_QUEUE, passive=True).message_count)
    except Exception:  # no such queue yet, or a broker that cannot count: assume none wait
        return 0
