"""The only code that changes a table: each action is one transaction that locks the table row."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from bots import LEVELS
from bots.strategy import decide
from games import jobs, metrics, notify, reads, webhooks
from games.accounts import Principal
from games.engine import (
    GAME_OVER,
    MOON,
    PASSING,
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
    view,
)
from games.engine.deal import pass_direction
from games.errors import ServiceError
from games.models import App, Hand, IdempotentRequest, Move, Player, ScoreRow, Seat, Table

_STATUS_OF_PHASE = {
    "passing": Table.Status.PASSING,
    "playing": Table.Status.PLAYING,
    "moon_choice": Table.Status.MOON_CHOICE,
    "game_over": Table.Status.FINISHED,
}
_KIND_OF_ACTION = {Pass: Move.Kind.PASS, Play: Move.Kind.PLAY, MoonChoice: Move.Kind.MOON}
_PLAY_FIELDS = ["state", "status", "hand_number", "version", "deadline", "bot_turn", "updated_at"]
_CLOCK_OF_PHASE = {"passing": "pass", "playing": "play", "moon_choice": "moon"}

# Turn clocks in seconds (None: no clock), and how many timeouts in a row mark a seat away.
CLOCK_DEFAULTS: dict[str, int | None] = {"pass": 60, "play": 30, "moon": 30, "away_after": 2}
_CLOCK_LIMITS = {"pass": (5, 86_400), "play": (5, 86_400), "moon": (5, 86_400), "away_after": (1, 20)}


@dataclass(frozen=True)
class Outcome:
    """What a request did: the table after it, and the engine events of the action.
    With an idempotency key, `response` is the (status, body) answered the first time, and
    `replayed` says this request repeated it (then nothing was applied again and `table` is None)."""

    table: Table | None
    events: list[Event] = field(default_factory=list)
    response: tuple[int, str] | None = None
    replayed: bool = False


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key sent with a request: `owner` is who sent it ('player:7', 'app:2'),
    `fingerprint` identifies the request (a hash of method, path and body), and `render` turns
    the outcome into the (status, body) that is stored and answered to every repeat."""

    owner: str
    key: str
    fingerprint: str
    render: Callable[[Outcome], tuple[int, str]]

    def __post_init__(self) -> None:
        if not 1 <= len(self.key) <= 128 or not (self.key.isascii() and self.key.isprintable()):
            raise ServiceError(
                "invalid_idempotency_key",
                "an idempotency key is 1 to 128 printable ASCII characters",
                kind="malformed",
            )


class _Unscoped:
    """Scope of service calls made by the service itself (tasks), which see every table."""


UNSCOPED = _Unscoped()
Scope = App | None | _Unscoped


def clocks_from(raw: Mapping[str, Any] | None) -> dict[str, int | None]:
    """Validated turn clocks: the defaults, overridden per key; null turns a clock off."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ServiceError("invalid_clock", "clocks is an object like {'play': 30}", kind="malformed")
    clocks = dict(CLOCK_DEFAULTS)
    for name, value in raw.items():
        if name not in CLOCK_DEFAULTS:
            raise ServiceError(
                "invalid_clock",
                f"unknown clock {name!r}; known: {', '.join(CLOCK_DEFAULTS)}",
                kind="malformed",
                clock=str(name),
            )
        low, high = _CLOCK_LIMITS[name]
        if value is None and name != "away_after":
            clocks[name] = None
            continue
        if type(value) is not int or not low <= value <= high:
            raise ServiceError(
                "invalid_clock",
                f"clock {name!r} must be a whole number from {low} to {high}"
                + ("" if name == "away_after" else " (seconds), or null for no clock"),
                kind="malformed",
                clock=name,
            )
        clocks[name] = value
    return clocks


def table_create(
    *,
    options: Mapping[str, Any] | None = None,
    bots: Mapping[int, str] | None = None,
    clocks: Mapping[str, Any] | None = None,
    seed: str | None = None,
    app: App | None = None,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """A new open table; `bots` fills seats with bots of the given level at once (a table of
    bots only starts at once)."""
    try:
        opts = Options.from_dict(options or {})
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    clock_set = clocks_from(clocks)
    bots = dict(bots or {})
    for position, level in bots.items():
        if type(position) is not int or not 0 <= position < opts.players:
            raise ServiceError("invalid_seat", f"no seat {position!r} at this table", kind="malformed")
        check_level(level)

    def act() -> Outcome:
        table = Table.objects.create(
            app=app, options=opts.to_dict(), clocks=clock_set, seed=seed or new_seed()
        )
        seats = Seat.objects.bulk_create(
            Seat(table=table, position=p, bot_level=bots.get(p, "")) for p in range(opts.players)
        )
        for position, level in sorted(bots.items()):
            _log(
                table,
                Move.Kind.ADD_BOT,
                position,
                {"level": level},
                [_public("bot_added", seat=position, level=level)],
            )
        _seated(table, seats)
        _start_if_full(table, seats)
        table.save()
        return Outcome(table)

    return _run(act, idempotency)


def seat_join(
    *,
    table_id: int,
    player: Player,
    position: int | None = None,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Seat a player (at `position`, or the lowest open seat); the game starts when every seat is taken."""

    def act() -> Outcome:
        table, seats = _locked(table_id, scope)
        _check_version(table, expected_version)
        _require_open(table)
        if any(s.player_id == player.pk for s in seats):
            raise ServiceError("already_seated", "you already have a seat at this table", kind="conflict")
        seat = _open_seat(seats, position)
        seat.player = player
        seat.save(update_fields=["player"])
        event = _public("seat_taken", seat=seat.position, player=player.pk, name=player.name)
        _log(table, Move.Kind.JOIN, seat.position, {"player": player.pk}, [event])
        _seated(table, seats)
        _start_if_full(table, seats)
        table.save()
        return Outcome(table)

    return _run(act, idempotency)


def bot_add(
    *,
    table_id: int,
    level: str = "random",
    position: int | None = None,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Put a bot in a seat (the lowest open seat unless `position` is given)."""
    check_level(level)

    def act() -> Outcome:
        table, seats = _locked(table_id, scope)
        _check_version(table, expected_version)
        _require_open(table)
        seat = _open_seat(seats, position)
        seat.bot_level = level
        seat.save(update_fields=["bot_level"])
        event = _public("bot_added", seat=seat.position, level=level)
        _log(table, Move.Kind.ADD_BOT, seat.position, {"level": level}, [event])
        _seated(table, seats)
        _start_if_full(table, seats)
        table.save()
        return Outcome(table)

    return _run(act, idempotency)


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

    def act() -> Outcome:
        table, seats = _locked(table_id, scope)
        _check_version(table, expected_version)
        _require_open(table)
        if player is not None and not any(s.player_id == player.pk for s in seats):
            raise ServiceError("not_seated", "only a seated player can start the table", kind="rules")
        for seat in seats:
            if not seat.taken:
                seat.bot_level = fill_with
                seat.save(update_fields=["bot_level"])
                event = _public("bot_added", seat=seat.position, level=fill_with)
                _log(table, Move.Kind.ADD_BOT, seat.position, {"level": fill_with}, [event])
        _seated(table, seats)
        _start_if_full(table, seats)
        table.save()
        return Outcome(table)

    return _run(act, idempotency)


def seat_leave(
    *,
    table_id: int,
    player: Player,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Give up a seat before the game starts."""

    def act() -> Outcome:
        table, seats = _locked(table_id, scope)
        _check_version(table, expected_version)
        _require_open(table)
        seat = next((s for s in seats if s.player_id == player.pk), None)
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="conflict")
        seat.player = None
        seat.save(update_fields=["player"])
        event = _public("seat_left", seat=seat.position, player=player.pk)
        _log(table, Move.Kind.LEAVE, seat.position, {"player": player.pk}, [event])
        _seated(table, seats)
        table.save()
        return Outcome(table)

    return _run(act, idempotency)


def table_abandon(
    *,
    table_id: int,
    expected_version: int | None = None,
    scope: Scope = UNSCOPED,
    idempotency: Idempotency | None = None,
) -> Outcome:
    """Close an unfinished table for good (an operator's decision); its log stays readable."""

    def act() -> Outcome:
        table, _ = _locked(table_id, scope, with_seats=False)
        _check_version(table, expected_version)
        if table.status in (Table.Status.FINISHED, Table.Status.ABANDONED):
            raise ServiceError("table_closed", f"the table is already {table.status}", kind="rules")
        _log(table, Move.Kind.ABANDON, None, {}, [_public("table_abandoned")])
        table.status = Table.Status.ABANDONED
        table.deadline = None
        table.save()
        return Outcome(table)

    return _run(act, idempotency)


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
        table, _ = _locked(table_id, scope, with_seats=False)
        seat = position
        if player is not None:
            seat = next((s["position"] for s in table.seating if s["player"] == player.pk), None)
            if seat is None:
                raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
        if seat is None or not 0 <= seat < len(table.seating):
            raise ServiceError("invalid_seat", f"no seat {seat!r} at this table", kind="malformed")
        if isinstance(parsed, Pass):
            _check_version_for_pass(table, seat, expected_version)
        else:
            _check_version(table, expected_version)
        if table.state is None or table.status == Table.Status.ABANDONED:
            code, why = (
                ("not_started", "has not started yet")
                if table.state is None
                else ("table_closed", "was abandoned")
            )
            raise ServiceError(code, f"the game {why}", kind="rules")
        state = state_from_dict(table.state)
        before = (state.phase, state.hand_no, len(state.sheet))
        try:
            events = state.push(seat, parsed)
        except EngineError as exc:
            if table.deadline is not None and table.deadline <= timezone.now():
                overdue.append(table.pk)
            raise ServiceError.from_engine(exc) from exc
        fields = _PLAY_FIELDS
        if player is not None and (table.seating[seat]["away"] or table.seating[seat].get("timeouts")):
            events = [*_take_back(table, seat), *events]  # timeouts count only in a row
            fields = [*_PLAY_FIELDS, "seating"]
        key = idempotency.key if idempotency else ""
        _log(table, _KIND_OF_ACTION[type(parsed)], seat, payload, events, key)
        metrics.action_applied(_KIND_OF_ACTION[type(parsed)], "human")
        _store_state(table, state, before)
        table.save(update_fields=fields)
        return Outcome(table, events)

    overdue: list[int] = []
    try:
        return _run(act, idempotency)
    finally:  # a write refused on a table whose clock ran out makes the server act first
        if overdue:
            clock_expired(table_id=overdue[0])


def seat_back(
    *, table_id: int, player: Player, scope: Scope = UNSCOPED, idempotency: Idempotency | None = None
) -> Outcome:
    """ "I'm back": a player whose seat was marked away after timeouts takes it back from the bot.
    Nothing changes (and the version stays) when the seat was not away."""

    def act() -> Outcome:
        table, _ = _locked(table_id, scope, with_seats=False)
        seat = next((s["position"] for s in table.seating if s["player"] == player.pk), None)
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
        if table.seating[seat]["away"] or table.seating[seat].get("timeouts"):
            _log(table, Move.Kind.BACK, seat, {}, _take_back(table, seat))
            if table.state is not None:
                state = state_from_dict(table.state)
                table.bot_turn = state.phase != GAME_OVER and any(
                    _plays_itself(table, s) for s in state.to_act()
                )
            table.save()
        return Outcome(table)

    return _run(act, idempotency)


def bots_play(*, table_id: int, version: int, limit: int | None = None) -> Outcome:
    """Every move owed by bots and seats marked away, as long as only they are to act, in one
    transaction (each its own move in the log), up to the end of the current hand, or `limit`
    moves (then the commit queues the rest as a new task). A task queued for another version
    (stale, or delivered twice) does nothing."""

    def act() -> Outcome:
        table, _ = _locked(table_id, UNSCOPED, with_seats=False)
        if table.version != version or not table.bot_turn or table.state is None:
            return Outcome(None)
        events = _advance(table, state_from_dict(table.state), limit=limit)
        table.save()
        return Outcome(table, events)

    return _run(act, None)


def clock_expired(*, table_id: int, version: int | None = None, now: dt.datetime | None = None) -> Outcome:
    """The clock ran out: the server acts for every seat it was waiting on (the basic bot's pass
    or play, the moon default of docs/rules.md). A seat that times out `away_after` times in a row is
    marked away and played by a bot until its player acts again. Nothing happens when the
    deadline has not passed or `version` is not the table's (the table moved on)."""

    def act() -> Outcome:
        table, seats = _locked(table_id, UNSCOPED)
        moment = now or timezone.now()
        if (
            (version is not None and table.version != version)
            or table.deadline is None
            or table.deadline > moment
            or table.state is None
            or table.status in (Table.Status.FINISHED, Table.Status.ABANDONED)
        ):
            return Outcome(None)
        state = state_from_dict(table.state)
        late = [s for s in state.to_act() if not _plays_itself(table, s)]
        marked: list[Event] = []
        for seat in late:
            row = seats[seat]
            row.timeouts += 1
            if row.timeouts >= (table.clocks.get("away_after") or 2) and not row.away:
                row.away = True
                marked.append(_public("seat_away", seat=seat))
            row.save(update_fields=["timeouts", "away"])
        _seated(table, seats)
        events = _advance(table, state, timed_out=set(late), first_events=marked)
        table.save()
        return Outcome(table, events)

    return _run(act, None)


def table_replay(table: Table) -> State | None:
    """Rebuild a table's game from its seed and move log alone (None before the start)."""
    if not table.moves.filter(kind=Move.Kind.START).exists():
        return None
    state = State.new_game(Options.from_dict(table.options), table.seed, table=str(table.pk))
    for move in table.moves.filter(kind__in=list(_KIND_OF_ACTION.values())).order_by("seq"):
        assert move.position is not None
        state.push(move.position, action_from_dict(move.payload))
    return state


# -- helpers ----------------------------------------------------------------------------


def _run(act: Callable[[], Outcome], idempotency: Idempotency | None) -> Outcome:
    """Run `act` in one transaction. With an idempotency key, the first answer is stored in that
    same transaction, so a request either acted and left its answer or did neither; a repeat
    (after the first committed, or racing it on the same key) gets the stored answer."""
    if idempotency is None:
        with transaction.atomic():
            out = act()
            _schedule(out.table)
            return out
    try:
        with transaction.atomic():
            out = act()
            _schedule(out.table)
            status, body = idempotency.render(out)
            IdempotentRequest.objects.create(
                owner=idempotency.owner,
                key=idempotency.key,
                fingerprint=idempotency.fingerprint,
                status=status,
                body=body,
            )
            return Outcome(out.table, out.events, (status, body))
    except (ServiceError, IntegrityError):
        # A repeat fails where the first succeeded (the seat already passed, the key's row
        # exists): answer with the first response if there is one, else this refusal.
        prior = IdempotentRequest.objects.filter(owner=idempotency.owner, key=idempotency.key).first()
        if prior is None:
            raise
        if prior.fingerprint != idempotency.fingerprint:
            raise ServiceError(
                "idempotency_key_reused",
                "this idempotency key was used for a different request",
                kind="conflict",
            ) from None
        return Outcome(None, response=(prior.status, prior.body), replayed=True)


def _locked(table_id: int, scope: Scope, *, with_seats: bool = True) -> tuple[Table, list[Seat]]:
    """The table row, locked until the transaction ends, and (when asked) its seats with their players."""
    tables = Table.objects.select_for_update(of=("self",)).filter(pk=table_id)
    if not isinstance(scope, _Unscoped):
        tables = tables.filter(app=scope)
    table = tables.first()
    if table is None:  # another app's table is indistinguishable from no table
        raise ServiceError("not_found", "no such table", kind="not_found")
    if not with_seats:
        return table, []
    return table, list(Seat.objects.filter(table=table).select_related("player"))


def _seated(table: Table, seats: list[Seat]) -> None:
    """Copy the seats onto the table row, so that a table is read (and acted on) in one query."""
    table.seating = [
        {
            "position": s.position,
            "player": s.player_id,
            "name": s.player.name if s.player else None,
            "bot": s.bot_level or None,
            "away": s.away,
            "timeouts": s.timeouts,
        }
        for s in seats
    ]


def _plays_itself(table: Table, seat: int) -> bool:
    """A bot's seat, or a person's seat marked away: the server makes its moves."""
    info = table.seating[seat]
    return bool(info["bot"] or info.get("away"))


def _take_back(table: Table, seat: int) -> list[Event]:
    """The player is back: their seat is theirs again, with its timeout count reset."""
    was_away = table.seating[seat]["away"]
    Seat.objects.filter(table=table, position=seat).update(away=False, timeouts=0)
    table.seating = [dict(s, away=False, timeouts=0) if s["position"] == seat else s for s in table.seating]
    return [_public("seat_back", seat=seat)] if was_away else []


def _advance(
    table: Table,
    state: State,
    *,
    timed_out: AbstractSet[int] = frozenset(),
    first_events: Sequence[Event] = (),
    limit: int | None = None,
) -> list[Event]:
    """Make the moves the server owes: for seats whose clock ran out (once each), and for bots
    and away seats while only they are to act, stopping at the end of the hand. Each move is
    logged on its own, with the events it caused."""

    caused: list[Event] = []
    hand, pending, made = state.hand_no, list(first_events), 0
    missed = table.deadline.isoformat() if table.deadline else None  # the deadline the late seats missed
    while state.phase != GAME_OVER and state.hand_no == hand:
        due = [s for s in state.to_act() if s in timed_out or _plays_itself(table, s)]
        if not due:
            break
        for seat in due:
            if limit is not None and made >= limit:
                return caused
            made += 1
            before = (state.phase, state.hand_no, len(state.sheet))
            if seat in timed_out and state.phase == MOON:
                action: Any = MoonChoice(state.default_moon_choice())
            else:
                level = table.seating[seat]["bot"] or "basic"
                rng = random.Random(f"{table.seed}/{table.version}/{seat}")
                with metrics.bot_decision(level):
                    action = action_from_dict(decide(view(state, seat), level, rng))
            events = state.push(seat, action)
            if seat in timed_out:
                events = [_public("turn_timed_out", seat=seat, deadline=missed), *events]
            events, pending = [*pending, *events], []
            caused += events
            _log(table, _KIND_OF_ACTION[type(action)], seat, action.to_dict(), events)
            metrics.action_applied(_KIND_OF_ACTION[type(action)], "timeout" if seat in timed_out else "bot")
            if seat in timed_out:
                metrics.timeout(_KIND_OF_ACTION[type(action)])
            _store_state(table, state, before)
        timed_out = set()  # a timeout acts once; seats marked away go on through _plays_itself
    return caused


def _schedule(table: Table | None) -> None:
    """After the commit: wake the table's streams, queue a worker task for the moves bots owe, and
    one for the turn clock."""
    if table is None:
        return
    players = [s["player"] for s in table.seating if s["player"] is not None]
    transaction.on_commit(partial(notify.publish, table.pk, table.version, players))
    if table.state is None:
        return
    table_id, version, deadline, bot_turn = table.pk, table.version, table.deadline, table.bot_turn
    if bot_turn or deadline is not None:
        transaction.on_commit(lambda: _queue(table_id, version, bot_turn, deadline))


def _queue(table_id: int, version: int, bot_turn: bool, deadline: dt.datetime | None) -> None:
    if bot_turn:
        jobs.play_bots(table_id, version)
    if deadline is not None:
        jobs.enforce_clock(table_id, version, deadline)


def check_level(level: object) -> None:
    """Refuse an unknown bot level with `invalid_bot_level` (the levels are in `bots.LEVELS`)."""
    if level not in LEVELS:
        raise ServiceError(
            "invalid_bot_level",
            f"bot level must be one of {', '.join(LEVELS)}",
            kind="malformed",
            levels=list(LEVELS),
        )


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
        raise ServiceError("table_not_open", f"the table is {table.status}, no longer open", kind="rules")


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


def _public(type: str, **data: Any) -> Event:
    return Event(type, data, None)


_FINISHING = {"game_over": "finished", "table_abandoned": "abandoned"}


def _log(
    table: Table,
    kind: str,
    position: int | None,
    payload: dict[str, Any],
    events: Iterable[Event] = (),
    key: str = "",
) -> None:
    """Append one move and the events it caused, each as [type, data, the one seat allowed to see
    it or None for everyone, hand number]."""
    table.version += 1
    tagged, hand = [], table.hand_number
    for e in events:  # each event carries the hand it belongs to (a move can end one and deal the next)
        hand = e.data["hand"] if e.type == "hand_started" else hand
        tagged.append([e.type, dict(e.data), e.to, hand])
        if e.type in _FINISHING:  # one event says the table is over, however it ended
            finished = {"status": _FINISHING[e.type], "winners": e.data.get("winners")}
            tagged.append(["table_finished", {**finished, "totals": e.data.get("totals")}, None, hand])
    Move.objects.create(
        table=table,
        seq=table.version,
        hand=table.hand_number,
        kind=kind,
        position=position,
        payload=payload,
        events=tagged,
        idempotency_key=key,
    )

    webhooks.record(table, tagged)


def _start_if_full(table: Table, seats: list[Seat]) -> None:
    if table.status != Table.Status.OPEN or not all(s.taken for s in seats):
        return
    events: list[Event] = [_public("game_started")]
    state = State.new_game(Options.from_dict(table.options), table.seed, events, table=str(table.pk))
    _log(table, Move.Kind.START, None, {}, events)
    _store_state(table, state, (None, 0, 0))


def _store_state(table: Table, state: State, before: tuple[str | None, int, int]) -> None:
    """Save the engine state; keep the hand and scoresheet tables and the turn deadline in step
    with it. Only a new hand or a newly scored one costs queries beyond the table row and the move."""
    phase_before, dealt_before, scored_before = before
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
    table.bot_turn = state.phase != GAME_OVER and any(_plays_itself(table, s) for s in state.to_act())
    # One clock for the whole pass (seats pass at once); a fresh one for every turn after.
    same_pass = state.phase == PASSING and phase_before == PASSING and state.hand_no == dealt_before
    if state.phase == GAME_OVER:
        table.deadline = None
    elif not same_pass:
        seconds = table.clocks.get(_CLOCK_OF_PHASE[state.phase])
        table.deadline = None if seconds is None else timezone.now() + dt.timedelta(seconds=seconds)


def table_seen(principal: Principal, table_id: int) -> Table:
    """The table a caller is about to read. When its clock has run out and no worker has acted
    yet, the server acts for the late seats first (as the clock task would), then answers the new
    state: a reader never sees a deadline in the past."""
    table = reads.table_for(principal, table_id)
    if table.deadline is not None and table.deadline <= timezone.now():
        out = clock_expired(table_id=table.pk, version=table.version)
        table = out.table or reads.table_for(principal, table_id)
    return table
