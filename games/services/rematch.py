"""A rematch of a finished game: its people agree, and a new table with every seat moved one place on
starts at once (the lobby, games.services.lobby, makes and fills every other table)."""

from __future__ import annotations

from games.engine import new_seed
from games.errors import ServiceError
from games.models import Move, Player, Seat, Table
from games.services.common import UNSCOPED, Idempotency, Outcome, Scope, locked, run
from games.services.record import log, public, schedule, seated, start_if_full


def rematch(
    *,
    table_id: int,
    player: Player,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """A seated player proposes a rematch of a finished game, or accepts the one proposed (bots
    accept by themselves). When every person at the table has, a new table with the same options,
    clocks and bots starts with every seat moved one place on (seat p sits at p + 1), linked to this
    one by `rematch_of`; its id is in the `rematch_started` event. Asking again, or after the
    rematch started, changes nothing."""

    def act() -> Outcome:
        table, seats = locked(table_id, scope, player=player)
        if table.status != Table.Status.FINISHED:
            raise ServiceError("not_finished", "a rematch follows a finished game", kind="rules")
        seat = table.seat_of(player.pk)
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
        votes = list(table.rematch_votes)
        if player.pk in votes or Table.objects.filter(rematch_of=table).exists():
            return Outcome(table)
        votes.append(player.pk)
        table.rematch_votes = votes
        events = [public("rematch_proposed" if len(votes) == 1 else "rematch_accepted", seat=seat)]
        if {s.player_id for s in seats if s.player_id is not None} <= set(votes):
            events.append(public("rematch_started", new_table=_rematch_table(table, seats).pk))
        log(table, Move.Kind.REMATCH, seat, {}, events)
        table.save()
        return Outcome(table)

    return run(act, idempotency)


def _rematch_table(table: Table, seats: list[Seat]) -> Table:
    """The rematch: a new table like `table`, each occupant one seat on, started at once."""
    players = len(seats)
    new = Table.objects.create(
        app=table.app,
        options=table.options,
        clocks=table.clocks,
        seed=new_seed(),
        rematch_of=table,
        visibility=table.visibility,
        invited=table.invited,
        spectator_delay=table.spectator_delay,
        rated=table.rated,
        hints=table.hints,
    )
    moved = sorted(
        Seat.objects.bulk_create(
            Seat(table=new, position=(s.position + 1) % players, player=s.player, bot_level=s.bot_level)
            for s in seats
        ),
        key=lambda s: s.position,
    )
    for s in moved:
        if s.player is not None:
            event = public("seat_taken", seat=s.position, player=s.player.pk, name=s.player.name)
            log(new, Move.Kind.JOIN, s.position, {"player": s.player.pk}, [event])
        else:
            log(
                new,
                Move.Kind.ADD_BOT,
                s.position,
                {"level": s.bot_level},
                [public("bot_added", seat=s.position, level=s.bot_level)],
            )
    seated(new, moved)
    start_if_full(new, moved)
    new.save()
    schedule(new)  # its streams, clock and bot moves, after the commit
    return new
