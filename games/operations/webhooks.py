"""The webhook operations (docs/webhooks.md): create, change, delete an endpoint, rotate a secret, redeliver.

Each is declared once: REST serves it (games/api/webhooks.py) and GraphQL too (games/graphql/webhooks.py).
App key only; another app's endpoint or delivery is not_found. No Idempotency-Key: the answer to
a creation holds the secret, which is shown once and must not be stored.
"""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from games import webhooks
from games.accounts import Scope
from games.audit import Audited, rotated
from games.errors import Code, ServiceError
from games.models import WebhookEndpoint
from games.operations.base import Access, Call, Operation
from games.operations.fields import EmptyIn, StrictBooleanField, StrictCharField, StrictSerializer

DENIED = "webhooks are managed with an app key"
ONE = (Code.not_found,)  # an operation on one of the app's endpoints (or deliveries)
INPUT = (Code.invalid_url, Code.invalid_event_type)  # the checks of a URL and event types
FIELDS = ("url", "event_types", "description", "active")  # what the audit trail records (games/audit.py)
URL_HELP = f"Where deliveries are POSTed: an absolute http(s) URL of at most {webhooks.URL_MAX:,} characters"
TYPES_HELP = 'Public event types to receive (see docs/webhooks.md), or ["*"] for all of them'
DESCRIPTION_HELP = f"At most {webhooks.DESCRIPTION_MAX} characters"


def _event_types(**kw: Any) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=webhooks.EVENT_TYPE_MAX),
        max_length=webhooks.EVENT_TYPES_MAX,
        help_text=f"{TYPES_HELP} (at most {webhooks.EVENT_TYPES_MAX})",
        **kw,
    )


@extend_schema_serializer(component_name="CreateWebhook")
class WebhookIn(StrictSerializer):
    """A new webhook endpoint."""

    url = StrictCharField(help_text=URL_HELP)
    event_types = _event_types(required=False, default=["*"])
    description = StrictCharField(
        max_length=webhooks.DESCRIPTION_MAX,
        required=False,
        default="",
        allow_blank=True,
        help_text=DESCRIPTION_HELP,
    )


@extend_schema_serializer(component_name="UpdateWebhook")
class WebhookPatchIn(StrictSerializer):
    """The fields of an endpoint to change; the others stay."""

    url = StrictCharField(required=False, help_text=URL_HELP)
    event_types = _event_types(required=False)
    description = StrictCharField(
        max_length=webhooks.DESCRIPTION_MAX, required=False, allow_blank=True, help_text=DESCRIPTION_HELP
    )
    active = StrictBooleanField(required=False, help_text="false: no new deliveries; pending ones fail")


def _endpoint(c: Call) -> Any:
    """The app's endpoint the call names (another app's: not_found)."""
    return webhooks.endpoint_of(c.principal.app, c["webhook_id"])


def _create(c: Call) -> dict[str, Any]:
    endpoint, secret = webhooks.endpoint_create(
        app=c.app, url=c["url"], event_types=c["event_types"], description=c["description"]
    )
    return {**webhooks.endpoint_body(endpoint), "secret": secret}


def _update(c: Call) -> dict[str, Any]:
    changes = {k: v for k, v in c.input.items() if k in WebhookPatchIn._declared_fields}
    return webhooks.endpoint_body(webhooks.endpoint_update(_endpoint(c), changes))


def _rotate(c: Call) -> dict[str, Any]:
    endpoint = _endpoint(c)
    secret = webhooks.secret_rotate(endpoint)
    return {**webhooks.endpoint_body(endpoint), "secret": secret}


def delivery_id(value: uuid.UUID | str) -> uuid.UUID:
    """A delivery's id (REST's path gives a UUID, GraphQL a string); anything else names no delivery."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ServiceError("not_found", "no such delivery", kind="not_found") from None


def _redeliver(c: Call) -> dict[str, Any]:
    found = webhooks.delivery_of(c.app, c["webhook_id"], delivery_id(c["delivery_id"]))
    return webhooks.delivery_body(webhooks.redeliver(found))


CREATE_WEBHOOK = Operation(
    name="createWebhook",
    quota="webhooks",
    audited=Audited("webhook", WebhookEndpoint, FIELDS),
    scope=Scope.webhooks_write,
    description="App key: a new webhook endpoint, answered with its signing secret (shown this once).",
    input=WebhookIn,
    access=Access.APP,
    denied=DENIED,
    run=_create,
    errors=(*INPUT, Code.too_many_webhooks),
)

UPDATE_WEBHOOK = Operation(
    name="updateWebhook",
    audited=Audited("webhook", WebhookEndpoint, FIELDS, id_in="webhook_id"),
    scope=Scope.webhooks_write,
    description="App key: change an endpoint's url, event types, description or active (left out: it "
    "stays). active false fails its pending deliveries (redeliver them once it is enabled again).",
    input=WebhookPatchIn,
    path=("webhook_id",),
    access=Access.APP,
    denied=DENIED,
    run=_update,
    errors=(*ONE, *INPUT),
)

ROTATE_WEBHOOK_SECRET = Operation(
    name="rotateWebhookSecret",
    audited=Audited("webhook", WebhookEndpoint, FIELDS, id_in="webhook_id", changed=rotated),
    scope=Scope.webhooks_write,
    description="App key: a new signing secret for an endpoint, shown this once; the old one stops at once.",
    input=EmptyIn,
    path=("webhook_id",),
    access=Access.APP,
    denied=DENIED,
    run=_rotate,
    errors=ONE,
)

DELETE_WEBHOOK = Operation(
    name="deleteWebhook",
    audited=Audited("webhook", WebhookEndpoint, FIELDS, id_in="webhook_id"),
    scope=Scope.webhooks_write,
    description="App key: delete an endpoint and its deliveries.",
    input=EmptyIn,
    path=("webhook_id",),
    access=Access.APP,
    denied=DENIED,
    run=lambda c: webhooks.endpoint_delete(_endpoint(c)),
    errors=ONE,
)

REDELIVER = Operation(
    name="redeliver",
    scope=Scope.webhooks_write,
    description="App key: send a delivery again, whatever its status, with a fresh set of attempts (REST "
    "answers 202: it is queued, not sent yet).",
    input=EmptyIn,
    path=("webhook_id", "delivery_id"),
    access=Access.APP,
    denied=DENIED,
    run=_redeliver,
    errors=(*ONE, Code.webhook_disabled),
)
