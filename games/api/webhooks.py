"""REST endpoints of webhooks (app key only): register, list, show, change, delete an endpoint,
rotate its secret, list its deliveries and ask for a redelivery. Another app's endpoint or
delivery is a 404, as tables are. The signing and sending live in games/webhooks.py.

Webhook writes take no Idempotency-Key: the answer to a creation holds the secret, which is
shown once and must not be stored."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import operations as ops
from games import webhooks
from games.accounts import Principal
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, perform
from games.errors import Code
from games.operations.webhooks import DENIED

if TYPE_CHECKING:  # types only: the queries are in games.webhooks
    from games.models import App

F = serializers

# -- schemas --------------------------------------------------------------------------------


class WebhookOut(F.Serializer):
    id = F.IntegerField()
    url = F.CharField()
    event_types = F.ListField(child=F.CharField())
    description = F.CharField()
    active = F.BooleanField()
    created_at = F.DateTimeField()
    updated_at = F.DateTimeField()


class WebhookSecretOut(WebhookOut):
    secret = F.CharField(
        help_text="The signing secret: shown only in this answer (and when rotated), never again"
    )


class WebhookListOut(F.Serializer):
    next = F.URLField(allow_null=True, help_text="The next page (null on the last)")
    previous = F.URLField(allow_null=True, help_text="The page before (null on the first)")
    results = WebhookOut(many=True, help_text="Oldest first; at most WEBHOOK_MAX_PER_APP (20) in all")


class AttemptOut(F.Serializer):
    attempt = F.IntegerField()
    at = F.DateTimeField()
    status_code = F.IntegerField(allow_null=True, help_text="The receiver's HTTP status, null when none")
    ms = F.IntegerField(help_text="How long the attempt took")
    error = F.CharField(required=False, help_text="Why it failed (HTTP status, refused, timed out, ...)")
    retry_in = F.FloatField(required=False, help_text="Seconds until the next attempt")


class DeliveryOut(F.Serializer):
    id = F.UUIDField(help_text="Stable across attempts: the Hearts-Delivery header, for deduplication")
    webhook = F.IntegerField()
    table = F.IntegerField(
        allow_null=True, help_text="null: an app's own event (player.erased), not a table's"
    )
    seq = F.IntegerField(
        help_text="The move (table version) whose public events are delivered; 0 for an app's event"
    )
    event_types = F.ListField(child=F.CharField())
    status = F.ChoiceField(choices=list(webhooks.DELIVERY_STATUSES), help_text="pending, succeeded or failed")
    attempts = F.IntegerField()
    next_attempt_at = F.DateTimeField(allow_null=True)
    last_attempt_at = F.DateTimeField(allow_null=True)
    last_status_code = F.IntegerField(allow_null=True)
    last_error = F.CharField()
    delivered_at = F.DateTimeField(allow_null=True)
    created_at = F.DateTimeField()


class DeliveryDetailOut(DeliveryOut):
    body = F.DictField(help_text="The exact JSON body every attempt sends")
    log = AttemptOut(many=True, help_text="The latest attempts, oldest first")


class DeliveryPageOut(F.Serializer):
    next = F.URLField(allow_null=True)
    previous = F.URLField(allow_null=True)
    results = DeliveryOut(many=True)


# -- bodies (games.webhooks builds them, for GraphQL too) ------------------------------------

webhook_body = webhooks.endpoint_body
delivery_body = webhooks.delivery_body


# -- views ----------------------------------------------------------------------------------

_APP = (Code.app_key_required,)  # every webhook operation needs the app's key
_ONE = (*_APP, Code.not_found)  # and one of its endpoints (or deliveries)


def _app(request: Request) -> App:
    """The calling app; a player token is refused with `app_key_required`."""
    principal = request.user
    assert isinstance(principal, Principal)
    return principal.require_app(DENIED)


class WebhooksView(APIView):
    """GET /webhooks: the app's endpoints. POST /webhooks {url, event_types, description}: a new
    endpoint, answered with its signing secret (shown this once)."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listWebhooks",
        tag="webhooks",
        ok=WebhookListOut,
        errors=(*_APP, Code.invalid_cursor),
        params=[CURSOR],
    )
    def get(self, request: Request) -> Response:
        endpoints = webhooks.endpoints_of(_app(request))
        return paged(request, endpoints, webhooks.ENDPOINT_PAGES, webhook_body)

    @documented(ops.CREATE_WEBHOOK, tag="webhooks", ok=WebhookSecretOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_WEBHOOK, 201)


class WebhookView(APIView):
    """GET /webhooks/{id}; PATCH it (url, event_types, description, active); DELETE it (and its
    deliveries)."""

    permission_classes = [IsPrincipal]

    @documented(op="getWebhook", tag="webhooks", ok=WebhookOut, errors=_ONE)
    def get(self, request: Request, webhook_id: int) -> Response:
        return Response(webhook_body(webhooks.endpoint_of(_app(request), webhook_id)))

    @documented(ops.UPDATE_WEBHOOK, tag="webhooks", ok=WebhookOut)
    def patch(self, request: Request, webhook_id: int) -> HttpResponseBase:
        return perform(request, ops.UPDATE_WEBHOOK, webhook_id=webhook_id)

    @documented(ops.DELETE_WEBHOOK, tag="webhooks", ok=None, status=204, body=False)
    def delete(self, request: Request, webhook_id: int) -> HttpResponseBase:
        return perform(request, ops.DELETE_WEBHOOK, 204, body=False, webhook_id=webhook_id)


class WebhookSecretView(APIView):
    """POST /webhooks/{id}/secret: a new signing secret, shown this once; the old one stops at once."""

    permission_classes = [IsPrincipal]

    @documented(ops.ROTATE_WEBHOOK_SECRET, tag="webhooks", ok=WebhookSecretOut)
    def post(self, request: Request, webhook_id: int) -> HttpResponseBase:
        return perform(request, ops.ROTATE_WEBHOOK_SECRET, webhook_id=webhook_id)


class DeliveriesView(APIView):
    """GET /webhooks/{id}/deliveries?status=: the endpoint's deliveries, newest first, in cursor
    pages of 20."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listDeliveries",
        tag="webhooks",
        ok=DeliveryPageOut,
        params=[
            OpenApiParameter("status", str, enum=list(webhooks.DELIVERY_STATUSES)),
            CURSOR,
        ],
        errors=(*_ONE, Code.invalid_filter, Code.invalid_cursor),
    )
    def get(self, request: Request, webhook_id: int) -> Response:
        endpoint = webhooks.endpoint_of(_app(request), webhook_id)
        rows = webhooks.deliveries_of(endpoint, request.query_params.get("status"))
        return paged(request, rows, webhooks.DELIVERY_PAGES, delivery_body)


class DeliveryView(APIView):
    """GET /webhooks/{id}/deliveries/{delivery_id}: one delivery with its body and its attempts."""

    permission_classes = [IsPrincipal]

    @documented(op="getDelivery", tag="webhooks", ok=DeliveryDetailOut, errors=_ONE)
    def get(self, request: Request, webhook_id: int, delivery_id: uuid.UUID) -> Response:
        return Response(
            delivery_body(webhooks.delivery_of(_app(request), webhook_id, delivery_id), detail=True)
        )


class RedeliverView(APIView):
    """POST /webhooks/{id}/deliveries/{delivery_id}/redeliver: send it again (202), whatever its
    status, with a fresh set of attempts."""

    permission_classes = [IsPrincipal]

    @documented(ops.REDELIVER, tag="webhooks", ok=DeliveryOut, status=202)
    def post(self, request: Request, webhook_id: int, delivery_id: uuid.UUID) -> HttpResponseBase:
        return perform(request, ops.REDELIVER, 202, webhook_id=webhook_id, delivery_id=delivery_id)
