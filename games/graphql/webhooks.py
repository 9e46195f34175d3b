"""GraphQL for an app's webhook endpoints (docs/webhooks.md): the `webhooks`, `webhook`, `deliveries`
and `delivery` queries and the createWebhook, updateWebhook, deleteWebhook, rotateWebhookSecret and
redeliver mutations, over the same games.webhooks functions as REST's /webhooks. App key only;
another app's endpoint or delivery is null (a query) or not_found (a mutation). No idempotency key,
as over REST: the answer to a creation holds the secret, shown once and never stored."""

from __future__ import annotations

import base64
import uuid
from typing import TYPE_CHECKING, Any

import graphene

from games import accounts, webhooks
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.base import error_of
from games.graphql.types import Error

if TYPE_CHECKING:  # types only: the queries are in games.webhooks
    from games.models import App, WebhookDelivery, WebhookEndpoint

MAX_PAGE = 100
MAX_EVENT_TYPES = 100  # as REST's CreateWebhook.event_types
MAX_DESCRIPTION = 200

DeliveryStatus = graphene.Enum(
    "DeliveryStatus",
    [(s, s) for s in webhooks.DELIVERY_STATUSES],
    description="A delivery's state: pending (attempts left), succeeded or failed",
)


def _app(info: Any) -> App:
    principal = getattr(info.context, "principal", None)
    if not isinstance(principal, Principal):
        raise ServiceError("not_authenticated", "send 'Authorization: Bearer <key or token>'", kind="auth")
    return principal.require_app("webhooks are managed with an app key")


class Webhook(graphene.ObjectType):
    """A webhook endpoint of the app: where the public events of its tables are POSTed, signed."""

    id = graphene.Int(required=True)
    url = graphene.String(required=True)
    event_types = graphene.List(
        graphene.NonNull(graphene.String), required=True, description='Public event types, or ["*"]: all'
    )
    description = graphene.String(required=True)
    active = graphene.Boolean(required=True, description="false: no new deliveries")
    created_at = graphene.String(required=True, description="ISO 8601")
    updated_at = graphene.String(required=True, description="ISO 8601")


class WebhookAttempt(graphene.ObjectType):
    """One attempt to send a delivery."""

    attempt = graphene.Int(required=True)
    at = graphene.String(required=True, description="ISO 8601")
    status_code = graphene.Int(description="The receiver's HTTP status, null when none")
    ms = graphene.Int(required=True, description="How long the attempt took")
    error = graphene.String(description="Why it failed (HTTP status, refused, timed out, ...)")
    retry_in = graphene.Float(description="Seconds until the next attempt")


class Delivery(graphene.ObjectType):
    """The public events of one move of a table, sent to one endpoint until it answers 2xx."""

    id = graphene.String(
        required=True, description="Stable across attempts (webhook-id): for deduplication; a UUID"
    )
    webhook = graphene.Int(required=True)
    table = graphene.Int(required=True)
    seq = graphene.Int(required=True, description="The move (table version) whose public events are sent")
    event_types = graphene.List(graphene.NonNull(graphene.String), required=True)
    status = graphene.Field(DeliveryStatus, required=True)
    attempts = graphene.Int(required=True)
    next_attempt_at = graphene.String()
    last_attempt_at = graphene.String()
    last_status_code = graphene.Int()
    last_error = graphene.String(required=True)
    delivered_at = graphene.String()
    created_at = graphene.String(required=True)
    body = graphene.String(
        description="`delivery` only (null in a page): the exact JSON text every attempt sends, "
        "the text its signature covers"
    )
    log = graphene.List(
        graphene.NonNull(WebhookAttempt),
        description="`delivery` only (null in a page): the latest attempts, oldest first",
    )


class DeliveryConnection(graphene.relay.Connection):
    class Meta:
        node = Delivery


def _delivery(d: WebhookDelivery, *, detail: bool = False) -> dict[str, Any]:
    body = webhooks.delivery_body(d)  # REST's body; the text itself rather than parsed JSON
    if detail:
        body.update(body=d.body, log=d.log)
    return body


def _cursor(delivery: WebhookDelivery) -> str:
    return base64.urlsafe_b64encode(f"delivery:{delivery.pk}".encode()).decode()


def _uncursor(cursor: str) -> int:
    try:
        kind, _, number = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind == "delivery" and number.isascii() and number.isdigit() and len(number) <= 18:
            return int(number)
    except (ValueError, UnicodeDecodeError):
        pass
    raise ServiceError("invalid_cursor", "after must be a cursor from a previous page", kind="malformed")


def _uuid(value: str) -> uuid.UUID:
    """A delivery id; anything else names no delivery (REST: no route, 404)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ServiceError("not_found", "no such delivery", kind="not_found") from None


def _endpoint_or_none(info: Any, webhook_id: int) -> WebhookEndpoint | None:
    try:
        return webhooks.endpoint_of(_app(info), webhook_id)
    except ServiceError as exc:
        if exc.code == "not_found":
            return None
        raise


class WebhookQueries(graphene.ObjectType):
    """The Query fields of webhooks (a base of games.graphql.schema.Query)."""

    webhooks = graphene.List(
        graphene.NonNull(Webhook), required=True, description="App key: your webhook endpoints, oldest first"
    )
    webhook = graphene.Field(Webhook, id=graphene.Int(required=True), description="Null when not yours")
    deliveries = graphene.Field(
        DeliveryConnection,
        webhook_id=graphene.Int(required=True),
        status=graphene.String(description="pending, succeeded or failed (else invalid_filter)"),
        first=graphene.Int(default_value=20, description=f"At most {MAX_PAGE}"),
        after=graphene.String(),
        description="App key: an endpoint's deliveries, newest first; null when the endpoint is not yours",
    )
    delivery = graphene.Field(
        Delivery,
        webhook_id=graphene.Int(required=True),
        id=graphene.String(required=True),
        description="App key: one delivery with its body and attempts; null when not yours",
    )

    def resolve_webhooks(root: Any, info: Any) -> list[dict[str, Any]]:
        return [webhooks.endpoint_body(e) for e in webhooks.endpoints_of(_app(info))]

    def resolve_webhook(root: Any, info: Any, id: int) -> dict[str, Any] | None:
        endpoint = _endpoint_or_none(info, id)
        return None if endpoint is None else webhooks.endpoint_body(endpoint)

    def resolve_deliveries(
        root: Any,
        info: Any,
        webhook_id: int,
        first: int | None,
        status: str | None = None,
        after: str | None = None,
    ) -> DeliveryConnection | None:
        first = 20 if first is None else first
        if not 1 <= first <= MAX_PAGE:
            raise ServiceError("invalid_filter", f"first must be 1 to {MAX_PAGE}", kind="malformed")
        endpoint = _endpoint_or_none(info, webhook_id)
        if endpoint is None:
            return None
        rows = webhooks.deliveries_of(endpoint, status)
        found = webhooks.deliveries_before(rows, _uncursor(after) if after else None, first + 1)
        page = found[:first]
        edges = [DeliveryConnection.Edge(node=_delivery(d), cursor=_cursor(d)) for d in page]
        return DeliveryConnection(
            edges=edges,
            page_info=graphene.relay.PageInfo(
                has_next_page=len(found) > first,
                has_previous_page=bool(after),
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
        )

    def resolve_delivery(root: Any, info: Any, webhook_id: int, id: str) -> dict[str, Any] | None:
        try:
            return _delivery(webhooks.delivery_of(_app(info), webhook_id, _uuid(id)), detail=True)
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise


class WebhookPayload(graphene.ObjectType):
    webhook = graphene.Field(Webhook, description="The endpoint after the change (null on error)")
    secret = graphene.String(
        description="createWebhook and rotateWebhookSecret only: the signing secret, shown this "
        "once, never again"
    )
    errors = graphene.List(graphene.NonNull(Error), required=True)


def _event_types(types: list[str] | None) -> list[str] | None:
    """At most MAX_EVENT_TYPES names (REST's bound); games.webhooks checks what they are."""
    if types is not None and len(types) > MAX_EVENT_TYPES:
        raise ServiceError(
            "invalid_input",
            f"eventTypes must have at most {MAX_EVENT_TYPES} items",
            kind="malformed",
            field="eventTypes",
        )
    return types


class CreateWebhook(graphene.Mutation):
    """App key: a new webhook endpoint, answered with its signing secret (shown this once). Errors:
    invalid_url, invalid_event_type, invalid_input (description), too_many_webhooks."""

    class Arguments:
        url = graphene.String(required=True, description="An absolute http(s) URL of at most 2000 characters")
        event_types = graphene.List(
            graphene.NonNull(graphene.String),
            description='Public event types to receive (docs/webhooks.md); left out: ["*"], all of them',
        )
        description = graphene.String(default_value="", description=f"At most {MAX_DESCRIPTION} characters")

    Output = WebhookPayload

    def mutate(
        root: Any, info: Any, url: str, event_types: list[str] | None = None, description: str | None = ""
    ) -> WebhookPayload:
        try:
            app = _app(info)
            endpoint, secret = webhooks.endpoint_create(
                app=app,
                url=url,
                event_types=["*"] if event_types is None else _event_types(event_types),
                description=accounts.text(description, "description", MAX_DESCRIPTION, blank=True),
            )
        except ServiceError as exc:
            return WebhookPayload(errors=[error_of(exc)])
        return WebhookPayload(webhook=webhooks.endpoint_body(endpoint), secret=secret, errors=[])


class UpdateWebhook(graphene.Mutation):
    """App key: change an endpoint's url, eventTypes, description or active (left out or null: it
    stays). active false fails its pending deliveries (redeliver them once it is enabled again)."""

    class Arguments:
        id = graphene.Int(required=True)
        url = graphene.String()
        event_types = graphene.List(graphene.NonNull(graphene.String))
        description = graphene.String()
        active = graphene.Boolean(description="false: no new deliveries; pending ones fail")

    Output = WebhookPayload

    def mutate(root: Any, info: Any, id: int, **changes: Any) -> WebhookPayload:
        try:
            endpoint = webhooks.endpoint_of(_app(info), id)
            given = {k: v for k, v in changes.items() if v is not None}
            if "event_types" in given:
                _event_types(given["event_types"])
            if "description" in given:
                given["description"] = accounts.text(
                    given["description"], "description", MAX_DESCRIPTION, blank=True
                )
            return WebhookPayload(
                webhook=webhooks.endpoint_body(webhooks.endpoint_update(endpoint, given)), errors=[]
            )
        except ServiceError as exc:
            return WebhookPayload(errors=[error_of(exc)])


class RotateWebhookSecret(graphene.Mutation):
    """App key: a new signing secret for an endpoint, shown this once; the old one stops at once."""

    class Arguments:
        id = graphene.Int(required=True)

    Output = WebhookPayload

    def mutate(root: Any, info: Any, id: int) -> WebhookPayload:
        try:
            endpoint = webhooks.endpoint_of(_app(info), id)
            secret = webhooks.secret_rotate(endpoint)
            return WebhookPayload(webhook=webhooks.endpoint_body(endpoint), secret=secret, errors=[])
        except ServiceError as exc:
            return WebhookPayload(errors=[error_of(exc)])


class DeleteWebhookPayload(graphene.ObjectType):
    deleted = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class DeleteWebhook(graphene.Mutation):
    """App key: delete an endpoint and its deliveries."""

    class Arguments:
        id = graphene.Int(required=True)

    Output = DeleteWebhookPayload

    def mutate(root: Any, info: Any, id: int) -> DeleteWebhookPayload:
        try:
            webhooks.endpoint_delete(webhooks.endpoint_of(_app(info), id))
            return DeleteWebhookPayload(deleted=True, errors=[])
        except ServiceError as exc:
            return DeleteWebhookPayload(deleted=False, errors=[error_of(exc)])


class DeliveryPayload(graphene.ObjectType):
    delivery = graphene.Field(Delivery, description="The delivery, pending again (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class Redeliver(graphene.Mutation):
    """App key: send a delivery again, whatever its status, with a fresh set of attempts (REST
    answers 202: it is queued, not sent yet). Errors: not_found, webhook_disabled."""

    class Arguments:
        webhook_id = graphene.Int(required=True)
        delivery_id = graphene.String(required=True)

    Output = DeliveryPayload

    def mutate(root: Any, info: Any, webhook_id: int, delivery_id: str) -> DeliveryPayload:
        try:
            found = webhooks.delivery_of(_app(info), webhook_id, _uuid(delivery_id))
            return DeliveryPayload(delivery=_delivery(webhooks.redeliver(found)), errors=[])
        except ServiceError as exc:
            return DeliveryPayload(errors=[error_of(exc)])


class WebhookMutations(graphene.ObjectType):
    """The Mutation fields of webhooks (a base of games.graphql.schema.Mutation)."""

    create_webhook = CreateWebhook.Field()
    update_webhook = UpdateWebhook.Field()
    delete_webhook = DeleteWebhook.Field()
    rotate_webhook_secret = RotateWebhookSecret.Field()
    redeliver = Redeliver.Field()
