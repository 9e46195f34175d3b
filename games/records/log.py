"""The one read path of a table's move log, hands, scoresheet and engine state, which answers the
same whether the table is hot (rows), sealed (a GameRecord) or archived (a file): every reader of
the move log goes through here (docs/data.md#sealed-records).

A table in play is always hot, and is read with exactly the queries it always was. A table that is
over may be sealed: its rows are read first, then its record (a move logged after the seal, a
rematch vote say, is a row again until the next seal folds it in), in that order so that a seal
committed between the two reads is seen whole (moves are merged by seq)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db.models import QuerySet

from games.engine import (
    Options,
    State,
    action_from_dict,
    hand_seed,
    seed_commitment,
    state_from_dict,
    state_to_dict,
)
from games.engine.deal import pass_direction
from games.models import Hand, Move, ScoreRow, Table
from games.prepared import Prepared
from games.records import codec

_OVER = (Table.Status.FINISHED, Table.Status.ABANDONED)
_ACTIONS = (Move.Kind.PASS, Move.Kind.PLAY, Move.Kind.MOON)
CACHE_SIZE = 64  # decoded records kept per process (a format 2 record decodes in about 60 ms)


class _Decoded:
    """A record decoded once per process: its moves, and the game they replay to."""

    def __init__(self, table: Table, data: bytes) -> None:
        self.moves = codec.decode(table, data)
        self._state: list[State | None] = []

    def state(self, table: Table) -> State | None:
        if not self._state:
            game = replay(table, self.moves)  # as if read back from Table.state (its JSON's key order)
            self._state.append(
                None if game is None else state_from_dict(codec.as_stored(state_to_dict(game)))
            )
        return self._state[0]


_decoded: OrderedDict[tuple[int, bytes], _Decoded] = OrderedDict()
_decoded_lock = threading.Lock()


def _decode(table: Table, data: bytes) -> _Decoded:
    """The record decoded, from the cache when this process decoded the same bytes before (the key
    is the record's digest, so a renamed record is never answered from a stale copy)."""
    key = (table.pk, hashlib.blake2b(data, digest_size=16).digest())
    with _decoded_lock:
        found = _decoded.get(key)
        if found is not None:
            _decoded.move_to_end(key)
            return found
    decoded = _Decoded(table, data)
    with _decoded_lock:
        _decoded[key] = decoded
        while len(_decoded) > CACHE_SIZE:
            _decoded.popitem(last=False)
    return decoded


def is_over(table: Table) -> bool:
    return table.status in _OVER


def _archived(table: Table) -> bool:
    return bool(table.archive)


def _record(table: Table) -> _Decoded | None:
    """The table's sealed or archived record, decoded; None when it has none (it is hot). One
    query answers both whether it is sealed and, if this table row was read before it was
    archived, whether it is archived now."""
    if not _archived(table):
        found = Table.objects.filter(pk=table.pk).values_list("archive", "record__data").first()
        if found is None:
            return None
        name, data = found
        if data is not None:
            return _decode(table, bytes(data))
        if not name:
            return None
        table.archive = name
    from games.records import archive  # archive.py imports this package

    return _decode(table, archive.load(table).data)


def _filter(
    moves: Iterable[Move],
    after: int,
    upto: int | None,
    kinds: frozenset[str] | None,
    hand: int | None,
) -> list[Move]:
    return [
        m
        for m in moves
        if m.seq > after
        and (upto is None or m.seq <= upto)
        and (kinds is None or m.kind in kinds)
        and (hand is None or m.hand == hand)
    ]


def rows(
    table: Table,
    *,
    after: int = 0,
    upto: int | None = None,
    kinds: Iterable[str] | None = None,
    hand: int | None = None,
) -> QuerySet[Move]:
    """The query of a hot table's moves (by seq): what `moves` runs on a table in play."""
    return rows_of(table.pk, after=after, upto=upto, kinds=kinds, hand=hand)


def rows_of(
    table_id: int,
    *,
    after: int = 0,
    upto: int | None = None,
    kinds: Iterable[str] | None = None,
    hand: int | None = None,
) -> QuerySet[Move]:
    """`rows` by the table's id."""
    query = Move.objects.filter(table_id=table_id, seq__gt=after)
    if upto is not None:
        query = query.filter(seq__lte=upto)
    if kinds is not None:
        query = query.filter(kind__in=list(kinds))
    if hand is not None:
        query = query.filter(hand=hand)
    return query.order_by("seq")


_windows: dict[tuple[tuple[str, ...], int], Prepared[Move]] = {}


def _window(only: tuple[str, ...], limit: int) -> Prepared[Move]:
    """The query of a hot table's moves after < seq <= upto, at most `limit`, with `only` these
    fields: what every stream's read of a table change runs, compiled once (games.prepared)."""
    found = _windows.get((only, limit))
    if found is None:

        def build(table_id: int, after: int, upto: int) -> QuerySet[Move]:
            query = rows_of(table_id, after=after, upto=upto)
            return (query.only(*only) if only else query)[:limit]

        found = _windows.setdefault((only, limit), Prepared(build, [int, int, int]))
    return found


def moves(
    table: Table,
    *,
    after: int = 0,
    upto: int | None = None,
    kinds: Iterable[str] | None = None,
    hand: int | None = None,
    limit: int | None = None,
    only: Sequence[str] | None = None,
) -> list[Move]:
    """The table's moves with after < seq <= upto, of these kinds and this hand, by seq (at most
    `limit`). `only`: the fields a hot table's rows are read with (a sealed one's come whole).
    The moves of a sealed or archived table are shared by this process's readers: never change
    them."""
    kind_set = None if kinds is None else frozenset(str(k) for k in kinds)
    if upto is not None and upto <= after:
        return []
    if kind_set is None and hand is None and upto is not None and limit:
        found = _window(tuple(only or ()), limit)(table.pk, after, upto)  # the streams' read
    else:
        query = rows(table, after=after, upto=upto, kinds=kind_set, hand=hand)
        if only is not None:
            query = query.only(*only)
        found = list(query[:limit] if limit is not None else query)
    if not is_over(table):
        return found
    if found and found[0].seq == after + 1 and kind_set is None and hand is None:
        return found  # whole from the first asked for: nothing of it is in a record
    record = _record(table)
    if record is None:
        return found
    logged = {m.seq for m in found}
    sealed = _filter(record.moves, after, upto, kind_set, hand)
    merged = sorted([*found, *(m for m in sealed if m.seq not in logged)], key=lambda m: m.seq)
    return merged[:limit] if limit is not None else merged


def replay(table: Table, log: Iterable[Move]) -> State | None:
    """The table's game rebuilt from its seed and these moves (None before the start)."""
    state = None
    for move in log:
        if move.kind == Move.Kind.START and state is None:
            state = State.new_game(Options.from_dict(table.options), table.seed, table=str(table.pk))
        elif move.kind in _ACTIONS and state is not None:
            state.push(move.position, action_from_dict(move.payload))
    return state


def state(table: Table) -> State | None:
    """The table's engine state: its stored one, or (a sealed or archived table whose state the
    replay gives exactly, so was not kept) the game replayed from its record."""
    if table.state is not None:
        return state_from_dict(table.state)
    if not is_over(table):
        return None
    if _archived(table):
        from games.records import archive

        stored = archive.load(table).stored_state
        if stored is not None:
            return state_from_dict(stored)
    record = _record(table)
    if record is None:
        return None
    found = record.state(table)
    return None if found is None else found.copy()


def hands_of(table: Table, game: State | None, log: Sequence[Move]) -> list[Hand]:
    """The Hand rows games.services.record.store_state wrote for this game: every hand from the
    first dealt to the last, finished once scored (unsaved)."""
    start = next((m for m in log if m.kind == Move.Kind.START), None)
    if game is None or start is None:
        return []
    options = Options.from_dict(table.options)
    first = options.first_hand
    scored = {row["hand"] for row in game.sheet}
    out = []
    for number in range(first, game.hand_no + 1):
        seed = hand_seed(game.seed, number)
        out.append(
            Hand(
                table=table,
                number=number,
                pass_direction=pass_direction(game.options, number),
                seed=seed,
                deal_commitment=seed_commitment(seed, str(table.pk)),
                finished=number in scored,
            )
        )
    return out


def score_rows_of(table: Table, game: State | None) -> list[ScoreRow]:
    """The ScoreRow rows of this game's scoresheet (unsaved), by hand then seat."""
    if game is None:
        return []
    return [
        ScoreRow(table=table, hand_number=row["hand"], position=p, points=pts, total=tot)
        for row in game.sheet
        for p, (pts, tot) in enumerate(zip(row["points"], row["totals"], strict=True))
    ]


def _from_record(table: Table, build: Callable[[State | None, list[Move]], list[Any]]) -> list[Any] | None:
    record = _record(table) if is_over(table) else None
    if record is None:
        return None
    return build(record.state(table), record.moves)


def hands(table: Table) -> list[Hand]:
    """The table's dealt hands, by number (a sealed table's rebuilt from its record)."""
    found = list(Hand.objects.filter(table_id=table.pk).order_by("number"))
    if found or not is_over(table):
        return found
    built = _from_record(table, lambda game, log: hands_of(table, game, log))
    return [] if built is None else built


def score_rows(table: Table) -> list[ScoreRow]:
    """The table's scoresheet rows, by hand then seat (a sealed table's rebuilt from its record)."""
    found = list(ScoreRow.objects.filter(table_id=table.pk).order_by("hand_number", "position"))
    if found or not is_over(table):
        return found
    built = _from_record(table, lambda game, _: score_rows_of(table, game))
    return [] if built is None else built
