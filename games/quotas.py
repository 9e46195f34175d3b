"""Quotas per app and per token: how much an app (or one key or token) may hold at once, answered
429 `quota_exceeded` naming the quota and its limit (docs/rest.md#quotas).

The quotas (`QUOTAS`) and what each counts:
- `streams_per_token`, `streams_per_app`: open event streams (REST's SSE/NDJSON) and GraphQL
  subscriptions together, of one key or token and of the whole app. They live in Redis, one
  member per open stream in a sorted set scored with its expiry (games/infra/sockets.py, the same
  machinery as the GraphQL socket caps): taken atomically across every web process, refreshed
  while the stream lives, released when it closes, and gone within sockets.TTL seconds when the
  process holding it is killed.
- `open_tables`: the app's unfinished tables (any status but finished and abandoned).
- `tournaments_per_day`: tournaments the app created since 00:00 UTC.
- `bots`: the app's bot endpoints; `webhooks`: its webhook endpoints.
The database quotas are counted under a lock of the app's row (`holding`), so two processes cannot
both take the last place. Each has a default setting (QUOTA_*) the operator overrides per app
(games.models.AppQuota: the admin, or `manage.py set_quota`). Every refusal is counted by quota in
the `hearts_quota_refusals_total` metric.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from games.errors import ServiceError
from games.infra import metrics, sockets
from games.models import App, AppQuota, BotEndpoint, Table, Tournament, WebhookEndpoint

if TYPE_CHECKING:
    from games.accounts import Principal

# Each quota: the setting of its default, and what it limits (for messages and the docs).
QUOTAS: dict[str, tuple[str, str]] = {
    "streams_per_token": ("QUOTA_STREAMS_PER_TOKEN", "open streams and subscriptions per key or token"),
    "streams_per_app": ("QUOTA_STREAMS_PER_APP", "open streams and subscriptions per app"),
    "open_tables": ("QUOTA_OPEN_TABLES", "unfinished tables"),
    "tournaments_per_day": ("QUOTA_TOURNAMENTS_PER_DAY", "tournaments created per day (UTC)"),
    "bots": ("QUOTA_BOTS", "bot endpoints"),
    "webhooks": ("QUOTA_WEBHOOKS", "webhook endpoints"),
}
DONE = (Table.Status.FINISHED, Table.Status.ABANDONED)  # a table in these no longer counts


def default(name: str) -> int:
    """The setting's limit of a quota (for every app without its own)."""
    return int(getattr(settings, QUOTAS[name][0]))


def limits(app: App | None) -> dict[str, int]:
    """Every quota's limit for this app: its own (AppQuota) where set, else the setting's."""
    own = AppQuota.objects.filter(app=app).first() if app is not None else None
    out: dict[str, int] = {}
    for name in QUOTAS:
        value = getattr(own, name, None) if own is not None else None
        out[name] = default(name) if value is None else int(value)
    return out


def limit(app: App | None, name: str) -> int:
    return limits(app)[name]


def exceeded(name: str, limit_: int) -> ServiceError:
    """The refusal of one quota (429 quota_exceeded, with `quota` and `limit`), counted in the metric."""
    metrics.quota_refused(name)
    what = QUOTAS[name][1]
    return ServiceError(
        "quota_exceeded",
        f"quota {name} reached: at most {limit_} {what}",
        kind="quota",
        quota=name,
        limit=limit_,
    )


# -- quotas counted in the database ----------------------------------------------------------


def _start_of_day() -> dt.datetime:
    now = timezone.now().astimezone(dt.UTC)
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


COUNTS: dict[str, Callable[[App], int]] = {
    "open_tables": lambda app: Table.objects.filter(app=app).exclude(status__in=DONE).count(),
    "tournaments_per_day": lambda app: Tournament.objects.filter(
        app=app, created_at__gte=_start_of_day()
    ).count(),
    "bots": lambda app: BotEndpoint.objects.filter(app=app).count(),
    "webhooks": lambda app: WebhookEndpoint.objects.filter(app=app).count(),
}


def used(app: App) -> dict[str, int]:
    """What the app holds now of each database quota (the admin and `set_quota` show it)."""
    return {name: count(app) for name, count in COUNTS.items()}


@contextmanager
def holding(app: App | None, name: str) -> Iterator[None]:
    """Run the creation of one more of quota `name`'s resources: in one transaction holding the
    app's row, so the count and the creation cannot interleave with another process's; refused
    (quota_exceeded) when the app already holds its limit. Without an app (a guest) there is no
    quota."""
    if app is None:
        yield
        return
    with transaction.atomic():
        App.objects.select_for_update().filter(pk=app.pk).first()
        most = limit(app, name)
        if COUNTS[name](app) >= most:
            raise exceeded(name, most)
        yield


# -- open streams and subscriptions (Redis) -----------------------------------------------------

STREAM_KIND = "streams"  # the sorted sets hearts:ws:streams:<scope>


def stream_scopes(principal: Principal) -> list[sockets.Scope]:
    """The places an open stream or subscription of this caller takes: its token's and its app's."""
    caps = limits(principal.app)
    out = [(sockets.key(STREAM_KIND, f"token:{principal.credential}"), caps["streams_per_token"])]
    if principal.app is not None:
        out.append((sockets.key(STREAM_KIND, f"app:{principal.app.pk}"), caps["streams_per_app"]))
    return out


def quota_of_scope(scope: sockets.Scope) -> str | None:
    """The quota a full scope is (None: one of the GraphQL socket caps, not a quota)."""
    name = scope[0]
    if not name.startswith(sockets.key(STREAM_KIND, "")):
        return None
    return "streams_per_app" if name.startswith(sockets.key(STREAM_KIND, "app:")) else "streams_per_token"


def stream_opened(scopes: list[sockets.Scope], entry: str) -> None:
    """Take a place for one open stream (`entry`, unique to it) in each scope, or refuse it."""
    full = sockets.acquire(scopes, entry)
    if full is not None:
        name = quota_of_scope(full)
        assert name is not None, "stream scopes are quotas"
        raise exceeded(name, full[1])


def open_streams(principal: Principal) -> int:
    """The caller's open streams and subscriptions now (tests and the docs' examples read it)."""
    return sockets.count(stream_scopes(principal)[0][0])
