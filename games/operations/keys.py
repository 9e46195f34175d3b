"""An app's API keys: create (the secret shown once), revoke, rotate with an overlap (docs/keys.md).

Each is declared once: REST serves it (games/api/keys.py) and GraphQL too (games/graphql/keys.py).
A key may only grant scopes it holds itself, so keys:write never leads to more than the caller has.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from games import accounts, paging
from games.accounts import Scope
from games.errors import Code
from games.models import ApiKey
from games.operations.base import Access, Call, Operation
from games.operations.fields import EmptyIn, StrictCharField, StrictIntegerField, StrictSerializer

DENIED = "only an app key manages the app's keys"
KEY_PAGES = paging.Keyset("key", ("-id",), (int,))  # newest first (games/paging.py)
SCOPES_TEXT = ", ".join(accounts.SCOPES)


def key_state(key: ApiKey, now: dt.datetime | None = None) -> str:
    """active, expiring (works until expires_at), expired or revoked."""
    now = now or timezone.now()
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None:
        return "expired" if key.expires_at <= now else "expiring"
    return "active"


def key_body(key: ApiKey) -> dict[str, Any]:
    """A key as the app reads it: never its secret, nor its hash."""
    return {
        "id": key.pk,
        "name": key.name,
        "prefix": key.prefix,
        "scopes": list(key.scopes),
        "state": key_state(key),
        "created_at": key.created_at,
        "expires_at": key.expires_at,
        "revoked_at": key.revoked_at,
        "last_used_at": key.last_used_at,
        "replaced_by": key.replaced_by_id,
    }


def scopes_field(**kw: Any) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=32),
        min_length=1,
        max_length=len(accounts.SCOPES),
        help_text=f"What the key may do: {SCOPES_TEXT} (admin: every scope); at most the scopes of the "
        "key that asks (else missing_scope)",
        **kw,
    )


@extend_schema_serializer(component_name="CreateApiKey")
class CreateKeyIn(StrictSerializer):
    """A new key: its label, its scopes and when it stops working."""

    name = StrictCharField(
        max_length=accounts.KEY_NAME_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text=f"Your own label for the key (at most {accounts.KEY_NAME_MAX} characters)",
    )
    scopes = scopes_field()
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="ISO 8601, in the future: refused from then on (401 key_expired); left out or null: never",
    )


def _create(c: Call) -> dict[str, Any]:
    key, secret = accounts.key_create(
        c.app, name=c["name"], scopes=c["scopes"], expires_at=c["expires_at"], granted_by=c.principal
    )
    return {"key": key_body(key), "secret": secret}


CREATE_API_KEY = Operation(
    name="createApiKey",
    scope=Scope.keys_write,
    description="App key: a new API key of your app with the scopes given (at most those of the key "
    "that asks). Its secret is in this answer only: store it now.",
    input=CreateKeyIn,
    access=Access.APP,
    denied=DENIED,
    run=_create,
    errors=(Code.too_many_keys,),
)


def _revoke(c: Call) -> dict[str, Any]:
    return key_body(accounts.key_revoke(c.app, c["key_id"]))


REVOKE_API_KEY = Operation(
    name="revokeApiKey",
    scope=Scope.keys_write,
    description="App key: revoke one of your app's keys at once (requests with it get 401 key_revoked; "
    "revoking it again changes nothing). Answers the key.",
    input=EmptyIn,
    path=("key_id",),
    access=Access.APP,
    denied=DENIED,
    run=_revoke,
    errors=(Code.not_found,),
)


@extend_schema_serializer(component_name="RotateApiKey")
class RotateKeyIn(StrictSerializer):
    """How long the old key keeps working."""

    overlap_seconds = StrictIntegerField(
        required=False,
        default=accounts.ROTATION_OVERLAP,
        min_value=0,
        max_value=accounts.ROTATION_OVERLAP_MAX,
        help_text=f"Seconds the old key keeps working (0 to {accounts.ROTATION_OVERLAP_MAX}, 30 days; "
        f"default {accounts.ROTATION_OVERLAP}, a day), then 401 key_expired",
    )


def _rotate(c: Call) -> dict[str, Any]:
    new, secret, old = accounts.key_rotate(
        c.app, c["key_id"], overlap=c["overlap_seconds"], granted_by=c.principal
    )
    return {"key": key_body(new), "secret": secret, "previous": key_body(old)}


ROTATE_API_KEY = Operation(
    name="rotateApiKey",
    scope=Scope.keys_write,
    description="App key: a new key with the same name and scopes as a live one, which keeps working "
    "for the overlap given and then expires, so your servers switch keys without an outage. The new "
    "secret is in this answer only.",
    input=RotateKeyIn,
    path=("key_id",),
    access=Access.APP,
    denied=DENIED,
    run=_rotate,
    errors=(Code.not_found, Code.key_not_live, Code.too_many_keys),
)
