"""Credentials: API keys of apps and bearer tokens of players, issued once and stored as hashes."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.core import signing
from django.db import models, transaction
from django.utils import timezone

from games import messages
from games.errors import ServiceError
from games.models import ApiKey, App, Player, PlayerToken
from games.prepared import Prepared

APP_PREFIX = "hk_app_"
PLAYER_PREFIX = "hk_player_"


def key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret(prefix: str) -> tuple[str, str]:
    """A fresh key or token (256 random bits after its prefix) and the hash that is stored."""
    secret = prefix + secrets.token_urlsafe(32)
    return secret, key_hash(secret)


class Scope(StrEnum):
    """What an app key may do: each operation declares the one it needs (games/operations), each
    read its area's (games.operations.scopes); `admin` grants every scope, present and future."""

    admin = "admin"
    app_read = "app:read"  # the app's settings (retention)
    app_write = "app:write"
    keys_read = "keys:read"  # the app's API keys
    keys_write = "keys:write"
    players_write = "players:write"  # players and their tokens (no read of players needs a scope of its own)
    erasure = "erasure"  # erasing a player's personal data
    exports_read = "exports:read"  # a player's data exports
    exports_write = "exports:write"
    tables_read = "tables:read"  # tables, moves, invites, streams, subscriptions
    tables_write = "tables:write"
    webhooks_read = "webhooks:read"
    webhooks_write = "webhooks:write"
    bots_read = "bots:read"  # the bots the app brings
    bots_write = "bots:write"
    tournaments_read = "tournaments:read"
    tournaments_write = "tournaments:write"
    ratings_read = "ratings:read"
    push_read = "push:read"  # devices and the app's push credentials
    push_write = "push:write"


SCOPES: tuple[str, ...] = tuple(s.value for s in Scope)


def scopes_of(values: Iterable[str]) -> list[str]:
    """Scopes as stored: known ones only (else `invalid_input` naming it), each once, in Scope's order."""
    wanted = set(values)
    unknown = sorted(wanted - set(SCOPES))
    if unknown:
        raise ServiceError(
            "invalid_input", f"unknown scope {unknown[0]!r}", kind="malformed", field="scopes", known=SCOPES
        )
    return [s for s in SCOPES if s in wanted]


@dataclass(frozen=True)
class Principal:
    """Who is calling: an app (acting for its own tables and players) or one player."""

    app: App | None
    player: Player | None
    credential: str = ""  # which key or token was presented: a prefix of its stored hash
    # The scopes of the app key presented; None: not limited (a player's token, or the service itself).
    scopes: frozenset[str] | None = None
    credential_id: int | None = None  # the ApiKey or PlayerToken row presented

    @property
    def is_app(self) -> bool:
        return self.player is None

    def has_scope(self, scope: str) -> bool:
        return self.scopes is None or scope in self.scopes or Scope.admin in self.scopes

    def require_scope(self, scope: str | None) -> None:
        """Refuse an app key without `scope` (403 `missing_scope`, naming it); a player's token is
        held to its operations' access rules instead."""
        if scope is not None and self.is_app and not self.has_scope(scope):
            raise ServiceError(
                "missing_scope", f"this API key lacks the scope {scope}", kind="forbidden", scope=scope
            )

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


def app_create(*, name: str, scopes: Iterable[str] = (Scope.admin,)) -> tuple[App, str]:
    """A new app and its first API key (with `scopes`: by default every one); the key is returned
    once and never stored."""
    with transaction.atomic():
        app = App.objects.create(name=name)
        return app, key_create(app, name="first key", scopes=scopes)[1]


# -- the API keys of an app ---------------------------------------------------------------------

KEY_NAME_MAX = 64
KEYS_MAX = 50  # live keys an app may hold at once (too_many_keys beyond)
SHOWN = 12  # characters of a key kept and shown to recognise it (its prefix and 5 random ones)
ROTATION_OVERLAP = 86_400  # seconds the old key keeps working after a rotation, unless asked otherwise
ROTATION_OVERLAP_MAX = 30 * 86_400
USED_EVERY = dt.timedelta(seconds=60)  # last_used_at is written at most this often per key


def key_create(
    app: App,
    *,
    name: str = "",
    scopes: Iterable[str],
    expires_at: dt.datetime | None = None,
    granted_by: Principal | None = None,
) -> tuple[ApiKey, str]:
    """A new key of `app` with `scopes` (returned once, stored hashed). A key creating another may
    grant only scopes it holds itself (`missing_scope` otherwise): keys:write is not a way up."""
    name = text(name, "name", KEY_NAME_MAX, blank=True)
    granted = scopes_of(scopes)
    if not granted:
        raise ServiceError(
            "invalid_input", "a key needs at least one scope", kind="malformed", field="scopes"
        )
    if granted_by is not None:
        for scope in granted:
            granted_by.require_scope(scope)
    if expires_at is not None and expires_at <= timezone.now():
        raise ServiceError(
            "invalid_input", "expires_at must be in the future", kind="malformed", field="expires_at"
        )
    now = timezone.now()
    live = ApiKey.objects.filter(app=app, revoked_at__isnull=True).exclude(expires_at__lte=now).count()
    if live >= KEYS_MAX:
        raise ServiceError(
            "too_many_keys",
            f"an app holds at most {KEYS_MAX} live keys: revoke one",
            kind="conflict",
            limit=KEYS_MAX,
        )
    secret, hashed = new_secret(APP_PREFIX)
    key = ApiKey.objects.create(
        app=app, name=name, prefix=secret[:SHOWN], key_hash=hashed, scopes=granted, expires_at=expires_at
    )
    return key, secret


def keys_of(app: App) -> Any:
    """The app's keys, newest first (a QuerySet of ApiKey), revoked and expired ones included."""
    return ApiKey.objects.filter(app=app)


def key_of(app: App, key_id: int) -> ApiKey:
    """One of the app's keys; another app's is indistinguishable from none (404)."""
    key = ApiKey.objects.filter(pk=key_id, app=app).first()
    if key is None:
        raise ServiceError("not_found", "no such key", kind="not_found")
    return key


def key_revoke(app: App, key_id: int) -> ApiKey:
    """Revoke a key at once (again: unchanged); requests with it get 401 key_revoked."""
    key = key_of(app, key_id)
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=key.revoked_at)
    return key


def key_rotate(
    app: App, key_id: int, *, overlap: int = ROTATION_OVERLAP, granted_by: Principal | None = None
) -> tuple[ApiKey, str, ApiKey]:
    """A new key with the same name and scopes as a live one, which keeps working `overlap` seconds
    more (then key_expired), so that the app's processes switch without an outage. Returns the new
    key, its secret and the old key."""
    if not 0 <= overlap <= ROTATION_OVERLAP_MAX:
        raise ServiceError(
            "invalid_input",
            f"overlap_seconds must be 0 to {ROTATION_OVERLAP_MAX}",
            kind="malformed",
            field="overlap_seconds",
        )
    with transaction.atomic():
        old = ApiKey.objects.select_for_update().filter(pk=key_id, app=app).first()
        if old is None:
            raise ServiceError("not_found", "no such key", kind="not_found")
        try:
            key_usable(old)
        except ServiceError as exc:  # the key named, not the caller's: a conflict, not a 401
            reason = "revoked" if exc.code == "key_revoked" else "expired"
            raise ServiceError(
                "key_not_live",
                f"this key is {reason}: only a live key rotates",
                kind="conflict",
                reason=reason,
            ) from None
        new, secret = key_create(app, name=old.name, scopes=old.scopes, granted_by=granted_by)
        end = timezone.now() + dt.timedelta(seconds=overlap)
        old.expires_at = end if old.expires_at is None else min(old.expires_at, end)
        old.replaced_by = new
        old.save(update_fields=["expires_at", "replaced_by"])
    return new, secret, old


def key_usable(key: ApiKey, now: dt.datetime | None = None) -> None:
    """Refuse a revoked key (401 key_revoked) or an expired one (401 key_expired)."""
    if key.revoked_at is not None:
        raise ServiceError("key_revoked", "this API key was revoked", kind="auth")
    if key.expires_at is not None and key.expires_at <= (now or timezone.now()):
        raise ServiceError("key_expired", "this API key has expired: use its replacement", kind="auth")


def key_used(key: ApiKey, now: dt.datetime) -> None:
    """Note that a key was used, at most once per USED_EVERY: a request costs no write of its own."""
    if key.last_used_at is None or now - key.last_used_at >= USED_EVERY:
        key.last_used_at = now
        ApiKey.objects.filter(pk=key.pk).filter(
            models.Q(last_used_at__isnull=True) | models.Q(last_used_at__lt=now - USED_EVERY)
        ).update(last_used_at=now)


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


TOKEN_LIFETIME_MIN = 60  # seconds: the shortest expiry an app may give a token
TOKEN_LIFETIME_MAX = 366 * 86_400
REFRESH_OVERLAP = 60  # seconds a refreshed token keeps working, for requests already on their way


def token_issue(*, player: Player, expires_in: int | None = None) -> str:
    """A new bearer token of `player`, refused from `expires_in` seconds on (None: never)."""
    return token_issued(player=player, expires_in=expires_in)[0]


def token_issued(*, player: Player, expires_in: int | None = None) -> tuple[str, dt.datetime | None]:
    """A new bearer token of `player` and when it expires (None: never)."""
    token, hashed = new_secret(PLAYER_PREFIX)
    expires_at = None if expires_in is None else timezone.now() + dt.timedelta(seconds=expires_in)
    PlayerToken.objects.create(player=player, token_hash=hashed, expires_at=expires_at)
    return token, expires_at


def token_refresh(principal: Principal, expires_in: int | None = None) -> tuple[str, dt.datetime | None]:
    """Exchange the player token of this request for a new one (with `expires_in`, else the old
    token's lifetime); the old one keeps working REFRESH_OVERLAP seconds more, then token_expired."""
    player = principal.require_player("only a player token can be refreshed")
    with transaction.atomic():
        old = (
            PlayerToken.objects.select_for_update()
            .filter(pk=principal.credential_id or 0, player=player)
            .first()
        )
        if old is None or old.revoked_at is not None:
            raise ServiceError("authentication_failed", "unknown or revoked key or token", kind="auth")
        now = timezone.now()
        if old.expires_at is not None and old.expires_at <= now:
            raise ServiceError(
                "token_expired", "this token has expired: ask the app for a new one", kind="auth"
            )
        if expires_in is None and old.expires_at is not None:
            expires_in = max(TOKEN_LIFETIME_MIN, round((old.expires_at - old.created_at).total_seconds()))
        issued = token_issued(player=player, expires_in=expires_in)
        end = now + dt.timedelta(seconds=REFRESH_OVERLAP)
        old.expires_at = end if old.expires_at is None else min(old.expires_at, end)
        old.save(update_fields=["expires_at"])
    return issued


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


# Every request runs one of these: compiled once (games.prepared). A key is read whether revoked or
# expired, so that its refusal can say which.
_KEY = Prepared(
    lambda hashed: ApiKey.objects.select_related("app").filter(key_hash=hashed).order_by("pk")[:1], [str]
)
_TOKEN = Prepared(
    lambda hashed: (
        PlayerToken.objects.select_related("player__app")
        .filter(token_hash=hashed, revoked_at__isnull=True)
        .order_by("pk")[:1]
    ),
    [str],
)


def authenticate(secret: str) -> Principal | None:
    """The principal a presented key or token belongs to, or None for an unknown one; a revoked
    or expired key is `key_revoked` or `key_expired`, an expired token `token_expired` (401s)."""
    hashed = key_hash(secret)
    if secret.startswith(APP_PREFIX):
        key = _KEY.first(hashed)
        return None if key is None else key_principal(key, hashed[:24])
    if secret.startswith(PLAYER_PREFIX):
        row = _TOKEN.first(hashed)
        return None if row is None else token_principal(row, hashed[:24])
    return None


def key_principal(key: ApiKey, credential: str) -> Principal:
    """The caller of a usable key (key_revoked, key_expired otherwise), its use noted."""
    now = timezone.now()
    key_usable(key, now)
    key_used(key, now)
    return Principal(
        app=key.app, player=None, credential=credential, scopes=frozenset(key.scopes), credential_id=key.pk
    )


def token_principal(row: PlayerToken, credential: str) -> Principal:
    """The caller of a live token (token_expired once past its expiry)."""
    if row.expires_at is not None and row.expires_at <= timezone.now():
        raise ServiceError("token_expired", "this token has expired: ask the app for a new one", kind="auth")
    return Principal(app=row.player.app, player=row.player, credential=credential, credential_id=row.pk)


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
    try:
        if data.get("k") == "app":
            key = ApiKey.objects.select_related("app").filter(key_hash__startswith=credential).first()
            principal = None if key is None else key_principal(key, credential)
        elif data.get("k") == "player":
            row = (
                PlayerToken.objects.select_related("player__app")
                .filter(token_hash__startswith=credential, revoked_at__isnull=True)
                .first()
            )
            principal = None if row is None else token_principal(row, credential)
    except ServiceError:  # expired or revoked since the ticket was issued
        principal = None
    if principal is None:
        raise ServiceError("ticket_invalid", "the key or token of this ticket is revoked", kind="auth")
    return principal
