"""What a change writes besides the table row: the move log with its events (and the app's webhook
deliveries, in the same transaction), the seats copied onto the table, the engine state with the
hands, scoresheet and turn deadline (and a correspondence turn's reminder) kept in step, and, after
the commit, the wake-ups and tasks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from functools import cache, partial
from typing import Any, cast

from django.db import connection, transaction
from django.dispatch import Signal
from django.utils import timezone

from games import bot_timing, changes, push, webhooks
from games.engine import (
    GAME_OVER,
    PASSING,
    Event,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    hand_seed,
    seed_commitment,
    state_to_dict,
)
from games.engine.deal import pass_direction
from games.infra import jobs, notify
from games.models import FormerSeat, Hand, Move, ScoreRow, Seat, SeatRow, Table, jsonb_text
from games.prepared import PreparedUpdate
from games.services import ratings

_STATUS_OF_PHASE = {
    "passing": Table.Status.PASSING,
    "playing": Table.Status.PLAYING,
    "moon_choice": Table.Status.MOON_CHOICE,
    "game_over": Table.Status.FINISHED,
}
KIND_OF_ACTION = {Pass: Move.Kind.PASS, Play: Move.Kind.PLAY, MoonChoice: Move.Kind.MOON}
_CLOCK_OF_PHASE = {"passing": "pass", "playing": "play", "moon_choice": "moon"}
REMINDER_LEAD_MAX = dt.timedelta(hours=24)  # a correspondence reminder comes at most this long before


def public(type: str, **data: Any) -> Event:
    return Event(type, data, None)


_FINISHING = {"game_over": "finished", "table_abandoned": "abandoned"}

# Sent by `log` in the transaction of the move that ends a game, with `table` and `totals` (None
# when the game was abandoned); each
# receiver answers the public events it adds to that move (games.services.tournaments: a
# tournament's progress), so they are logged, streamed and delivered with the game's end.
game_ended = Signal()


def log(
    table: Table,
    kind: str,
    position: int | None,
    payload: dict[str, Any],
    events: Iterable[Event] = (),
    key: str = "",
    *,
    staged: list[Move] | None = None,
) -> None:
    """Append one move and the events it caused, each as [type, data, the one seat allowed to see
    it or None for everyone, hand number]. With `staged`, the move is added to that list instead of
    written: `write` then writes it with the table row."""
    table.version += 1
    tagged, hand = [], table.hand_number
    for e in events:  # each event carries the hand it belongs to (a move can end one and deal the next)
        hand = e.data["hand"] if e.type == "hand_started" else hand
        tagged.append([e.type, dict(e.data), e.to, hand])
        if e.type == "game_over" and table.rated:  # in this transaction: never lost, never twice
            changed = ratings.game_over(table, e.data["totals"])
            if changed is not None:  # before table_finished, which ends a table's stream
                tagged.append(["ratings_changed", changed, None, hand])
        if e.type in _FINISHING:  # one event says the table is over, however it ended
            table.finished_at = timezone.now()  # when its retention period starts (games.records)
            finished = {"status": _FINISHING[e.type], "winners": e.data.get("winners")}
            tagged.append(["table_finished", {**finished, "totals": e.data.get("totals")}, None, hand])
            totals = e.data.get("totals")
            for _, added in game_ended.send(
                Table, table=table, totals=None if totals is None else list(totals)
            ):
                tagged.extend([a.type, dict(a.data), None, hand] for a in cast(list[Event], added))
    if kind == Move.Kind.LEAVE and payload.get("player") is not None:
        # Its log names them from now on though no seat will: erasure must find this table.
        FormerSeat.objects.bulk_create(
            [FormerSeat(table=table, player_id=payload["player"])], ignore_conflicts=True
        )
    move = Move(
        table=table,
        seq=table.version,
        hand=table.hand_number,
        kind=kind,
        position=position,
        payload=payload,
        events=tagged,
        idempotency_key=key,
    )
    if staged is None:
        move.save(force_insert=True)
    else:
        staged.append(move)

    webhooks.record(table, tagged)
    push.events(table, tagged)


def write(
    table: Table, moves: Sequence[Move], fields: Sequence[str] | None = None, seats: Sequence[int] = ()
) -> None:
    """Write the staged moves and the table row (`fields` of it, or all), and the seat rows at
    `seats` (their timeout count and away mark, as the table's copy of the seats has them). On
    PostgreSQL one statement does all (the moves and the seats are in its WITH clause): a play or a
    clock's timeout costs one round trip and no SQL compiling for them, which is most of what a play
    costs beyond a bare row update. The moves go in as one JSON document (`jsonb_to_recordset`), so
    the statement's text is the same for one move or a bot task's twenty-six, and psycopg converts
    it once per process (a VALUES row per move made every multi-move write a new, uncached
    statement, and adapting each value on its own cost more than writing the moves' JSON once).
    Elsewhere (SQLite) the ORM writes them in turn."""
    if connection.vendor != "postgresql" or not moves:
        Move.objects.bulk_create(moves)
        save_seats(table, seats)
        table.save(update_fields=fields)
        return
    columns: list[Any] = _ALL_TABLE_COLUMNS if fields is None else [Table._meta.get_field(n) for n in fields]
    moves_json = "[" + ",".join(_move_row(move) for move in moves) + "]"
    state_json = None  # the state's JSON text (JSONText), made once for the statement and the wake-up
    params: list[Any] = [moves_json]
    if seats:
        params += [_seats_json(table, seats), table.pk]
    for f in columns:
        params.append(f.get_db_prep_save(f.pre_save(table, False), connection))
        if f.attname == "state":
            state_json = params[-1]
    params.append(table.pk)
    with connection.cursor() as cursor:
        cursor.execute(_write_sql(tuple(f.column for f in columns), bool(seats)), params)
        if cursor.rowcount != 1:
            raise Table.DoesNotExist(f"table {table.pk} is gone")
    if fields is None or "state" in fields:  # the whole row is known: its wake-up carries it
        table.carried = (table.version, changes.encode(table, moves[0].seq, moves_json, state_json))


def save_seats(table: Table, positions: Iterable[int]) -> None:
    """Write the seat rows at `positions` from the table's copy of the seats: their timeout count
    and away mark (the only columns of a seat that change during a game)."""
    for position in positions:
        _SEAT_STATE(*_seat_state(table, position), table.pk, position)


def _seat_state(table: Table, position: int) -> tuple[int, bool]:
    info = table.seating[position]
    return int(info.get("timeouts") or 0), bool(info["away"])


# A seat's count of timeouts in a row and its away mark (compiled once: games.prepared).
_SEAT_STATE = PreparedUpdate(Seat, ["timeouts", "away"], ["table", "position"])
_SEAT_COLUMNS: list[Any] = [Seat._meta.get_field(n) for n in ("position", "timeouts", "away")]


def _seats_json(table: Table, positions: Iterable[int]) -> str:
    rows = []
    for position in positions:
        timeouts, away = _seat_state(table, position)
        rows.append({"position": position, "timeouts": timeouts, "away": away})
    return jsonb_text(rows)


_ALL_TABLE_COLUMNS: list[Any] = [f for f in Table._meta.concrete_fields if not f.primary_key]
_MOVE_COLUMNS: list[Any] = [f for f in Move._meta.concrete_fields if not f.primary_key]


def _move_row(move: Move) -> str:
    """A move's columns for `jsonb_to_recordset`, as a JSON object: times as ISO text, JSON in
    jsonb's key order (as the move's wake-up carries it, games.changes: as a read of the row would
    give it)."""
    row = {}
    for field in _MOVE_COLUMNS:
        value = field.pre_save(move, True)
        row[field.column] = value.isoformat() if isinstance(value, dt.datetime) else value
    return jsonb_text(row)


@cache
def _write_sql(table_columns: tuple[str, ...], seats: bool = False) -> str:
    quote = connection.ops.quote_name
    names = ", ".join(quote(str(f.column)) for f in _MOVE_COLUMNS)
    typed = ", ".join(f"{quote(str(f.column))} {f.db_type(connection)}" for f in _MOVE_COLUMNS)
    sets = ", ".join(f"{quote(column)} = %s" for column in table_columns)
    seated = ""
    if seats:
        seat, table_fk = quote(Seat._meta.db_table), quote(str(Seat._meta.get_field("table").column))
        seat_typed = ", ".join(f"{quote(str(f.column))} {f.db_type(connection)}" for f in _SEAT_COLUMNS)
        seat_sets = ", ".join(f"{quote(str(f.column))} = s.{quote(str(f.column))}" for f in _SEAT_COLUMNS[1:])
        position = quote(str(_SEAT_COLUMNS[0].column))
        seated = (
            f", seated AS (UPDATE {seat} SET {seat_sets} "
            f"FROM jsonb_to_recordset(%s::jsonb) AS s({seat_typed}) "
            f"WHERE {seat}.{table_fk} = %s AND {seat}.{position} = s.{position})"
        )
    return (
        f"WITH moved AS (INSERT INTO {quote(Move._meta.db_table)} ({names}) "
        f"SELECT {names} FROM jsonb_to_recordset(%s::jsonb) AS m({typed})){seated} "
        f"UPDATE {quote(Table._meta.db_table)} SET {sets} WHERE {quote(str(Table._meta.pk.column))} = %s"
    )


def seated(table: Table, seats: list[Seat]) -> None:
    """Copy the seats onto the table row, so that a table is read (and acted on) in one query."""
    rows: list[SeatRow] = [
        SeatRow(
            position=s.position,
            player=s.player_id,
            name=s.player.name if s.player else None,
            bot=s.bot_level or None,
            away=s.away,
            timeouts=s.timeouts,
        )
        for s in seats
    ]
    table.seating = rows


def plays_itself(table: Table, seat: int) -> bool:
    """A bot's seat, or a person's seat marked away: the server makes its moves."""
    info = table.seating[seat]
    return bool(info["bot"] or info.get("away"))


def start_if_full(table: Table, seats: list[Seat], announce: Iterable[Event] = ()) -> None:
    """Start the game when every seat is taken; `announce` goes first in the start's events."""
    if table.status != Table.Status.OPEN or not all(s.taken for s in seats):
        return
    events: list[Event] = [*announce, public("game_started")]
    state = State.new_game(Options.from_dict(table.options), table.seed, events, table=str(table.pk))
    log(table, Move.Kind.START, None, {}, events)
    store_state(table, state, (None, state.hand_no - 1, 0))  # a table may start past hand 1


def store_state(
    table: Table, state: State, before: tuple[str | None, int, int], *, serialize: bool = True
) -> None:
    """Save the engine state; keep the hand and scoresheet tables and the turn deadline in step
    with it. Only a new hand or a newly scored one costs queries beyond the table row and the move.
    With `serialize` False the caller sets `table.state` itself, once after a run of moves."""
    phase_before, dealt_before, scored_before = before
    if serialize:
        table.state = state_to_dict(state)
    table.status = _STATUS_OF_PHASE[state.phase]
    table.hand_number = state.hand_no
    for row in state.sheet[scored_before:]:
        ScoreRow.objects.bulk_create(
            ScoreRow(table=table, hand_number=row["hand"], position=p, points=pts, total=tot)
            for p, (pts, tot) in enumerate(zip(row["points"], row["totals"], strict=True))
        )
        Hand.objects.filter(table=table, number=row["hand"]).update(finished=True)
    for number in range(dealt_before + 1, state.hand_no + 1):
        seed = hand_seed(state.seed, number)
        Hand.objects.create(
            table=table,
            number=number,
            pass_direction=pass_direction(state.options, number),
            seed=seed,
            deal_commitment=seed_commitment(seed, str(table.pk)),
        )
    table.bot_turn = state.phase != GAME_OVER and any(plays_itself(table, s) for s in state.to_act())
    # One clock for the whole pass (seats pass at once); a fresh one for every turn after.
    same_pass = state.phase == PASSING and phase_before == PASSING and state.hand_no == dealt_before
    if not same_pass:
        start_clock(table, state)
    push.turns(table, state)  # keyed per turn: a pass that leaves others to pass records nothing new


def start_clock(table: Table, state: State) -> None:
    """The turn that starts now: its deadline (`turn_deadline`) and, at a correspondence table,
    when its seats are reminded (`reminder_time`). A pass keeps both until every seat has passed:
    a reminder not yet sent then goes to the seats still to pass."""
    table.deadline = turn_deadline(table, state)
    table.reminder_at = reminder_time(table, state, table.deadline)


def reminder_time(table: Table, state: State, deadline: dt.datetime | None) -> dt.datetime | None:
    """When the seats to act are reminded of a turn that runs out at `deadline`: at a correspondence
    table (games.bot_timing), a quarter of the turn's clock before it, at most REMINDER_LEAD_MAX
    before (a 1-hour clock reminds 15 minutes before, a day 6 hours, 14 days one day). A turn whose
    own clock is under an hour (a pass clock left at its default) gets none: the push of the turn
    itself is minutes old."""
    if deadline is None or state.phase == GAME_OVER or not bot_timing.is_correspondence(table.clocks):
        return None
    seconds = table.clocks.get(_CLOCK_OF_PHASE[state.phase])
    if not isinstance(seconds, int) or seconds < bot_timing.CORRESPONDENCE_SECONDS:
        return None
    return deadline - min(REMINDER_LEAD_MAX, dt.timedelta(seconds=seconds / 4))


def turn_deadline(table: Table, state: State) -> dt.datetime | None:
    """When the turn that starts now runs out: a clock bounds a person's thinking, so it runs only
    while a person (not a bot, not a seat marked away) is to act and the table has a clock for
    the phase. Bots' turns have none: the bot lane plays them, and the sweep finds lost ones."""
    seconds = None if state.phase == GAME_OVER else table.clocks.get(_CLOCK_OF_PHASE[state.phase])
    if seconds is None or all(plays_itself(table, s) for s in state.to_act()):
        return None
    return timezone.now() + dt.timedelta(seconds=seconds)


def has_people(seating: Iterable[SeatRow]) -> bool:
    """A person sits at the table (away or not): its bot moves run on the people lane."""
    return any(s["player"] is not None for s in seating)


def schedule(table: Table | None, *, bots: bool = True) -> None:
    """After the commit: wake the table's streams, set its turn clock (games.infra.clocks), and
    (unless `bots` is False: the caller goes on itself) queue a worker task for the moves bots owe:
    at a paced table, a bot's card is queued to run after the pace (a countdown: no worker waits
    for it, docs/bots-and-clocks.md#pace)."""
    if table is None:
        return
    players = [s["player"] for s in table.seating if s["player"] is not None]
    # The wake-ups and the turn clock (set, or cleared) in one Redis round trip; the table's wake-up
    # carries the change when `write` made it for this version (games.changes).
    clock = table.deadline if table.state is not None or table.match_key else False  # quick play waits
    carried, table.carried = table.carried, None
    change = carried[1] if carried is not None and carried[0] == table.version else None
    table_id, version = table.pk, table.version
    if table.state is None or not (table.bot_turn and bots):
        transaction.on_commit(partial(notify.publish, table_id, version, players, clock=clock, change=change))
        return
    lane = jobs.lane_of(people=has_people(table.seating), app_id=table.app_id or 0)
    delay = (bot_timing.pace_ms(table) if table.status == Table.Status.PLAYING else 0) / 1000

    def committed() -> None:
        # The bot task goes in the wake-ups' round trip where it can (made after the commit, so its
        # publication time is the commit's), else on its own as before (the embedded worker, eager).
        task = jobs.play_bots_message(table_id, version, lane=lane, delay=delay)
        notify.publish(table_id, version, players, clock=clock, change=change, tasks=(task,) if task else ())
        if task is None:
            queue_tasks(table_id, version, lane, delay)

    transaction.on_commit(committed)


def queue_tasks(table_id: int, version: int, lane: str = jobs.PEOPLE_QUEUE, delay: float = 0.0) -> None:
    """The bot moves, on the table's lane, `delay` seconds from now."""
    jobs.play_bots(table_id, version, lane=lane, delay=delay)
