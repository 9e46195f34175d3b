"""Recording deliveries in the move's own transaction (and a correspondence reminder's in its own),
queueing their sends after the commit, and redelivering one on request."""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from games import reads
from games.infra import jobs
from games.models import Move, Table, WebhookDelivery, WebhookEndpoint
from games.prepared import Prepared
from games.webhooks.base import (
    BODY_TYPE,
    HIDDEN_EVENT_TYPES,
    REMINDER_BODY_TYPE,
    Status,
    conf,
    error,
)
from hearts_service import tracing

log = logging.getLogger(__name__)


def record(table: Table, tagged: Sequence[list[Any]]) -> None:
    """Called by services.record.log for every move, inside its transaction: one delivery per active
    endpoint of the table's app that wants at least one of the move's public events."""
    endpoints = _endpoints(table)
    if not endpoints:
        return
    public = reads.events_for([Move(seq=table.version, events=list(tagged))], None)
    public = [e for e in public if e["type"] not in HIDDEN_EVENT_TYPES]  # belt and braces
    _record(table, endpoints, public, BODY_TYPE)


def record_reminder(table: Table, seats: Sequence[int], deadline: dt.datetime) -> None:
    """Called by services.reminders inside the reminder's transaction: one delivery per active
    endpoint that wants `turn_reminder`, its body of type `table.reminder` with that one public
    event (the seats to act and their deadline). A reminder is not a move: the body's `seq` is the
    table's version, which the reminder leaves as it is."""
    endpoints = _endpoints(table)
    if not endpoints:
        return
    event = {
        "seq": table.version,
        "hand": table.hand_number,
        "type": "turn_reminder",
        "seats": list(seats),
        "deadline": reads.iso(deadline),
    }
    _record(table, endpoints, [event], REMINDER_BODY_TYPE)


def record_app_event(app_id: int | None, body_type: str, data: dict[str, Any]) -> int:
    """Record an app's own event (games.webhooks.base.APP_EVENT_TYPES: not a table's) inside the
    transaction of the change it tells: one delivery per active endpoint of the app that subscribes
    to it (or to "*"), with no table and `seq` 0; its body is the envelope (`id`, `type`, `webhook`,
    `created_at`) and `data`. A guest (no app) has no endpoints. Answers how many were recorded."""
    if app_id is None:
        return 0
    now = timezone.now()
    rows = []
    for endpoint in WebhookEndpoint.objects.filter(app_id=app_id, active=True).only("pk", "event_types"):
        if "*" not in endpoint.event_types and body_type not in endpoint.event_types:
            continue
        delivery_id = uuid.uuid4()
        body = {  # docs/schemas/webhook-body.schema.json
            "id": str(delivery_id),
            "type": body_type,
            "webhook": endpoint.pk,
            "created_at": now.isoformat().replace("+00:00", "Z"),
            **data,
        }
        rows.append(
            WebhookDelivery(
                uuid=delivery_id,
                endpoint_id=endpoint.pk,
                table=None,
                seq=0,
                event_types=[body_type],
                body=json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":")),
                attempt_budget=int(conf("WEBHOOK_MAX_ATTEMPTS")),
                next_attempt_at=now,
                queued_at=now,
            )
        )
    if rows:
        WebhookDelivery.objects.bulk_create(rows)
        ids = [str(r.uuid) for r in rows]
        transaction.on_commit(lambda: queue(ids))
    return len(rows)


_ACTIVE = Prepared(
    lambda app: (
        WebhookEndpoint.objects.filter(app_id=app, active=True).only("pk", "event_types").order_by("pk")
    ),
    [int],
)


def _endpoints(table: Table) -> list[WebhookEndpoint]:
    """The active endpoints of the table's app (none for a guest's table): one query per table per
    transaction, not per move, and none when the table's locked read found the app has none
    (`webhooked`, games.services.common.locked)."""
    if table.app_id is None or table.__dict__.get("webhooked") is False:
        return []
    cache = table.__dict__
    if "_webhook_endpoints" not in cache:
        cache["_webhook_endpoints"] = _ACTIVE(table.app_id)
    endpoints: list[WebhookEndpoint] = cache["_webhook_endpoints"]
    return endpoints


def _record(
    table: Table, endpoints: Sequence[WebhookEndpoint], public: list[dict[str, Any]], body_type: str
) -> None:
    """One delivery of `public` (the events each endpoint wants of them) per endpoint that wants
    any, its body stored as every attempt sends it; the sends are queued after the commit."""
    if not public:
        return
    now = timezone.now()
    rows = []
    for endpoint in endpoints:
        types = endpoint.event_types
        wanted = public if "*" in types else [e for e in public if e["type"] in types]
        if not wanted:
            continue
        delivery_id = uuid.uuid4()
        body = {  # docs/schemas/webhook-body.schema.json
            "id": str(delivery_id),
            "type": body_type,
            "webhook": endpoint.pk,
            "table": table.pk,
            "seq": table.version,
            "hand": table.hand_number,
            "created_at": now.isoformat().replace("+00:00", "Z"),
            "events": wanted,
        }
        rows.append(
            WebhookDelivery(
                uuid=delivery_id,
                endpoint_id=endpoint.pk,
                table=table,
                seq=table.version,
                event_types=list(dict.fromkeys(e["type"] for e in wanted)),
                body=json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":")),
                attempt_budget=int(conf("WEBHOOK_MAX_ATTEMPTS")),
                next_attempt_at=now,
                queued_at=now,
            )
        )
    if rows:
        WebhookDelivery.objects.bulk_create(rows)
        ids = [str(r.uuid) for r in rows]
        transaction.on_commit(lambda: queue(ids))


def queue(delivery_ids: Iterable[str], countdown: float = 0) -> None:
    """Queue the send tasks (on the `webhooks` queue). In eager mode (the embedded arrangement
    and tests) nothing is queued, so a request never waits for a webhook: the embedded sweep's
    sender thread delivers what is due."""
    if jobs.eager():
        tracing.remember(delivery_ids)  # the sender thread continues this trace (hearts_service.tracing)
        return
    for delivery_id in delivery_ids:
        jobs.deliver_webhook(delivery_id, countdown)


def redeliver(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again (whatever its status): pending and due now, with a fresh attempt
    budget. Refused with `webhook_disabled` while its endpoint is disabled."""
    if not delivery.endpoint.active:
        raise error("webhook_disabled", "enable the webhook before redelivering", kind="conflict")
    now = timezone.now()
    with transaction.atomic():
        row = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
        row.status = Status.PENDING
        row.next_attempt_at = now
        row.queued_at = now
        row.attempt_budget = row.attempts + int(conf("WEBHOOK_MAX_ATTEMPTS"))
        row.claim = None  # a send in flight now records nothing: the redelivery's send counts
        row.save(update_fields=["status", "next_attempt_at", "queued_at", "attempt_budget", "claim"])
        ids = [str(row.uuid)]
        transaction.on_commit(lambda: queue(ids))
    return row
