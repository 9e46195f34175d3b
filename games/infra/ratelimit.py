"""Rate limits per token, per app and per address (for unauthenticated calls), counted in Redis so
every web process shares them; a seated player's action on their own turn is never limited.

Each limit is a fixed window counted with one atomic INCR (plus EXPIRE) per request. Refusals are
HTTP 429 with `Retry-After` and a body naming the limit:
`{"code": "rate_limited", "limit": "token", "rate": "300/minute", "retry_after": 12, ...}`.
Every counted answer, a success or a 429, also tells the caller where it stands, in the
`RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers-10 (`headers`).
If Redis is unreachable the limits are not enforced (logged): a restarting Redis must not stop
games. Without Redis (the one-process embedded run) the windows are counted in memory.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, cast

import redis
from django.conf import settings

from games import messages
from games.accounts import Principal
from games.engine import state_from_dict
from games.infra.notify import shared_redis
from games.models import Table, seat_of_player

log = logging.getLogger(__name__)

_RATE = re.compile(r"(\d+)/(\d*)(second|minute|hour|day)")
_UNIT = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_ACTIVE = ("passing", "playing", "moon_choice")


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: int
    text: str

    @classmethod
    def parse(cls, text: str) -> Rate:
        """`300/minute`, `20/10second`: that many requests per window."""
        match = _RATE.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"bad rate {text!r}: use like 300/minute or 20/10second")
        return cls(int(match[1]), int(match[2] or 1) * _UNIT[match[3]], text.strip())


@dataclass(frozen=True)
class Quota:
    """Where a caller stands against one limit once this request is counted: `remaining` requests
    left in the window, which ends in `reset` seconds."""

    limit: str  # token, app or address
    rate: Rate
    remaining: int
    reset: int


class RateLimited(Exception):
    """Over a limit: answered 429 with Retry-After (and the RateLimit fields of `quotas`)."""

    def __init__(self, limit: str, rate: Rate, retry_after: int, quotas: tuple[Quota, ...] = ()) -> None:
        super().__init__(limit)
        self.limit, self.rate, self.retry_after = limit, rate, retry_after
        self.quotas = quotas

    def body(self) -> dict[str, Any]:
        limit, rate, retry = self.limit, self.rate.text, self.retry_after
        fields: dict[str, Any] = {"limit": limit, "rate": rate, "retry_after": retry}
        english = f"too many requests for this {limit}: at most {rate}; retry after {retry} s"
        return {"code": "rate_limited", "detail": messages.detail("rate_limited", english, fields), **fields}


# -- counting -------------------------------------------------------------------------------

_lock = threading.Lock()
_memory: dict[str, tuple[int, int]] = {}  # key -> (window, count), without Redis


def _count(key: str, rate: Rate, now: float) -> tuple[int, int]:
    """This request's number in its window, and the seconds until the window ends."""
    window = int(now // rate.seconds)
    left = max(1, int((window + 1) * rate.seconds - now + 0.999))
    client = shared_redis()
    if client is None:
        with _lock:
            seen_window, count = _memory.get(key, (window, 0))
            count = count + 1 if seen_window == window else 1
            _memory[key] = (window, count)
            if len(_memory) > 100_000:  # old windows of idle callers
                for k in [k for k, (w, _) in _memory.items() if w != window]:
                    del _memory[k]
        return count, left
    full_key = f"hearts:rl:{key}:{window}"
    with client.pipeline(transaction=False) as pipe:
        pipe.incr(full_key)
        pipe.expire(full_key, rate.seconds + 1, nx=True)
        count, _ = pipe.execute()
    return int(count), left


def _check(limit: str, ident: str, rate: Rate, now: float, counted: tuple[Quota, ...] = ()) -> Quota:
    """Count one request against one limit; RateLimited (with every quota counted so far) when over."""
    count, left = _count(f"{limit}:{ident}", rate, now)
    quota = Quota(limit, rate, max(0, rate.count - count), left)
    if count > rate.count:
        raise RateLimited(limit, rate, left, (*counted, quota))
    return quota


def _rates() -> dict[str, Rate]:
    return {name: Rate.parse(text) for name, text in settings.RATE_LIMITS.items()}


def enabled() -> bool:
    """Whether rate limits are enforced (RATE_LIMITS_ENABLED); off, nothing is counted or looked up."""
    return bool(settings.RATE_LIMITS_ENABLED)


def check_principal(principal: Principal) -> tuple[Quota, ...]:
    """Count one request of a token (and of its app): the quotas left, for the RateLimit fields;
    RateLimited when over a limit. Nothing is counted (no quotas) with limits off or Redis down."""
    if not settings.RATE_LIMITS_ENABLED:
        return ()
    rates, now = _rates(), time.time()
    try:
        token = _check("token", principal.credential or principal.owner, rates["token"], now)
        if principal.app is None:
            return (token,)
        return (token, _check("app", str(principal.app.pk), rates["app"], now, (token,)))
    except redis.RedisError as exc:
        log.warning("rate limits not enforced: Redis: %s", exc)
        return ()


def check_one(limit: str, ident: str, rate: str) -> tuple[Quota, ...]:
    """Count one request against a limit of its own (`limit`, e.g. `review`, at `rate`, a setting
    like REVIEW_RATE) for `ident` (a token): the quota left, as check_principal; RateLimited when
    over. Nothing is counted with limits off or Redis down."""
    if not settings.RATE_LIMITS_ENABLED:
        return ()
    try:
        return (_check(limit, ident, Rate.parse(rate), time.time()),)
    except redis.RedisError as exc:
        log.warning("rate limits not enforced: Redis: %s", exc)
        return ()


def check_address(address: str) -> tuple[Quota, ...]:
    """Count one unauthenticated request (creating a guest) from this client address: the quota
    left, as check_principal."""
    if not settings.RATE_LIMITS_ENABLED:
        return ()
    try:
        return (_check("address", address or "unknown", _rates()["address"], time.time()),)
    except redis.RedisError as exc:
        log.warning("rate limits not enforced: Redis: %s", exc)
        return ()


def headers(quotas: tuple[Quota, ...]) -> dict[str, str]:
    """The RateLimit fields of draft-ietf-httpapi-ratelimit-headers-10 for the limits a request was
    counted against, as Structured Field lists, one member per limit named by a String:
    `RateLimit-Policy: "token";q=600;w=60` (quota, window in seconds) and
    `RateLimit: "token";r=599;t=42` (requests left, seconds until the window resets)."""
    if not quotas:
        return {}
    return {
        "RateLimit-Policy": ", ".join(f'"{q.limit}";q={q.rate.count};w={q.rate.seconds}' for q in quotas),
        "RateLimit": ", ".join(f'"{q.limit}";r={q.remaining};t={q.reset}' for q in quotas),
    }


def in_turn(principal: Principal, table_id: int) -> bool:
    """Whether this player sits at the table and the game waits for them now: then their action
    is never limited (a limit must never push a player into a timeout)."""
    if principal.player is None:
        return False
    row = (
        Table.objects.filter(pk=table_id, app=principal.app, status__in=_ACTIVE)
        .values_list("seating", "state")
        .first()
    )
    if row is None or row[1] is None:
        return False
    seating, state = row  # the state parsed (games.models.JSONText)
    seat = seat_of_player(seating, principal.player.pk)
    return (
        seat is not None and state is not None and seat in state_from_dict(cast(Any, state)).to_act()
    )  # the engine says who acts


def client_address(meta: dict[str, Any]) -> str:
    """The caller's address: REMOTE_ADDR (uvicorn's --proxy-headers sets it from X-Forwarded-For
    only for trusted proxies)."""
    return str(meta.get("REMOTE_ADDR") or "")
