"""Hints: for the seat to act, the move a bot level would make and every legal action's estimated
points for the rest of the hand, computed from that seat's view only (docs/hints.md).

The web process takes the seat's view (`games.engine.view`, exactly what a bot of that seat is
given) and queues it on the `hints` lane (games.infra.jobs.compute_hint); the lane runs
`bots.advice.estimates` on that view alone, with a random seed made of public facts (table,
version, seat, level), and keeps the answer in the cache, where the waiting request reads it. So
the lane never sees a card the seat cannot see, the same view answers the same, and a request
never computes: it waits up to HINT_THINK_MS (holding no database connection and no request slot:
games.infra.answers), then answers `service_unavailable` with `retry_after` (the lane goes on and
keeps the answer for the retry).

Allowed only at a table created with `hints: true` (never rated, never a tournament's), to the
seated player whose turn it is; `hints_not_allowed` with `reason` `off`, `rated` or `tournament`
otherwise. Each hint given is counted per seat (HintCount), and the count is shown in the game's
export and transcript. New computations count against HINT_RATE per token.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F

from games import reads
from games.accounts import Principal
from games.engine import view
from games.errors import ServiceError
from games.infra import answers, jobs, ratelimit
from games.models import HintCount, Table
from games.records import log as records
from games.services.review import DEFAULT_LEVEL, check_level

CACHE_SECONDS = 3600  # an answer is kept this long (a table's version moves on with the next action)
RETRY_AFTER = 1  # seconds, when the lane did not answer within HINT_THINK_MS


def refusal(table: Table) -> str | None:
    """Why no hint is given at this table (`tournament`, `rated`, `off`), or None when hints are on."""
    if table.tournament_id is not None:
        return "tournament"
    if table.rated:
        return "rated"
    if not table.hints:
        return "off"
    return None


def not_allowed(reason: str) -> ServiceError:
    messages = {
        "off": "hints are off at this table (it was created without hints: true)",
        "rated": "no hints at a rated table",
        "tournament": "no hints at a tournament table",
    }
    return ServiceError("hints_not_allowed", messages[reason], kind="rules", reason=reason)


def check_creation(hints: object, rated: bool) -> bool:
    """The `hints` option of a new table: true or false, and never with `rated`."""
    if not isinstance(hints, bool):
        raise ServiceError("invalid_input", "hints is true or false", kind="malformed", field="hints")
    if hints and rated:
        raise ServiceError(
            "hints_not_allowed",
            "a rated table gives no hints: create it with hints: false",
            kind="rules",
            reason="rated",
        )
    return hints


def seed_of(table_id: int, version: int, seat: int, level: str) -> int:
    """The hint's random seed: public facts only (never the game's secret seed)."""
    digest = hashlib.sha256(f"hint:{table_id}:{version}:{seat}:{level}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def cache_key(table_id: int, version: int, seat: int, level: str, seat_view: dict[str, Any]) -> str:
    """Where the answer is kept: by table, version, seat and level, and the digest of the view it
    is computed from (so a database reset that reuses ids never serves another game's answer)."""
    digest = hashlib.sha256(json.dumps(seat_view, sort_keys=True).encode()).hexdigest()[:32]
    return f"hearts:hint:{table_id}:{version}:{seat}:{level}:{digest}"


def compute(seat_view: dict[str, Any], level: str, seed: int) -> dict[str, Any]:
    """The advice of `level` for the seat whose view this is, in wire form (the lane's work)."""
    import random

    from bots import advice  # the estimator: imported where it runs (the hints lane)

    started = time.perf_counter()
    found = advice.estimates(seat_view, level, random.Random(seed))
    return {
        "choice": dict(found.choice),
        "options": [{"action": dict(a), "points": float(p)} for a, p in found.options],
        "think_ms": round((time.perf_counter() - started) * 1000),
    }


def store(key: str, seat_view: dict[str, Any], level: str, seed: int) -> dict[str, Any]:
    """The hints lane's task: compute the hint from the view and keep it under `key`."""
    found: dict[str, Any] | None = cache.get(key)
    if found is not None:
        return found  # asked twice before the first answer: computed once
    answer = compute(seat_view, level, seed)
    cache.set(key, answer, CACHE_SECONDS)
    answers.ring(key)
    return answer


def _count(table: Table, seat: int) -> None:
    """One more hint given to this seat (a row per seat, counted in the database)."""
    if HintCount.objects.filter(table=table, seat=seat).update(count=F("count") + 1):
        return
    try:
        with transaction.atomic():
            HintCount.objects.create(table=table, seat=seat, count=1)
    except IntegrityError:  # created meanwhile by a concurrent request
        HintCount.objects.filter(table=table, seat=seat).update(count=F("count") + 1)


def counts(table: Table) -> dict[str, int]:
    """The hints each seat was given at this table, by seat number ("0": 3); {} when none."""
    return {str(seat): n for seat, n in HintCount.objects.filter(table=table).values_list("seat", "count")}


def hint(principal: Principal, table: Table, level: str | None = None) -> dict[str, Any]:
    """The hint for the caller's seat, whose turn it is (docs/hints.md)."""
    principal.require_player("a hint is for a seated player: use a player's token")
    level = check_level(DEFAULT_LEVEL if level is None else level)
    reason = refusal(table)
    if reason is not None:
        raise not_allowed(reason)
    seat = reads.seat_of(table, principal)
    if seat is None:
        raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
    state = records.state(table)
    if state is None:
        raise ServiceError("not_started", "the game has not started yet", kind="rules")
    seat_view = view(state, seat, history=False)
    if seat_view["legal_actions"] is None:
        turn = seat_view["turn"]
        raise ServiceError("not_your_turn", "it is not your turn", kind="rules", turn=turn)
    version = table.version
    key = cache_key(table.pk, version, seat, level, seat_view)
    found: dict[str, Any] | None = answers.look(key)
    if found is None:
        ratelimit.check_one("hint", principal.credential or principal.owner, settings.HINT_RATE)
        seconds, seed = settings.HINT_THINK_MS / 1000, seed_of(table.pk, version, seat, level)
        sent = json.dumps(seat_view)
        answers.ask(lambda: jobs.compute_hint(key, sent, level, seed, expires=seconds), "hint")
        found = answers.wait(key, seconds, look_first=False)
        if found is None:
            raise ServiceError(
                "service_unavailable",
                "the hint is still being computed: ask again in a moment",
                kind="unavailable",
                retry_after=RETRY_AFTER,
            )
    _count(table, seat)
    return {
        "table_id": table.pk,
        "version": version,
        "hand": seat_view["hand_number"],
        "seat": seat,
        "level": level,
        "phase": seat_view["phase"],
        **found,
    }
