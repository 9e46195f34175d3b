"""The sealed record of a game's move log: the moves are replayed through the engine while they are
encoded, so that only what the engine cannot predict is stored (docs/data.md#sealed-records).

Per move the record holds its kind and seat, the action as card ids, the time as a delta in
microseconds, the idempotency key, and its events only as a residual against the events replay
predicts (usually nothing); moves that are not actions (join, add_bot, leave, back, rematch,
abandon) keep their payload and events as JSON. The whole is compressed with zlib, which is smaller
than lzma on records of this size (lzma's container costs about 60 bytes)."""

from __future__ import annotations

import datetime as dt
import json
import zlib
from collections.abc import Sequence
from typing import Any, Final

from django.db import connection

from games.engine import (
    EngineError,
    Event,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    action_from_dict,
    card_name,
)
from games.models import Move, Table

FORMAT: Final = 1
KINDS: Final[tuple[str, ...]] = tuple(Move.Kind.values)
ACTIONS: Final = (Move.Kind.PASS, Move.Kind.PLAY, Move.Kind.MOON)
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MOON: Final = ("subtract", "add")
_FINISHING: Final = {"game_over": "finished", "table_abandoned": "abandoned"}

# First flag byte of a move: its kind in the low 4 bits, then what differs from the usual.
_HAS_POSITION: Final = 0x10
_SEQ_JUMP: Final = 0x20  # its seq is not the previous one plus one
_HAND_DIFFERS: Final = 0x40  # its hand is not the replay's
_HAS_KEY: Final = 0x80
# Second flag byte: how its payload (low 2 bits) and its events (next 2 bits) are stored.
_PAYLOAD_COMPACT: Final = 0  # an action as card ids, or an empty payload
_PAYLOAD_JSON: Final = 1
_EVENTS_PREDICTED: Final = 0
_EVENTS_EDITED: Final = 1  # the predicted events with some inserted
_EVENTS_JSON: Final = 2


class NotEncodable(Exception):
    """The move log would not come back exactly from its record: the table stays hot."""


# -- bytes --------------------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def byte(self, value: int) -> None:
        self.out.append(value)

    def uint(self, value: int) -> None:
        if value < 0:
            raise NotEncodable(f"{value} is negative where a count was expected")
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)

    def sint(self, value: int) -> None:
        self.uint(value * 2 if value >= 0 else -value * 2 - 1)

    def text(self, value: str) -> None:
        raw = value.encode()
        self.uint(len(raw))
        self.out += raw

    def json(self, value: Any) -> None:
        self.text(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def uint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def sint(self) -> int:
        v = self.uint()
        return v // 2 if v % 2 == 0 else -(v + 1) // 2

    def text(self) -> str:
        n = self.uint()
        raw = self.data[self.at : self.at + n]
        self.at += n
        return raw.decode()

    def json(self) -> Any:
        return json.loads(self.text())


def _micros(moment: dt.datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _moment(micros: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=micros)


# -- prediction ---------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A value as it comes back from the database's JSON (tuples are lists, mappings dicts)."""
    return json.loads(json.dumps(value, default=dict))


def _tagged(events: Sequence[Event], hand: int) -> list[list[Any]]:
    """The events as games.services.record.log stores them, with the events it adds that follow
    from the engine's alone (table_finished)."""
    out: list[list[Any]] = []
    for e in events:
        hand = e.data["hand"] if e.type == "hand_started" else hand
        out.append([e.type, dict(e.data), e.to, hand])
        if e.type in _FINISHING:
            data = {"status": _FINISHING[e.type], "winners": e.data.get("winners")}
            out.append(["table_finished", {**data, "totals": e.data.get("totals")}, None, hand])
    plain: list[list[Any]] = _plain(out)
    return plain


class _Replay:
    """The game replayed move by move: what the engine predicts of each next move."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.state: State | None = None

    def hand(self) -> int:
        return 0 if self.state is None else self.state.hand_no

    def predict(self, kind: str, position: int | None, payload: dict[str, Any], hand: int) -> list[Any]:
        """Apply the move; the events the engine says it caused (none for a move it does not see)."""
        if kind == Move.Kind.START and self.state is None:
            events: list[Event] = [Event("game_started", {}, None)]
            options = Options.from_dict(self.table.options)
            self.state = State.new_game(options, self.table.seed, events, table=str(self.table.pk))
            return _tagged(events, hand)
        if kind in ACTIONS and self.state is not None and position is not None:
            try:
                return _tagged(self.state.push(position, action_from_dict(payload)), hand)
            except EngineError as exc:
                raise NotEncodable(f"the engine refuses a logged move: {exc}") from exc
        return []


def _compact(kind: str, payload: dict[str, Any]) -> bytes | None:
    """An action's payload as card ids (None when it is not in its canonical form)."""
    try:
        action = action_from_dict(payload)
    except EngineError:
        return None
    if action.to_dict() != payload or action.type != kind:
        return None
    if isinstance(action, Play):
        return bytes([action.card])
    if isinstance(action, Pass):
        return bytes([len(action.cards), *action.cards])
    if isinstance(action, MoonChoice):
        return bytes([_MOON.index(action.choice)])
    return None


def _expand(kind: str, r: _Reader) -> dict[str, Any]:
    if kind == Move.Kind.PLAY:
        return {"type": "play", "card": card_name(r.byte())}
    if kind == Move.Kind.PASS:
        return {"type": "pass", "cards": [card_name(r.byte()) for _ in range(r.byte())]}
    return {"type": "moon", "choice": _MOON[r.byte()]}


def _edits(predicted: list[Any], actual: list[Any]) -> list[tuple[int, list[Any]]] | None:
    """The actual events as runs of the predicted ones, each preceded by inserted events:
    [(how many predicted to copy, the events inserted before them)], or None when the actual
    events are not the predicted ones with insertions."""
    runs: list[tuple[int, list[Any]]] = []
    j, copied = 0, 0
    inserted: list[Any] = []
    for event in actual:
        if j < len(predicted) and event == predicted[j]:
            j, copied = j + 1, copied + 1
            continue
        if copied:
            runs.append((copied, inserted))
            copied, inserted = 0, []
        inserted.append(event)
    if j != len(predicted):
        return None
    if copied or inserted:
        runs.append((copied, inserted))
    return runs


# -- the codec ----------------------------------------------------------------------------------


def _encode(table: Table, moves: Sequence[Move]) -> bytes:
    w = _Writer()
    w.uint(FORMAT)
    w.uint(len(moves))
    replay = _Replay(table)
    seq, time = 0, 0
    for m in moves:
        kind = str(m.kind)
        if kind not in KINDS:
            raise NotEncodable(f"move {m.seq} has an unknown kind {kind!r}")
        flags = KINDS.index(kind)
        flags |= _HAS_POSITION if m.position is not None else 0
        flags |= _SEQ_JUMP if m.seq != seq + 1 else 0
        flags |= _HAND_DIFFERS if m.hand != replay.hand() else 0
        flags |= _HAS_KEY if m.idempotency_key else 0
        payload = m.payload if isinstance(m.payload, dict) else None
        compact = _compact(kind, payload) if kind in ACTIONS and payload is not None else None
        empty = kind not in ACTIONS and payload == {}
        predicted = replay.predict(kind, m.position, payload or {}, m.hand)
        events = m.events if isinstance(m.events, list) else None
        edits = None if events is None else _edits(predicted, events)
        how = _PAYLOAD_COMPACT if compact is not None or empty else _PAYLOAD_JSON
        if events == predicted:
            how |= _EVENTS_PREDICTED << 2
        elif edits is not None and sum(n for n, _ in edits) > 0:
            how |= _EVENTS_EDITED << 2
        else:
            how |= _EVENTS_JSON << 2
        w.byte(flags)
        w.byte(how)
        if m.position is not None:
            w.uint(m.position)
        if flags & _SEQ_JUMP:
            w.uint(m.seq)
        if flags & _HAND_DIFFERS:
            w.uint(m.hand)
        moment = _micros(m.created_at)
        w.sint(moment - time)
        if m.idempotency_key:
            w.text(m.idempotency_key)
        if compact is not None:
            w.out += compact
        elif not empty:
            w.json(m.payload)
        if how >> 2 == _EVENTS_EDITED:
            assert edits is not None
            w.uint(len(edits))
            for copied, inserted in edits:
                w.uint(copied)
                w.json(inserted)
        elif how >> 2 == _EVENTS_JSON:
            w.json(m.events)
        seq, time = m.seq, moment
    return zlib.compress(bytes(w.out), 9)


def _decode(table: Table, data: bytes) -> list[Move]:
    r = _Reader(zlib.decompress(data))
    if r.uint() != FORMAT:
        raise NotEncodable("a record of an unknown format")
    replay = _Replay(table)
    out: list[Move] = []
    seq, time = 0, 0
    for _ in range(r.uint()):
        flags, how = r.byte(), r.byte()
        kind = KINDS[flags & 0x0F]
        position = r.uint() if flags & _HAS_POSITION else None
        seq = r.uint() if flags & _SEQ_JUMP else seq + 1
        hand = r.uint() if flags & _HAND_DIFFERS else replay.hand()
        time += r.sint()
        key = r.text() if flags & _HAS_KEY else ""
        if how & 0x03 == _PAYLOAD_JSON:
            payload = r.json()
        elif kind in ACTIONS:
            payload = _expand(kind, r)
        else:
            payload = {}
        predicted = replay.predict(kind, position, payload if isinstance(payload, dict) else {}, hand)
        mode = how >> 2
        if mode == _EVENTS_PREDICTED:
            events = predicted
        elif mode == _EVENTS_EDITED:
            events, j = [], 0
            for _ in range(r.uint()):
                copied = r.uint()
                events += r.json()
                events += predicted[j : j + copied]
                j += copied
        else:
            events = r.json()
        out.append(
            Move(
                table=table,
                seq=seq,
                hand=hand,
                position=position,
                kind=kind,
                payload=as_stored(payload),
                events=as_stored(events),
                idempotency_key=key,
                created_at=_moment(time),
            )
        )
    return out


def _jsonb_order(value: Any) -> Any:
    """A JSON value with its objects' keys in PostgreSQL jsonb's order (shorter keys first, then
    by their bytes): what a row read back from the database holds, so that answers built from a
    record serialise byte for byte as answers built from rows."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: _jsonb_order(value[k]) for k in keys}
    if isinstance(value, list):
        return [_jsonb_order(v) for v in value]
    return value


def as_stored(value: Any) -> Any:
    """A JSON value as the database gives it back (PostgreSQL: jsonb's key order)."""
    return _jsonb_order(value) if connection.vendor == "postgresql" else value


_FIELDS: Final = ("seq", "hand", "position", "kind", "payload", "events", "idempotency_key", "created_at")


def encode(table: Table, moves: Sequence[Move]) -> bytes:
    """The compact record of `moves` (every move of `table`, by seq). Raises NotEncodable unless
    decoding it gives back every move equal in every field."""
    try:
        data = _encode(table, moves)
        back = _decode(table, data)
    except (KeyError, IndexError, TypeError, ValueError, EngineError) as exc:
        raise NotEncodable(f"table {table.pk}: {type(exc).__name__}: {exc}") from exc
    if len(back) != len(moves):
        raise NotEncodable(f"table {table.pk}: {len(moves)} moves came back as {len(back)}")
    for original, copy in zip(moves, back, strict=True):
        for name in _FIELDS:
            if getattr(original, name) != getattr(copy, name):
                raise NotEncodable(f"table {table.pk}: move {original.seq}'s {name} does not come back")
    return data


def decode(table: Table, data: bytes) -> list[Move]:
    """The moves of `table` from its record: unsaved Move objects (table=table) equal to the rows
    that were sealed."""
    try:
        return _decode(table, bytes(data))
    except (KeyError, IndexError, TypeError, ValueError, EngineError, zlib.error) as exc:
        raise NotEncodable(f"table {table.pk}: a damaged record: {exc}") from exc
