"""Quick play: a player asks to play with criteria and is seated at a matching waiting table, or opens one.

A waiting table is an ordinary open table with a `match_key` (a hash of its options, clocks and
bot level) and a fill deadline in `deadline`. A request locks the oldest waiting table with the
same key (skipping any another request holds locked) and takes a seat there, or opens a new one;
the table row lock means two requests racing for the last seat never overfill it. When the last
seat is taken the game starts; when the deadline passes first, the turn-clock machinery (the
Redis clock, the sweep) calls `deadline_passed`, which fills the open seats with bots of the
chosen level and starts, or, without a level, closes the table (`quick_play_expired`). Either way
the table's log says `match_found` or `quick_play_expired`, which its players' streams show.
A player waits at one table at a time: `QuickPlay` has one row per player.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from games.engine import EngineError, Options, new_seed
from games.errors import ServiceError
from games.models import App, Move, Player, QuickPlay, Seat, Table
from games.services.common import (
    UNSCOPED,
    Idempotency,
    Outcome,
    check_seat_level,
    clocks_from,
    locked,
    open_seat,
    run,
)
from games.services.record import log, public, seated, start_if_full

WAIT_DEFAULT = 20
WAIT_LIMITS = (0, 300)  # seconds a request waits for people before bots fill in (or it expires)


def match_key(options: Options, clocks: Mapping[str, Any], bot_level: str | None) -> str:
    """What two requests must share to sit at one table: the options, the clocks and the bot level."""
    criteria = {"options": options.to_dict(), "clocks": dict(clocks), "bots": bot_level or ""}
    return hashlib.sha256(json.dumps(criteria, sort_keys=True).encode()).hexdigest()


def check_wait(wait_seconds: object) -> int:
    low, high = WAIT_LIMITS
    if type(wait_seconds) is not int or not low <= wait_seconds <= high:
        raise ServiceError(
            "invalid_wait",
            f"wait_seconds must be a whole number from {low} to {high}",
            kind="malformed",
            field="wait_seconds",
        )
    return wait_seconds


def quick_play(
    *,
    player: Player,
    app: App | None,
    options: Mapping[str, Any] | None = None,
    clocks: Mapping[str, Any] | None = None,
    bot_level: str | None = "basic",
    wait_seconds: int = WAIT_DEFAULT,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Seat `player` at the oldest waiting table of their app that matches, or open one that
    waits `wait_seconds` for people before `bot_level` bots fill it (None: the wait expires).
    Refused with `already_waiting` while the player waits at another table."""
    try:
        opts = Options.from_dict(options or {})
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    clock_set = clocks_from(clocks)
    if bot_level is not None:
        check_seat_level(bot_level, app.pk if app else None)
    wait = check_wait(wait_seconds)
    key = match_key(opts, clock_set, bot_level)

    def act() -> Outcome:
        try:
            with transaction.atomic():  # a savepoint: the unique player key says who already waits
                table = _waiting_table(app, key, opts, clock_set, bot_level, wait)
                QuickPlay.objects.create(player=player, table=table)
        except IntegrityError:
            waiting = QuickPlay.objects.filter(player=player).values_list("table_id", flat=True).first()
            raise ServiceError(
                "already_waiting",
                "you are already waiting in quick play: leave that queue first",
                kind="conflict",
                table=waiting,
            ) from None
        table, seats = locked(table.pk, UNSCOPED)  # locked already: this reads its seats
        seat = open_seat(seats, None)
        seat.player = player
        seat.save(update_fields=["player"])
        event = public("seat_taken", seat=seat.position, player=player.pk, name=player.name)
        log(table, Move.Kind.JOIN, seat.position, {"player": player.pk}, [event])
        seated(table, seats)
        if all(s.taken for s in seats):
            _start(table, seats, bots=[])
        table.save()
        return Outcome(table)

    return run(act, idempotency)


def _waiting_table(
    app: App | None, key: str, options: Options, clocks: Mapping[str, Any], bot_level: str | None, wait: int
) -> Table:
    """The oldest open table waiting with this key, locked, or a new one that waits `wait`
    seconds. On PostgreSQL the requests with the same criteria take turns here (a transaction
    advisory lock on the key, held to the commit): each one sees the table the one before it
    opened or filled, so racing requests fill one table after another instead of each opening
    its own. SQLite runs one write transaction at a time anyway."""
    if connection.vendor == "postgresql":
        digest = hashlib.sha256(f"quick-play:{app.pk if app else 0}:{key}".encode()).hexdigest()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int(digest[:15], 16)])
    waiting = (
        Table.objects.select_for_update()
        .filter(app=app, status=Table.Status.OPEN, match_key=key)
        .order_by("pk")
        .first()
    )
    if waiting is not None:
        return waiting
    table = Table.objects.create(
        app=app,
        options=options.to_dict(),
        clocks=dict(clocks),
        seed=new_seed(),
        match_key=key,
        fill_with=bot_level or "",
        deadline=timezone.now() + dt.timedelta(seconds=wait),
    )
    Seat.objects.bulk_create(Seat(table=table, position=p) for p in range(options.players))
    return table


def _start(table: Table, seats: list[Seat], bots: list[int]) -> None:
    """The table is full: say so (`match_found`), let go of its waiting players and start."""
    QuickPlay.objects.filter(table=table).delete()
    table.deadline = None
    start_if_full(table, seats, announce=[public("match_found", bots=bots)])


def leave(*, player: Player, idempotency: Idempotency | None = None) -> Outcome:
    """Leave quick play: give up the seat at the waiting table (`not_waiting` when not waiting).
    A table left with no one waiting closes, so no later request is matched to an empty table."""

    def act() -> Outcome:
        ticket = QuickPlay.objects.filter(player=player).first()
        if ticket is None:
            raise not_waiting()
        table, seats = locked(ticket.table_id, UNSCOPED)
        ticket.delete()
        seat = next(s for s in seats if s.player_id == player.pk)
        seat.player = None
        seat.save(update_fields=["player"])
        left = public("seat_left", seat=seat.position, player=player.pk)
        log(table, Move.Kind.LEAVE, seat.position, {"player": player.pk}, [left])
        seated(table, seats)
        if not any(s.taken for s in seats):
            log(table, Move.Kind.ABANDON, None, {}, [public("table_abandoned")])
            table.status, table.deadline = Table.Status.ABANDONED, None
        table.save()
        return Outcome(table)

    return run(act, idempotency)


def not_waiting() -> ServiceError:
    return ServiceError("not_waiting", "you are not waiting in quick play", kind="not_found")


def waiting_of(player: Player) -> Table | None:
    """The table where `player` waits in quick play, or None."""
    ticket = QuickPlay.objects.filter(player=player).select_related("table").first()
    return None if ticket is None else ticket.table


def deadline_passed(table: Table, seats: list[Seat], now: dt.datetime) -> bool:
    """Called under the table's lock by the clock (services.clock_expired) for an open table
    whose quick-play wait ran out: bots of the table's level fill the open seats and the game
    starts, or, with no level, the table closes (`quick_play_expired`). False when there is
    nothing to do (not a waiting table, or not yet due)."""
    if table.status != Table.Status.OPEN or not table.match_key or table.deadline is None:
        return False
    if table.deadline > now:
        return False
    if not table.fill_with:
        QuickPlay.objects.filter(table=table).delete()
        log(table, Move.Kind.ABANDON, None, {}, [public("quick_play_expired"), public("table_abandoned")])
        table.status, table.deadline = Table.Status.ABANDONED, None
        return True
    filled = []
    for seat in seats:
        if not seat.taken:
            seat.bot_level = table.fill_with
            seat.save(update_fields=["bot_level"])
            filled.append(seat.position)
            event = public("bot_added", seat=seat.position, level=table.fill_with)
            log(table, Move.Kind.ADD_BOT, seat.position, {"level": table.fill_with}, [event])
    seated(table, seats)
    _start(table, seats, bots=filled)
    return True
