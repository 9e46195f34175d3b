"""The push operations (docs/push.md): a player's devices, registered and removed by the player or by
their app, and an app's provider credentials (FCM, APNs).

Each is declared once: REST serves it (games/api/push.py) and GraphQL too (games/graphql/push.py). A
player acts on their own devices with their token; an app acts on its players' devices with its key
(another app's player is not_found, as for its tokens). Credentials are the app key's alone. No
Idempotency-Key: registering the same device again is the same device (its answer says whether it was
new), and setting a credential again replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import translation
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from games import accounts, messages
from games.accounts import Scope
from games.errors import Code
from games.models import Player
from games.operations.base import Access, Call, Operation
from games.operations.fields import (
    EmptyIn,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
)
from games.push import credentials, devices

DEVICES_DENIED = "an app registers its players' devices at /players/{id}/devices with its key"
MY_DEVICES_DENIED = "your devices are a player's: use a player's token (an app key: /players/{id}/devices)"
CREDENTIALS_DENIED = "push credentials are managed with an app key"
DEVICE_CODES = (Code.invalid_device, Code.device_kind_not_allowed, Code.too_many_devices)


# -- devices --------------------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "object",
        "description": "webpush only: the subscription's keys, as PushSubscription.toJSON() gives them "
        "(else 400 invalid_device)",
        "properties": {
            "p256dh": {"type": "string", "description": "Base64url of its P-256 public key (65 bytes)"},
            "auth": {"type": "string", "description": "Base64url of its authentication secret (16 bytes)"},
        },
        "required": ["p256dh", "auth"],
        "additionalProperties": False,
    }
)
class WebPushKeysField(serializers.DictField):
    """A Web Push subscription's keys: checked by games.push.devices (invalid_device, naming the key)."""


@extend_schema_serializer(component_name="RegisterDevice")
class DeviceIn(StrictSerializer):
    """A phone or browser to push to."""

    kind = StrictChoiceField(
        choices=list(devices.KINDS),
        help_text="fcm (an FCM registration token), apns (an APNs device token) or webpush (a Web Push "
        "subscription); a guest registers only webpush",
    )
    token = StrictCharField(
        max_length=devices.TOKEN_MAX,
        help_text="fcm: the registration token; apns: the device token in hex; webpush: the "
        f"subscription's endpoint, an https URL (at most {devices.TOKEN_MAX:,} characters)",
    )
    keys = WebPushKeysField(required=False)
    topic = StrictCharField(
        max_length=devices.TOPIC_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="apns only: the app's bundle id (left out: the topic of the app's APNs key)",
    )
    # The field `label` (DRF's stubs type Field.label, the field's own caption, as a string).
    label = StrictCharField(  # type: ignore[assignment]
        max_length=devices.LABEL_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text=f"Your own name for the device (at most {devices.LABEL_MAX} characters)",
    )
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text=f"No pushes after this time, then the device is removed: ISO 8601, in the future and at "
        f"most {devices.EXPIRY_MAX.days} days ahead (left out or null: never)",
    )


@dataclass(frozen=True)
class Registered:
    """A registration's answer: the device, and whether it is new (REST: 201, else 200)."""

    device: dict[str, Any]
    created: bool


def _language() -> str:
    """The request's language (the player's choice, else Accept-Language): their pushes' language
    when the player chooses none."""
    language = (translation.get_language() or "").split("-")[0]
    return language if language in messages.languages() else ""


def _register(player: Player, c: Call) -> Registered:
    device, created = devices.register(
        player,
        kind=c["kind"],
        token=c["token"],
        keys=c.get("keys"),
        topic=c["topic"],
        label=c["label"],
        expires_at=c["expires_at"],
        language=_language(),
    )
    return Registered(devices.device_body(device), created)


def their_player(c: Call) -> Player:
    """The app's player the call names (another app's: not_found)."""
    return accounts.player_of(c.app, c["player_id"])


REGISTER_DEVICE = Operation(
    name="registerDevice",
    description="Player token: register a phone or browser of yours to push to. The same token "
    "registered again is the same device (moved to you if another player had it; its keys, topic, "
    "label and expiry become these): REST answers 201 for a new device, 200 otherwise. The answer "
    "shows the token's last characters only.",
    input=DeviceIn,
    access=Access.PLAYER,
    denied=MY_DEVICES_DENIED,
    run=lambda c: _register(c.principal.require_player(), c),
    errors=DEVICE_CODES,
)

REGISTER_PLAYER_DEVICE = Operation(
    name="registerPlayerDevice",
    scope=Scope.push_write,
    description="App key: register a phone or browser of one of your players, as registerDevice "
    "does for a player (another app's player: not_found).",
    input=DeviceIn,
    path=("player_id",),
    access=Access.APP,
    denied=DEVICES_DENIED,
    run=lambda c: _register(their_player(c), c),
    errors=(Code.not_found, *DEVICE_CODES),
)

DELETE_DEVICE = Operation(
    name="deleteDevice",
    description="Player token: remove one of your devices; nothing is pushed to it any more "
    "(another player's device: not_found).",
    input=EmptyIn,
    path=("device_id",),
    access=Access.PLAYER,
    denied=MY_DEVICES_DENIED,
    run=lambda c: devices.remove(c.principal.require_player(), c["device_id"]),
    errors=(Code.not_found,),
)

DELETE_PLAYER_DEVICE = Operation(
    name="deletePlayerDevice",
    scope=Scope.push_write,
    description="App key: remove a device of one of your players (another app's player, or a device "
    "that is not theirs: not_found).",
    input=EmptyIn,
    path=("player_id", "device_id"),
    access=Access.APP,
    denied=DEVICES_DENIED,
    run=lambda c: devices.remove(their_player(c), c["device_id"]),
    errors=(Code.not_found,),
)


# -- provider credentials -------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "object",
        "description": "The service account's JSON key file as Google's console downloads it (its other "
        "fields are ignored); else 400 invalid_push_credential naming the field",
        "properties": {
            "type": {"type": "string", "enum": ["service_account"]},
            "project_id": {"type": "string"},
            "client_email": {"type": "string"},
            "private_key_id": {"type": "string"},
            "private_key": {"type": "string", "description": "An RSA key (2048 bits or more), PEM"},
            "token_uri": {"type": "string", "description": "An https URL"},
        },
        "required": ["type", "project_id", "client_email", "private_key_id", "private_key", "token_uri"],
        "additionalProperties": True,
    }
)
class ServiceAccountField(serializers.DictField):
    """An FCM service account: checked by games.push.credentials (invalid_push_credential)."""


@extend_schema_serializer(component_name="SetFcmCredential")
class FcmIn(StrictSerializer):
    """An app's FCM service account (FCM HTTP v1)."""

    service_account = ServiceAccountField()


@extend_schema_serializer(component_name="SetApnsCredential")
class ApnsIn(StrictSerializer):
    """An app's APNs token key (a .p8 file) and the bundle id it pushes to."""

    key_id = StrictCharField(max_length=64, help_text="The key's 10-character id")
    team_id = StrictCharField(max_length=64, help_text="Your 10-character Apple team id")
    topic = StrictCharField(max_length=devices.TOPIC_MAX, help_text="The app's bundle id (apns-topic)")
    sandbox = StrictBooleanField(
        required=False, default=False, help_text="true: APNs's development server; false: production"
    )
    private_key = StrictCharField(
        max_length=credentials.PRIVATE_KEY_MAX,
        trim_whitespace=False,
        help_text="The .p8 file's text: an EC P-256 key, PEM (never shown again)",
    )


def _settings(c: Call) -> dict[str, Any]:
    return credentials.settings_body(c.app)


def _set_fcm(c: Call) -> dict[str, Any]:
    credentials.set_fcm(c.app, c["service_account"])
    return _settings(c)


def _set_apns(c: Call) -> dict[str, Any]:
    credentials.set_apns(
        c.app,
        key_id=c["key_id"],
        team_id=c["team_id"],
        topic=c["topic"],
        sandbox=c["sandbox"],
        private_key=c["private_key"],
    )
    return _settings(c)


SET_FCM_CREDENTIAL = Operation(
    name="setFcmCredential",
    scope=Scope.push_write,
    description="App key: set (or replace) the FCM service account your players' fcm devices are "
    "pushed with. Answers your push settings; the private key is stored encrypted and never shown.",
    input=FcmIn,
    access=Access.APP,
    denied=CREDENTIALS_DENIED,
    run=_set_fcm,
    errors=(Code.invalid_push_credential,),
)

SET_APNS_CREDENTIAL = Operation(
    name="setApnsCredential",
    scope=Scope.push_write,
    description="App key: set (or replace) the APNs token key your players' apns devices are pushed "
    "with. Answers your push settings; the private key is stored encrypted and never shown.",
    input=ApnsIn,
    access=Access.APP,
    denied=CREDENTIALS_DENIED,
    run=_set_apns,
    errors=(Code.invalid_push_credential,),
)

DELETE_FCM_CREDENTIAL = Operation(
    name="deleteFcmCredential",
    scope=Scope.push_write,
    description="App key: remove your FCM service account (fcm devices get no pushes until one is set "
    "again; none set: not_found).",
    input=EmptyIn,
    access=Access.APP,
    denied=CREDENTIALS_DENIED,
    run=lambda c: credentials.delete(c.app, "fcm"),
    errors=(Code.not_found,),
)

DELETE_APNS_CREDENTIAL = Operation(
    name="deleteApnsCredential",
    scope=Scope.push_write,
    description="App key: remove your APNs key (apns devices get no pushes until one is set again; none "
    "set: not_found).",
    input=EmptyIn,
    access=Access.APP,
    denied=CREDENTIALS_DENIED,
    run=lambda c: credentials.delete(c.app, "apns"),
    errors=(Code.not_found,),
)
