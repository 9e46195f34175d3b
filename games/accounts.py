"""Credentials: API keys of apps and bearer tokens of players, issued once and stored as hashes."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from django.core import signing
from django.db import transaction
from django.utils import timezone

from games import messages
from games.errors import ServiceError
from games.models import App, Player, PlayerToken
from games.prepared import Prepared

APP_PREFIX = "hk_app_"
PLAYER_PREFIX = "hk_player_"


def key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret(prefix: str) -> tuple[str, str]:
    """A fresh key or token (256 random bits after its prefix) and the hash that is stored."""
    secret = prefix + secrets.token_urlsafe(32)
    return secret, key_hash(secret)


@dataclass(frozen=True)
class Principal:
    """Who is calling: an app (acting for its own tables and players) or one player."""

    app: App | None
    player: Player | None
    credential: str = ""  # which key or token was presented: a prefix of its stored hash

    @property
    def is_app(self) -> bool:
        return self.player is None

    def require_app(self, message: str) -> App:
        """The calling app; a player's token is refused with `app_key_required` (the rule of
        every app-only operation: abandoning a table, creating players, webhooks)."""
        if not self.is_app or self.app is None:
            raise ServiceError("app_key_required", message, kind="rules")
        return self.app

    def require_player(self, message: str = "act with a player's token, not an app key") -> Player:
        """The calling player; an app key is refused with `player_token_required` (the rule of
        every seat's action and of a player's own views)."""
        if self.player is None:
            raise ServiceError("player_token_required", message, kind="rules")
        return self.player

    @property
    def owner(self) -> str:
        """Who this is, as a stable string ('player:7', 'app:2'), for idempotency keys."""
        if self.player is not None:
            return f"player:{self.player.pk}"
        assert self.app is not None
        return f"app:{self.app.pk}"


def app_create(*, name: str) -> tuple[App, str]:
    """A new app and its API key; the key is returned once and never stored."""
    key, hashed = new_secret(APP_PREFIX)
    return App.objects.create(name=name, key_hash=hashed), key


NAME_MAX = 64  # a player's name, in characters
EXTERNAL_ID_MAX = 128  # an app's own id for its user


def text(value: object, field: str, max_length: int, *, blank: bool = False) -> str:
    """A text input as it may be stored: a string of 1 (0 with `blank`) to `max_length`
    characters without NUL or lone surrogates (PostgreSQL cannot store them), else
    `invalid_input` naming the field. Both APIs' inputs go through here before they are stored."""
    if value is None and blank:
        return ""
    low = 0 if blank else 1
    if not isinstance(value, str) or not low <= len(value) <= max_length:
        raise ServiceError(
            "invalid_input",
            f"{field} must be {low} to {max_length} characters",
            kind="malformed",
            field=field,
        )
    if "\x00" in value or any("\ud800" <= c <= "\udfff" for c in value):
        raise ServiceError(
            "invalid_input", f"{field} must not contain NUL or lone surrogates", kind="malformed", field=field
        )
    return value


def player_create(*, app: App | None, name: str, external_id: str | None = "") -> tuple[Player, str]:
    """A player of `app` (a guest when `app` is None) and a first bearer token for them."""
    name = text(name, "name", NAME_MAX)
    external_id = text(external_id, "external_id", EXTERNAL_ID_MAX, blank=True)
    with transaction.atomic():
        player = Player.objects.create(app=app, name=name, external_id=external_id)
        return player, token_issue(player=player)


def set_language(player: Player, language: object) -> Player:
    """Set the language of a player's answers: one of settings.LANGUAGES, or "" to follow each
    request's Accept-Language; anything else is `invalid_language`."""
    known = messages.languages()
    if not isinstance(language, str) or (language and language not in known):
        raise ServiceError(
            "invalid_language",
            f"language must be one of {', '.join(known)}, or empty to follow Accept-Language",
            kind="malformed",
            field="language",
            known=known,
        )
    player.language = language
    player.save(update_fields=["language"])
    return player


def player_of(app: App, player_id: int) -> Player:
    """One of `app`'s players; another app's player is indistinguishable from none (404)."""
    player = Player.objects.filter(pk=player_id, app=app).first()
    if player is None:
        raise ServiceError("not_found", "no such player", kind="not_found")
    return player


def token_issue(*, player: Player) -> str:
    token, hashed = new_secret(PLAYER_PREFIX)
    PlayerToken.objects.create(player=player, token_hash=hashed)
    return token


def token_revoke(*, token: str) -> bool:
    """Revoke one token; True when it existed and was live."""
    n = PlayerToken.objects.filter(token_hash=key_hash(token), revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    return n > 0


def bearer_secret(header: str) -> str | None:
    """The secret of an `Authorization: Bearer <secret>` header (None without a header); any
    other scheme or an empty secret is `authentication_failed`. Every adapter (REST, GraphQL,
    streams) reads the header through here."""
    if not header:
        return None
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ServiceError("authentication_failed", "use 'Authorization: Bearer <key or token>'", kind="auth")
    return secret.strip()


def principal_from_header(header: str) -> Principal | None:
    """The caller of a request: None without an Authorization header, the principal of a valid
    bearer key or token, `authentication_failed` otherwise."""
    secret = bearer_secret(header)
    if secret is None:
        return None
    principal = authenticate(secret)
    if principal is None:
        raise ServiceError("authentication_failed", "unknown or revoked key or token", kind="auth")
    return principal


# Every request runs one of these: compiled once (games.prepared).
_APP_OF_KEY = Prepared(lambda hashed: App.objects.filter(key_hash=hashed).order_by("pk")[:1], [str])
_TOKEN = Prepared(
    lambda hashed: (
        PlayerToken.objects.select_related("player__app")
        .filter(token_hash=hashed, revoked_at__isnull=True)
        .order_by("pk")[:1]
    ),
    [str],
)


def authenticate(secret: str) -> Principal | None:
    """The principal a presented key or token belongs to, or None."""
    hashed = key_hash(secret)
    if secret.startswith(APP_PREFIX):
        app = _APP_OF_KEY.first(hashed)
        return Principal(app=app, player=None, credential=hashed[:24]) if app else None
    if secret.startswith(PLAYER_PREFIX):
        row = _TOKEN.first(hashed)
        return Principal(app=row.player.app, player=row.player, credential=hashed[:24]) if row else None
    return None


# -- stream tickets -----------------------------------------------------------------------------

TICKET_SECONDS = 60  # a ticket opens its stream this long after it is issued
_TICKET_SALT = "games.accounts.stream-ticket"
_CREDENTIAL = re.compile(r"[0-9a-f]{24}")


def stream_ticket(principal: Principal, stream: str) -> tuple[str, dt.datetime]:
    """A ticket that opens one event stream (`stream`: `table:<id>` or `me`) as this principal, for
    a client that cannot send an Authorization header (a browser's EventSource), and when it
    expires. It is signed (Django's signing, keyed by SECRET_KEY), names the key or token it was
    issued for by a prefix of its stored hash (never the secret), and is good for TICKET_SECONDS."""
    if not _CREDENTIAL.fullmatch(principal.credential):
        raise ServiceError("authentication_failed", "a ticket needs a key or token", kind="auth")
    payload = {"s": stream, "c": principal.credential, "k": "app" if principal.is_app else "player"}
    ticket = signing.dumps(payload, salt=_TICKET_SALT, compress=False)
    expires = timezone.now().replace(microsecond=0) + dt.timedelta(seconds=TICKET_SECONDS)
    return ticket, expires


def ticket_stream(ticket: str) -> str:
    """The stream a valid, unexpired ticket opens (`table:<id>` or `me`); `ticket_expired` or
    `ticket_invalid` as principal_from_ticket. A WebSocket opened with a ticket may subscribe to
    that stream only."""
    data = _ticket_data(ticket)
    stream = data.get("s")
    if not isinstance(stream, str):
        raise ServiceError("ticket_invalid", "not a stream ticket", kind="auth")
    return stream


def _ticket_data(ticket: str) -> Any:
    try:
        return signing.loads(ticket, salt=_TICKET_SALT, max_age=TICKET_SECONDS)
    except signing.SignatureExpired:
        raise ServiceError(
            "ticket_expired", f"stream tickets last {TICKET_SECONDS} s: ask a new one", kind="auth"
        ) from None
    except signing.BadSignature:
        raise ServiceError("ticket_invalid", "not a stream ticket", kind="auth") from None


def principal_from_ticket(ticket: str, stream: str) -> Principal:
    """The principal a stream ticket was issued to, exactly as its key or token would authenticate
    (so the stream is redacted for them): `ticket_expired` once TICKET_SECONDS have passed,
    `ticket_invalid` for a forged or altered ticket, one for another stream, or one whose key or
    token has been revoked since."""
    data = _ticket_data(ticket)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("c"), str)
        or not _CREDENTIAL.fullmatch(data["c"])
    ):
        raise ServiceError("ticket_invalid", "not a stream ticket", kind="auth")
    if data.get("s") != stream:
        raise ServiceError("ticket_invalid", "this ticket opens another stream", kind="auth")
    credential: str = data["c"]
    principal: Principal | None = None
    if data.get("k") == "app":
        app = App.objects.filter(key_hash__startswith=credential).first()
        principal = Principal(app=app, player=None, credential=credential) if app else None
    elif data.get("k") == "player":
        row = (
            PlayerToken.objects.select_related("player__app")
            .filter(token_hash__startswith=credential, revoked_at__isnull=True)
            .first()
        )
        principal = Principal(app=row.player.app, player=row.player, credential=credential) if row else None
    if principal is None:
        raise ServiceError("ticket_invalid", "the key or token of this ticket is revoked", kind="auth")
    return principal
