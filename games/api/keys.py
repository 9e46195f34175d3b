"""REST endpoints of an app's API keys (docs/keys.md): list them (never a secret), create one (its
secret shown once), revoke one, rotate one with an overlap; and a player's token refresh.

Key writes take no Idempotency-Key: their answers hold a secret, which must not be stored."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import accounts
from games import operations as ops
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, perform, principal_of
from games.errors import Code
from games.operations.keys import DENIED, KEY_PAGES, key_body

TAG = "apps"  # an app's own settings and keys


class ApiKeyOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField()
    prefix = F.CharField(help_text="The key's first characters, to recognise it (never the whole key)")
    scopes = F.ListField(child=F.ChoiceField(choices=list(accounts.SCOPES)))
    state = F.ChoiceField(
        choices=["active", "expiring", "expired", "revoked"],
        help_text="active; expiring (works until expires_at, as a rotated key does); expired; revoked",
    )
    created_at = F.DateTimeField()
    expires_at = F.DateTimeField(allow_null=True)
    revoked_at = F.DateTimeField(allow_null=True)
    last_used_at = F.DateTimeField(
        allow_null=True, help_text="The last request with it, to the minute (null: never used)"
    )
    replaced_by = F.IntegerField(allow_null=True, help_text="The key a rotation replaced it with")


class ApiKeySecretOut(F.Serializer):
    key = ApiKeyOut()
    secret = F.CharField(help_text="The key itself: shown only in this answer, stored hashed")


class RotatedKeyOut(ApiKeySecretOut):
    previous = ApiKeyOut(help_text="The rotated key: it works until its expires_at")


class ApiKeyPageOut(F.Serializer):
    next = F.URLField(allow_null=True)
    previous = F.URLField(allow_null=True)
    results = ApiKeyOut(many=True)


class KeysView(APIView):
    """GET /app/keys (app key): the app's keys, newest first. POST: a new key."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listApiKeys",
        tag=TAG,
        ok=ApiKeyPageOut,
        errors=(Code.app_key_required, Code.invalid_cursor),
        params=[CURSOR],
    )
    def get(self, request: Request) -> Response:
        app = principal_of(request).require_app(DENIED)
        return paged(request, accounts.keys_of(app), KEY_PAGES, key_body)

    @documented(ops.CREATE_API_KEY, tag=TAG, ok=ApiKeySecretOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_API_KEY, 201)


class KeyRevokeView(APIView):
    """POST /app/keys/{id}/revoke (app key): the key stops working at once."""

    permission_classes = [IsPrincipal]

    @documented(ops.REVOKE_API_KEY, tag=TAG, ok=ApiKeyOut)
    def post(self, request: Request, key_id: int) -> HttpResponseBase:
        return perform(request, ops.REVOKE_API_KEY, key_id=key_id)


class KeyRotateView(APIView):
    """POST /app/keys/{id}/rotate (app key): a new key; the old one works for the overlap."""

    permission_classes = [IsPrincipal]

    @documented(ops.ROTATE_API_KEY, tag=TAG, ok=RotatedKeyOut, status=201)
    def post(self, request: Request, key_id: int) -> HttpResponseBase:
        return perform(request, ops.ROTATE_API_KEY, 201, key_id=key_id)


class TokenRefreshView(APIView):
    """POST /tokens/refresh (player token): a new token for the one presented."""

    permission_classes = [IsPrincipal]

    @documented(ops.REFRESH_TOKEN, tag="players", ok=schemas.PlayerTokenOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.REFRESH_TOKEN, 201)
