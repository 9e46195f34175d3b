"""The only code that changes a table: each action is one transaction that locks the table row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from games.engine import (
    EngineError,
    Event,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    action_from_dict,
    hand_seed,
    new_seed,
    seed_commitment,
    state_from_dict,
    state_to_dict,
)
from games.engine.deal import pass_direction
from games.models import App, Hand, Move, Player, ScoreRow, Seat, Table

# Engine codes about the shape of the input (HTTP 400); every other engine code is a rule (422).
MALFORMED_CODES = frozenset({"invalid_card", "invalid_action", "invalid_option", "invalid_seat"})
_STATUS_OF_PHASE = {
    "passing": Table.Status.PASSING,
    "playing": Table.Status.PLAYING,
    "moon_choice": Table.Status.MOON_CHOICE,
    "game_over": Table.Status.FINISHED,
}
_KIND_OF_ACTION = {Pass: Move.Kind.PASS, Play: Move.Kind.PLAY, MoonChoice: Move.Kind.MOON}


class ServiceError(Exception):
    """A refused request. `kind` says what went wrong (malformed, not_found, conflict, rules) and
    maps to one HTTP status in the API; `code` is stable and shared with the engine."""

    def __init__(self, code: str, message: str, *, kind: str, **details: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.kind, self.details = code, message, kind, details

    @classmethod
    def from_engine(cls, exc: EngineError) -> ServiceError:
        kind = "malformed" if exc.code in MALFORMED_CODES else "rules"
        return cls(exc.code, exc.message, kind=kind, **exc.details)


@dataclass(frozen=True)
class Outcome:
    """What an action did: the table after it, the engine events, and whether this was a repeat
    of an earlier request with the same idempotency key (then nothing was applied again)."""

    table: Table
    events: list[Event] = field(default_factory=list)
    replayed: bool = False


def table_create(
    *,
    options: Mapping[str, Any] | None = None,
    bots: Mapping[int, str] | None = None,
    seed: str | None = None,
    app: App | None = None,
) -> Table:
    """A new open table; `bots` fills seats with bots of the given level at once."""
    try:
        opts = Options.from_dict(options or {})
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    bots = dict(bots or {})
    for position in bots:
        if type(position) is not int or not 0 <= position < opts.players:
            raise ServiceError("invalid_seat", f"no seat {position!r} at this table", kind="malformed")
    with transaction.atomic():
        table = Table.objects.create(app=app, options=opts.to_dict(), seed=seed or new_seed())
        Seat.objects.bulk_create(
            Seat(table=table, position=p, bot_level=bots.get(p, "")) for p in range(opts.players)
        )
        for position, level in sorted(bots.items()):
            _log(table, Move.Kind.ADD_BOT, position, {"level": level})
        _start_if_full(table)
        table.save()
    return table


def seat_join(
    *, table_id: int, player: Player, position: int | None = None, expected_version: int | None = None
) -> Outcome:
    """Seat a player (at `position`, or the lowest open seat); the game starts when every seat is taken."""
    with transaction.atomic():
        table = _locked(table_id)
        _check_version(table, expected_version)
        _require_open(table)
        seats = list(table.seats.all())
        if any(s.player_id == player.pk for s in seats):
            raise ServiceError("already_seated", "you already have a seat at this table", kind="conflict")
        seat = _open_seat(seats, position)
        seat.player = player
        seat.save(update_fields=["player"])
        _log(table, Move.Kind.JOIN, seat.position, {"player": player.pk})
        _start_if_full(table)
        table.save()
        return Outcome(table)


def bot_add(
    *, table_id: int, level: str = "random", position: int | None = None, expected_version: int | None = None
) -> Outcome:
    """Put a bot in a seat (the lowest open seat unless `position` is given)."""
    if not level or len(level) > 32:
        raise ServiceError("invalid_bot_level", "a bot level is a short non-empty name", kind="malformed")
    with transaction.atomic():
        table = _locked(table_id)
        _check_version(table, expected_version)
        _require_open(table)
        seat = _open_seat(list(table.seats.all()), position)
        seat.bot_level = level
        seat.save(update_fields=["bot_level"])
        _log(table, Move.Kind.ADD_BOT, seat.position, {"level": level})
        _start_if_full(table)
        table.save()
        return Outcome(table)


def seat_leave(*, table_id: int, player: Player, expected_version: int | None = None) -> Outcome:
    """Give up a seat before the game starts."""
    with transaction.atomic():
        table = _locked(table_id)
        _check_version(table, expected_version)
        _require_open(table)
        seat = table.seats.filter(player=player).first()
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="conflict")
        seat.player = None
        seat.save(update_fields=["player"])
        _log(table, Move.Kind.LEAVE, seat.position, {"player": player.pk})
        table.save()
        return Outcome(table)


def action_submit(
    *,
    table_id: int,
    position: int,
    action: Mapping[str, Any],
    expected_version: int | None = None,
    idempotency_key: str = "",
) -> Outcome:
    """Apply one seat's pass, play or moon choice (the wire form of `games.engine` actions)."""
    try:
        parsed = action_from_dict(action)
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    payload = parsed.to_dict()
    with transaction.atomic():
        table = _locked(table_id)
        if idempotency_key:
            prior = table.moves.filter(position=position, idempotency_key=idempotency_key).first()
            if prior is not None:
                if prior.payload != payload:
                    raise ServiceError(
                        "idempotency_key_reused",
                        "this idempotency key was used for a different action",
                        kind="conflict",
                    )
                return Outcome(table, replayed=True)
        if isinstance(parsed, Pass):
            _check_version_for_pass(table, position, expected_version)
        else:
            _check_version(table, expected_version)
        if table.state is None:
            raise ServiceError("not_started", "the game has not started yet", kind="rules")
        state = state_from_dict(table.state)
        scored_before = len(state.sheet)
        try:
            events = state.push(position, parsed)
        except EngineError as exc:
            raise ServiceError.from_engine(exc) from exc
        _log(table, _KIND_OF_ACTION[type(parsed)], position, payload, idempotency_key)
        _store_state(table, state, scored_before)
        table.save()
        return Outcome(table, events)


def table_replay(table: Table) -> State | None:
    """Rebuild a table's game from its seed and move log alone (None before the start)."""
    if not table.moves.filter(kind=Move.Kind.START).exists():
        return None
    state = State.new_game(Options.from_dict(table.options), table.seed)
    for move in table.moves.filter(kind__in=list(_KIND_OF_ACTION.values())).order_by("seq"):
        assert move.position is not None
        state.push(move.position, action_from_dict(move.payload))
    return state


# -- helpers ----------------------------------------------------------------------------


def _locked(table_id: int) -> Table:
    table = Table.objects.select_for_update().filter(pk=table_id).first()
    if table is None:
        raise ServiceError("not_found", "no such table", kind="not_found")
    return table


def _check_version(table: Table, expected: int | None) -> None:
    if expected is not None and expected != table.version:
        raise ServiceError(
            "stale_version",
            f"the table is at version {table.version}, not {expected}",
            kind="conflict",
            version=table.version,
        )


def _check_version_for_pass(table: Table, position: int, expected: int | None) -> None:
    """Passes are simultaneous: other seats' passes since the version a client saw are not a
    conflict, so players passing at the same moment never reject each other."""
    if expected is None or expected == table.version:
        return
    since = table.moves.filter(seq__gt=expected)
    if (
        expected > table.version
        or since.exclude(kind=Move.Kind.PASS).exists()
        or since.filter(position=position).exists()
    ):
        _check_version(table, expected)


def _require_open(table: Table) -> None:
    if table.status != Table.Status.OPEN:
        raise ServiceError("table_not_open", "the game has already started", kind="rules")


def _open_seat(seats: list[Seat], position: int | None) -> Seat:
    if position is None:
        for seat in seats:
            if not seat.taken:
                return seat
        raise ServiceError("table_full", "every seat is taken", kind="conflict")
    for seat in seats:
        if seat.position == position:
            if seat.taken:
                raise ServiceError("seat_taken", f"seat {position} is taken", kind="conflict")
            return seat
    raise ServiceError("invalid_seat", f"no seat {position!r} at this table", kind="malformed")


def _log(table: Table, kind: str, position: int | None, payload: dict[str, Any], key: str = "") -> None:
    table.version += 1
    Move.objects.create(
        table=table,
        seq=table.version,
        hand=table.hand_number,
        kind=kind,
        position=position,
        payload=payload,
        idempotency_key=key,
    )


def _start_if_full(table: Table) -> None:
    if table.status != Table.Status.OPEN or not all(s.taken for s in table.seats.all()):
        return
    _log(table, Move.Kind.START, None, {})
    _store_state(table, State.new_game(Options.from_dict(table.options), table.seed))


def _store_state(table: Table, state: State, scored_before: int = 0) -> None:
    """Save the engine state and keep the hand and scoresheet tables in step with it; only a
    new hand or a newly scored one costs queries beyond the table row and the move."""
    dealt_before = table.hand_number
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
            deal_commitment=seed_commitment(seed),
        )
