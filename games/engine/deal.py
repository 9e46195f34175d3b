"""Deals: game seeds from `secrets`, per-hand seeds derived from them, and a seeded uniform shuffle."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets

from .cards import ONE_PACK, TWO_PACKS, bits, parse_card
from .options import Options

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
    """The seed of one hand: HMAC-SHA256 of the game seed, so revealing a hand's seed after the
    hand proves its deal without revealing the deals still to come."""
    return hmac.new(game_seed.encode(), f"hearts-hand:{hand_number}".encode(), hashlib.sha256).hexdigest()


def seed_commitment(seed: str) -> str:
    """Published when a hand is dealt; the seed revealed after the hand must hash to it."""
    return hashlib.sha256(seed.encode()).hexdigest()


def shuffle(seed: str, cards: list[int]) -> list[int]:
    """A deterministic shuffle driven by SHAKE-256 of the seed.

    The permutation is read from one large random integer in the factorial number system;
    the integer carries 256 bits more than log2(n!), so the distance from a uniform shuffle is
    below 2**-256, and the stream is unpredictable without the seed.
    """
    n = len(cards)
    need_bits = math.ceil(math.lgamma(n + 1) / math.log(2)) + 256
    x = int.from_bytes(hashlib.shake_256(seed.encode()).digest((need_bits + 7) // 8), "big")
    out = list(cards)
    for i in range(n - 1, 0, -1):
        x, j = divmod(x, i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def cards_in_play(options: Options) -> int:
    """Mask of every card dealt at this table (both packs for Cancellation Hearts)."""
    if options.two_packs:
        return TWO_PACKS
    mask = ONE_PACK
    for token in REMOVED[options.players]:
        mask &= ~(1 << parse_card(token))
    return mask


def deal(options: Options, seed: str) -> tuple[tuple[int, ...], int]:
    """Deal from a seed: each seat's hand mask and the widow mask (Cancellation Hearts only)."""
    order = shuffle(seed, list(bits(cards_in_play(options))))
    n = options.players
    each = len(order) // n
    hands = []
    for s in range(n):
        m = 0
        for c in order[s * each : (s + 1) * each]:
            m |= 1 << c
        hands.append(m)
    widow = 0
    for c in order[n * each :]:
        widow |= 1 << c
    return tuple(hands), widow
