"""An app's webhook endpoints: registering, listing, changing and deleting them, and their secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.db.models import QuerySet

from games import paging, reads
from games.models import App, WebhookDelivery, WebhookEndpoint
from games.webhooks.base import (
    APP_EVENT_TYPES,
    HIDDEN_EVENT_TYPES,
    PUBLIC_EVENT_TYPES,
    SECRET_PREFIX,
    Status,
    conf,
    error,
)

log = logging.getLogger(__name__)

URL_MAX = 2000  # characters of an endpoint's URL
DESCRIPTION_MAX = 200  # characters of an endpoint's description
EVENT_TYPES_MAX = 100  # event types an endpoint names at most
EVENT_TYPE_MAX = 64  # characters of one event type


def check_url(url: object) -> str:
    """An absolute http(s) URL with a host and no credentials, else `invalid_url` with a reason."""

    def bad(reason: str, message: str) -> Exception:
        return error("invalid_url", message, kind="malformed", reason=reason)

    if not isinstance(url, str) or not url.strip():
        raise bad("malformed", "url must be an absolute http or https URL")
    url = url.strip()
    if len(url) > URL_MAX:
        raise bad("length", f"url must be at most {URL_MAX} characters")
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
    """A non-empty list of public event types and app event types (`player.erased`), or ["*"] for
    all; else `invalid_event_type`."""
    known = [*PUBLIC_EVENT_TYPES, *APP_EVENT_TYPES]
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        raise error(
            "invalid_event_type",
            'event_types is a non-empty list of event types, or ["*"] for all',
            kind="malformed",
            known=known,
        )
    if "*" in types:
        return ["*"]
    unknown = sorted({t for t in types if t not in known})
    if unknown:
        hidden = [t for t in unknown if t in HIDDEN_EVENT_TYPES]
        why = " (a seat's own cards are never sent to an app)" if hidden else ""
        raise error(
            "invalid_event_type",
            f"not a public event type: {', '.join(unknown)}{why}",
            kind="malformed",
            event_types=unknown,
            known=known,
        )
    return list(dict.fromkeys(types))


def secret_of(endpoint: WebhookEndpoint) -> str:
    """The endpoint's signing secret in the Standard Webhooks format: `whsec_` + the standard
    base64 (with its padding) of a 32-byte key, HMAC-SHA256(WEBHOOK_SECRET_KEY, the endpoint's salt).
    Derived, never stored: the database alone cannot sign."""
    key = str(conf("WEBHOOK_SECRET_KEY")).encode()
    mac = hmac.new(key, f"hearts-webhook:{endpoint.secret_salt}".encode(), hashlib.sha256).digest()
    return SECRET_PREFIX + base64.b64encode(mac).decode()


def endpoint_create(
    *, app: App, url: object, event_types: object = ("*",), description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint of `app` and its secret (returned only here and by `secret_rotate`)."""
    url = check_url(url)
    types = check_event_types(list(event_types) if isinstance(event_types, tuple) else event_types)
    with transaction.atomic():
        # Lock the app row so that two concurrent creations cannot both pass the limit.
        App.objects.select_for_update().filter(pk=app.pk).first()
        limit = int(conf("WEBHOOK_MAX_PER_APP"))
        if WebhookEndpoint.objects.filter(app=app).count() >= limit:
            raise error(
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


ENDPOINT_PAGES = paging.Keyset("webhook", ("id",), (int,))  # oldest first (games/paging.py)


def endpoints_of(app: App) -> QuerySet[WebhookEndpoint]:
    """The app's endpoints, oldest first."""
    return WebhookEndpoint.objects.filter(app=app).order_by("pk")


DELIVERY_PAGES = paging.Keyset("delivery", ("-id",), (int,))  # newest first (games/paging.py)


def deliveries_of(endpoint: WebhookEndpoint, status: str | None) -> QuerySet[WebhookDelivery]:
    """The endpoint's deliveries (of one status, when given), without their bodies."""
    rows = endpoint.deliveries.all()
    if status:
        if status not in DELIVERY_STATUSES:
            raise error(
                "invalid_filter", f"status must be one of {', '.join(DELIVERY_STATUSES)}", kind="malformed"
            )
        rows = rows.filter(status=status)
    return rows.defer("body")


def delivery_of(app: App, endpoint_id: int, delivery_id: uuid.UUID) -> WebhookDelivery:
    """One delivery of one of the app's endpoints (404 otherwise)."""
    endpoint = endpoint_of(app, endpoint_id)
    found = endpoint.deliveries.select_related("endpoint").filter(uuid=delivery_id).first()
    if found is None:
        raise error("not_found", "no such delivery", kind="not_found")
    return found


def endpoint_delete(endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


def endpoint_of(app: App | None, endpoint_id: int) -> WebhookEndpoint:
    """One of `app`'s endpoints; another app's endpoint is indistinguishable from none (404)."""
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, app=app).first() if app else None
    if endpoint is None:
        raise error("not_found", "no such webhook", kind="not_found")
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


def endpoint_body(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint as its app sees it, without its secret (REST and GraphQL answer this)."""
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "description": endpoint.description,
        "active": endpoint.active,
        "created_at": reads.iso(endpoint.created_at),
        "updated_at": reads.iso(endpoint.updated_at),
    }


def delivery_body(d: WebhookDelivery, *, detail: bool = False) -> dict[str, Any]:
    """A delivery as its app sees it; `detail`: with the body it sends and its latest attempts."""
    body: dict[str, Any] = {
        "id": str(d.uuid),
        "webhook": d.endpoint_id,
        "table": d.table_id,
        "seq": d.seq,
        "event_types": d.event_types,
        "status": str(d.status),  # the value, also of a member just set (Status.PENDING)
        "attempts": d.attempts,
        "next_attempt_at": reads.iso(d.next_attempt_at),
        "last_attempt_at": reads.iso(d.last_attempt_at),
        "last_status_code": d.last_status_code,
        "last_error": d.last_error,
        "delivered_at": reads.iso(d.delivered_at),
        "created_at": reads.iso(d.created_at),
    }
    if detail:
        body["body"] = json.loads(d.body)
        body["log"] = d.log
    return body
