"""Rate limits per token, per app and per address (for unauthenticated calls), counted in Redis so
every web process shares them; a seated player's action on their own turn is never limited.

Each limit is a fixed window counted with one atomic INCR (plus EXPIRE) per request, a request's
windows (its token's and its app's) in one round trip. Refusals are
HTTP 429 with `Retry-After` and a body naming the limit:
`{"code": "rate_limited", "limit": "token", "rate": "300/minute", "retry_after": 12, ...}`.
Every counted answer, a success or a 429, also tells the caller where it stands, in the
`RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers-10 (`headers`).
If Redis is unreachable the limits are not enforced (logged): a restarting Redis must not stop
games. Without Redis (the one-process embedded run) the windows are counted in memory.
"""

from __future__ import annotations

import functools
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
_memory: dict[str, tuple[int, int, float]] = {}  # key -> (window, count, its end), without Redis


# A request's windows counted in one round trip: each one INCRed (and given its expiry the first
# time) in order, stopping after the first one over its limit, so that a request refused for its
# token does not count against its app. Two pipelined round trips before (the token's, then the
# app's) cost the web 190 to 230 µs of CPU a request (bench/README.md, stop 57).
# KEYS: the windows; ARGV: for each, its limit then its expiry in seconds. Answers the counts made.
_COUNT = """
local counts = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  redis.call('EXPIRE', key, ARGV[2 * i], 'NX')
  counts[i] = n
  if n > tonumber(ARGV[2 * i - 1]) then break end
end
return counts
"""
_scripts: dict[int, Any] = {}  # the Script (EVALSHA, loaded again after a Redis restart) per client


def _count(windows: list[tuple[str, Rate]], now: float) -> list[tuple[int, int]]:
    """Each window's count with this request in it and the seconds until it ends, in order, up to
    the first one over its limit (the later ones are not counted)."""
    client = shared_redis()
    out: list[tuple[int, int]] = []
    if client is None:
        with _lock:
            for key, rate in windows:
                window = int(now // rate.seconds)
                seen_window, count, _ = _memory.get(key, (window, 0, 0.0))
                count = count + 1 if seen_window == window else 1
                _memory[key] = (window, count, (window + 1) * rate.seconds)
                out.append((count, _left(rate, now)))
                if count > rate.count:
                    break
            if len(_memory) > 100_000:  # the ended windows of idle callers
                for k in [k for k, (_, _, ends) in _memory.items() if ends <= now]:
                    del _memory[k]
        return out
    script = _scripts.get(id(client))
    if script is None:
        script = _scripts[id(client)] = client.register_script(_COUNT)
    keys = [f"hearts:rl:{key}:{int(now // rate.seconds)}" for key, rate in windows]
    args = [n for _, rate in windows for n in (rate.count, rate.seconds + 1)]
    counts = cast(list[int], script(keys=keys, args=args, client=client))
    return [(int(count), _left(rate, now)) for count, (_, rate) in zip(counts, windows, strict=False)]


def _left(rate: Rate, now: float) -> int:
    """The seconds until the window of `now` ends (at least 1)."""
    return max(1, int((int(now // rate.seconds) + 1) * rate.seconds - now + 0.999))


def _check(windows: list[tuple[str, str, Rate]], now: float) -> tuple[Quota, ...]:
    """Count one request against each of its limits (`limit`, who, rate), in order: the quotas;
    RateLimited (with every quota counted, the refused one last) at the first one over."""
    counted = _count([(f"{limit}:{ident}", rate) for limit, ident, rate in windows], now)
    quotas: tuple[Quota, ...] = ()
    for (limit, _, rate), (count, left) in zip(windows, counted, strict=False):
        quotas = (*quotas, Quota(limit, rate, max(0, rate.count - count), left))
        if count > rate.count:
            raise RateLimited(limit, rate, left, quotas)
    return quotas


def _rates() -> dict[str, Rate]:
    return _parsed(tuple(settings.RATE_LIMITS.items()))


@functools.lru_cache(maxsize=8)
def _parsed(rates: tuple[tuple[str, str], ...]) -> dict[str, Rate]:
    """RATE_LIMITS parsed, once per value of the setting."""
    return {name: Rate.parse(text) for name, text in rates}


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
        windows = [("token", principal.credential or principal.owner, rates["token"])]
        if principal.app is not None:
            windows.append(("app", str(principal.app.pk), rates["app"]))
        return _check(windows, now)
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
        return _check([(limit, ident, Rate.parse(rate))], time.time())
    except redis.RedisError as exc:
        log.warning("rate limits not enforced: Redis: %s", exc)
        return ()


def check_address(address: str) -> tuple[Quota, ...]:
    """Count one unauthenticated request (creating a guest) from this client address: the quota
    left, as check_principal."""
    if not settings.RATE_LIMITS_ENABLED:
        return ()
    try:
        return _check([("address", address or "unknown", _rates()["address"])], time.time())
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
