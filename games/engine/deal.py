"""Setting up a hand: seeds from `secrets`, per-hand seeds, a seeded uniform shuffle, the pass rotation."""

from __future__ import annotations

import functools
import hashlib
import secrets
import struct
from collections.abc import Sequence
from typing import Final

from .cards import BIT, ONE_PACK, TWO_PACKS, bits, parse_card
from .options import Options

_DIRECTION_NAMES: Final = {0: "hold", 1: "left", 2: "across"}

# Cards removed before dealing, by player count (docs/rules.md); Cancellation Hearts removes none.
REMOVED: Final[dict[int, tuple[str, ...]]] = {
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


def seed_commitment(seed: str, table: str = "") -> str:
    """Published when a hand is dealt: SHA-256 of `<table>:<hand seed>` (of the seed alone for a
    game with no table id), so the seed revealed after the hand must hash to it at this table."""
    return hashlib.sha256((f"{table}:{seed}" if table else seed).encode()).hexdigest()


@functools.lru_cache(maxsize=4096)
def deal_commitment(game_seed: str, hand: int, table: str = "") -> str:
    """The commitment of a game's hand (`seed_commitment` of its `hand_seed`): every view of the
    hand shows it, and each view made it anew with two hashes (a bot's every decision makes one)."""
    return seed_commitment(hand_seed(game_seed, hand), table)


_WORD: Final = 1 << 32
# Lemire's rejection threshold for each bound: a 32-bit word w gives index (w * bound) >> 32,
# and rejecting words whose low half falls below this makes every index exactly equally likely.
_REJECT_BELOW: Final = tuple((_WORD - b) % b if b else 0 for b in range(2 * 52 + 1))


def shuffle(seed: str, cards: Sequence[int]) -> list[int]:
    """Fisher-Yates driven by SHAKE-256 of the seed: each swap index is drawn exactly uniformly
    from 32-bit words of the stream (Lemire's multiply-and-reject), so the shuffle is uniform and
    unpredictable without the seed, and the same seed always gives the same order."""
    n = len(cards)
    out = list(cards)
    count = n + 16  # spare words for the (rare: p < 2**-25 each) rejected draws
    words = _words(seed, count)
    k = 0
    for i in range(n - 1, 0, -1):
        bound = i + 1
        while True:
            if k == count:
                count *= 2
                words = _words(seed, count)  # SHAKE output extends: the prefix is unchanged
            m = words[k] * bound
            k += 1
            if m & 0xFFFFFFFF >= _REJECT_BELOW[bound]:
                break
        j = m >> 32
        out[i], out[j] = out[j], out[i]
    return out


def _words(seed: str, count: int) -> tuple[int, ...]:
    return _word_format(count).unpack(hashlib.shake_256(seed.encode()).digest(4 * count))


@functools.cache
def _word_format(count: int) -> struct.Struct:
    return struct.Struct(f">{count}I")


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
    order = shuffle(seed, _in_play(options.players, options.two_packs)[1])
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
