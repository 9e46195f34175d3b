"""GraphQL for push notifications (docs/push.md): the `myDevices`, `playerDevices`, `pushSettings` and
`vapidKey` queries, `me { devices }`, and the registerDevice, deleteDevice, registerPlayerDevice,
deletePlayerDevice, setFcmCredential, setApnsCredential, deleteFcmCredential and deleteApnsCredential
mutations, which run the operations of games/operations/push.py as REST's /me/devices,
/players/{id}/devices and /app/push do. No answer ever holds a token (only its last characters) or a
private key."""

from __future__ import annotations

import json
from enum import Enum as PyEnum
from typing import TYPE_CHECKING, Any

import graphene

from games import accounts
from games import operations as ops
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql import pages
from games.graphql.base import OperationMutation, app_of, principal_of
from games.graphql.types import Error
from games.operations.push import CREDENTIALS_DENIED, DEVICES_DENIED, MY_DEVICES_DENIED, Registered
from games.push import credentials, devices

if TYPE_CHECKING:  # types only: the queries are in games.push
    from games.models import Player

# The device kinds, from their source (games.push.devices.KINDS); each value's name is its wire value.
DeviceKind = graphene.Enum.from_enum(
    PyEnum("DeviceKind", [(kind, kind) for kind in devices.KINDS]),
    description="fcm (an FCM registration token), apns (an APNs device token) or webpush (a Web Push "
    "subscription)",
)


class Device(graphene.ObjectType):
    """A phone or browser a player is pushed to: never its whole token."""

    id = graphene.Int(required=True)
    kind = graphene.Field(DeviceKind, required=True)
    label = graphene.String(required=True, description="The player's name for it (empty: none)")
    token_hint = graphene.String(
        required=True, description=f"The token's last {devices.HINT} characters: never the whole token"
    )
    topic = graphene.String(description="apns: the bundle id it was registered with (null: the app's)")
    created_at = graphene.String(required=True, description="ISO 8601")
    expires_at = graphene.String(description="ISO 8601: no pushes after this (null: never)")
    last_pushed_at = graphene.String(description="ISO 8601: when the last notification was sent to it")


class FcmSettings(graphene.ObjectType):
    """The public fields of an app's FCM service account (its private key is never shown)."""

    project_id = graphene.String(required=True)
    client_email = graphene.String(required=True)
    private_key_id = graphene.String(required=True, description="Which key of the account, not the key")
    token_uri = graphene.String(required=True)
    updated_at = graphene.String(required=True, description="ISO 8601")


class ApnsSettings(graphene.ObjectType):
    """The public fields of an app's APNs token key (its private key is never shown)."""

    key_id = graphene.String(required=True)
    team_id = graphene.String(required=True)
    topic = graphene.String(
        required=True, description="The bundle id pushes go to, unless a device names its own"
    )
    sandbox = graphene.Boolean(required=True, description="true: APNs's development server")
    updated_at = graphene.String(required=True, description="ISO 8601")


class VapidKey(graphene.ObjectType):
    public_key = graphene.String(
        required=True,
        description="Base64url of an uncompressed P-256 point, no padding: a browser's "
        "PushManager.subscribe takes it as applicationServerKey",
    )


class PushSettings(graphene.ObjectType):
    """An app's push settings: never a secret."""

    fcm = graphene.Field(FcmSettings, description="null: no FCM service account set")
    apns = graphene.Field(ApnsSettings, description="null: no APNs key set")
    webpush = graphene.Field(VapidKey, required=True, description="The app's VAPID key, made on first need")


def _devices(player: Player) -> list[dict[str, Any]]:
    return [devices.device_body(d) for d in devices.devices_of(player)]


class ViewerDevices(graphene.ObjectType):
    """The push fields of `me` (a base of games.graphql.schema.Viewer)."""

    devices = graphene.List(
        graphene.NonNull(Device),
        description="Your devices, oldest first (expired ones left out); null for an app key "
        "(playerDevices lists a player's)",
    )

    def resolve_devices(root: Any, info: Any) -> list[dict[str, Any]] | None:
        player = principal_of(info).player
        return None if player is None else _devices(player)


class DeviceConnection(graphene.relay.Connection):
    class Meta:
        node = Device


class PushQueries(graphene.ObjectType):
    """The Query fields of push notifications (a base of games.graphql.schema.Query)."""

    my_devices = graphene.List(
        graphene.NonNull(Device),
        required=True,
        description="Player token: your devices, oldest first (expired ones left out): all of them, at "
        "most PUSH_MAX_DEVICES (myDevicePage pages them)",
    )
    my_device_page = graphene.Field(
        DeviceConnection,
        required=True,
        **pages.args(),
        description="Player token: your devices, oldest first (expired ones left out; errors: "
        "invalid_cursor)",
    )
    player_devices = graphene.List(
        graphene.NonNull(Device),
        player_id=graphene.Int(required=True),
        description="App key: one of your players' devices; null when the player is not yours",
    )
    player_device_page = graphene.Field(
        DeviceConnection,
        player_id=graphene.Int(required=True),
        **pages.args(),
        description="App key: one of your players' devices, oldest first; null when the player is not yours",
    )
    push_settings = graphene.Field(
        PushSettings,
        required=True,
        description="App key: your FCM and APNs keys' public fields, your VAPID key",
    )
    vapid_key = graphene.Field(
        VapidKey,
        required=True,
        description="Anyone (no credentials needed): the VAPID public key to subscribe a browser with: "
        "your app's (an app key, or a token of its player), else the service's own (guests)",
    )

    def resolve_my_devices(root: Any, info: Any) -> list[dict[str, Any]]:
        return _devices(principal_of(info).require_player(MY_DEVICES_DENIED))

    def resolve_my_device_page(root: Any, info: Any, first: int | None, after: str | None = None) -> Any:
        rows = devices.devices_of(principal_of(info).require_player(MY_DEVICES_DENIED))
        body = devices.device_body
        return pages.connection(DeviceConnection, rows, devices.DEVICE_PAGES, body, first, after)

    def resolve_player_device_page(
        root: Any, info: Any, player_id: int, first: int | None, after: str | None = None
    ) -> Any:
        try:
            player = accounts.player_of(app_of(info, DEVICES_DENIED), player_id)
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise
        rows = devices.devices_of(player)
        body = devices.device_body
        return pages.connection(DeviceConnection, rows, devices.DEVICE_PAGES, body, first, after)

    def resolve_player_devices(root: Any, info: Any, player_id: int) -> list[dict[str, Any]] | None:
        try:
            player = accounts.player_of(app_of(info, DEVICES_DENIED), player_id)
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise
        return _devices(player)

    def resolve_push_settings(root: Any, info: Any) -> dict[str, Any]:
        return credentials.settings_body(app_of(info, CREDENTIALS_DENIED))

    def resolve_vapid_key(root: Any, info: Any) -> dict[str, str]:
        principal: Principal | None = getattr(info.context, "principal", None)
        scope = credentials.scope_of(principal.app if principal is not None else None)
        return {"public_key": credentials.vapid_public_key(scope)}


# -- mutations ------------------------------------------------------------------------------


class WebPushKeysInput(graphene.InputObjectType):
    """A Web Push subscription's keys, as PushSubscription.toJSON() gives them."""

    p256dh = graphene.String(required=True, description="Base64url of its P-256 public key (65 bytes)")
    auth = graphene.String(required=True, description="Base64url of its authentication secret (16 bytes)")


class DevicePayload(graphene.ObjectType):
    device = graphene.Field(Device, description="The device as registered (null on error)")
    created = graphene.Boolean(
        required=True, description="true: a new device; false: registered before (now yours, updated)"
    )
    errors = graphene.List(graphene.NonNull(Error), required=True)


# GraphQL's shape of a device's input: an enum for the kind, typed keys, a string for the time.
_DEVICE = {
    "kind": DeviceKind(
        required=True,
        description="fcm, apns or webpush (a guest registers only webpush; else device_kind_not_allowed)",
    ),
    "keys": WebPushKeysInput(description="webpush only: the subscription's keys"),
    "expires_at": graphene.String(
        description=f"ISO 8601: no pushes after this time, then the device is removed; in the future and "
        f"at most {devices.EXPIRY_MAX.days} days ahead (null: never)"
    ),
}


class _Register(OperationMutation):
    class Meta:
        abstract = True

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        given = super().input_of(arguments)
        given["kind"] = getattr(given["kind"], "value", given["kind"])  # the enum's wire value
        if given.get("keys") is not None:
            given["keys"] = dict(given["keys"])
        return given

    @classmethod
    def refused(cls, error: Error) -> DevicePayload:
        return DevicePayload(device=None, created=False, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Registered) -> DevicePayload:
        return DevicePayload(device=out.device, created=out.created, errors=[])


class RegisterDevice(_Register):
    class Meta:
        operation = ops.REGISTER_DEVICE

    shaped = _DEVICE
    Output = DevicePayload


class RegisterPlayerDevice(_Register):
    class Meta:
        operation = ops.REGISTER_PLAYER_DEVICE

    shaped = _DEVICE
    Output = DevicePayload


class DeletedPayload(graphene.ObjectType):
    deleted = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class _Delete(OperationMutation):
    class Meta:
        abstract = True

    @classmethod
    def refused(cls, error: Error) -> DeletedPayload:
        return DeletedPayload(deleted=False, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> DeletedPayload:
        return DeletedPayload(deleted=True, errors=[])


_DEVICE_ID = {"device_id": graphene.Int(required=True, name="id", description="The device's id")}


class DeleteDevice(_Delete):
    class Meta:
        operation = ops.DELETE_DEVICE

    shaped = _DEVICE_ID
    Output = DeletedPayload


class DeletePlayerDevice(_Delete):
    class Meta:
        operation = ops.DELETE_PLAYER_DEVICE

    shaped = _DEVICE_ID
    Output = DeletedPayload


class DeleteFcmCredential(_Delete):
    class Meta:
        operation = ops.DELETE_FCM_CREDENTIAL

    Output = DeletedPayload


class DeleteApnsCredential(_Delete):
    class Meta:
        operation = ops.DELETE_APNS_CREDENTIAL

    Output = DeletedPayload


class PushSettingsPayload(graphene.ObjectType):
    settings = graphene.Field(PushSettings, description="Your push settings after the change (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class _SetCredential(OperationMutation):
    class Meta:
        abstract = True

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> PushSettingsPayload:
        return PushSettingsPayload(settings=out, errors=[])


class SetFcmCredential(_SetCredential):
    class Meta:
        operation = ops.SET_FCM_CREDENTIAL

    shaped = {
        "service_account": graphene.String(
            required=True,
            description="The service account's JSON key file, as text (as Google's console downloads "
            "it); else invalid_push_credential naming the field",
        )
    }
    Output = PushSettingsPayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        given = super().input_of(arguments)
        try:
            given["service_account"] = json.loads(given["service_account"])
        except ValueError:
            raise ServiceError(
                "invalid_push_credential",
                "serviceAccount must be the service account's JSON key file, as text",
                kind="malformed",
                field="service_account",
                reason="malformed",
            ) from None
        return given


class SetApnsCredential(_SetCredential):
    class Meta:
        operation = ops.SET_APNS_CREDENTIAL

    Output = PushSettingsPayload


class PushMutations(graphene.ObjectType):
    """The Mutation fields of push notifications (a base of games.graphql.schema.Mutation)."""

    register_device = RegisterDevice.Field()
    delete_device = DeleteDevice.Field()
    register_player_device = RegisterPlayerDevice.Field()
    delete_player_device = DeletePlayerDevice.Field()
    set_fcm_credential = SetFcmCredential.Field()
    set_apns_credential = SetApnsCredential.Field()
    delete_fcm_credential = DeleteFcmCredential.Field()
    delete_apns_credential = DeleteApnsCredential.Field()
