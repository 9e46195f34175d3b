"""Playing: a seat's pass, play or moon choice, the moves the server owes (bots, seats marked away,
clocks that ran out), a player taking their seat back, and a table rebuilt from its log."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, cast

from django.db import transaction
from django.utils import timezone

from bots.strategy import decide
from games import bot_timing, reads
from games.accounts import Principal
from games.engine import (
    GAME_OVER,
    MOON,
    PLAYING,
    EngineError,
    Event,
    MoonChoice,
    Pass,
    State,
    action_from_dict,
    state_from_dict,
    state_to_dict,
    view,
)
from games.errors import ServiceError
from games.infra import metrics
from games.models import Move, Player, SeatRow, Table
from games.records import log as records
from games.services import tournaments
from games.services.common import (
    UNSCOPED,
    Idempotency,
    Outcome,
    Scope,
    check_version,
    check_version_for_pass,
    locked,
    locked_all_unless_busy,
    locked_unless_busy,
    run,
    seats_of,
)
from games.services.matchmaking import deadline_passed
from games.services.record import (
    KIND_OF_ACTION,
    log,
    plays_itself,
    public,
    save_seats,
    schedule,
    start_clock,
    store_state,
    write,
)

TASK_THINKING_MS = 20_000  # the most thinking time one bot task spends (its soft time limit is 60 s)
_PLAY_FIELDS = [
    "state",
    "status",
    "hand_number",
    "version",
    "deadline",
    "reminder_at",
    "bot_turn",
    "updated_at",
    "finished_at",
]
BOT_FIELDS = [*_PLAY_FIELDS, "bot_rng"]  # what bot moves change on the table row (a tournament's stream)


def action_submit(
    *,
    table_id: int,
    action: Mapping[str, Any],
    player: Player | None = None,
    position: int | None = None,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Apply one seat's pass, play or moon choice (the wire form of `games.engine` actions): the
    seat of `player`, or `position` when the service acts for a seat itself."""
    try:
        parsed = action_from_dict(action)
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    payload = parsed.to_dict()

    def act() -> Outcome:
        table, _ = locked(table_id, scope, with_seats=False, player=player)
        seat = position
        if player is not None:
            seat = table.seat_of(player.pk)
            if seat is None:
                raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
        if seat is None or not 0 <= seat < len(table.seating):
            raise ServiceError("invalid_seat", f"no seat {seat!r} at this table", kind="malformed")
        if isinstance(parsed, Pass):
            check_version_for_pass(table, seat, expected_version)
        else:
            check_version(table, expected_version)
        state = records.state(table)  # a sealed game's is replayed (its errors are the same)
        if state is None or table.status == Table.Status.ABANDONED:
            code, why = (
                ("not_started", "has not started yet") if state is None else ("table_closed", "was abandoned")
            )
            raise ServiceError(code, f"the game {why}", kind="rules")
        before = (state.phase, state.hand_no, len(state.sheet))
        try:
            events = state.push(seat, parsed)
        except EngineError as exc:
            if table.deadline is not None and table.deadline <= timezone.now():
                overdue.append(table.pk)
            raise ServiceError.from_engine(exc) from exc
        fields, back = _PLAY_FIELDS, []
        if player is not None and (table.seating[seat]["away"] or table.seating[seat].get("timeouts")):
            events = [*take_back(table, seat), *events]  # timeouts count only in a row
            fields, back = [*_PLAY_FIELDS, "seating"], [seat]
        key = idempotency.key if idempotency else ""
        moves: list[Move] = []
        log(table, KIND_OF_ACTION[type(parsed)], seat, payload, events, key, staged=moves)
        metrics.action_applied(KIND_OF_ACTION[type(parsed)], "human")
        store_state(table, state, before)
        write(table, moves, fields, seats=back)
        return Outcome(table, events, state=state)

    overdue: list[int] = []
    try:
        return run(act, idempotency)
    finally:  # a write refused on a table whose clock ran out makes the server act first
        if overdue:
            clock_expired(table_id=overdue[0])


def seat_back(
    *, table_id: int, player: Player, scope: Scope = UNSCOPED, idempotency: Idempotency | None = None
) -> Outcome:
    """ "I'm back": a player whose seat was marked away after timeouts takes it back from the bot.
    Nothing changes (and the version stays) when the seat was not away."""

    def act() -> Outcome:
        table, _ = locked(table_id, scope, with_seats=False, player=player)
        seat = table.seat_of(player.pk)
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
        if table.seating[seat]["away"] or table.seating[seat].get("timeouts"):
            log(table, Move.Kind.BACK, seat, {}, take_back(table, seat))
            save_seats(table, [seat])
            if table.state is not None:
                state = state_from_dict(table.state)
                table.bot_turn = state.phase != GAME_OVER and any(
                    plays_itself(table, s) for s in state.to_act()
                )
                if table.deadline is None:  # their turn, taken back from the bot: their clock runs
                    start_clock(table, state)
            table.save()
        return Outcome(table)

    return run(act, idempotency)


def clock_expired(
    *, table_id: int, version: int | None = None, now: dt.datetime | None = None, wait: bool = True
) -> Outcome:
    """The clock ran out: the server acts for every seat it was waiting on (the basic bot's pass
    or play, the moon default of docs/rules.md). A seat that times out `away_after` times in a row is
    marked away and played by a bot until its player acts again. Nothing happens when the
    deadline has not passed or `version` is not the table's (the table moved on), nor, when `wait`
    is False, while another transaction holds the table (the catch-up after an outage: whoever holds
    it is acting on it, and the table's own clock task still comes); with `wait` False a table that
    is busy or moved on is not even locked, so that finding nothing to do writes nothing."""
    if not wait and version is None:
        raise ValueError("clock_expired(wait=False) needs the version the clock was due at")

    def act() -> Outcome:
        if wait or version is None:  # (version is None only with wait: refused above)
            table, _ = locked(table_id, UNSCOPED, with_seats=False)
        else:
            free = locked_unless_busy(table_id, version)
            if free is None:
                return Outcome(None)
            table = free
        return _act_for_late_seats(table, version, now or timezone.now())

    return run(act, None)


def clocks_expired(due: Sequence[tuple[int, int]], now: dt.datetime | None = None) -> int:
    """`clock_expired(wait=False)` for several tables (id and the version each clock was due at) in
    one transaction: the tables no other transaction holds are locked in one statement, each one's
    late seats acted for and written in one more, and one commit ends them all (the catch-up after
    an outage, games.tasks: a table in a transaction of its own costs four round trips to
    PostgreSQL, begin, lock, write and commit, each a wait on a machine busy reconnecting). How many
    were acted on. One table's failure undoes the others' too: their own clock tasks are still
    due, and act on them."""
    if not due:
        return 0
    version, order = dict(due), {pk: i for i, (pk, _) in enumerate(due)}
    with transaction.atomic():
        free = locked_all_unless_busy(due)
        moment = now or timezone.now()
        acted = 0
        for table in sorted(free, key=lambda t: order[t.pk]):  # in the order given (earliest first)
            out = _act_for_late_seats(table, version[table.pk], moment)
            schedule(out.table)
            acted += out.table is not None
        return acted


def _act_for_late_seats(table: Table, version: int | None, moment: dt.datetime) -> Outcome:
    """clock_expired's work on the locked table."""
    if table.state is None and (version is None or table.version == version):
        seats = seats_of(table)  # the quick-play wait's open seats, to fill
        if not deadline_passed(table, seats, moment):  # a quick-play wait ran out
            return Outcome(None)
        table.save()
        return Outcome(table)
    if (
        (version is not None and table.version != version)
        or table.deadline is None
        or table.deadline > moment
        or table.state is None
        or table.status in (Table.Status.FINISHED, Table.Status.ABANDONED)
    ):
        return Outcome(None)
    state = state_from_dict(table.state)
    late = [s for s in state.to_act() if not plays_itself(table, s)]
    if late:
        metrics.clock_late((moment - table.deadline).total_seconds())
    marked: list[Event] = []
    seating = [dict(s) for s in table.seating]  # (the seats' copy on the row: no seat rows read)
    for seat in late:
        info = seating[seat]
        info["timeouts"] = int(info.get("timeouts") or 0) + 1
        if info["timeouts"] >= (table.clocks.get("away_after") or 2) and not info["away"]:
            info["away"] = True
            marked.append(public("seat_away", seat=seat))
    table.seating = cast(list[SeatRow], seating)
    # Only the late seats' moves: the bot moves after them run on the table's lane (the
    # commit queues them), so a clock task stays short and the clock lane stays free.
    moves: list[Move] = []
    events = advance(table, state, moves, timed_out=set(late), first_events=marked, bots=False)
    # (the late seats' rows in the same statement; a tournament's timeouts draw from its stream)
    write(table, moves, [*BOT_FIELDS, "seating"], seats=late)
    return Outcome(table, events)


def table_seen(principal: Principal, table_id: int) -> Table:
    """The table a caller is about to read. When its clock has run out and no worker has acted
    yet, the server acts for the late seats first (as the clock task would), then answers the new
    state: a reader never sees a deadline in the past."""
    table = reads.table_for(principal, table_id)
    if table.deadline is not None and table.deadline <= timezone.now():
        out = clock_expired(table_id=table.pk, version=table.version)
        table = out.table or reads.table_for(principal, table_id)
    return table


def table_replay(table: Table) -> State | None:
    """Rebuild a table's game from its seed and move log alone (None before the start)."""
    return records.replay(table, records.moves(table, kinds=[Move.Kind.START, *KIND_OF_ACTION.values()]))


def _asked(table: Table, seat: int) -> bool:
    """A seat of a bot an app brought (not marked away): its moves are asked of the bot."""
    info = table.seating[seat]
    return str(info["bot"] or "").startswith("ext:") and not info.get("away")


def take_back(table: Table, seat: int) -> list[Event]:
    """The player is back: their seat is theirs again, with its timeout count reset (on the table's
    copy of the seats: the caller writes the seat row, `write(..., seats=[seat])` or `save_seats`)."""
    was_away = table.seating[seat]["away"]
    table.seating = [dict(s, away=False, timeouts=0) if s["position"] == seat else s for s in table.seating]
    return [public("seat_back", seat=seat)] if was_away else []


def advance(
    table: Table,
    state: State,
    moves: list[Move],
    *,
    timed_out: AbstractSet[int] = frozenset(),
    first_events: Sequence[Event] = (),
    limit: int | None = None,
    bots: bool = True,
    one_card: bool = False,
) -> list[Event]:
    """Make the moves the server owes: for seats whose clock ran out (once each), and (unless
    `bots` is False) for built-in bots and away seats while only they are to act, stopping at the
    end of the hand or at a brought bot's turn (services.botturns asks it), and with `one_card`
    before a card played after a move made here (a paced table). Each move is logged on its own,
    with the events it caused, into `moves` (the caller writes them with the table row:
    `record.write`)."""

    shared = tournaments.shared_rng(table)
    staged = len(moves)
    try:
        return _advance(table, state, moves, timed_out, first_events, limit, bots, one_card, shared)
    finally:
        if shared is not None:  # the stream goes on where these moves left it
            table.bot_rng = tournaments.rng_state(shared)
        if len(moves) > staged:  # the state as these moves left it, serialised once for them all
            table.state = state_to_dict(state)


def _advance(
    table: Table,
    state: State,
    moves: list[Move],
    timed_out: AbstractSet[int],
    first_events: Sequence[Event],
    limit: int | None,
    bots: bool,
    one_card: bool,
    shared: random.Random | None,
) -> list[Event]:
    caused: list[Event] = []
    hand, pending, made = state.hand_no, list(first_events), 0
    missed = table.deadline.isoformat() if table.deadline else None  # the deadline the late seats missed
    while state.phase != GAME_OVER and state.hand_no == hand:
        # A brought bot (`ext:<name>`) is asked outside the transaction (services.botturns).
        due = [
            s
            for s in state.to_act()
            if s in timed_out or (bots and plays_itself(table, s) and not _asked(table, s))
        ]
        if not due:
            break
        for seat in due:
            if (limit is not None and made >= limit) or (one_card and made and state.phase == PLAYING):
                return caused
            made += 1
            before = (state.phase, state.hand_no, len(state.sheet))
            if seat in timed_out and state.phase == MOON:
                action: Any = MoonChoice(state.default_moon_choice())
            else:
                level = table.seating[seat]["bot"] or "basic"
                rng = shared or random.Random(f"{table.seed}/{table.version}/{seat}")
                with metrics.bot_decision(level):
                    think = bot_timing.think_ms(table)
                    action = action_from_dict(
                        decide(view(state, seat, history=False), level, rng, think_ms=think)
                    )
            events = state.push(seat, action)
            if seat in timed_out:
                events = [public("turn_timed_out", seat=seat, deadline=missed), *events]
            events, pending = [*pending, *events], []
            caused += events
            log(table, KIND_OF_ACTION[type(action)], seat, action.to_dict(), events, staged=moves)
            metrics.action_applied(KIND_OF_ACTION[type(action)], "timeout" if seat in timed_out else "bot")
            if seat in timed_out:
                metrics.timeout(KIND_OF_ACTION[type(action)])
            store_state(table, state, before, serialize=False)  # advance serialises it once
        timed_out = set()  # a timeout acts once; seats marked away go on through plays_itself
    return caused
