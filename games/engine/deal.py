"""Setting up a hand: seeds from `secrets`, per-hand seeds, a seeded uniform shuffle, the pass rotation."""

from __future__ import annotations

import functools
import hashlib
import math
import secrets
import struct
from collections.abc import Sequence

from .cards import BIT, ONE_PACK, TWO_PACKS, bits, parse_card
from .options import Options

_DIRECTION_NAMES = {0: "hold", 1: "left", 2: "across"}

# Cards removed before dealing, by player count (RULES.md); Cancellation Hearts removes none.
REMOVED: dict[int, tuple[str, ...]] = {
    3: ("2D",),
    4: (),
    5: ("2D", "2C"),
    6: ("2D", "3D", "3C", "4C"),
    7: ("2D", "3D", "3C"),
}


def new_seed() -> str:
    """A fresh 256-bit game seed from the operating system's CSPRNG."""
    return secrets.token_hex(32)


def hand_seed(game_seed: str, hand_number: int) -> str:
    """The seed of one hand: a keyed BLAKE2b MAC of the hand number under the game seed, so
    revealing a hand's seed after the hand proves its deal without revealing the deals to come."""
    key = game_seed.encode()
    if len(key) > 64:
        key = hashlib.blake2b(key, digest_size=64).digest()
    return hashlib.blake2b(b"hearts-hand:%d" % hand_number, key=key, digest_size=32).hexdigest()


def seed_commitment(seed: str) -> str:
    """Published when a hand is dealt; the seed revealed after the hand must hash to it."""
    return hashlib.sha256(seed.encode()).hexdigest()


@functools.cache
def _stream_bytes(n: int) -> int:
    """Random bytes needed to shuffle n cards: log2(n!) bits plus a 256-bit margin."""
    return (math.ceil(math.lgamma(n + 1) / math.log(2)) + 256 + 7) // 8


def shuffle(seed: str, cards: Sequence[int]) -> list[int]:
    """A deterministic shuffle driven by SHAKE-256 of the seed (exact Fisher-Yates).

    The permutation is read from one large random integer in the factorial number system;
    the integer carries 256 bits more than log2(n!), so the distance from a uniform shuffle is
    below 2**-256, and the stream is unpredictable without the seed.
    """
    n = len(cards)
    x = int.from_bytes(hashlib.shake_256(seed.encode()).digest(_stream_bytes(n)), "big")
    out = list(cards)
    for i in range(n - 1, 0, -1):
        x, j = divmod(x, i + 1)
        out[i], out[j] = out[j], out[i]
    return out


@functools.cache
def _key_format(n: int) -> struct.Struct:
    return struct.Struct(f">{n}Q")


def _deal_order(seed: str, cards: Sequence[int]) -> list[int]:
    """The dealing order: cards sorted by independent 64-bit keys read from SHAKE-256 of the
    seed. With distinct keys the order is exactly uniform (the keys are exchangeable); if any
    two keys tie (probability below n**2 / 2**65) the exact shuffle decides instead. Sorting
    runs in C, which makes dealing several times cheaper than a Python Fisher-Yates loop."""
    n = len(cards)
    keys = _key_format(n).unpack(hashlib.shake_256(seed.encode()).digest(8 * n))
    by_key = dict(zip(keys, cards, strict=True))
    if len(by_key) < n:
        return shuffle(seed + ":tie", cards)
    return list(map(by_key.__getitem__, sorted(by_key)))


@functools.cache
def _in_play(players: int, two_packs: bool) -> tuple[int, tuple[int, ...]]:
    if two_packs:
        mask = TWO_PACKS
    else:
        mask = ONE_PACK
        for token in REMOVED[players]:
            mask &= ~(1 << parse_card(token))
    return mask, tuple(bits(mask))


def cards_in_play(options: Options) -> int:
    """Mask of every card dealt at this table (both packs for Cancellation Hearts)."""
    return _in_play(options.players, options.two_packs)[0]


def deal(options: Options, seed: str) -> tuple[tuple[int, ...], int]:
    """Deal from a seed: each seat's hand mask and the widow mask (Cancellation Hearts only)."""
    order = _deal_order(seed, _in_play(options.players, options.two_packs)[1])
    n = options.players
    each = len(order) // n
    bit = BIT.__getitem__
    hands = tuple([sum(map(bit, order[i : i + each])) for i in range(0, n * each, each)])
    return hands, sum(map(bit, order[n * each :]))


def pass_offset(options: Options, hand_number: int) -> int:
    """Seats between passer and receiver for a hand: 0 = hold (no passing)."""
    if options.two_packs:
        return 0
    if options.players == 4:
        return (0, 1, 3, 2)[hand_number % 4]
    return 1 if hand_number % 2 else options.players - 1


def pass_direction(options: Options, hand_number: int) -> str:
    """`left`, `right`, `across` or `hold` (no passing this hand)."""
    off = pass_offset(options, hand_number)
    if off and off == options.players - 1:
        return "right"
    return _DIRECTION_NAMES[off]
