"""Cards as small ints, hands as bitmasks, and the one place card notation is parsed and formatted."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, TypeVar

from .errors import InvalidCard

T = TypeVar("T")

# A card id is suit * 13 + rank, rank 0 = "2" ... 12 = "A". Ids 0..51 are the first pack;
# Cancellation Hearts adds a second pack as ids 52..103 (id + 52 is the twin of id), so a
# hand is always one int bitmask even when it holds two identical cards.
RANKS: Final = "23456789TJQKA"
SUITS: Final = "CDSH"
CLUBS: Final = 0
DIAMONDS: Final = 1
SPADES: Final = 2
HEARTS: Final = 3
PACK: Final = 52

_SUIT13: Final = (1 << 13) - 1
SUIT_MASK: Final[tuple[int, ...]] = tuple(
    (_SUIT13 << (13 * s)) | (_SUIT13 << (13 * s + PACK)) for s in range(4)
)
HEARTS_MASK: Final = SUIT_MASK[HEARTS]
QS: Final = SPADES * 13 + RANKS.index("Q")
QS_MASK: Final = (1 << QS) | (1 << (QS + PACK))
PENALTY_MASK: Final = HEARTS_MASK | QS_MASK
ONE_PACK: Final = (1 << PACK) - 1
TWO_PACKS: Final = (1 << (2 * PACK)) - 1
BIT: Final[tuple[int, ...]] = tuple(1 << c for c in range(2 * PACK))

_NAMES: Final[tuple[str, ...]] = tuple(RANKS[c % 13] + SUITS[c // 13] for c in range(PACK))
# Canonical token of every card id of both packs: the one table the rest of the engine indexes.
NAMES: Final[tuple[str, ...]] = _NAMES + _NAMES
_BY_NAME: Final[dict[str, int]] = {name: c for c, name in enumerate(_NAMES)}
for _c in range(PACK):
    if _NAMES[_c][0] == "T":
        _BY_NAME["10" + _NAMES[_c][1]] = _c


def card_name(card: int) -> str:
    """Canonical wire form of a card id (either pack): rank then suit, upper case."""
    return _NAMES[card % PACK]


def parse_card(token: object) -> int:
    """Parse one card token into a first-pack id; case-insensitive, `10` accepted for `T`."""
    if isinstance(token, str):
        card = _BY_NAME.get(token.strip().upper())
        if card is not None:
            return card
    raise InvalidCard(
        "invalid_card",
        f"{token!r} is not a card: use rank then suit, like 2C, TD, QS or AH",
        token=str(token),
    )


def parse_cards(tokens: Iterable[object]) -> list[int]:
    """Parse a list of card tokens; the first bad token is named in the error."""
    if isinstance(tokens, str | bytes):
        raise InvalidCard("invalid_card", "expected a list of card tokens, not one string", token=str(tokens))
    return [parse_card(t) for t in tokens]


def suit_of(card: int) -> int:
    return (card % PACK) // 13


def rank_of(card: int) -> int:
    return card % 13


def bits(mask: int) -> Iterator[int]:
    """The card ids in a mask, lowest first (clubs 2..A, diamonds, spades, hearts; pack 1 first)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def sort_key(card: int) -> tuple[int, int]:
    """Display order: by suit (C, D, S, H), then rank, twins together."""
    return (card % PACK, card)


def suit_table(item: tuple[T, ...]) -> tuple[tuple[T, ...], ...]:
    """For every 13-bit pattern of one suit, the tuple of `item[rank]` for its set ranks, lowest
    first; built once so that listing a hand is four lookups instead of a loop over its bits."""
    table: list[tuple[T, ...]] = [()] * 8192
    for p in range(1, 8192):
        low = p & -p
        table[p] = (item[low.bit_length() - 1], *table[p ^ low])
    return tuple(table)


_SUIT_NAMES: Final = tuple(suit_table(tuple(r + SUITS[s] for r in RANKS)) for s in range(4))
_SUIT_IDS: Final = tuple(suit_table(tuple(range(13 * s, 13 * s + 13))) for s in range(4))
_NC: Final = _SUIT_NAMES[0]
_ND: Final = _SUIT_NAMES[1]
_NS: Final = _SUIT_NAMES[2]
_NH: Final = _SUIT_NAMES[3]
_IC: Final = _SUIT_IDS[0]
_ID: Final = _SUIT_IDS[1]
_IS: Final = _SUIT_IDS[2]
_IH: Final = _SUIT_IDS[3]


def names(mask: int) -> list[str]:
    """Canonical tokens of a mask in display order (a twin card appears twice, side by side)."""
    if mask < 1 << PACK:
        return [
            *_NC[mask & _SUIT13],
            *_ND[mask >> 13 & _SUIT13],
            *_NS[mask >> 26 & _SUIT13],
            *_NH[mask >> 39],
        ]
    out: list[str] = []
    second = mask >> PACK
    for suit in range(4):
        a = mask >> (13 * suit) & _SUIT13
        b = second >> (13 * suit) & _SUIT13
        for r in range(13):
            out.extend([RANKS[r] + SUITS[suit]] * ((a >> r & 1) + (b >> r & 1)))
    return out


def card_ids(mask: int) -> list[int]:
    """First-pack ids of a mask, lowest first (a twin card appears twice)."""
    if mask <= ONE_PACK:
        return [
            *_IC[mask & _SUIT13],
            *_ID[mask >> 13 & _SUIT13],
            *_IS[mask >> 26 & _SUIT13],
            *_IH[mask >> 39],
        ]
    return sorted(card_ids(mask & ONE_PACK) + card_ids(mask >> PACK))


def names_of(cards: Iterable[int]) -> list[str]:
    return [_NAMES[c % PACK] for c in cards]
