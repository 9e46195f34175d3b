"""GraphQL for an app's webhook endpoints (docs/webhooks.md): the `webhooks`, `webhook`, `deliveries`
and `delivery` queries and the createWebhook, updateWebhook, deleteWebhook, rotateWebhookSecret and
redeliver mutations, which run the operations of games/operations/webhooks.py as REST's /webhooks
does. App key only; another app's endpoint or delivery is null (a query) or not_found (a mutation).
No idempotency key, as over REST: the answer to a creation holds the secret, shown once and never
stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import graphene

from games import operations as ops
from games import paging, webhooks
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql import pages
from games.graphql.base import OperationMutation, app_of
from games.graphql.types import Error
from games.operations.webhooks import DENIED, delivery_id

if TYPE_CHECKING:  # types only: the queries are in games.webhooks
    from games.models import WebhookDelivery, WebhookEndpoint

MAX_PAGE = 100

DeliveryStatus = graphene.Enum(
    "DeliveryStatus",
    [(s, s) for s in webhooks.DELIVERY_STATUSES],
    description="A delivery's state: pending (attempts left), succeeded or failed",
)


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
    table = graphene.Int(description="null: an app's own event (player.erased), not a table's")
    seq = graphene.Int(
        required=True,
        description="The move (table version) whose public events are sent; 0 for an app's event",
    )
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


def _endpoint_or_none(info: Any, webhook_id: int) -> WebhookEndpoint | None:
    try:
        return webhooks.endpoint_of(app_of(info, DENIED), webhook_id)
    except ServiceError as exc:
        if exc.code == "not_found":
            return None
        raise


class WebhookConnection(graphene.relay.Connection):
    class Meta:
        node = Webhook


class WebhookQueries(graphene.ObjectType):
    """The Query fields of webhooks (a base of games.graphql.schema.Query)."""

    webhooks = graphene.List(
        graphene.NonNull(Webhook),
        required=True,
        description="App key: your webhook endpoints, oldest first: all of them, at most "
        "WEBHOOK_MAX_PER_APP (webhookPage pages them)",
    )
    webhook_page = graphene.Field(
        WebhookConnection,
        required=True,
        **pages.args(),
        description="App key: your webhook endpoints, oldest first (errors: invalid_cursor)",
    )
    webhook = graphene.Field(Webhook, id=graphene.Int(required=True), description="Null when not yours")
    deliveries = graphene.Field(
        DeliveryConnection,
        webhook_id=graphene.Int(required=True),
        status=graphene.String(description="pending, succeeded or failed (else invalid_filter)"),
        first=graphene.Int(default_value=paging.PAGE_SIZE, description=f"At most {paging.MAX_PAGE_SIZE}"),
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
        return [webhooks.endpoint_body(e) for e in webhooks.endpoints_of(app_of(info, DENIED))]

    def resolve_webhook_page(root: Any, info: Any, first: int | None, after: str | None = None) -> Any:
        rows = webhooks.endpoints_of(app_of(info, DENIED))
        body = webhooks.endpoint_body
        return pages.connection(WebhookConnection, rows, webhooks.ENDPOINT_PAGES, body, first, after)

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
        endpoint = _endpoint_or_none(info, webhook_id)
        if endpoint is None:
            return None
        rows = webhooks.deliveries_of(endpoint, status)
        return pages.connection(DeliveryConnection, rows, webhooks.DELIVERY_PAGES, _delivery, first, after)

    def resolve_delivery(root: Any, info: Any, webhook_id: int, id: str) -> dict[str, Any] | None:
        try:
            return _delivery(
                webhooks.delivery_of(app_of(info, DENIED), webhook_id, delivery_id(id)), detail=True
            )
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


class WebhookMutation(OperationMutation):
    """A change to one of the app's endpoints: answers the endpoint after it, and its secret when
    it has one."""

    class Meta:
        abstract = True

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> WebhookPayload:
        secret = out.pop("secret", None)
        return WebhookPayload(webhook=out, secret=secret, errors=[])


# The endpoint an operation names: `id` in GraphQL, `webhook_id` in the operation (REST's path).
_ID = {"webhook_id": graphene.Int(required=True, name="id")}


class CreateWebhook(WebhookMutation):
    class Meta:
        operation = ops.CREATE_WEBHOOK

    Output = WebhookPayload


class UpdateWebhook(WebhookMutation):
    class Meta:
        operation = ops.UPDATE_WEBHOOK

    shaped = _ID
    Output = WebhookPayload


class RotateWebhookSecret(WebhookMutation):
    class Meta:
        operation = ops.ROTATE_WEBHOOK_SECRET

    shaped = _ID
    Output = WebhookPayload


class DeleteWebhookPayload(graphene.ObjectType):
    deleted = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class DeleteWebhook(OperationMutation):
    class Meta:
        operation = ops.DELETE_WEBHOOK

    shaped = _ID
    Output = DeleteWebhookPayload

    @classmethod
    def refused(cls, error: Error) -> DeleteWebhookPayload:
        return DeleteWebhookPayload(deleted=False, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> DeleteWebhookPayload:
        return DeleteWebhookPayload(deleted=True, errors=[])


class DeliveryPayload(graphene.ObjectType):
    delivery = graphene.Field(Delivery, description="The delivery, pending again (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class Redeliver(OperationMutation):
    class Meta:
        operation = ops.REDELIVER

    shaped = {"delivery_id": graphene.String(required=True, description="The delivery's id (a UUID)")}
    Output = DeliveryPayload

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> DeliveryPayload:
        return DeliveryPayload(delivery=out, errors=[])


class WebhookMutations(graphene.ObjectType):
    """The Mutation fields of webhooks (a base of games.graphql.schema.Mutation)."""

    create_webhook = CreateWebhook.Field()
    update_webhook = UpdateWebhook.Field()
    delete_webhook = DeleteWebhook.Field()
    rotate_webhook_secret = RotateWebhookSecret.Field()
    redeliver = Redeliver.Field()
