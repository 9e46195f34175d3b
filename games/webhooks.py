"""Signed webhooks: an app's endpoints, the deliveries recorded with each move, and sending them.

- Recording (`record`, called by `services._log`): a move's PUBLIC events (never an event meant
  for one seat, such as cards_dealt or cards_received) become one delivery per matching endpoint,
  in the move's own transaction, so a committed move always has its deliveries and a rolled-back
  one never does. The send is queued after the commit.
- Sending (`attempt`, run by the `games.deliver_webhook` task on the `webhooks` queue, or by the
  embedded sweep's sender thread): claim the row (row lock, a lease on `next_attempt_at`), POST
  outside any transaction with a short timeout, then record the result only if the claim is still
  the current one. Duplicate tasks find the row claimed or done and do nothing; a worker killed
  mid-send leaves a lease that runs out, and the sweep queues the delivery again. Delivery is at
  least once: receivers dedupe on the delivery id (`Hearts-Delivery`, the body's `id`).
- Signing: `Hearts-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, f"{t}.{body}")>`.
- The secret is not stored: an endpoint keeps a random salt, and the secret is
  `whsec_` + HMAC-SHA256(WEBHOOK_SECRET_KEY, salt). The database alone cannot sign; rotating
  WEBHOOK_SECRET_KEY changes every endpoint's secret (rotate one with POST .../secret).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import ipaddress
import json
import logging
import random
import secrets
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from games import jobs, reads
from games.errors import ServiceError
from games.models import App, Move, Table, WebhookDelivery, WebhookEndpoint

log = logging.getLogger(__name__)

# Every event type the service logs for everyone (to = None). Events meant for one seat
# (HIDDEN_EVENT_TYPES: a seat's dealt, passed and received cards) are never delivered.
PUBLIC_EVENT_TYPES = (
    "seat_taken",
    "seat_left",
    "bot_added",
    "game_started",
    "hand_started",
    "pass_submitted",
    "passes_complete",
    "card_played",
    "hearts_broken",
    "trick_won",
    "trick_carried",
    "moon_shot",
    "moon_chosen",
    "hand_scored",
    "hand_revealed",
    "game_over",
    "table_finished",
    "table_abandoned",
    "turn_timed_out",
    "seat_away",
    "seat_back",
)
HIDDEN_EVENT_TYPES = ("cards_dealt", "cards_passed", "cards_received")
SIGNATURE_HEADER = "Hearts-Signature"
QUEUE = "webhooks"  # CELERY_TASK_ROUTES sends games.deliver_webhook there
SECRET_PREFIX = "whsec_"
Status = WebhookDelivery.Status


def _error(code: str, message: str, *, kind: str, **details: Any) -> Exception:
    """A refusal with the API's codes."""
    return ServiceError(code, message, kind=kind, **details)


def _conf(name: str) -> Any:
    return getattr(settings, name)


# -- endpoints ----------------------------------------------------------------------------


def check_url(url: object) -> str:
    """An absolute http(s) URL with a host and no credentials, else `invalid_url` with a reason."""

    def bad(reason: str, message: str) -> Exception:
        return _error("invalid_url", message, kind="malformed", reason=reason)

    if not isinstance(url, str) or not url.strip():
        raise bad("malformed", "url must be an absolute http or https URL")
    url = url.strip()
    if len(url) > 2000:
        raise bad("length", "url must be at most 2000 characters")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise bad("malformed", "url must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a bad port
    except ValueError as exc:
        raise bad("malformed", f"url cannot be parsed: {exc}") from exc
    if parts.scheme.lower() not in ("http", "https"):
        raise bad("scheme", "url must use http or https")
    if not parts.hostname:
        raise bad("host", "url must name a host")
    if parts.username is not None or parts.password is not None:
        raise bad("credentials", "url must not carry a user name or password")
    if parts.fragment:
        raise bad("malformed", "url must not have a #fragment")
    del port
    return url


def check_event_types(types: object) -> list[str]:
    """A non-empty list of public event types, or ["*"] for all; else `invalid_event_type`."""
    known = list(PUBLIC_EVENT_TYPES)
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        raise _error(
            "invalid_event_type",
            'event_types is a non-empty list of event types, or ["*"] for all',
            kind="malformed",
            known=known,
        )
    if "*" in types:
        return ["*"]
    unknown = sorted({t for t in types if t not in PUBLIC_EVENT_TYPES})
    if unknown:
        hidden = [t for t in unknown if t in HIDDEN_EVENT_TYPES]
        why = " (a seat's own cards are never sent to an app)" if hidden else ""
        raise _error(
            "invalid_event_type",
            f"not a public event type: {', '.join(unknown)}{why}",
            kind="malformed",
            event_types=unknown,
            known=known,
        )
    return list(dict.fromkeys(types))


def secret_of(endpoint: WebhookEndpoint) -> str:
    """The endpoint's signing secret, derived from its salt and the server's key."""
    key = str(_conf("WEBHOOK_SECRET_KEY")).encode()
    mac = hmac.new(key, f"hearts-webhook:{endpoint.secret_salt}".encode(), hashlib.sha256).digest()
    return SECRET_PREFIX + base64.urlsafe_b64encode(mac).decode().rstrip("=")


def endpoint_create(
    *, app: App, url: object, event_types: object = ("*",), description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint of `app` and its secret (returned only here and by `secret_rotate`)."""
    url = check_url(url)
    types = check_event_types(list(event_types) if isinstance(event_types, tuple) else event_types)
    with transaction.atomic():
        # Lock the app row so that two concurrent creations cannot both pass the limit.
        App.objects.select_for_update().filter(pk=app.pk).first()
        limit = int(_conf("WEBHOOK_MAX_PER_APP"))
        if WebhookEndpoint.objects.filter(app=app).count() >= limit:
            raise _error(
                "too_many_webhooks",
                f"an app has at most {limit} webhook endpoints",
                kind="conflict",
                limit=limit,
            )
        endpoint = WebhookEndpoint.objects.create(
            app=app, url=url, event_types=types, description=description, secret_salt=secrets.token_hex(32)
        )
    return endpoint, secret_of(endpoint)


DELIVERY_STATUSES: tuple[str, ...] = tuple(WebhookDelivery.Status.values)


def endpoints_of(app: App) -> QuerySet[WebhookEndpoint]:
    """The app's endpoints, oldest first."""
    return WebhookEndpoint.objects.filter(app=app).order_by("pk")


def deliveries_of(endpoint: WebhookEndpoint, status: str | None) -> QuerySet[WebhookDelivery]:
    """The endpoint's deliveries (of one status, when given), without their bodies."""
    rows = endpoint.deliveries.all()
    if status:
        if status not in DELIVERY_STATUSES:
            raise _error(
                "invalid_filter", f"status must be one of {', '.join(DELIVERY_STATUSES)}", kind="malformed"
            )
        rows = rows.filter(status=status)
    return rows.defer("body")


def delivery_of(app: App, endpoint_id: int, delivery_id: uuid.UUID) -> WebhookDelivery:
    """One delivery of one of the app's endpoints (404 otherwise)."""
    endpoint = endpoint_of(app, endpoint_id)
    found = endpoint.deliveries.select_related("endpoint").filter(uuid=delivery_id).first()
    if found is None:
        raise _error("not_found", "no such delivery", kind="not_found")
    return found


def endpoint_delete(endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


def endpoint_of(app: App | None, endpoint_id: int) -> WebhookEndpoint:
    """One of `app`'s endpoints; another app's endpoint is indistinguishable from none (404)."""
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, app=app).first() if app else None
    if endpoint is None:
        raise _error("not_found", "no such webhook", kind="not_found")
    return endpoint


def endpoint_update(endpoint: WebhookEndpoint, changes: Mapping[str, Any]) -> WebhookEndpoint:
    """Change the URL, event types, description or `active`. Disabling an endpoint fails its
    pending deliveries (`endpoint_disabled`); they can be redelivered once it is enabled again."""
    if "url" in changes:
        endpoint.url = check_url(changes["url"])
    if "event_types" in changes:
        endpoint.event_types = check_event_types(changes["event_types"])
    if "description" in changes:
        endpoint.description = changes["description"]
    if "active" in changes:
        endpoint.active = bool(changes["active"])
    with transaction.atomic():
        endpoint.save()
        if not endpoint.active:
            endpoint.deliveries.filter(status=Status.PENDING).update(
                status=Status.FAILED, next_attempt_at=None, last_error="endpoint_disabled"
            )
    return endpoint


def secret_rotate(endpoint: WebhookEndpoint) -> str:
    """A new secret for the endpoint, returned once; the old one stops signing at once."""
    endpoint.secret_salt = secrets.token_hex(32)
    endpoint.save(update_fields=["secret_salt", "updated_at"])
    return secret_of(endpoint)


# -- recording (inside the move's transaction) ---------------------------------------------


def record(table: Table, tagged: Sequence[list[Any]]) -> None:
    """Called by services._log for every move, inside its transaction: one delivery per active
    endpoint of the table's app that wants at least one of the move's public events."""
    if table.app_id is None:
        return
    cache = table.__dict__
    if "_webhook_endpoints" not in cache:  # one query per table per transaction, not per move
        cache["_webhook_endpoints"] = list(
            WebhookEndpoint.objects.filter(app_id=table.app_id, active=True).only("pk", "event_types")
        )
    endpoints: list[WebhookEndpoint] = cache["_webhook_endpoints"]
    if not endpoints:
        return

    public = reads.events_for([Move(seq=table.version, events=list(tagged))], None)
    public = [e for e in public if e["type"] not in HIDDEN_EVENT_TYPES]  # belt and braces
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
        body = {
            "id": str(delivery_id),
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
                attempt_budget=int(_conf("WEBHOOK_MAX_ATTEMPTS")),
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
        return
    for delivery_id in delivery_ids:
        jobs.deliver_webhook(delivery_id, countdown)


def redeliver(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again (whatever its status): pending and due now, with a fresh attempt
    budget. Refused with `webhook_disabled` while its endpoint is disabled."""
    if not delivery.endpoint.active:
        raise _error("webhook_disabled", "enable the webhook before redelivering", kind="conflict")
    now = timezone.now()
    with transaction.atomic():
        row = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
        row.status = Status.PENDING
        row.next_attempt_at = now
        row.queued_at = now
        row.attempt_budget = row.attempts + int(_conf("WEBHOOK_MAX_ATTEMPTS"))
        row.claim = None  # a send in flight now records nothing: the redelivery's send counts
        row.save(update_fields=["status", "next_attempt_at", "queued_at", "attempt_budget", "claim"])
        ids = [str(row.uuid)]
        transaction.on_commit(lambda: queue(ids))
    return row


# -- signing and sending ----------------------------------------------------------------------


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The Hearts-Signature header value for `body` sent at `timestamp` (unix seconds)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, tolerance: int = 300, now: float | None = None) -> bool:
    """What a receiver does (the snippet of docs/webhooks.md): the signature matches and is recent."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: base * 2^(attempts-1),
    capped, with up to 25% jitter downwards (so each wait is still longer than the last)."""
    base, cap = float(_conf("WEBHOOK_BACKOFF_BASE")), float(_conf("WEBHOOK_BACKOFF_MAX"))
    return float(min(cap, base * 2 ** max(0, attempts - 1)) * random.uniform(0.75, 1.0))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # a 3xx is a failed attempt
        return None


def _blocked_address(host: str, port: int) -> str | None:
    """Why `host` may not be sent to (a private, loopback or link-local address) unless
    WEBHOOK_ALLOW_PRIVATE_HOSTS, or None."""
    if _conf("WEBHOOK_ALLOW_PRIVATE_HOSTS"):
        return None
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        return f"cannot resolve host: {exc}"
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global or address.is_multicast:
            return f"address_not_allowed: {address}"
    return None


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> tuple[int | None, str]:
    """POST once: (HTTP status or None, error text or '')."""
    parts = urlsplit(url)
    blocked = _blocked_address(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
    if blocked:
        return None, blocked
    proxy = _conf("WEBHOOK_PROXY")
    opener = urllib.request.build_opener(
        _NoRedirects, urllib.request.ProxyHandler({"http": proxy, "https": proxy} if proxy else {})
    )
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with opener.open(request, timeout=timeout) as response:
            response.read(1024)
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, f"{type(exc).__name__}: {reason}"[:300]


def attempt(delivery_id: str, *, now: dt.datetime | None = None) -> str:
    """One attempt at a delivery that is due: 'succeeded', 'retry', 'failed', or 'skipped' when
    it is not due (done, claimed by another run, or waiting for its backoff), 'superseded'
    when a redelivery took it over during the send."""
    now = now or timezone.now()
    timeout = float(_conf("WEBHOOK_TIMEOUT"))
    skew = dt.timedelta(seconds=float(_conf("WEBHOOK_CLOCK_SKEW")))
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
            return "failed"
        # The claim: a lease until the send must be over; a duplicate task sees it and stops.
        row.attempts += 1
        row.last_attempt_at = now
        row.next_attempt_at = now + dt.timedelta(seconds=timeout + float(_conf("WEBHOOK_LEASE_MARGIN")))
        row.claim = uuid.uuid4()
        row.save(update_fields=["attempts", "last_attempt_at", "next_attempt_at", "claim"])
    claimed, claim = row.attempts, row.claim
    body = row.body.encode()
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "hearts-webhooks/1",
        SIGNATURE_HEADER: sign(secret_of(row.endpoint), stamp, body),
        "Hearts-Delivery": str(row.uuid),
        "Hearts-Event": ",".join(row.event_types),
        "Hearts-Attempt": str(claimed),
    }
    started = time.monotonic()
    code, error = post(row.endpoint.url, body, headers, timeout)
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
        row.log = [*row.log, entry][-int(_conf("WEBHOOK_LOG_ATTEMPTS")) :]
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
    grace = dt.timedelta(seconds=float(_conf("WEBHOOK_SWEEP_GRACE")))
    again = dt.timedelta(seconds=float(_conf("WEBHOOK_REQUEUE_AFTER")))
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
