"""Rate limits per token, per app and per address (for unauthenticated calls), counted in Redis so
every web process shares them; a seated player's action on their own turn is never limited.

Each limit is a fixed window counted with one atomic INCR (plus EXPIRE) per request. Refusals are
HTTP 429 with `Retry-After` and a body naming the limit:
`{"code": "rate_limited", "limit": "token", "rate": "300/minute", "retry_after": 12, ...}`.
If Redis is unreachable the limits are not enforced (logged): a restarting Redis must not stop
games. Without Redis (the one-process embedded run) the windows are counted in memory.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

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


class RateLimited(Exception):
    """Over a limit: answered 429 with Retry-After."""

    def __init__(self, limit: str, rate: Rate, retry_after: int) -> None:
        super().__init__(limit)
        self.limit, self.rate, self.retry_after = limit, rate, retry_after

    def body(self) -> dict[str, Any]:
        return {
            "code": "rate_limited",
            "detail": f"too many requests for this {self.limit}: at most {self.rate.text}; "
            f"retry after {self.retry_after} s",
            "limit": self.limit,
            "rate": self.rate.text,
            "retry_after": self.retry_after,
        }


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


def _check(limit: str, ident: str, rate: Rate, now: float) -> None:
    count, left = _count(f"{limit}:{ident}", rate, now)
    if count > rate.count:
        raise RateLimited(limit, rate, left)


def _rates() -> dict[str, Rate]:
    return {name: Rate.parse(text) for name, text in settings.RATE_LIMITS.items()}


def enabled() -> bool:
    """Whether rate limits are enforced (RATE_LIMITS_ENABLED); off, nothing is counted or looked up."""
    return bool(settings.RATE_LIMITS_ENABLED)


def check_principal(principal: Principal) -> None:
    """Count one request of a token (and of its app); raise RateLimited when over a limit."""
    if not settings.RATE_LIMITS_ENABLED:
        return
    rates, now = _rates(), time.time()
    try:
        _check("token", principal.credential or principal.owner, rates["token"], now)
        if principal.app is not None:
            _check("app", str(principal.app.pk), rates["app"], now)
    except redis.RedisError as exc:
        log.warning("rate limits not enforced: Redis: %s", exc)


def check_address(address: str) -> None:
    """Count one unauthenticated request (creating a guest) from this client address."""
    if not settings.RATE_LIMITS_ENABLED:
        return
    try:
        _check("address", address or "unknown", _rates()["address"], time.time())
    except redis.RedisError as exc:
        log.warning("rate limits not enforced: Redis: %s", exc)


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
    seating, state = row
    seat = seat_of_player(seating, principal.player.pk)
    return (
        seat is not None and state is not None and seat in state_from_dict(state).to_act()
    )  # the engine says who acts


def client_address(meta: dict[str, Any]) -> str:
    """The caller's address: REMOTE_ADDR (uvicorn's --proxy-headers sets it from X-Forwarded-For
    only for trusted proxies)."""
    return str(meta.get("REMOTE_ADDR") or "")
