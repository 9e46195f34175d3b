"""Finished-hand records and lazily rendered event data: card ints stay ints until someone reads them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .cards import NAMES, names
from .deal import hand_seed, seed_commitment


class Lazy(Mapping[str, Any]):
    """A read-only mapping built on first access. Simulations apply millions of actions whose
    events nobody reads; rendering card tokens only when read keeps that path cheap."""

    __slots__ = ("_args", "_data", "_fn")

    def __init__(self, fn: Callable[..., dict[str, Any]], *args: Any) -> None:
        self._fn = fn
        self._args = args
        self._data: dict[str, Any] | None = None

    def _get(self) -> dict[str, Any]:
        data = self._data
        if data is None:
            data = self._data = self._fn(*self._args)
        return data

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())


class HandRecord(Lazy):
    """The full record of a finished hand: the deal, passes, every trick and the scores.

    It reads as a mapping (the wire form) and keeps the compact form that the state stores;
    card `i` of a trick was played by seat `(leader + i) % players`.
    """

    __slots__ = ("_json", "compact")

    def __init__(self, compact: tuple[Any, ...], stored: list[Any] | None = None) -> None:
        super().__init__(_render, compact)
        self.compact = compact
        self._json = stored  # its JSON form, kept: a record never changes once the hand is over

    def to_json(self) -> list[Any]:
        """Lossless compact JSON form (masks as hex strings) for storing the state. Made once per
        record and shared by every state saved after (a state is saved after each move, and a
        long game's history has dozens of hands): treat it as read-only."""
        if self._json is None:
            self._json = self._to_json()
        return self._json

    def _to_json(self) -> list[Any]:
        game_seed, hand, dealer, direction, offset, dealt, widow, passes, tricks, taken, moon, row, totals = (
            self.compact[:13]
        )
        return [
            game_seed,
            hand,
            dealer,
            direction,
            offset,
            [format(m, "x") for m in dealt],
            format(widow, "x"),
            [format(m, "x") for m in passes],
            [[leader, list(cards), winner] for leader, cards, winner in tricks],
            list(taken),
            moon,
            list(row),
            list(totals),
            _table(self.compact),
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> HandRecord:
        game_seed, hand, dealer, direction, offset, dealt, widow, passes, tricks, taken, moon, row, totals = (
            data[:13]
        )
        return cls(
            (
                game_seed,
                hand,
                dealer,
                direction,
                offset,
                tuple(int(m, 16) for m in dealt),
                int(widow, 16),
                tuple(int(m, 16) for m in passes),
                tuple((leader, tuple(cards), winner) for leader, cards, winner in tricks),
                list(taken),
                moon,
                list(row),
                list(totals),
                _table(data),
            ),
            data,
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HandRecord):
            return self.compact == other.compact
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def _table(compact: tuple[Any, ...] | list[Any]) -> str:
    """The table id bound into the commitment: the 14th entry (records saved before have 13)."""
    return str(compact[13]) if len(compact) > 13 else ""


def _render(compact: tuple[Any, ...]) -> dict[str, Any]:
    game_seed, hand, dealer, direction, offset, dealt, widow, passes, tricks, taken, moon, row, totals = (
        compact[:13]
    )
    n = len(dealt)
    seed = hand_seed(game_seed, hand)
    return {
        "hand": hand,
        "seed": seed,
        "deal_commitment": seed_commitment(seed, _table(compact)),
        "dealer": dealer,
        "pass_direction": direction,
        "dealt": [names(m) for m in dealt],
        "widow": names(widow),
        "passes": [{"to": (s + offset) % n, "cards": names(m)} for s, m in enumerate(passes)],
        "tricks": [
            {"leader": leader, "cards": [NAMES[c] for c in cards], "winner": None if winner < 0 else winner}
            for leader, cards, winner in tricks
        ],
        "taken_points": list(taken),
        "moon": moon,
        "points": list(row),
        "totals": list(totals),
    }
