"""Live events: one viewer's events at a table, or at all of a player's tables, from the fan-out hub.

The one code path behind every real-time answer: the SSE and NDJSON streams (games/api/streams.py)
frame these events, the GraphQL subscriptions (games/graphql/subscriptions.py) type them. Each item
is `(id, event)`: the event exactly as games.reads redacts it for this viewer, and its id.

Positions. Every event of the move log has the id `<seq>:<n>`: the sequence number of the move
that caused it and its index among that move's events. An id `<seq>` alone means "every event up
to and including move <seq>" (the first `state` event and `your_turn` carry such ids, as does the
REST `version`). Resuming after the last id received gives what follows it: nothing missed,
nothing repeated. A player's id is the position at each of the player's tables,
`<table>=<position>` joined with commas.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from games import reads, services
from games.accounts import Principal
from games.engine import legal_view
from games.errors import ServiceError
from games.infra import metrics
from games.live import fanout
from hearts_service import tracing

if TYPE_CHECKING:  # types only: the queries are in games.reads
    from games.engine import State
    from games.models import Table

log = logging.getLogger(__name__)

_POSITION = re.compile(r"(\d{1,12})(?::(\d{1,4}))?")
MAX_TABLES = 100  # most tables in one player's stream position


@dataclass(frozen=True)
class Position:
    """Where a viewer is in one table's events: after event `index` of move `seq`, or after the
    whole move when `index` is None."""

    seq: int
    index: int | None = None

    def __str__(self) -> str:
        return str(self.seq) if self.index is None else f"{self.seq}:{self.index}"

    @classmethod
    def parse(cls, raw: str) -> Position:
        match = _POSITION.fullmatch(raw.strip())
        if match is None:
            raise _bad_position(raw)
        return cls(int(match[1]), None if match[2] is None else int(match[2]))


def _bad_position(raw: str) -> ServiceError:
    return ServiceError(
        "invalid_last_event_id",
        f"{raw[:40]!r} is not an event id of this stream (like 41:2, or 41)",
        kind="malformed",
    )


def parse_player_position(raw: str) -> dict[int, Position]:
    """`12=41:2,15=20`: the position at each table of a player's stream."""
    out: dict[int, Position] = {}
    for part in filter(None, raw.strip().split(",")):
        table, sep, position = part.partition("=")
        if not sep or not table.isdigit() or len(out) >= MAX_TABLES:
            raise _bad_position(raw)
        out[int(table)] = Position.parse(position)
    return out


def format_player_position(positions: dict[int, Position]) -> str:
    return ",".join(f"{t}={p}" for t, p in sorted(positions.items()))


@dataclass
class Batch:
    """What one viewer has not seen yet at one table, up to a page of moves."""

    table: Table
    events: list[tuple[Position, dict[str, Any]]]
    end: Position  # the position after this batch
    more: bool  # another page is waiting
    your_turn: dict[str, Any] | None = None  # set once caught up, when the viewer is to act
    turn_key: tuple[Any, ...] | None = None

    @property
    def over(self) -> bool:
        return reads.is_over(self.table) and not self.more


def snapshot(principal: Principal, table_id: int) -> tuple[dict[str, Any], Batch]:
    """The viewer's full state (the REST table body) and its position, with `your_turn`."""
    metrics.stream_read("viewer")
    table = services.table_seen(principal, table_id)
    body = reads.table_body(table, principal)
    batch = Batch(table, [], Position(body["version"]), more=False)  # a delayed spectator's: the cut
    _set_turn(batch, body, principal)
    return body, batch


def catch_up(principal: Principal, table_id: int, after: Position) -> Batch:
    """The events after `after` that the viewer may see (games.reads redacts them exactly as the
    REST events answer), and, once caught up, whether it is the viewer's turn."""
    metrics.stream_read("viewer")
    table = services.table_seen(principal, table_id)
    upto = reads.shown_version(table, principal)  # a delayed spectator's cut
    if after.seq > upto:
        raise _bad_position(str(after))
    seat = reads.seat_of(table, principal)
    first = after.seq if after.index is not None else after.seq + 1
    # Only up to the version just read: a move committed since is sent next time, after the table
    # (and so `your_turn`) reflects it; otherwise a batch could end before its own last event.
    moves = reads.moves_from(table, first, upto=upto)
    events = [
        (Position(seq, index), {"table": table.pk, **event})
        for seq, index, event in reads.visible_events(moves, seat)
        if not (seq == after.seq and after.index is not None and index <= after.index)
    ]
    more = len(moves) == reads.PAGE
    end = Position(moves[-1].seq if more else upto)
    batch = Batch(table, events, end, more)
    if not more:
        _set_turn(batch, reads.table_body(table, principal), principal)
    return batch


def _set_turn(batch: Batch, body: dict[str, Any], principal: Principal) -> None:
    game, seat = body["game"], body["your_seat"]
    if not game or seat is None or seat not in game["to_act"] or not game.get("legal_actions"):
        return
    turn = (game["hand_number"], game["phase"], len(game["tricks"]), len(game["trick"]))
    _turn(batch, turn, seat, game["legal_actions"], body["deadline"])


def _turn_of_seat(batch: Batch, state: State, seat: int) -> None:
    """`_set_turn` for a seated viewer (never delayed) from the parsed state: the same event, without
    rendering the whole table body (the engine's view, the spectators' count) for it."""
    legal = legal_view(state, seat)
    if seat not in state.to_act() or not legal:
        return
    turn = (state.hand_no, state.phase, len(state.tricks), len(state.trick))
    _turn(batch, turn, seat, legal, reads.iso(batch.table.deadline))


def _turn(
    batch: Batch, turn: tuple[Any, ...], seat: int, legal: dict[str, Any], deadline: str | None
) -> None:
    batch.turn_key = turn
    batch.your_turn = {
        "type": "your_turn",
        "table": batch.table.pk,
        "seq": batch.table.version,
        "version": batch.table.version,
        "hand": turn[0],
        "phase": turn[1],
        "seat": seat,
        "legal_actions": legal,
        "deadline": deadline,
    }


# -- reading -----------------------------------------------------------------------------

_db = fanout.db


def _limit(read: fanout.Read, principal: Principal) -> int | None:
    """Up to where this viewer may see the shared read: its version, a delayed spectator's cut,
    or None when the read has no cut for a delayed spectator yet (the stream then reads its own)."""
    if reads.delay_for(read.table, principal) is None:
        return read.version
    return read.cut


def shared_batch(
    read: fanout.Read, moves: list[Any], principal: Principal, after: Position, limit: int | None = None
) -> Batch:
    """What the shared read of a table holds for this viewer after `after`, up to `limit` (its
    version, or a delayed spectator's cut): its own redaction (games.reads.visible_events with
    its seat) and its own `your_turn`."""
    table = read.table
    limit = read.version if limit is None else limit
    seat = reads.seat_of(table, principal)
    events = [
        (Position(seq, index), {"table": table.pk, **event})
        for seq, index, event in reads.visible_events([m for m in moves if m.seq <= limit], seat)
        if not (seq == after.seq and after.index is not None and index <= after.index)
    ]
    batch = Batch(table, events, Position(limit), more=False)
    state = read.state()
    if seat is not None and state is not None:  # a seated viewer: live, never delayed
        _turn_of_seat(batch, state, seat)
    return batch


async def next_batch(
    follow: fanout.Follow, principal: Principal, table_id: int, after: Position
) -> Batch | None:
    """The viewer's next batch at a table it follows: from the feed's shared read when it holds
    what the viewer lacks, else (a viewer far behind) from the viewer's own read; None when the
    shared read has nothing newer than `after`."""
    read = follow.read(table_id)
    if read is None:
        return None
    limit = _limit(read, principal)
    first = after.seq if after.index is not None else after.seq + 1
    if limit is not None and first > limit:
        return None
    moves = read.moves_from(first) if limit is not None else None
    if moves is not None:
        batch: Batch | None = shared_batch(read, moves, principal, after, limit)
    else:  # behind the shared read (a slow reader, or a busy process): the viewer's own read
        batch = await _db(catch_up, principal, table_id, after)
    if batch is not None and batch.events and read.origin is not None:  # traced: this viewer's share
        viewer = "player" if principal.player is not None else "app"
        tracing.delivered(read.origin, table_id, batch.end.seq, len(batch.events), viewer)
    return batch


# -- events -------------------------------------------------------------------------------


# An event and its id, or None: nothing more to send for now (yielded before every wait; a framer
# sends the events it holds then, and a keep-alive when it has been quiet long enough).
Item = tuple[str, dict[str, Any]] | None


async def table_events(
    principal: Principal,
    table_id: int,
    after: Position | None,
    first: Batch | None,
    idle: Callable[[], float],
) -> AsyncIterator[Item]:
    """A table's events for this viewer as `(id, event)`, from `after` (None: the `state` first),
    forever until the table is over; None each time `idle()` seconds pass with nothing to send.
    The SSE and NDJSON streams frame them, the GraphQL subscriptions type them: one code path."""
    present_as = principal.player.pk if principal.player is not None else None
    async with fanout.following(present_as=present_as) as follow:
        await follow.follow([table_id])  # subscribed before the first read: no change falls between
        turn_sent: tuple[Any, ...] | None = None
        opened = first.table if first is not None else None
        if after is None:  # a new viewer: the full state first
            body, batch = await _db(snapshot, principal, table_id)
            opened = batch.table
            if _spectator(opened, principal):
                await follow.spectate(table_id)
            follow.offer(batch.table)
            yield str(batch.end), {"type": "state", "table": table_id, "state": body}
            after = batch.end
            if batch.your_turn:
                yield str(after), batch.your_turn
                turn_sent = batch.turn_key
        elif first is not None:
            if opened is not None and _spectator(opened, principal):
                await follow.spectate(table_id)
            follow.offer(first.table)
            if first.turn_key and first.end == after:
                turn_sent = first.turn_key  # resumed at a `your_turn` id: it was received already
        while True:
            follow.event.clear()  # set again by any newer shared read from here on
            next_: Batch | None
            if first is not None:
                next_, first = first, None
            else:
                next_ = await next_batch(follow, principal, table_id, after)
            if next_ is not None:
                batch = next_
                for position, event in batch.events:
                    yield str(position), event
                after = batch.end
                if batch.more:
                    first = await _db(catch_up, principal, table_id, after)
                    continue
                if batch.your_turn and batch.turn_key != turn_sent:
                    yield str(after), batch.your_turn
                    turn_sent = batch.turn_key
                if batch.over:
                    return
            yield None  # nothing more for now: the framer sends what it holds at once
            await follow.wait(idle())
            yield None  # the framer sends a keep-alive if it has been quiet long enough


def _spectator(table: Table, principal: Principal) -> bool:
    """A table stream of a player not seated at the table: one of the table's spectators (an
    app's streams are the operator's, not spectators)."""
    return principal.player is not None and reads.seat_of(table, principal) is None


def _player_tables(principal: Principal, known: dict[int, Position]) -> list[int]:
    """The player's tables worth following: every unfinished table they sit at, and the
    tables of their position (to deliver a table's last events)."""
    ids = set(reads.unfinished_tables_of(principal, MAX_TABLES)) | set(known)
    return sorted(ids)


def _player_snapshot(principal: Principal) -> tuple[list[dict[str, Any]], dict[int, Position], list[Batch]]:
    bodies, positions, batches = [], {}, []
    for table_id in _player_tables(principal, {}):
        body, batch = snapshot(principal, table_id)
        bodies.append(body)
        positions[table_id] = batch.end
        batches.append(batch)
    return bodies, positions, batches


def _player_catch_up(principal: Principal, positions: dict[int, Position]) -> list[Batch]:
    batches = []
    for table_id in _player_tables(principal, positions):
        try:
            batches.append(catch_up(principal, table_id, positions.get(table_id, Position(0))))
        except ServiceError as exc:
            if exc.code != "not_found":
                raise
            positions.pop(table_id, None)  # a position naming a table they cannot see
    return batches


async def player_events(
    principal: Principal, start: dict[int, Position] | None, idle: Callable[[], float]
) -> AsyncIterator[Item]:
    """A player's events at all their tables as `(id, event)` (the id: the position at each
    table), from `start` (None: the `tables` event first); None when idle, as table_events."""
    assert principal.player is not None
    player_id = principal.player.pk
    async with fanout.following(player_id, present_as=player_id) as follow:  # the player's channel first
        turns: dict[int, tuple[Any, ...] | None] = {}
        own = start is not None  # resuming: the first read is the stream's own
        positions: dict[int, Position] = start if start is not None else {}
        if start is None:
            bodies, positions, batches = await _db(_player_snapshot, principal)
            await follow.follow(positions)
            for batch in batches:
                follow.offer(batch.table)
            yield format_player_position(positions), {"type": "tables", "tables": bodies}
            for batch in batches:
                if batch.your_turn:
                    yield format_player_position(positions), batch.your_turn
                    turns[batch.table.pk] = batch.turn_key
        while True:
            follow.event.clear()
            if own or follow.discover:  # resuming, a page behind, or a table not followed yet
                own = follow.discover = False
                batches = await _db(_player_catch_up, principal, dict(positions))
                await follow.follow({*positions, *(b.table.pk for b in batches)})
                for batch in batches:
                    follow.offer(batch.table)
            else:
                batches = []
                for table_id, position in list(positions.items()):
                    try:
                        found = await next_batch(follow, principal, table_id, position)
                    except ServiceError as exc:
                        if exc.code != "not_found":
                            raise
                        positions.pop(table_id, None)
                        continue
                    if found is not None:
                        batches.append(found)
            more = False
            for batch in batches:
                table_id = batch.table.pk
                for position, event in batch.events:
                    positions[table_id] = position
                    yield format_player_position(positions), event
                positions[table_id] = batch.end
                more = more or batch.more
                if batch.your_turn and batch.turn_key != turns.get(table_id):
                    yield format_player_position(positions), batch.your_turn
                    turns[table_id] = batch.turn_key
                if batch.over:  # its last events are out: stop following it
                    positions.pop(table_id, None)
                    turns.pop(table_id, None)
            if len(follow.tables) != len(positions) or set(positions) != follow.tables:
                await follow.follow(positions)
            if more:
                own = True
                continue
            yield None  # nothing more for now: the framer sends what it holds at once
            await follow.wait(idle())
            yield None  # the framer sends a keep-alive if it has been quiet long enough


async def open_table(
    principal: Principal, table_id: int, raw: str | None
) -> tuple[Position | None, Batch | None]:
    """Where a table stream of this viewer starts (`raw`: the last event id received, if any) and
    its first batch when resuming, read once before the stream opens, so that a table the viewer
    may not see or a bad position is a plain error (ServiceError), not a stream that stops."""
    after = Position.parse(raw) if raw else None
    if after is not None:
        return after, await _db(catch_up, principal, table_id, after)
    metrics.stream_read("viewer")
    await _db(reads.table_for, principal, table_id)
    return None, None
