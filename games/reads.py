"""What a caller may read, built only from each viewer's view: shared by REST, GraphQL and streams."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Count, Q, QuerySet

from games.accounts import Principal
from games.engine import State, state_from_dict, view
from games.errors import ServiceError
from games.models import Hand, Move, Seat, Table, seat_of_player

PAGE = 500  # most moves or events answered at once
TABLE_STATUSES: tuple[str, ...] = tuple(Table.Status.values)
OVER = (Table.Status.FINISHED, Table.Status.ABANDONED)  # a table that will never move again
VISIBILITIES = ("public", "unlisted", "private")  # Table.visibility (docs/lobby.md)


def is_over(table: Table) -> bool:
    return table.status in OVER


def unfinished_tables_of(principal: Principal, limit: int) -> list[int]:
    """Ids of the unfinished tables the calling player sits at (at most `limit`)."""
    player = principal.require_player("a player's tables need a player's token")
    seated = Table.objects.filter(seats__player=player).exclude(status__in=OVER)
    return list(seated.values_list("pk", flat=True)[:limit])


def seated_tables(principal: Principal, limit: int) -> list[dict[str, Any]]:
    """The unfinished tables the calling player sits at, newest first (at most `limit`): each one's
    id, status, version and the player's seat; none for an app."""
    if principal.player is None:
        return []
    player_id = principal.player.pk
    rows = (
        Table.objects.filter(seats__player_id=player_id)
        .exclude(status__in=OVER)
        .order_by("-created_at", "-pk")
        .values_list("pk", "status", "version", "seating")[:limit]
    )
    return [
        {"id": pk, "status": status, "version": version, "seat": seat_of_player(seating, player_id)}
        for pk, status, version, seating in rows
    ]


def visible_tables(principal: Principal) -> QuerySet[Table]:
    """An app sees its own tables; a player sees its app's tables (guests: the guest tables),
    private ones only where they sit or were named (`may_see` checks one table)."""
    return Table.objects.filter(app=principal.app)


def listed_tables(principal: Principal) -> QuerySet[Table]:
    """The tables a list shows: every table of an app's own; for a player, the public tables of
    their scope and those where they sit (unlisted and private tables are never listed otherwise)."""
    tables = visible_tables(principal)
    if principal.player is None:
        return tables
    seated = Seat.objects.filter(player=principal.player).values("table_id")
    return tables.filter(Q(visibility="public") | Q(pk__in=seated))


def may_enter(table: Table, player_id: int) -> bool:
    """Whether a player of the table's scope may see and join it without an invite code: any
    public or unlisted table, a private one only where they sit or were named."""
    return table.visibility != "private" or player_id in table.invited or table.seat_of(player_id) is not None


def may_see(table: Table, principal: Principal) -> bool:
    """Whether this caller (already in the table's scope) may see the table: its app always."""
    return principal.player is None or may_enter(table, principal.player.pk)


def filtered_tables(
    principal: Principal, *, status: str | None = None, open_seats: bool = False, mine: bool = False
) -> QuerySet[Table]:
    """The caller's tables with the list filters of both APIs; a bad filter is `invalid_filter`."""
    tables = listed_tables(principal)
    if status:
        if status not in Table.Status.values:
            raise ServiceError(
                "invalid_filter", f"status must be one of {', '.join(Table.Status.values)}", kind="malformed"
            )
        tables = tables.filter(status=status)
    if open_seats:
        tables = tables.annotate(
            free=Count("seats", filter=Q(seats__player__isnull=True, seats__bot_level=""))
        ).filter(status=Table.Status.OPEN, free__gt=0)
    if mine:
        tables = tables.filter(seats__player=principal.require_player("mine needs a player's token"))
    return tables


def tables_before(tables: QuerySet[Table], before_id: int | None, count: int) -> list[Table]:
    """Up to `count` of these tables, newest first, with ids below `before_id` (a keyset page)."""
    tables = tables.order_by("-id")
    if before_id is not None:
        tables = tables.filter(pk__lt=before_id)
    return list(tables[:count])


def moves_from(table: Table, first: int, limit: int = PAGE) -> list[Move]:
    """The table's moves from sequence `first` up to the version read with the table (a move
    committed since comes next time, once the table read with it covers it), at most `limit`."""
    moves = table.moves.filter(seq__gte=first, seq__lte=table.version)
    return list(moves.order_by("seq").only("seq", "events")[:limit])


def table_for(principal: Principal, table_id: int) -> Table:
    """A table the caller may see (one query: the seats are stored on the table row). Only reads:
    the adapters read through services.table_seen, which first acts on a clock that ran out."""
    table = visible_tables(principal).filter(pk=table_id).first()
    if table is None or not may_see(table, principal):  # another app's table, or a private one,
        # is indistinguishable from no table
        raise ServiceError("not_found", "no such table", kind="not_found")
    return table


def table_row(table_id: int) -> Table | None:
    """A table by id, in no caller's scope: for the event streams' shared read of a table change,
    whose viewers were each authorized when their stream opened (a table never changes app)."""
    return Table.objects.filter(pk=table_id).first()


def table_versions(table_ids: Iterable[int]) -> dict[int, int]:
    """The version of each of these tables (one query): the streams' safety poll."""
    return dict(Table.objects.filter(pk__in=list(table_ids)).values_list("pk", "version"))


def unfinished_tables_of_players(player_ids: Iterable[int], limit: int) -> dict[int, set[int]]:
    """The unfinished tables each of these players sits at (at most `limit` each; one query)."""
    out: dict[int, set[int]] = {}
    rows = Seat.objects.filter(player_id__in=list(player_ids)).exclude(table__status__in=OVER)
    for player_id, table_id in rows.values_list("player_id", "table_id"):
        tables = out.setdefault(player_id, set())
        if len(tables) < limit:
            tables.add(table_id)
    return out


def seat_of(table: Table, principal: Principal) -> int | None:
    if principal.player is None:
        return None
    return table.seat_of(principal.player.pk)


def iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def table_body(table: Table, principal: Principal, state: State | None = None) -> dict[str, Any]:
    """The table as this principal may see it: seats, status, version, clocks and the engine's
    view for their seat (a spectator's view for an app or an unseated player). `state` is the
    table's state already parsed, when the caller shares one parse between viewers."""
    seat = seat_of(table, principal)
    body: dict[str, Any] = {
        "id": table.pk,
        "status": table.status,
        "version": table.version,
        "options": table.options,
        "clocks": table.clocks,
        "deadline": iso(table.deadline),
        "seats": table.seating,
        "your_seat": seat,
        "game": None,
        "rematch_of": table.rematch_of_id,
        "rematch": rematch_of(table),
        "visibility": table.visibility,
        "invited": table.invited,
    }
    if table.state is not None:
        parsed = state if state is not None else state_from_dict(table.state)
        body["game"] = view(parsed, seat, history=False)
    return body


def rematch_of(table: Table) -> dict[str, Any] | None:
    """After a game: the seats whose players asked for a rematch and the rematch table once it
    started (null before anyone asked: no query then)."""
    if not table.rematch_votes:
        return None
    asked = [s["position"] for s in table.seating if s["player"] in table.rematch_votes]
    started = Table.objects.filter(rematch_of=table).values_list("pk", flat=True).first()
    return {"asked": asked, "table": started}


def scoresheet(table: Table) -> dict[str, Any]:
    """Points and running totals per finished hand (and the moon, where one was shot): the rows of
    the engine's scoresheet, the same for every viewer, which REST and GraphQL both answer."""
    if table.state is None:
        return {"hands": [], "totals": []}
    hands = view(state_from_dict(table.state), None, history=False)["scoresheet"]
    return {"hands": hands, "totals": hands[-1]["totals"] if hands else []}


def _hand_over(table: Table, hand: int) -> bool:
    """Whether hand `hand` is over, so that its deal and passes are public."""
    return hand < table.hand_number or table.status == Table.Status.FINISHED


def move_body(move: Move, table: Table, seat: int | None) -> dict[str, Any]:
    """One logged move as `seat` may see it: a pass shows its cards only to the seat that passed,
    until its hand is over."""
    payload = move.payload
    if move.kind == Move.Kind.PASS and move.position != seat and not _hand_over(table, move.hand):
        payload = {"type": "pass"}
    return {
        "seq": move.seq,
        "hand": move.hand,
        "kind": move.kind,
        "position": move.position,
        "payload": payload,
        "at": iso(move.created_at),
    }


def _check_after(table: Table, after: int) -> None:
    """`after` is a sequence number this table has reached: one beyond it is a client's mistake
    (a version of another table, or made up), which would otherwise be polled for ever."""
    if after > table.version:
        raise ServiceError(
            "invalid_after",
            f"after {after} is beyond this table's version {table.version}",
            kind="malformed",
            version=table.version,
        )


def moves_after(table: Table, principal: Principal, after: int, limit: int = PAGE) -> dict[str, Any]:
    """The moves after sequence `after`, at most `limit` of them."""
    _check_after(table, after)
    seat = seat_of(table, principal)
    moves = table.moves.filter(seq__gt=after, seq__lte=table.version).order_by("seq")[:limit]
    return {"moves": [move_body(m, table, seat) for m in moves], "version": table.version}


def visible_events(moves: Iterable[Move], seat: int | None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(move seq, index among the move's events, event) for each event of these moves that `seat`
    may see (None: only public ones). Every answer that shows events, polled or streamed, is
    built here, so the redaction is the same everywhere."""
    for m in moves:
        for index, (kind, data, to, hand) in enumerate(m.events):
            if to is None or to == seat:
                yield m.seq, index, {"seq": m.seq, "hand": hand, "type": kind, **data}


def events_for(moves: list[Move], seat: int | None) -> list[dict[str, Any]]:
    """The events of these moves that `seat` may see, each with the sequence number of the move
    that caused it and the hand it belongs to."""
    return [event for _, _, event in visible_events(moves, seat)]


def events_after(table: Table, principal: Principal, after: int, limit: int = PAGE) -> dict[str, Any]:
    """The caller's events of the (at most `limit`) moves after sequence `after`; poll again with
    after = `version`."""
    _check_after(table, after)
    # Up to the version read with the table: a move committed since comes in the next poll (else
    # it would come twice, as the answer's version would not cover it).
    rows = table.moves.filter(seq__gt=after, seq__lte=table.version).order_by("seq")
    moves = list(rows.only("seq", "events")[:limit])
    more = len(moves) == limit and moves[-1].seq < table.version
    return {
        "events": events_for(moves, seat_of(table, principal)),
        "version": moves[-1].seq if more else table.version,
        "more": more,
    }


def hand_summary(hand: Hand) -> dict[str, Any]:
    return {
        "number": hand.number,
        "pass_direction": hand.pass_direction,
        "deal_commitment": hand.deal_commitment,
        "finished": hand.finished,
        "seed": hand.seed if hand.finished else None,
    }


def hands(table: Table) -> list[dict[str, Any]]:
    return [hand_summary(h) for h in table.hands.all()]


def hand_replay(table: Table, principal: Principal, number: int) -> dict[str, Any]:
    """A hand's replay: once it is over, the full record (deals, passes, tricks, points, seed) and
    every move; before, its moves as the caller may see them."""
    hand = table.hands.filter(number=number).first()
    if hand is None:
        raise ServiceError("not_found", f"no hand {number} at this table", kind="not_found")
    record = None
    if hand.finished and table.state is not None:
        history = state_from_dict(table.state).history
        record = next((dict(r) for r in history if r["hand"] == number), None)
    seat = seat_of(table, principal)
    moves = table.moves.filter(hand=number, kind__in=["pass", "play", "moon"]).order_by("seq")
    return {**hand_summary(hand), "record": record, "moves": [move_body(m, table, seat) for m in moves]}
