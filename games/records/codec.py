"""The sealed record of a game's move log: the moves are replayed through the engine while they are
encoded, so that only what the engine cannot predict is stored (docs/data.md#sealed-records).

Format 2 (what `encode` writes) codes every move with an adaptive binary range coder whose contexts
the replay supplies. A move as the replay expects it (the action of a seat it waits for, in its
canonical form, its seq the next, its hand the replay's, no idempotency key, the events the engine
predicts) costs one "usual" bit, the seat as an index among the seats it waits for, the action as
indices among what that seat could legally do (a play among its legal cards, a pass card by card
among the cards still held): usually a bit or two, nothing when there is one choice. Any other
move codes each of its fields, its texts (keys, JSON payloads and events the replay does not
predict) in a side stream compressed apart. Times are microsecond deltas (the database keeps
microseconds, and a bot's moves of a hand are written together, microseconds apart): their bit
length and leading bits are modelled in the context of the move, the low bits each alone; they are
most of a record. Nothing compresses the coded bytes further: they are near random.

Format 1 (zlib over flag bytes, card ids and varint times) is still read: records sealed before
format 2 stay as they are; `encode(..., format=1)` still writes it."""

from __future__ import annotations

import datetime as dt
import json
import lzma
import zlib
from collections.abc import Hashable, Sequence
from typing import Any, Final

from django.db import connection

from games.engine import (
    MOON,
    PASSING,
    PLAYING,
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
from games.engine.cards import card_ids, rank_of
from games.engine.state import PASS_COUNT
from games.models import Move, Table, jsonb_order

FORMAT: Final = 2  # what encode writes; decode reads every format (1: docs/data.md)
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
# Format 2: how a move that is not the usual one stores its payload.
_BY_INDEX, _EMPTY, _AS_BEFORE, _JSON = 0, 1, 2, 3
_PHASE_KINDS: Final = {PLAYING: Move.Kind.PLAY, PASSING: Move.Kind.PASS, MOON: Move.Kind.MOON}
_PREDICTED: Final = object()  # the events a move's decoding has not read: the replay's


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


def _encode1(table: Table, moves: Sequence[Move]) -> bytes:
    w = _Writer()
    w.uint(1)
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


def _decode1(table: Table, data: bytes) -> list[Move]:
    r = _Reader(zlib.decompress(data))
    if r.uint() != 1:
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


# -- format 2: a range coder over what the replay cannot predict --------------------------------

_PROB_BITS: Final = 16
_PROB_ONE: Final = 1 << _PROB_BITS
_RATE: Final = 4  # a seasoned context moves 1/16 of the way to each bit (of 3 to 6, the smallest records)
_PROB_MIN: Final = 32  # no bit is ever certain: a probability stays in [_PROB_MIN, 1 - _PROB_MIN]
_TOP: Final = 1 << 24
_MASK32: Final = 0xFFFFFFFF
_PREFIX_BITS: Final = 4  # a number's leading bits are modelled together; the lower ones each alone
_STORED, _DEFLATE, _LZMA = 0, 1, 2
_LZMA_FILTERS: Final = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]


class _Model:
    """The probability that the next bit under a context key is 0, learnt from the bits coded
    under that key so far: each bit moves it 1/2, 1/4, ... of the way to that bit, then by a steady
    1/2**_RATE, so that a new context learns fast (most are seen only a few times in a game) and an
    old one tracks drift (the bots' timing) without following every bit."""

    def __init__(self) -> None:
        self.estimates: dict[Hashable, list[int]] = {}

    def p0(self, key: Hashable) -> int:
        found = self.estimates.get(key)
        if found is None:
            found = self.estimates[key] = [_PROB_ONE // 2, 1]
        return found[0]

    def learn(self, key: Hashable, bit: int) -> None:
        p, shift = self.estimates[key]
        p = p - (p >> shift) if bit else p + ((_PROB_ONE - p) >> shift)
        self.estimates[key] = [min(max(p, _PROB_MIN), _PROB_ONE - _PROB_MIN), min(shift + 1, _RATE)]


class _RangeEncoder:
    """An adaptive binary range coder (LZMA's, with 16-bit probabilities so that a bit that is
    almost always the same costs almost nothing). Every bit is coded under a context key, each
    key's probability learnt from the bits coded under it so far."""

    def __init__(self) -> None:
        self.low, self.range = 0, _MASK32
        self.cache, self.pending = 0, 1
        self.out = bytearray()
        self.model = _Model()

    def bit(self, key: Hashable, bit: int) -> int:
        bound = (self.range >> _PROB_BITS) * self.model.p0(key)
        self.model.learn(key, bit)
        if bit:
            self.low += bound
            self.range -= bound
        else:
            self.range = bound
        while self.range < _TOP:
            self.range <<= 8
            self._shift()
        return bit

    def _shift(self) -> None:
        if self.low < 0xFF000000 or self.low > _MASK32:
            carry = self.low >> 32
            byte = self.cache
            while self.pending:
                self.out.append((byte + carry) & 0xFF)
                byte, self.pending = 0xFF, self.pending - 1
            self.cache = (self.low >> 24) & 0xFF
        self.pending += 1
        self.low = (self.low & 0x00FFFFFF) << 8

    def finish(self) -> bytes:
        """The coded bytes. The final value may be anything in [low, low + range): the one with the
        most trailing zero bits is taken, and the zero bytes it ends with are left out (the decoder
        reads zeros past the end). The first byte is always 0 (LZMA's convention): left out too."""
        for shift in range(32, -1, -1):
            value = (self.low + self.range - 1) >> shift << shift
            if value >= self.low:
                self.low = value
                break
        for _ in range(5):
            self._shift()
        return bytes(self.out[1:]).rstrip(b"\0")


class _RangeDecoder:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 4
        self.range = _MASK32
        self.code = int.from_bytes(data[:4].ljust(4, b"\0"), "big")
        self.model = _Model()

    def bit(self, key: Hashable, _: int = 0) -> int:
        bound = (self.range >> _PROB_BITS) * self.model.p0(key)
        bit = int(self.code >= bound)
        self.model.learn(key, bit)
        if bit:
            self.code -= bound
            self.range -= bound
        else:
            self.range = bound
        while self.range < _TOP:
            self.range <<= 8
            self.code = (self.code << 8) | (self.data[self.at] if self.at < len(self.data) else 0)
            self.at += 1
        if self.code >= self.range:
            raise ValueError("the coded stream is damaged")
        return bit


_Coder = _RangeEncoder | _RangeDecoder


def _tree(rc: _Coder, key: Hashable, nbits: int, value: int = 0) -> int:
    """A value of `nbits` bits, most significant first, each bit in the context of the ones before
    it (so the model learns the whole distribution of the value under `key`)."""
    node = 1
    for i in range(nbits - 1, -1, -1):
        node = (node << 1) | rc.bit((key, node), (value >> i) & 1)
    return node - (1 << nbits)


def _choice(rc: _Coder, key: Hashable, count: int, index: int = 0) -> int:
    """An index among `count` options (nothing at all when there is one)."""
    found = _tree(rc, (key, count), (count - 1).bit_length(), index)
    if found >= count:
        raise ValueError(f"option {found} of {count}")
    return found


def _number(rc: _Coder, key: Hashable, value: int = 0) -> int:
    """A non-negative integer: its bit length, then the bits below its leading one, the first few
    modelled together in the context of the length, the rest each in the context of its position
    (near-random bits such as microseconds cost about one bit each; bits that are always zero,
    say of times stored to the millisecond, cost almost nothing)."""
    n = _tree(rc, (key, "n"), 7, value.bit_length())
    if n == 0:
        return 0
    out, node = 1, 1
    for i in range(n - 2, -1, -1):
        if n - 2 - i < _PREFIX_BITS:
            node = (node << 1) | rc.bit((key, n, node), (value >> i) & 1)
            out = (out << 1) | (node & 1)
        else:
            out = (out << 1) | rc.bit((key, n, "low", i), (value >> i) & 1)
    return out


def _signed(rc: _Coder, key: Hashable, value: int = 0) -> int:
    negative = rc.bit((key, "-"), int(value < 0))
    magnitude = _number(rc, key, -value if negative else value)
    return -magnitude if negative else magnitude


def _by_rank(cards: set[int]) -> list[int]:
    """Cards highest rank first: the cards players pass are mostly high, so their indices small."""
    return sorted(cards, key=lambda c: (-rank_of(c), c))


def _choices(
    state: State, seat: int, kind: str, payload: dict[str, Any]
) -> list[tuple[Hashable, int, int]] | None:
    """A legal action in its canonical form as indices among what the seat could do at this point
    ((context, how many options, which)); None when the payload is not that."""
    phase_kind = _PHASE_KINDS.get(state.phase)
    try:
        action = action_from_dict(payload)
    except EngineError:
        return None
    if kind != phase_kind or action.type != kind or action.to_dict() != payload:
        return None
    options = state.legal_actions(seat)
    if action not in options:
        return None
    if isinstance(action, Pass):
        left, out = set(card_ids(state.hands[seat])), list[tuple[Hashable, int, int]]()
        for k, card in enumerate(action.cards):
            ranked = _by_rank(left)
            out.append((("pass", k), len(ranked), ranked.index(card)))
            left.discard(card)
        return out
    return [(("act", kind, not state.trick), len(options), list(options).index(action))]


def _read_action(rc: _Coder, state: State, seat: int) -> dict[str, Any]:
    """The action `_choices` gave the indices of."""
    if state.phase == PASSING:
        left, cards = set(card_ids(state.hands[seat])), []
        for k in range(PASS_COUNT):
            ranked = _by_rank(left)
            cards.append(ranked[_choice(rc, ("pass", k), len(ranked))])
            left.discard(cards[-1])
        return Pass(cards).to_dict()
    options = list(state.legal_actions(seat))
    kind = Move.Kind.PLAY if state.phase == PLAYING else Move.Kind.MOON
    return options[_choice(rc, ("act", kind, not state.trick), len(options))].to_dict()


def _lobby_events(table: Table, kind: str, position: int | None, payload: Any, hand: int) -> list[Any]:
    """The event a seat's filling logs, as games.services logs it (a bot's level, a player's name
    as the seating has it now: an erasure renames both)."""
    if position is None or not isinstance(payload, dict):
        return []
    if kind == Move.Kind.ADD_BOT and "level" in payload:
        return [["bot_added", {"seat": position, "level": payload["level"]}, None, hand]]
    if kind == Move.Kind.JOIN and "player" in payload:
        names = [s.get("name") for s in table.seating or [] if s.get("player") == payload["player"]]
        data = {"seat": position, "player": payload["player"], "name": names[0] if names else None}
        return [["seat_taken", data, None, hand]]
    return []


def _time_key(kind: str, previous_kind: str, previous_delta: int | None) -> Hashable:
    """The context of a move's time: the bots' moves of a hand are written together, microseconds
    apart, and a hand's first move comes after a pause; the previous delta and the change of kind
    tell which is which."""
    if previous_delta is None:
        return "t0"
    return ("t", kind, previous_kind == kind, abs(previous_delta).bit_length() > 12)


def _pack_side(side: bytes) -> tuple[int, bytes]:
    """The side stream (texts) as the smallest of stored, deflate and raw LZMA2."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    candidates = {
        _STORED: side,
        _DEFLATE: deflater.compress(side) + deflater.flush(),
        _LZMA: lzma.compress(side, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS),
    }
    method = min(candidates, key=lambda k: (len(candidates[k]), k))
    return method, candidates[method]


def _unpack_side(method: int, packed: bytes) -> bytes:
    if method == _DEFLATE:
        return zlib.decompress(packed, -15)
    if method == _LZMA:
        return lzma.decompress(packed, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS)
    if method == _STORED:
        return packed
    raise ValueError(f"unknown side stream method {method}")


def _encode2(table: Table, moves: Sequence[Move]) -> bytes:
    rc, side = _RangeEncoder(), _Writer()
    _number(rc, "count", len(moves))
    replay = _Replay(table)
    seq, time, kind_before, delta_before = 0, 0, "", None
    last_payload: dict[str, Any] = {}
    for m in moves:
        kind = str(m.kind)
        if kind not in KINDS:
            raise NotEncodable(f"move {m.seq} has an unknown kind {kind!r}")
        payload = m.payload
        state = replay.state
        to_act = [] if state is None else state.to_act()
        choices = None
        if state is not None and m.position is not None and isinstance(payload, dict):
            choices = _choices(state, m.position, kind, payload)
        hand = replay.hand()
        predicted = replay.predict(kind, m.position, payload if isinstance(payload, dict) else {}, m.hand)
        predicted = predicted or _lobby_events(table, kind, m.position, payload, m.hand)
        usual = (
            choices is not None
            and m.position in to_act
            and m.seq == seq + 1
            and m.hand == hand
            and not m.idempotency_key
            and m.events == predicted
        )
        if rc.bit("usual", int(usual)):
            assert choices is not None and m.position is not None
            _choice(rc, "seat", len(to_act), to_act.index(m.position))
            for key, count, index in choices:
                _choice(rc, key, count, index)
        else:
            _tree(rc, "kind", 4, KINDS.index(kind))
            if rc.bit("has position", int(m.position is not None)):
                assert m.position is not None
                _number(rc, "position", m.position)
            if rc.bit("seq jump", int(m.seq != seq + 1)):
                _number(rc, "seq", m.seq)
            if rc.bit("hand differs", int(m.hand != hand)):
                _number(rc, "hand", m.hand)
            if rc.bit("has key", int(bool(m.idempotency_key))):
                side.text(m.idempotency_key)
            if choices is not None:
                _tree(rc, "payload", 2, _BY_INDEX)
                for key, count, index in choices:
                    _choice(rc, key, count, index)
            elif payload == {}:
                _tree(rc, "payload", 2, _EMPTY)
            elif payload == last_payload.get(kind):
                _tree(rc, "payload", 2, _AS_BEFORE)
            else:
                _tree(rc, "payload", 2, _JSON)
                side.json(payload)
            events = m.events if isinstance(m.events, list) else None
            edits = None if events is None else _edits(predicted, events)
            if events == predicted:
                _tree(rc, "events", 2, _EVENTS_PREDICTED)
            elif edits is not None and sum(n for n, _ in edits) > 0:
                _tree(rc, "events", 2, _EVENTS_EDITED)
                _number(rc, "runs", len(edits))
                for copied, inserted in edits:
                    _number(rc, "copied", copied)
                    side.json(inserted)
            else:
                _tree(rc, "events", 2, _EVENTS_JSON)
                side.json(m.events)
        moment = _micros(m.created_at)
        _signed(rc, _time_key(kind, kind_before, delta_before), moment - time)
        last_payload[kind] = payload
        seq, time, kind_before, delta_before = m.seq, moment, kind, moment - time
    method, packed = _pack_side(bytes(side.out))
    head = _Writer()
    head.byte(2)
    head.uint(len(packed) * 3 + method)
    return bytes(head.out) + packed + rc.finish()


def _decode2(table: Table, data: bytes) -> list[Move]:
    head = _Reader(data)
    if head.byte() != 2:
        raise NotEncodable("a record of an unknown format")
    size, method = divmod(head.uint(), 3)
    side = _Reader(_unpack_side(method, data[head.at : head.at + size]))
    rc = _RangeDecoder(data[head.at + size :])
    replay = _Replay(table)
    out: list[Move] = []
    seq, time, kind_before, delta_before = 0, 0, "", None
    last_payload: dict[str, Any] = {}
    for _ in range(_number(rc, "count")):
        state, hand, key = replay.state, replay.hand(), ""
        payload: Any
        position: int | None
        runs: list[tuple[int, Any]] | None = None
        events: Any = _PREDICTED
        if rc.bit("usual"):
            if state is None:
                raise ValueError("an action before the start")
            to_act = state.to_act()
            position = to_act[_choice(rc, "seat", len(to_act))]
            kind = _PHASE_KINDS.get(state.phase, "")
            payload = _read_action(rc, state, position)
            seq += 1
        else:
            kind = KINDS[_tree(rc, "kind", 4)]
            position = _number(rc, "position") if rc.bit("has position") else None
            seq = _number(rc, "seq") if rc.bit("seq jump") else seq + 1
            hand = _number(rc, "hand") if rc.bit("hand differs") else hand
            key = side.text() if rc.bit("has key") else ""
            how = _tree(rc, "payload", 2)
            if how == _BY_INDEX:
                if state is None or position is None:
                    raise ValueError("an action before the start")
                payload = _read_action(rc, state, position)
            elif how == _EMPTY:
                payload = {}
            elif how == _AS_BEFORE:
                payload = _plain(last_payload[kind])
            else:
                payload = side.json()
            mode = _tree(rc, "events", 2)
            if mode == _EVENTS_EDITED:
                runs = [(_number(rc, "copied"), side.json()) for _ in range(_number(rc, "runs"))]
            elif mode == _EVENTS_JSON:
                events = side.json()
        predicted = replay.predict(kind, position, payload if isinstance(payload, dict) else {}, hand)
        predicted = predicted or _lobby_events(table, kind, position, payload, hand)
        if runs is not None:
            events, j = [], 0
            for copied, inserted in runs:
                events += inserted
                events += predicted[j : j + copied]
                j += copied
        elif events is _PREDICTED:
            events = predicted
        delta = _signed(rc, _time_key(kind, kind_before, delta_before))
        time += delta
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
        last_payload[kind] = payload
        kind_before, delta_before = kind, delta
    return out


def as_stored(value: Any) -> Any:
    """A JSON value as the database gives it back (PostgreSQL: jsonb's key order)."""
    return jsonb_order(value) if connection.vendor == "postgresql" else value


_FIELDS: Final = ("seq", "hand", "position", "kind", "payload", "events", "idempotency_key", "created_at")


def encode(table: Table, moves: Sequence[Move], *, format: int = FORMAT) -> bytes:
    """The compact record of `moves` (every move of `table`, by seq), in this format (1 only to
    make records as they were once made). Raises NotEncodable unless decoding it gives back every
    move equal in every field."""
    if format not in _ENCODERS:
        raise ValueError(f"no record format {format}")
    try:
        data = _ENCODERS[format](table, moves)
        back = _decode(table, data)
    except (KeyError, IndexError, TypeError, ValueError, EngineError, zlib.error, lzma.LZMAError) as exc:
        raise NotEncodable(f"table {table.pk}: {type(exc).__name__}: {exc}") from exc
    if len(back) != len(moves):
        raise NotEncodable(f"table {table.pk}: {len(moves)} moves came back as {len(back)}")
    for original, copy in zip(moves, back, strict=True):
        for name in _FIELDS:
            if getattr(original, name) != getattr(copy, name):
                raise NotEncodable(f"table {table.pk}: move {original.seq}'s {name} does not come back")
    return data


_ENCODERS: Final = {1: _encode1, 2: _encode2}


def _decode(table: Table, data: bytes) -> list[Move]:
    """Either format: a format 1 record is a zlib stream, whose first byte is never 2."""
    if data[:1] == bytes([2]):
        return _decode2(table, data)
    return _decode1(table, data)


def decode(table: Table, data: bytes) -> list[Move]:
    """The moves of `table` from its record: unsaved Move objects (table=table) equal to the rows
    that were sealed."""
    try:
        return _decode(table, bytes(data))
    except (KeyError, IndexError, TypeError, ValueError, EngineError, zlib.error, lzma.LZMAError) as exc:
        raise NotEncodable(f"table {table.pk}: a damaged record: {exc}") from exc
