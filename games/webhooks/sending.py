"""Sending: one claimed attempt at a delivery (run by the task or the embedded sender), and the
safety net that finds deliveries whose task was lost."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from games.infra import jobs, metrics
from games.models import WebhookDelivery
from games.webhooks import transport
from games.webhooks.base import (
    ATTEMPT_HEADER,
    EVENT_HEADER,
    Status,
    conf,
)
from games.webhooks.endpoints import secret_of
from games.webhooks.recording import queue
from games.webhooks.transport import backoff, sign
from hearts_service import tracing

log = logging.getLogger(__name__)


def attempt(delivery_id: str, *, now: dt.datetime | None = None) -> str:
    """One attempt at a delivery that is due: 'succeeded', 'retry', 'failed', or 'skipped' when
    it is not due (done, claimed by another run, or waiting for its backoff), 'superseded'
    when a redelivery took it over during the send."""
    now = now or timezone.now()
    timeout = float(conf("WEBHOOK_TIMEOUT"))
    skew = dt.timedelta(seconds=float(conf("WEBHOOK_CLOCK_SKEW")))
    with transaction.atomic():
        row = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("endpoint")
            .filter(uuid=delivery_id)
            .first()
        )
        due_at = row.next_attempt_at if row is not None else None
        if row is None or row.status != Status.PENDING or due_at is None or due_at > now + skew:
            log.info("webhook delivery %s: not due, nothing to do", delivery_id)
            return "skipped"
        if not row.endpoint.active:
            row.status, row.next_attempt_at, row.last_error = Status.FAILED, None, "endpoint_disabled"
            row.save(update_fields=["status", "next_attempt_at", "last_error"])
            metrics.webhook_attempted("disabled")
            return "failed"
        # The claim: a lease until the send must be over; a duplicate task sees it and stops.
        row.attempts += 1
        row.last_attempt_at = now
        row.next_attempt_at = now + dt.timedelta(seconds=timeout + float(conf("WEBHOOK_LEASE_MARGIN")))
        row.claim = uuid.uuid4()
        row.save(update_fields=["attempts", "last_attempt_at", "next_attempt_at", "claim"])
    claimed, claim = row.attempts, row.claim
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "hearts-webhooks/1",
        # webhook-id (the delivery id, the same on every attempt), webhook-timestamp (now), webhook-signature
        **sign(secret_of(row.endpoint), str(row.uuid), row.body),
        EVENT_HEADER: ",".join(row.event_types),
        ATTEMPT_HEADER: str(claimed),
    }
    started = time.monotonic()
    code, error = transport.post(row.endpoint.url, row.body.encode(), headers, timeout)
    took = round((time.monotonic() - started) * 1000)
    ok = code is not None and 200 <= code < 300
    done = timezone.now()
    with transaction.atomic():
        row = WebhookDelivery.objects.select_for_update().filter(uuid=delivery_id).first()
        if row is None or row.status != Status.PENDING or row.claim != claim:
            return "superseded"  # a redelivery or a later claim took over: its result counts
        row.claim = None
        row.last_status_code, row.last_error = code, ("" if ok else error or f"HTTP {code}")
        entry: dict[str, Any] = {"attempt": claimed, "at": now.isoformat(), "status_code": code, "ms": took}
        if not ok:
            entry["error"] = row.last_error
        row.log = [*row.log, entry][-int(conf("WEBHOOK_LOG_ATTEMPTS")) :]
        if ok:
            row.status, row.delivered_at, row.next_attempt_at = Status.SUCCEEDED, done, None
            outcome = "succeeded"
        elif row.attempts >= row.attempt_budget:
            row.status, row.next_attempt_at, outcome = Status.FAILED, None, "failed"
        else:
            wait = backoff(row.attempts)
            row.next_attempt_at = done + dt.timedelta(seconds=wait)
            row.queued_at = row.next_attempt_at  # the retry task's ETA: the sweep waits for it
            entry["retry_in"] = round(wait, 3)
            ids = [str(row.uuid)]
            transaction.on_commit(lambda: queue(ids, countdown=wait))
            outcome = "retry"
        row.save()
    metrics.webhook_attempted(outcome)
    log.info("webhook delivery %s attempt %d: %s (%s)", delivery_id, claimed, outcome, code or error)
    return outcome


# -- the safety net ----------------------------------------------------------------------------


def due(now: dt.datetime | None = None) -> Any:
    now = now or timezone.now()
    return WebhookDelivery.objects.filter(status=Status.PENDING, next_attempt_at__lte=now)


def deliver_due(limit: int = 100) -> int:
    """Attempt every delivery that is due now, here and one after another; how many were tried."""
    ids = [str(u) for u in due().order_by("next_attempt_at").values_list("uuid", flat=True)[:limit]]
    for delivery_id in ids:
        with tracing.resumed(tracing.recall(delivery_id)):  # an eager run's trace (recording.queue)
            attempt(delivery_id)
    return len(ids)


_sender: threading.Thread | None = None
_sender_lock = threading.Lock()


def sweep(*, inline: bool = False, limit: int = 500) -> int:
    """Called by games.sweep. With workers, when the `webhooks` queue is empty: queue again each
    delivery due for longer than WEBHOOK_SWEEP_GRACE whose last task was queued over
    WEBHOOK_REQUEUE_AFTER ago (it was lost: a Redis restart, a killed worker). While a backlog
    waits it does nothing, so a slow sender is not flooded with duplicates. Embedded (`inline`):
    hand what is due to one background sender thread, so a slow endpoint never holds up the
    clocks the sweep enforces."""
    global _sender
    now = timezone.now()
    if inline:
        if not due(now).exists():
            return 0
        with _sender_lock:
            if _sender is not None and _sender.is_alive():
                return 0
            _sender = threading.Thread(target=_send_due, name="hearts-webhook-sender", daemon=True)
            _sender.start()
        return 1
    if _backlog():  # tasks are waiting, not lost: queueing them again would only add to the wait
        return 0
    grace = dt.timedelta(seconds=float(conf("WEBHOOK_SWEEP_GRACE")))
    again = dt.timedelta(seconds=float(conf("WEBHOOK_REQUEUE_AFTER")))
    lost = due(now - grace).filter(Q(queued_at__lte=now - again) | Q(queued_at=None))
    ids = [str(u) for u in lost.values_list("uuid", flat=True)[:limit]]
    if ids:
        WebhookDelivery.objects.filter(uuid__in=ids).update(queued_at=now)
        for delivery_id in ids:
            jobs.deliver_webhook(delivery_id)
        log.info("sweep queued %d webhook deliveries again", len(ids))
    return len(ids)


def _backlog() -> int:
    """How many messages wait in the `webhooks` queue (0 when the broker cannot say)."""
    return jobs.webhooks_backlog()


def _send_due() -> None:
    try:
        while deliver_due():
            pass
    except Exception:
        log.exception("embedded webhook sender failed")
    finally:
        connection.close()  # this thread's own connection
