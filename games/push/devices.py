"""The phones and browsers a player is pushed to: registering, listing, removing and expiring them.

A device is one push target: an FCM registration token, an APNs device token (with the app's bundle
topic) or a Web Push subscription (its endpoint URL and keys). It belongs to one player of one scope
(the player's app, or 0 for guests), and (scope, kind, token) names it: registering the same target
again, by whoever holds it now, moves it to that player, so a shared phone or browser is pushed to
the one who last signed in on it. Every check refuses with `invalid_device` (naming the `field` and
a `reason`) before anything is stored; the answer never repeats a token (it is a bearer secret for
the provider: whoever holds it can push to the device), only its last characters.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from games import paging
from games.errors import ServiceError
from games.models import Player, PushDevice, PushMessage
from games.push import recording
from games.webhooks import addresses

KINDS: tuple[str, ...] = tuple(PushDevice.Kind.values)  # fcm, apns, webpush
APP_KINDS = ("fcm", "apns")  # need the app's own provider credentials: never a guest's
TOKEN_MAX = 1024  # characters of a token or endpoint (the column's size)
FCM_TOKEN_MIN = 16  # real registration tokens are over 100 characters
APNS_TOKEN_HEX = (64, 200)  # hex digits of an APNs device token (32 bytes today, up to 100)
TOPIC_MAX = 255  # characters of an APNs topic (a bundle id)
LABEL_MAX = 64  # characters of the player's name for a device
EXPIRY_MAX = dt.timedelta(days=365)  # the furthest `expires_at` a registration may ask for
HINT = 6  # characters of the token an answer shows
P256DH_BYTES = 65  # an uncompressed P-256 point: 0x04, x, y
AUTH_BYTES = 16  # the subscription's authentication secret

_FCM_TOKEN = re.compile(rf"[A-Za-z0-9_:.\-]{{{FCM_TOKEN_MIN},{TOKEN_MAX}}}")
_APNS_TOKEN = re.compile(rf"(?:[0-9a-fA-F]{{2}}){{{APNS_TOKEN_HEX[0] // 2},{APNS_TOKEN_HEX[1] // 2}}}")
_TOPIC = re.compile(rf"[A-Za-z0-9][A-Za-z0-9.\-]{{0,{TOPIC_MAX - 1}}}")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


def _bad(field: str, reason: str, message: str) -> ServiceError:
    return ServiceError("invalid_device", message, kind="malformed", field=field, reason=reason)


def _iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


# -- the checks -------------------------------------------------------------------------------


def check_token(kind: str, token: object) -> str:
    """The token of a device of `kind` as it is stored (an APNs token in lower case), else
    `invalid_device` with field `token`."""
    if not isinstance(token, str) or not token or len(token) > TOKEN_MAX:
        raise _bad("token", "length", f"token must be 1 to {TOKEN_MAX} characters")
    if kind == "fcm":
        if not _FCM_TOKEN.fullmatch(token):
            raise _bad(
                "token",
                "format",
                f"an FCM registration token is {FCM_TOKEN_MIN} or more letters, digits and _ : . -",
            )
        return token
    if kind == "apns":
        if not _APNS_TOKEN.fullmatch(token):
            low, high = APNS_TOKEN_HEX
            raise _bad(
                "token", "format", f"an APNs device token is {low} to {high} hex digits (an even number)"
            )
        return token.lower()
    return check_endpoint(token)


def check_endpoint(url: str) -> str:
    """A Web Push subscription's endpoint: an absolute https URL with a host, no user name or
    password and no fragment (http, and an address that is not public, only with
    WEBHOOK_ALLOW_PRIVATE_HOSTS, as for webhooks: a local push service in development)."""
    if any(c.isspace() or not c.isprintable() for c in url):
        raise _bad("token", "malformed", "the endpoint must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise _bad("token", "malformed", "the endpoint is not a URL") from None
    private_allowed = bool(settings.WEBHOOK_ALLOW_PRIVATE_HOSTS)
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and private_allowed):
        raise _bad("token", "scheme", "a Web Push endpoint is an https URL")
    if not parts.hostname:
        raise _bad("token", "host", "the endpoint must name a host")
    if parts.username is not None or parts.password is not None:
        raise _bad("token", "credentials", "the endpoint must not carry a user name or password")
    if parts.fragment:
        raise _bad("token", "malformed", "the endpoint must not have a #fragment")
    if not private_allowed:
        try:
            address = ipaddress.ip_address(parts.hostname)
        except ValueError:
            address = None  # a name: the sender checks what it resolves to
        if address is not None and addresses.refusal(address):  # an IPv6 form embedding one too
            raise _bad("token", "private", "the endpoint must reach a public address")
    return url


def _base64url(value: object, field: str, size: int) -> str:
    """A base64url value (padding optional) of exactly `size` bytes, stored without padding."""
    if not isinstance(value, str) or not _BASE64URL.fullmatch(value):
        raise _bad(field, "malformed", f"{field} must be base64url text")
    bare = value.rstrip("=")
    try:
        raw = base64.urlsafe_b64decode(bare + "=" * (-len(bare) % 4))
    except (binascii.Error, ValueError):
        raise _bad(field, "malformed", f"{field} is not valid base64url") from None
    if len(raw) != size:
        raise _bad(field, "length", f"{field} must decode to {size} bytes, not {len(raw)}")
    return bare


def check_keys(keys: object) -> dict[str, str]:
    """A Web Push subscription's keys: {p256dh: its P-256 public key (a point on the curve), auth:
    its 16-byte secret}, both base64url; else `invalid_device` with field `keys.p256dh` or `keys.auth`."""
    if not isinstance(keys, Mapping) or set(keys) != {"p256dh", "auth"}:
        raise _bad("keys", "malformed", "keys is the subscription's {p256dh, auth}, both base64url")
    p256dh = _base64url(keys["p256dh"], "keys.p256dh", P256DH_BYTES)
    raw = base64.urlsafe_b64decode(p256dh + "=" * (-len(p256dh) % 4))
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    except ValueError:
        raise _bad("keys.p256dh", "curve", "keys.p256dh is not a point on the P-256 curve") from None
    return {"p256dh": p256dh, "auth": _base64url(keys["auth"], "keys.auth", AUTH_BYTES)}


def check_topic(topic: object) -> str:
    """An APNs topic: the app's bundle id (letters, digits, dots and hyphens), or "" for the app's."""
    if topic is None or topic == "":
        return ""
    if not isinstance(topic, str) or not _TOPIC.fullmatch(topic):
        raise _bad("topic", "format", f"topic is a bundle id: up to {TOPIC_MAX} letters, digits, dots and -")
    return topic


def check_expiry(expires_at: dt.datetime | None, now: dt.datetime) -> dt.datetime | None:
    """A future time at most EXPIRY_MAX ahead, or None (never)."""
    if expires_at is None:
        return None
    if expires_at <= now:
        raise _bad("expires_at", "past", "expires_at must be in the future")
    if expires_at > now + EXPIRY_MAX:
        raise _bad("expires_at", "too_far", f"expires_at must be at most {EXPIRY_MAX.days} days ahead")
    return expires_at


# -- registering, listing, removing -------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A device's target as checked: what is stored."""

    kind: str
    token: str
    keys: dict[str, str]
    topic: str


def check_target(player: Player, kind: str, token: object, keys: object, topic: object) -> Target:
    """Every check of a registration's target, before anything is stored. A guest has no app, so
    no FCM or APNs credentials to push with: only Web Push (`device_kind_not_allowed`)."""
    if kind not in KINDS:
        raise _bad("kind", "kind", f"kind is one of {', '.join(KINDS)}")
    if player.app_id is None and kind in APP_KINDS:
        raise ServiceError(
            "device_kind_not_allowed",
            f"a guest can register only webpush devices: {kind} needs an app's own credentials",
            kind="rules",
        )
    checked = check_token(kind, token)
    if kind != "apns" and topic:
        raise _bad("topic", "kind", f"topic is an APNs device's: leave it out for {kind}")
    if kind == "webpush":
        return Target(kind, checked, check_keys(keys), "")
    if keys:
        raise _bad("keys", "kind", "keys are a Web Push subscription's: leave them out for fcm and apns")
    return Target(kind, checked, {}, check_topic(topic))


def check_label(label: object) -> str:
    """The player's name for a device: up to LABEL_MAX characters, without NUL or lone surrogates
    (which PostgreSQL cannot store)."""
    if label is None:
        return ""
    if not isinstance(label, str) or len(label) > LABEL_MAX:
        raise _bad("label", "length", f"label must be at most {LABEL_MAX} characters")
    if "\x00" in label or any("\ud800" <= c <= "\udfff" for c in label):
        raise _bad("label", "malformed", "label must not contain NUL or lone surrogates")
    return label


DEVICE_PAGES = paging.Keyset("device", ("id",), (int,))  # oldest first (games/paging.py)


def devices_of(player: Player, now: dt.datetime | None = None) -> QuerySet[PushDevice]:
    """The player's devices that have not expired, oldest first."""
    now = now or timezone.now()
    return (
        PushDevice.objects.filter(player=player)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .order_by("pk")
    )


def register(
    player: Player,
    *,
    kind: str,
    token: object,
    keys: object = None,
    topic: object = "",
    label: str = "",
    expires_at: dt.datetime | None = None,
    language: str = "",
    now: dt.datetime | None = None,
) -> tuple[PushDevice, bool]:
    """Register a device of `player`: (the device, True when it is new). The same (scope, kind,
    token) registered again is the same device, moved to this player if another held it; its keys,
    topic, label and expiry become this registration's (left out: none). A player has at most
    PUSH_MAX_DEVICES live devices (`too_many_devices`, naming the `limit`): remove one first."""
    now = now or timezone.now()
    target = check_target(player, kind, token, keys, topic)
    label = check_label(label)
    expiry = check_expiry(expires_at, now)
    scope = player.app_id or 0
    limit = int(settings.PUSH_MAX_DEVICES)
    fields = {
        "keys": target.keys,
        "topic": target.topic,
        "label": label,
        "expires_at": expiry,
        "language": language,
    }
    with transaction.atomic():
        # The player's row serialises their registrations, so two at once cannot both pass the limit.
        Player.objects.select_for_update().filter(pk=player.pk).first()
        PushDevice.objects.filter(player=player, expires_at__lte=now).delete()
        same = {"scope": scope, "kind": target.kind, "token": target.token}
        device = PushDevice.objects.select_for_update().filter(**same).first()
        if device is None or device.player_id != player.pk:
            held = PushDevice.objects.filter(player=player).count()
            if held >= limit:
                raise ServiceError(
                    "too_many_devices",
                    f"a player has at most {limit} devices: remove one first",
                    kind="conflict",
                    limit=limit,
                )
        created = False
        if device is None:
            try:
                with transaction.atomic():  # a savepoint: a racing registration of the same target wins
                    device = PushDevice.objects.create(player=player, **same, **fields)
                created = True
            except IntegrityError:
                device = PushDevice.objects.select_for_update().get(**same)
        if not created:
            previous = device.player_id
            if previous != player.pk:
                _moved(device, player, now)
                transaction.on_commit(lambda: recording.forget(previous))
            for name, value in fields.items():
                setattr(device, name, value)
            device.save()
        transaction.on_commit(lambda: recording.forget(player.pk))
    return device, created


def _moved(device: PushDevice, player: Player, now: dt.datetime) -> None:
    """The device changes hands: what was waiting for its previous player is never sent to the new
    one, and nothing of the previous registration shows (it is new to this player)."""
    device.messages.filter(status=PushMessage.Status.PENDING).update(
        status=PushMessage.Status.CANCELLED, next_attempt_at=None, last_error="device_moved"
    )
    device.player = player
    device.created_at = now
    device.last_pushed_at = None


def device_of(player: Player, device_id: int) -> PushDevice:
    """One of the player's devices; another player's is indistinguishable from none (404)."""
    device = PushDevice.objects.filter(pk=device_id, player=player).first()
    if device is None:
        raise ServiceError("not_found", "no such device", kind="not_found")
    return device


def remove(player: Player, device_id: int) -> None:
    """Remove one of the player's devices (and what was waiting to be sent to it)."""
    device_of(player, device_id).delete()
    transaction.on_commit(lambda: recording.forget(player.pk))


def prune_expired(now: dt.datetime | None = None) -> int:
    """Delete every device past its `expires_at` (the sweep calls this); how many went."""
    now = now or timezone.now()
    players = set(PushDevice.objects.filter(expires_at__lte=now).values_list("player_id", flat=True))
    if not players:
        return 0
    _, by_model = PushDevice.objects.filter(expires_at__lte=now).delete()
    for player_id in players:
        recording.forget(player_id)
    return int(by_model.get(PushDevice._meta.label, 0))


def device_body(device: PushDevice) -> dict[str, Any]:
    """A device as its player (or their app) sees it: never the whole token, only its last
    characters (`token_hint`), and never the Web Push keys."""
    return {
        "id": device.pk,
        "kind": device.kind,
        "label": device.label,
        "token_hint": device.token[-HINT:],
        "topic": device.topic or None,
        "created_at": _iso(device.created_at),
        "expires_at": _iso(device.expires_at),
        "last_pushed_at": _iso(device.last_pushed_at),
    }
