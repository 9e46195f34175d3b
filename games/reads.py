"""What a caller may read, built only from each viewer's view: shared by REST, GraphQL and streams."""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from games import bot_timing, paging
from games.accounts import Principal
from games.engine import Options, State, action_from_dict, state_from_dict, view
from games.errors import ServiceError
from games.infra import spectators
from games.models import Hand, Move, Seat, Table, seat_of_player
from games.prepared import Prepared
from games.records import log as records

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


MY_TURNS = 100  # most turns one answer lists (`more` says there are others)
_PLAYED = (Table.Status.PASSING, Table.Status.PLAYING, Table.Status.MOON_CHOICE)
_CLOCK_OF_PHASE = {"passing": "pass", "playing": "play", "moon_choice": "moon"}  # also the action owed


def turns_of(principal: Principal, limit: int = MY_TURNS) -> dict[str, Any]:
    """The calling player's turns: each unfinished table where their seat is to act (not a seat
    marked away, which the server plays), soonest deadline first, then the tables without a clock,
    by id; each with its status, version, the seat, the action owed (pass, play or moon), the
    deadline and the clock of that phase. Nothing else of the game (no card). At most `limit`
    (`more`: there are others). A plain list, not cursor pages: whose turn it is lives in each
    table's engine state, so it cannot be a keyset query, and a player's unfinished tables are few."""
    player = principal.require_player("a player's turns need a player's token")
    rows = (
        Table.objects.filter(seats__player=player, status__in=_PLAYED)
        .order_by(F("deadline").asc(nulls_last=True), "pk")
        .only("pk", "status", "version", "deadline", "state", "seating", "clocks")
    )
    turns: list[dict[str, Any]] = []
    for table in rows.iterator(chunk_size=50):
        seat = table.seat_of(player.pk)
        if seat is None or table.state is None or table.seating[seat].get("away"):
            continue
        state = state_from_dict(table.state)
        if seat not in state.to_act():
            continue
        if len(turns) == limit:
            return {"turns": turns, "more": True}
        owed = _CLOCK_OF_PHASE[state.phase]
        clock = table.clocks.get(owed)
        turns.append(
            {
                "table": table.pk,
                "status": str(table.status),
                "version": table.version,
                "seat": seat,
                "action": owed,
                "deadline": iso(table.deadline),
                "clock": clock if isinstance(clock, int) else None,
            }
        )
    return {"turns": turns, "more": False}


def visible_tables(principal: Principal) -> QuerySet[Table]:
    """An app sees its own tables; a player sees its app's tables (guests: the guest tables),
    private ones only where they sit or were named (`may_see` checks one table; `table_for` runs
    this filter compiled once)."""
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
    # A player's own tables are all visible to them: no need for the list's visibility rule, whose
    # OR with a subquery would keep the planner from walking the player's seats newest first.
    tables = visible_tables(principal) if mine else listed_tables(principal)
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


TABLE_PAGES = paging.Keyset("table", ("-id",), (int,))  # tables newest first (games/paging.py)


def moves_from(table: Table, first: int, limit: int = PAGE, upto: int | None = None) -> list[Move]:
    """The table's moves from sequence `first` up to the version read with the table (a move
    committed since comes next time, once the table read with it covers it), or up to `upto`
    (a delayed spectator's cut), at most `limit`."""
    last = table.version if upto is None else upto
    return records.moves(table, after=first - 1, upto=last, limit=limit, only=("seq", "events"))


# -- the spectators' delay ---------------------------------------------------------------------

_PHASE_STATUS = {
    "passing": "passing",
    "playing": "playing",
    "moon_choice": "moon_choice",
    "game_over": "finished",
}
_ACTIONS = ("pass", "play", "moon")
_replays: OrderedDict[tuple[int, int], State | None] = OrderedDict()
_replays_lock = threading.Lock()
REPLAYS = 256  # delayed states kept per process (a table's spectators share one per cut)


def delay_for(table: Table, principal: Principal) -> dict[str, int] | None:
    """The delay this viewer sees the table with: the table's `spectator_delay`, for a player
    not seated at it while the game is on. Its seated players and its app (the operator) see it
    live, as does everyone once it is over (finished or abandoned: nothing left to help)."""
    delay = table.spectator_delay
    if not delay or is_over(table) or principal.player is None:
        return None
    if table.seat_of(principal.player.pk) is not None:
        return None
    return dict(delay)


def spectator_cut(table: Table, now: dt.datetime | None = None) -> tuple[int, dt.datetime | None]:
    """The last move a delayed spectator may see, and when (for a delay in seconds) the move after
    it becomes visible (None: not by time alone). {"seconds": N}: the last move made at least N
    seconds ago. {"tricks": N}: the move that completed the trick N tricks before the last
    completed one (tricks counted across hands), or, before that many were completed, the last move
    before the first card was played. Two small indexed queries."""
    delay = table.spectator_delay or {}
    if is_over(table):  # never delayed (delay_for): answered from the log, wherever it is kept
        return _cut_of(table, delay, records.moves(table, upto=table.version), now)
    moves = records.rows(table, upto=table.version)
    if delay.get("seconds"):
        lag = dt.timedelta(seconds=delay["seconds"])
        moment = (now or timezone.now()) - lag
        cut = moves.filter(created_at__lte=moment).order_by("-seq").values_list("seq", flat=True).first()
        after = moves.filter(seq__gt=cut or 0).order_by("seq").values_list("created_at", flat=True).first()
        return cut or 0, None if after is None else after + lag
    tricks = delay.get("tricks") or 0
    if not tricks:
        return table.version, None
    players = int(table.options["players"])
    plays = moves.filter(kind=Move.Kind.PLAY).order_by("seq").values_list("seq", flat=True)
    shown = plays.count() // players - tricks  # completed tricks a spectator may see
    if shown >= 1:
        return plays[shown * players - 1], None
    first = plays.first()
    return (table.version if first is None else first - 1), None


def _cut_of(
    table: Table, delay: dict[str, Any], log: list[Move], now: dt.datetime | None
) -> tuple[int, dt.datetime | None]:
    """spectator_cut over a move log in hand (the same rules, without queries)."""
    if delay.get("seconds"):
        lag = dt.timedelta(seconds=delay["seconds"])
        moment = (now or timezone.now()) - lag
        cut = next((m.seq for m in reversed(log) if m.created_at <= moment), 0)
        after = next((m.created_at for m in log if m.seq > cut), None)
        return cut, None if after is None else after + lag
    tricks = delay.get("tricks") or 0
    if not tricks:
        return table.version, None
    plays = [m.seq for m in log if m.kind == Move.Kind.PLAY]
    shown = len(plays) // int(table.options["players"]) - tricks
    if shown >= 1:
        return plays[shown * int(table.options["players"]) - 1], None
    return (table.version if not plays else plays[0] - 1), None


def shown_version(table: Table, principal: Principal) -> int:
    """The version this viewer sees the table at: its version, or a delayed spectator's cut."""
    return table.version if delay_for(table, principal) is None else spectator_cut(table)[0]


def state_at(table: Table, cut: int) -> State | None:
    """The table's game as it was after move `cut`, replayed from its seed and move log (None
    before the start); kept per process, so a table's delayed spectators share each replay."""
    key = (table.pk, cut)
    with _replays_lock:
        if key in _replays:
            _replays.move_to_end(key)
            return _replays[key]
    rows = records.moves(
        table, upto=cut, kinds=["start", *_ACTIONS], only=("seq", "kind", "position", "payload")
    )
    state = None
    for move in rows:
        if move.kind == "start":
            state = State.new_game(Options.from_dict(table.options), table.seed, table=str(table.pk))
        elif state is not None:
            state.push(move.position, action_from_dict(move.payload))
    with _replays_lock:
        _replays[key] = state
        while len(_replays) > REPLAYS:
            _replays.popitem(last=False)
    return state


def _as_of(table: Table, state: State | None) -> tuple[int, bool]:
    """(hand number, game over) at the viewer's cut, for what is revealed once a hand is over."""
    if state is None:
        return 0, False
    return state.hand_no, state.phase == "game_over"


def table_for(principal: Principal, table_id: int) -> Table:
    """A table the caller may see (one query: the seats are stored on the table row). Only reads:
    the adapters read through services.table_seen, which first acts on a clock that ran out."""
    app = principal.app
    table = _GUEST_TABLE.first(table_id) if app is None else _APP_TABLE.first(app.pk, table_id)
    if table is None or not may_see(table, principal):  # another app's table, or a private one,
        # is indistinguishable from no table
        raise ServiceError("not_found", "no such table", kind="not_found")
    return table


def table_row(table_id: int) -> Table | None:
    """A table by id, in no caller's scope: for the event streams' shared read of a table change,
    whose viewers were each authorized when their stream opened (a table never changes app)."""
    return _TABLE_ROW.first(table_id)


def table_head(table_id: int) -> Table | None:
    """A table by id without its engine state (`state` is deferred: reading it costs a query):
    what a bot task checks before it locks the table, when its seats need no decision made first."""
    return _TABLE_HEAD.first(table_id)


_TABLE_ROW = Prepared(lambda pk: Table.objects.filter(pk=pk)[:1], [int])
_TABLE_HEAD = Prepared(lambda pk: Table.objects.filter(pk=pk).defer("state")[:1], [int])
# visible_tables(principal).filter(pk=...), compiled once (games.prepared): every read of a table
# runs it, and compiling it was a tenth of the web's CPU under load (issue 37).
_GUEST_TABLE = Prepared(lambda pk: Table.objects.filter(app__isnull=True, pk=pk)[:1], [int])
_APP_TABLE = Prepared(lambda app, pk: Table.objects.filter(app_id=app, pk=pk)[:1], [int, int])


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
    delay = delay_for(table, principal)
    version, status, deadline = table.version, str(table.status), iso(table.deadline)
    if delay is not None:  # a delayed spectator: the table as it was at the cut
        version = spectator_cut(table)[0]
        state = state_at(table, version)
        status = "open" if state is None else _PHASE_STATUS[state.phase]
        deadline = None
    body: dict[str, Any] = {
        "id": table.pk,
        "status": status,
        "version": version,
        "options": table.options,
        "clocks": bot_timing.turn_clocks(table.clocks),
        "bot_think_ms": bot_timing.think_ms(table),
        "bot_pace_ms": bot_timing.pace_ms(table),
        "deadline": deadline,
        "seats": table.seating,
        "your_seat": seat,
        "game": None,
        "rematch_of": table.rematch_of_id,
        "rematch": rematch_of(table),
        "visibility": table.visibility,
        "invited": table.invited,
        "spectator_delay": table.spectator_delay,
        "delayed": delay is not None,
        "spectators": spectators.count(table.pk),
        "rated": table.rated,
        "hints": table.hints,
    }
    if delay is not None:
        body["game"] = None if state is None else view(state, None, history=False)
    elif table.state is not None or is_over(table):
        parsed = state if state is not None else records.state(table)  # a sealed game is replayed
        body["game"] = None if parsed is None else view(parsed, seat, history=False)
    return body


def rematch_of(table: Table) -> dict[str, Any] | None:
    """After a game: the seats whose players asked for a rematch and the rematch table once it
    started (null before anyone asked: no query then)."""
    if not table.rematch_votes:
        return None
    asked = [s["position"] for s in table.seating if s["player"] in table.rematch_votes]
    started = Table.objects.filter(rematch_of=table).values_list("pk", flat=True).first()
    return {"asked": asked, "table": started}


def scoresheet(table: Table, principal: Principal | None = None) -> dict[str, Any]:
    """Points and running totals per finished hand (and the moon, where one was shot): the rows of
    the engine's scoresheet, the same for every viewer (a delayed spectator's: as at the cut),
    which REST and GraphQL both answer."""
    if principal is not None and delay_for(table, principal) is not None:
        state = state_at(table, spectator_cut(table)[0])
    else:
        state = records.state(table)
    if state is None:
        return {"hands": [], "totals": []}
    hands = view(state, None, history=False)["scoresheet"]
    return {"hands": hands, "totals": hands[-1]["totals"] if hands else []}


def _hand_over(table: Table, hand: int, as_of: tuple[int, bool] | None = None) -> bool:
    """Whether hand `hand` is over (at a delayed spectator's cut: `as_of`), so that its deal and
    passes are public."""
    if as_of is not None:
        return hand < as_of[0] or as_of[1]
    return hand < table.hand_number or table.status == Table.Status.FINISHED


def move_body(
    move: Move, table: Table, seat: int | None, as_of: tuple[int, bool] | None = None
) -> dict[str, Any]:
    """One logged move as `seat` may see it: a pass shows its cards only to the seat that passed,
    until its hand is over (`as_of`: the hand and game-over at a delayed spectator's cut)."""
    payload = move.payload
    if move.kind == Move.Kind.PASS and move.position != seat and not _hand_over(table, move.hand, as_of):
        payload = {"type": "pass"}
    return {
        "seq": move.seq,
        "hand": move.hand,
        "kind": move.kind,
        "position": move.position,
        "payload": payload,
        "at": iso(move.created_at),
    }


def _check_after(table: Table, after: int, version: int | None = None) -> None:
    """`after` is a sequence number this table has reached (as the viewer sees it: `version`):
    one beyond it is a client's mistake (a version of another table, or made up), which would
    otherwise be polled for ever."""
    version = table.version if version is None else version
    if after > version:
        raise ServiceError(
            "invalid_after",
            f"after {after} is beyond this table's version {version}",
            kind="malformed",
            version=version,
        )


def moves_after(table: Table, principal: Principal, after: int, limit: int = PAGE) -> dict[str, Any]:
    """The moves after sequence `after`, at most `limit` of them (a delayed spectator's: up to the cut)."""
    upto, as_of = table.version, None
    if delay_for(table, principal) is not None:
        upto = spectator_cut(table)[0]
        as_of = _as_of(table, state_at(table, upto))
    _check_after(table, after, upto)
    seat = seat_of(table, principal)
    moves = records.moves(table, after=after, upto=upto, limit=limit)
    return {"moves": [move_body(m, table, seat, as_of) for m in moves], "version": upto}


def visible_events(moves: Iterable[Move], seat: int | None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(move seq, index among the move's events, event) for each event of these moves that `seat`
    may see (None: only public ones). Every answer that shows events, polled or streamed, is
    built here, so the redaction is the same everywhere."""
    for m in moves:
        for index, (kind, data, to, hand) in enumerate(m.events):
            if to is None or to == seat:
                yield m.seq, index, {"seq": m.seq, "hand": hand, "type": kind, **data}


def events_for(moves: list[Move], seat: int | None, ids: bool = False) -> list[dict[str, Any]]:
    """The events of these moves that `seat` may see, each with the sequence number of the move
    that caused it and the hand it belongs to (and with `ids`, its stream event id `<seq>:<n>`)."""
    if ids:
        return [{"id": f"{seq}:{index}", **event} for seq, index, event in visible_events(moves, seat)]
    return [event for _, _, event in visible_events(moves, seat)]


def events_after(
    table: Table, principal: Principal, after: int, limit: int = PAGE, ids: bool = False
) -> dict[str, Any]:
    """The caller's events of the (at most `limit`) moves after sequence `after`; poll again with
    after = `version`. With `ids`, each event has its stream event id (GraphQL's `id`)."""
    upto = shown_version(table, principal)  # a delayed spectator's cut
    _check_after(table, after, upto)
    # Up to the version read with the table: a move committed since comes in the next poll (else
    # it would come twice, as the answer's version would not cover it).
    moves = records.moves(table, after=after, upto=upto, limit=limit, only=("seq", "events"))
    more = len(moves) == limit and moves[-1].seq < upto
    return {
        "events": events_for(moves, seat_of(table, principal), ids),
        "version": moves[-1].seq if more else upto,
        "more": more,
    }


def hand_summary(hand: Hand, as_of: tuple[int, bool] | None = None) -> dict[str, Any]:
    finished = hand.finished if as_of is None else (hand.number < as_of[0] or as_of[1])
    return {
        "number": hand.number,
        "pass_direction": hand.pass_direction,
        "deal_commitment": hand.deal_commitment,
        "finished": finished,
        "seed": hand.seed if finished else None,
    }


def _delayed_as_of(
    table: Table, principal: Principal | None
) -> tuple[int, State | None, tuple[int, bool]] | None:
    """For a delayed spectator: the cut, the game then, and (hand, game over) then; else None."""
    if principal is None or delay_for(table, principal) is None:
        return None
    cut = spectator_cut(table)[0]
    state = state_at(table, cut)
    return cut, state, _as_of(table, state)


def hands(table: Table, principal: Principal | None = None) -> list[dict[str, Any]]:
    """Every hand dealt so far (for a delayed spectator: dealt by the cut)."""
    delayed = _delayed_as_of(table, principal)
    if delayed is None:
        return [hand_summary(h) for h in records.hands(table)]
    _, _, as_of = delayed
    return [hand_summary(h, as_of) for h in records.hands(table) if h.number <= as_of[0]]


def hand_replay(table: Table, principal: Principal, number: int) -> dict[str, Any]:
    """A hand's replay: once it is over, the full record (deals, passes, tricks, points, seed) and
    every move; before, its moves as the caller may see them."""
    delayed = _delayed_as_of(table, principal)
    hand = next((h for h in records.hands(table) if h.number == number), None)
    if hand is None or (delayed is not None and number > delayed[2][0]):
        raise ServiceError("not_found", f"no hand {number} at this table", kind="not_found")
    as_of = None if delayed is None else delayed[2]
    summary = hand_summary(hand, as_of)
    record = None
    state = records.state(table) if delayed is None else delayed[1]
    if summary["finished"] and state is not None:
        record = next((dict(r) for r in state.history if r["hand"] == number), None)
    seat = seat_of(table, principal)
    upto = None if delayed is None else delayed[0]
    moves = records.moves(table, upto=upto, kinds=["pass", "play", "moon"], hand=number)
    body = [move_body(m, table, seat, as_of) for m in moves]
    return {**summary, "record": record, "moves": body}
