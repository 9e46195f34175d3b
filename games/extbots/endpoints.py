"""An app's bot endpoints: registering, listing, changing and deleting them, their secrets, the
`ext:<name>` seat levels that name them, and the counters of how they answered."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from bots import LEVELS
from games import paging, reads, webhooks
from games.errors import ServiceError
from games.models import App, BotEndpoint
from games.webhooks import addresses

PREFIX = "ext:"  # a seat level naming one of the app's endpoints: ext:<name>
NAME_MAX = 40  # characters of a bot's name
NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{NAME_MAX - 1}}}")
LEVEL_PATTERN = f"^{PREFIX}{NAME.pattern}$"  # such a level, as a JSON Schema pattern
# Milliseconds one move may take. Capped low: a worker of the bot lanes waits this long at most
# for one answer (calls for seats that act at once are made together), so a slow bot costs its
# own tables time, never the lane's workers for long (docs/bots-byo.md#timeouts).
TIMEOUT_LIMITS = (100, 3000)
TIMEOUT_DEFAULT = 1000
# Bot endpoints an app has at once, whatever its `bots` quota (games.quotas, 20 by default, which the
# operator may raise per app): one more is 409 `too_many_bots` (docs/rest.md#limits). The ceiling
# keeps an app's whole list within one page of the largest size (paging.MAX_PAGE_SIZE).
BOTS_MAX = 100
BOT_PAGES = paging.Keyset("bot", ("id",), (int,))  # oldest first (games/paging.py)
# Why a move fell back to the `basic` bot; each is counted on the endpoint.
REASONS = ("timeout", "failed", "bad_answer", "illegal", "disabled")


def is_external(level: object) -> bool:
    """Whether a seat level names an app's bot endpoint (`ext:<name>`)."""
    return isinstance(level, str) and level.startswith(PREFIX)


def check_name(name: object) -> str:
    """1 to 40 letters, digits, `_` or `-`, starting with a letter or digit; else `invalid_input`."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ServiceError(
            "invalid_input",
            "name is 1 to 40 letters, digits, _ or -, starting with a letter or a digit",
            kind="malformed",
            field="name",
        )
    return name


def check_timeout(timeout_ms: object) -> int:
    low, high = TIMEOUT_LIMITS
    if type(timeout_ms) is not int or not low <= timeout_ms <= high:
        raise ServiceError(
            "invalid_input",
            f"timeout_ms must be a whole number from {low} to {high}",
            kind="malformed",
            field="timeout_ms",
        )
    return timeout_ms


def check_url(url: object) -> str:
    """The webhook rules (an absolute http(s) URL, no credentials), and, unless private hosts are
    allowed (WEBHOOK_ALLOW_PRIVATE_HOSTS, as for webhooks), a host whose addresses are all public:
    else `invalid_url` with reason `private`. Every call checks the address again."""
    url = webhooks.check_url(url)
    if settings.WEBHOOK_ALLOW_PRIVATE_HOSTS:
        return url
    _, refused = addresses.check(url, allow_private=False)
    if refused and not refused.startswith("cannot resolve"):
        # not resolvable now: every call resolves it again and refuses it then
        raise ServiceError(
            "invalid_url",
            f"url must reach a public address, not {refused.removeprefix('address_not_allowed: ')}",
            kind="malformed",
            reason="private",
        )
    return url


def check_level(app_id: int | None, level: str) -> BotEndpoint:
    """The enabled endpoint of the app that `ext:<name>` names; else `invalid_bot_level`."""
    name = level.removeprefix(PREFIX)
    found = BotEndpoint.objects.filter(app=app_id, name=name, enabled=True).first() if app_id else None
    if found is None:
        raise ServiceError(
            "invalid_bot_level",
            f"{level!r} names no enabled bot endpoint of this app (register one with POST /bots)",
            kind="malformed",
            levels=list(LEVELS),
        )
    return found


def secret_of(endpoint: BotEndpoint) -> str:
    """`whsec_` + base64 of HMAC-SHA256(WEBHOOK_SECRET_KEY, the salt): the Standard Webhooks form,
    derived (as webhooks' are) so the database alone cannot sign; its own label keeps a bot's
    secret apart from any webhook's."""
    key = str(settings.WEBHOOK_SECRET_KEY).encode()
    mac = hmac.new(key, f"hearts-bot:{endpoint.secret_salt}".encode(), hashlib.sha256).digest()
    return webhooks.SECRET_PREFIX + base64.b64encode(mac).decode()


def _duplicate(name: str) -> ServiceError:
    return ServiceError("bot_name_taken", f"the app already has a bot named {name!r}", kind="conflict")


def endpoint_create(
    *, app: App, name: object, url: object, timeout_ms: object = TIMEOUT_DEFAULT
) -> tuple[BotEndpoint, str]:
    """A new bot endpoint of `app` and its secret (returned only here and by `secret_rotate`)."""
    checked_name, checked_url, timeout = check_name(name), check_url(url), check_timeout(timeout_ms)
    try:
        with transaction.atomic():
            # Lock the app row so that two concurrent registrations cannot both pass the cap.
            App.objects.select_for_update().filter(pk=app.pk).first()
            if BotEndpoint.objects.filter(app=app).count() >= BOTS_MAX:
                raise ServiceError(
                    "too_many_bots",
                    f"an app has at most {BOTS_MAX} bot endpoints: delete one first",
                    kind="conflict",
                    limit=BOTS_MAX,
                )
            endpoint = BotEndpoint.objects.create(
                app=app,
                name=checked_name,
                url=checked_url,
                timeout_ms=timeout,
                secret_salt=secrets.token_hex(32),
            )
    except IntegrityError:
        raise _duplicate(checked_name) from None
    return endpoint, secret_of(endpoint)


def endpoints_of(app: App) -> QuerySet[BotEndpoint]:
    """The app's bot endpoints, oldest first."""
    return BotEndpoint.objects.filter(app=app).order_by("pk")


def endpoint_of(app: App | None, endpoint_id: int) -> BotEndpoint:
    """One of `app`'s bot endpoints; another app's is indistinguishable from none (404)."""
    endpoint = BotEndpoint.objects.filter(pk=endpoint_id, app=app).first() if app else None
    if endpoint is None:
        raise ServiceError("not_found", "no such bot", kind="not_found")
    return endpoint


def endpoint_update(endpoint: BotEndpoint, changes: Mapping[str, Any]) -> BotEndpoint:
    """Change the name, URL, timeout or `enabled`. Seats already named `ext:<old name>` keep
    their level: renaming a bot makes them fall back (`disabled`) until it has its name again."""
    if "name" in changes:
        endpoint.name = check_name(changes["name"])
    if "url" in changes:
        endpoint.url = check_url(changes["url"])
    if "timeout_ms" in changes:
        endpoint.timeout_ms = check_timeout(changes["timeout_ms"])
    if "enabled" in changes:
        endpoint.enabled = bool(changes["enabled"])
    try:
        with transaction.atomic():
            endpoint.save()
    except IntegrityError:
        raise _duplicate(endpoint.name) from None
    return endpoint


def endpoint_delete(endpoint: BotEndpoint) -> None:
    """Forget the endpoint; its seats' moves fall back to `basic` (reason `disabled`)."""
    endpoint.delete()


def secret_rotate(endpoint: BotEndpoint) -> str:
    """A new secret, returned once; the old one stops signing at once."""
    endpoint.secret_salt = secrets.token_hex(32)
    endpoint.save(update_fields=["secret_salt", "updated_at"])
    return secret_of(endpoint)


def count(endpoint_id: int, reason: str | None, error: str = "") -> None:
    """Count one move owed by the endpoint's seats: answered (`reason` None) or fallen back for `reason`.
    An atomic increment in the move's own transaction, so a move rolled back is not counted."""
    changes: dict[str, Any] = {}
    if reason != "disabled":  # a disabled bot is not called
        changes = {"calls": F("calls") + 1, "last_called_at": timezone.now()}
    if reason is None:
        changes["answered"] = F("answered") + 1
    else:
        changes[f"fallback_{reason}"] = F(f"fallback_{reason}") + 1
        changes["last_error"] = error[:300]
    BotEndpoint.objects.filter(pk=endpoint_id).update(**changes)


def fallbacks_of(endpoint: BotEndpoint) -> dict[str, int]:
    """The endpoint's fallbacks by reason."""
    return {reason: int(getattr(endpoint, f"fallback_{reason}")) for reason in REASONS}


def body(endpoint: BotEndpoint) -> dict[str, Any]:
    """What the app reads of its bot (REST and GraphQL alike): never the secret or its salt."""
    return {
        "id": endpoint.pk,
        "name": endpoint.name,
        "level": f"{PREFIX}{endpoint.name}",
        "url": endpoint.url,
        "timeout_ms": endpoint.timeout_ms,
        "enabled": endpoint.enabled,
        "calls": endpoint.calls,
        "answered": endpoint.answered,
        "fallbacks": fallbacks_of(endpoint),
        "last_error": endpoint.last_error,
        "last_called_at": reads.iso(endpoint.last_called_at),
        "created_at": reads.iso(endpoint.created_at),
        "updated_at": reads.iso(endpoint.updated_at),
    }
