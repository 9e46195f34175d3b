"""The lobby: creating a table, taking and leaving seats, seating bots, starting and abandoning
(a rematch of a finished game: games.services.rematch).

Every change to an open table's seats follows one template (`_seat_change`): lock the table,
check the version the client saw, require the table open, make the change, copy the seats onto
the table, start the game when every seat is taken, save; each is one move in the log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from games import bot_timing, push, reads
from games.engine import EngineError, Options, new_seed
from games.errors import ServiceError
from games.models import App, Move, Player, Seat, Table
from games.services.common import (
    UNSCOPED,
    Idempotency,
    Outcome,
    Scope,
    check_level,
    check_seat_level,
    check_version,
    clocks_from,
    locked,
    open_seat,
    require_open,
    run,
    spectator_delay_from,
)
from games.services.hints import check_creation as check_hints
from games.services.invites import check_invited, check_visibility, redeem, table_of_code
from games.services.record import log, public, seated, start_if_full

Change = Callable[[Table, list[Seat]], None]


def _seat_change(
    table_id: int,
    scope: Scope,
    expected_version: int | None,
    idempotency: Idempotency | None,
    change: Change,
    *,
    may_start: bool = True,
    player: Player | None = None,
) -> Outcome:
    """The one template of a change to an open table's seats (see the module's docstring); with
    `player`, a private table that player may not enter is not found."""

    def act() -> Outcome:
        table, seats = locked(table_id, scope, player=player)
        check_version(table, expected_version)
        require_open(table)
        change(table, seats)
        seated(table, seats)
        if may_start:
            start_if_full(table, seats)
        table.save()
        return Outcome(table)

    return run(act, idempotency)


def _seat_bot(table: Table, seat: Seat, level: str) -> None:
    seat.bot_level = level
    seat.save(update_fields=["bot_level"])
    log(
        table,
        Move.Kind.ADD_BOT,
        seat.position,
        {"level": level},
        [public("bot_added", seat=seat.position, level=level)],
    )


def table_create(
    *,
    options: Mapping[str, Any] | None = None,
    bots: Mapping[int, str] | None = None,
    clocks: Mapping[str, Any] | None = None,
    seed: str | None = None,
    app: App | None = None,
    visibility: str = "public",
    invited: list[int] | None = None,
    creator: Player | None = None,
    spectator_delay: Mapping[str, Any] | None = None,
    rated: bool = False,
    hints: bool = False,
    bot_think_ms: int | None = None,
    bot_pace_ms: int | None = None,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """A new open table; `bots` fills seats with bots of the given level at once (a table of
    bots only starts at once). `visibility` is public, unlisted or private; `invited` names
    players of the same scope who may see and join it whatever its visibility, and the
    `creator` (a player creating it, not an app) is named with them. `spectator_delay`
    ({"seconds": N} or {"tricks": N}) holds back what players not seated at it see. A `rated`
    table's finished game updates its people's ratings (games.services.ratings); a `hints` one
    gives its seated players hints on their turn (games.services.hints; never a rated one).
    `bot_think_ms` and `bot_pace_ms` are its bots' thinking time and pace (games.bot_timing;
    None: the defaults), kept with its clocks."""
    try:
        opts = Options.from_dict(options or {})
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    clock_set: dict[str, Any] = {**clocks_from(clocks), **bot_timing.timing_from(bot_think_ms, bot_pace_ms)}
    bots = dict(bots or {})
    for position, level in bots.items():
        if type(position) is not int or not 0 <= position < opts.players:
            raise ServiceError("invalid_seat", f"no seat {position!r} at this table", kind="malformed")
        check_seat_level(level, app.pk if app else None)
    check_visibility(visibility)
    named = check_invited(invited, app)
    if creator is not None:
        named = sorted({*named, creator.pk})
    delay = spectator_delay_from(spectator_delay)
    if not isinstance(rated, bool):
        raise ServiceError("invalid_input", "rated is true or false", kind="malformed", field="rated")
    hints = check_hints(hints, rated)

    def act() -> Outcome:
        table = Table.objects.create(
            app=app,
            options=opts.to_dict(),
            clocks=clock_set,
            seed=seed or new_seed(),
            visibility=visibility,
            invited=named,
            spectator_delay=delay,
            rated=rated,
            hints=hints,
        )
        seats = Seat.objects.bulk_create(
            Seat(table=table, position=p, bot_level=bots.get(p, "")) for p in range(opts.players)
        )
        for position, level in sorted(bots.items()):
            event = public("bot_added", seat=position, level=level)
            log(table, Move.Kind.ADD_BOT, position, {"level": level}, [event])
        seated(table, seats)
        start_if_full(table, seats)
        table.save()
        push.invited(table, [p for p in named if creator is None or p != creator.pk])
        return Outcome(table)

    return run(act, idempotency)


def seat_join(
    *,
    table_id: int,
    player: Player,
    position: int | None = None,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    invite: str | None = None,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Seat a player (at `position`, or the lowest open seat); the game starts when every seat is
    taken. A private table takes only the players it named, or anyone with a valid `invite`
    code of it (a code that is sent must be valid, whatever the table's visibility); a seat
    taken with a code uses it once."""

    def change(table: Table, seats: list[Seat]) -> None:
        ticket = redeem(table, invite, player) if invite is not None else None
        if ticket is None and not reads.may_enter(table, player.pk):
            raise ServiceError("not_found", "no such table", kind="not_found")
        if any(s.player_id == player.pk for s in seats):
            raise ServiceError("already_seated", "you already have a seat at this table", kind="conflict")
        seat = open_seat(seats, position)
        seat.player = player
        seat.save(update_fields=["player"])
        if ticket is not None and ticket.uses_left is not None:
            ticket.uses_left -= 1
            ticket.save(update_fields=["uses_left"])
        event = public("seat_taken", seat=seat.position, player=player.pk, name=player.name)
        log(table, Move.Kind.JOIN, seat.position, {"player": player.pk}, [event])

    return _seat_change(table_id, scope, expected_version, idempotency, change)


def join_by_invite(
    *,
    code: str,
    player: Player,
    position: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Take a seat with an invite code alone: the code names its table (in the caller's scope)."""
    return seat_join(
        table_id=table_of_code(code, scope),
        player=player,
        position=position,
        scope=scope,
        invite=code,
        idempotency=idempotency,
    )


def bot_add(
    *,
    table_id: int,
    level: str = "random",
    position: int | None = None,
    player: Player | None = None,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Put a bot in a seat (the lowest open seat unless `position` is given). `player`: the
    player asking (None: the app), who must be able to see a private table."""
    check_level(level)

    def change(table: Table, seats: list[Seat]) -> None:
        check_seat_level(level, table.app_id)
        _seat_bot(table, open_seat(seats, position), level)

    return _seat_change(table_id, scope, expected_version, idempotency, change, player=player)


def table_start(
    *,
    table_id: int,
    fill_with: str = "basic",
    player: Player | None = None,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Start now: every open seat gets a bot of level `fill_with`. A player must be seated to
    start; an app (player None) may start any of its tables."""
    check_level(fill_with)

    def change(table: Table, seats: list[Seat]) -> None:
        if player is not None and not any(s.player_id == player.pk for s in seats):
            raise ServiceError("not_seated", "only a seated player can start the table", kind="rules")
        check_seat_level(fill_with, table.app_id)
        for seat in seats:
            if not seat.taken:
                _seat_bot(table, seat, fill_with)

    return _seat_change(table_id, scope, expected_version, idempotency, change, player=player)


def seat_leave(
    *,
    table_id: int,
    player: Player,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Give up a seat before the game starts."""

    def change(table: Table, seats: list[Seat]) -> None:
        seat = next((s for s in seats if s.player_id == player.pk), None)
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="conflict")
        seat.player = None
        seat.save(update_fields=["player"])
        log(
            table,
            Move.Kind.LEAVE,
            seat.position,
            {"player": player.pk},
            [public("seat_left", seat=seat.position, player=player.pk)],
        )

    return _seat_change(
        table_id, scope, expected_version, idempotency, change, may_start=False, player=player
    )


def table_abandon(
    *,
    table_id: int,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Close an unfinished table for good (an operator's decision); its log stays readable."""

    def act() -> Outcome:
        table, _ = locked(table_id, scope, with_seats=False)
        check_version(table, expected_version)
        if table.status in (Table.Status.FINISHED, Table.Status.ABANDONED):
            raise ServiceError("table_closed", f"the table is already {table.status}", kind="rules")
        log(table, Move.Kind.ABANDON, None, {}, [public("table_abandoned")])
        table.status = Table.Status.ABANDONED
        table.deadline = table.reminder_at = None
        table.save()
        return Outcome(table)

    return run(act, idempotency)
