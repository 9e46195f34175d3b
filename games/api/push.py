"""REST endpoints of push notifications (docs/push.md): a player's devices (their own with their token,
or one of an app's players' with the app key), an app's provider credentials, and the VAPID public key
a browser subscribes with. The devices and keys themselves are games/push's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http.response import HttpResponseBase
from rest_framework import serializers as F
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import accounts
from games import operations as ops
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, perform, principal_of
from games.errors import Code
from games.operations.push import CREDENTIALS_DENIED, DEVICES_DENIED, MY_DEVICES_DENIED, Registered
from games.push import credentials, devices

if TYPE_CHECKING:  # types only: the queries are in games.push
    from games.models import Player

TAG = "push"

# -- schemas --------------------------------------------------------------------------------


class DeviceOut(F.Serializer):
    id = F.IntegerField()
    kind = F.ChoiceField(choices=list(devices.KINDS))
    # The field `label` (DRF's stubs type Field.label, the field's own caption, as a string).
    label = F.CharField(help_text="Your name for it (empty: none)")  # type: ignore[assignment]
    token_hint = F.CharField(help_text=f"The token's last {devices.HINT} characters: never the whole token")
    topic = F.CharField(
        allow_null=True, help_text="apns: the bundle id it was registered with (null: the app's)"
    )
    created_at = F.DateTimeField()
    expires_at = F.DateTimeField(allow_null=True, help_text="No pushes after this (null: never)")
    last_pushed_at = F.DateTimeField(allow_null=True, help_text="When the last notification was sent to it")


class DeviceListOut(F.Serializer):
    next = F.URLField(allow_null=True, help_text="The next page (null on the last)")
    previous = F.URLField(allow_null=True, help_text="The page before (null on the first)")
    results = DeviceOut(
        many=True,
        help_text="Oldest first; expired devices are left out; at most PUSH_MAX_DEVICES (10) in all",
    )


class FcmOut(F.Serializer):
    project_id = F.CharField()
    client_email = F.CharField()
    private_key_id = F.CharField(help_text="Which key of the service account (never the key itself)")
    token_uri = F.CharField()
    updated_at = F.DateTimeField()


class ApnsOut(F.Serializer):
    key_id = F.CharField()
    team_id = F.CharField()
    topic = F.CharField(help_text="The bundle id pushes go to, unless a device names its own")
    sandbox = F.BooleanField(help_text="true: APNs's development server")
    updated_at = F.DateTimeField()


class VapidKeyOut(F.Serializer):
    public_key = F.CharField(
        help_text="The VAPID public key: base64url of an uncompressed P-256 point (65 bytes), no "
        "padding; a browser's PushManager.subscribe takes it as applicationServerKey"
    )


class PushSettingsOut(F.Serializer):
    fcm = FcmOut(allow_null=True, help_text="The FCM service account's public fields; null: none set")
    apns = ApnsOut(allow_null=True, help_text="The APNs key's public fields; null: none set")
    webpush = VapidKeyOut(help_text="The app's VAPID key, made on first need")


# -- views ----------------------------------------------------------------------------------


def _registered(request: Request, operation: ops.Operation, **path: Any) -> HttpResponseBase:
    """Register a device: 201 with it when it is new, 200 when it was registered before."""
    created = True

    def body(_principal: accounts.Principal, out: Registered) -> dict[str, Any]:
        nonlocal created
        created = out.created
        return out.device

    response = perform(request, operation, 201, then=body, **path)
    if not created:
        response.status_code = 200
    return response


def _devices(request: Request, player: Player) -> Response:
    return paged(request, devices.devices_of(player), devices.DEVICE_PAGES, devices.device_body)


class MyDevicesView(APIView):
    """GET /me/devices (player token): your devices. POST /me/devices: register one."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listMyDevices",
        tag=TAG,
        ok=DeviceListOut,
        errors=(Code.player_token_required, Code.invalid_cursor),
        params=[CURSOR],
    )
    def get(self, request: Request) -> Response:
        return _devices(request, principal_of(request).require_player(MY_DEVICES_DENIED))

    @documented(ops.REGISTER_DEVICE, tag=TAG, ok=DeviceOut, status=201, more={200: DeviceOut})
    def post(self, request: Request) -> HttpResponseBase:
        return _registered(request, ops.REGISTER_DEVICE)


class MyDeviceView(APIView):
    """DELETE /me/devices/{id} (player token): remove one of your devices."""

    permission_classes = [IsPrincipal]

    @documented(ops.DELETE_DEVICE, tag=TAG, ok=None, status=204, body=False)
    def delete(self, request: Request, device_id: int) -> HttpResponseBase:
        return perform(request, ops.DELETE_DEVICE, 204, body=False, device_id=device_id)


class PlayerDevicesView(APIView):
    """GET /players/{id}/devices (app key): one of your players' devices. POST: register one."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listPlayerDevices",
        tag=TAG,
        ok=DeviceListOut,
        errors=(Code.app_key_required, Code.not_found, Code.invalid_cursor),
        params=[CURSOR],
    )
    def get(self, request: Request, player_id: int) -> Response:
        app = principal_of(request).require_app(DEVICES_DENIED)
        return _devices(request, accounts.player_of(app, player_id))

    @documented(ops.REGISTER_PLAYER_DEVICE, tag=TAG, ok=DeviceOut, status=201, more={200: DeviceOut})
    def post(self, request: Request, player_id: int) -> HttpResponseBase:
        return _registered(request, ops.REGISTER_PLAYER_DEVICE, player_id=player_id)


class PlayerDeviceView(APIView):
    """DELETE /players/{id}/devices/{device_id} (app key): remove one of your players' devices."""

    permission_classes = [IsPrincipal]

    @documented(ops.DELETE_PLAYER_DEVICE, tag=TAG, ok=None, status=204, body=False)
    def delete(self, request: Request, player_id: int, device_id: int) -> HttpResponseBase:
        return perform(
            request, ops.DELETE_PLAYER_DEVICE, 204, body=False, player_id=player_id, device_id=device_id
        )


class PushSettingsView(APIView):
    """GET /app/push (app key): the app's push settings: FCM and APNs public fields, the VAPID key."""

    permission_classes = [IsPrincipal]

    @documented(op="getPushSettings", tag=TAG, ok=PushSettingsOut, errors=(Code.app_key_required,))
    def get(self, request: Request) -> Response:
        app = principal_of(request).require_app(CREDENTIALS_DENIED)
        return Response(credentials.settings_body(app))


class FcmCredentialView(APIView):
    """PUT /app/push/fcm (app key): set the FCM service account. DELETE: remove it."""

    permission_classes = [IsPrincipal]

    @documented(ops.SET_FCM_CREDENTIAL, tag=TAG, ok=PushSettingsOut)
    def put(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.SET_FCM_CREDENTIAL)

    @documented(ops.DELETE_FCM_CREDENTIAL, tag=TAG, ok=None, status=204, body=False)
    def delete(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.DELETE_FCM_CREDENTIAL, 204, body=False)


class ApnsCredentialView(APIView):
    """PUT /app/push/apns (app key): set the APNs token key. DELETE: remove it."""

    permission_classes = [IsPrincipal]

    @documented(ops.SET_APNS_CREDENTIAL, tag=TAG, ok=PushSettingsOut)
    def put(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.SET_APNS_CREDENTIAL)

    @documented(ops.DELETE_APNS_CREDENTIAL, tag=TAG, ok=None, status=204, body=False)
    def delete(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.DELETE_APNS_CREDENTIAL, 204, body=False)


class VapidKeyView(APIView):
    """GET /push/vapid-key (any caller, none needed): the VAPID public key a browser subscribes with:
    the caller's app's (an app key, or a token of one of its players), else the service's own
    (guests, and callers without credentials)."""

    permission_classes = [AllowAny]

    @documented(op="getVapidKey", tag=TAG, ok=VapidKeyOut, auth=False, errors=(Code.authentication_failed,))
    def get(self, request: Request) -> Response:
        principal = request.user if isinstance(request.user, accounts.Principal) else None
        scope = credentials.scope_of(principal.app if principal is not None else None)
        return Response({"public_key": credentials.vapid_public_key(scope)})
