"""Correspondence reminders: a turn that lasts hours or days is recalled to its people before its
clock runs out (a push and a `turn_reminder` webhook), once per turn, without changing the table.

`services.record.start_clock` sets `Table.reminder_at` with each deadline of a correspondence table;
the sweep (games.tasks.sweep, every few seconds) calls `remind_due`, which records each due reminder
in a transaction of its own with the table row locked. Like the deadline, the time lives in the
database only, so a reminder survives any restart and is never sent twice: the transaction that
records it also clears `reminder_at`, and a sweep that finds the row locked skips it.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from games import push, webhooks
from games.engine import state_from_dict
from games.models import Table
from games.services.record import plays_itself

_ACTIVE = (Table.Status.PASSING, Table.Status.PLAYING, Table.Status.MOON_CHOICE)


def remind_due(*, now: dt.datetime | None = None, limit: int = 200) -> int:
    """Record every reminder due by `now` (at most `limit` tables a call); returns how many tables
    had one recorded. The sweep calls it inline: each is a short transaction."""
    moment = now or timezone.now()
    due = Table.objects.filter(reminder_at__lte=moment).order_by("reminder_at", "pk")
    sent = 0
    for table_id in list(due.values_list("pk", flat=True)[:limit]):
        sent += remind(table_id, now=moment)
    return sent


def remind(table_id: int, *, now: dt.datetime | None = None) -> bool:
    """In one transaction with the table row locked (a row another transaction holds is skipped,
    so two sweeps never both act; the holder is a move, which sets the reminder anew, or the other
    sweep): clear the table's due reminder and record it for the people to act, a webhook delivery
    with one `turn_reminder` event and their pushes. The table's version stays: it is not a move.
    Returns whether a reminder was due (it may have gone to nobody: every seat to act is a bot or
    away, or the deadline itself has passed, after an outage, and the clock acts instead)."""
    moment = now or timezone.now()
    with transaction.atomic():
        rows = Table.objects.select_for_update(skip_locked=True).filter(pk=table_id, reminder_at__lte=moment)
        table = rows.first()
        if table is None:  # not due (any more), or locked by a move or another sweep
            return False
        Table.objects.filter(pk=table.pk).update(reminder_at=None)  # not a move: no version, no updated_at
        table.reminder_at = None
        if table.status not in _ACTIVE or table.deadline is None or table.state is None:
            return True
        if table.deadline <= moment:  # too late to remind: the clock acts (and sets the next turn's)
            return True
        state = state_from_dict(table.state)
        seats = [s for s in state.to_act() if not plays_itself(table, s)]
        if seats:
            webhooks.record_reminder(table, seats, table.deadline)
            push.remind(table, seats)
        return True
