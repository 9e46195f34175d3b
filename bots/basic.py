"""The `basic` bot: plain rules of thumb from one seat's view (the same dict the API shows that player)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

RANKS = "23456789TJQKA"


def rank_of(card: str) -> int:
    return RANKS.index("T" if card[:-1] == "10" else card[:-1])


def suit_of(card: str) -> str:
    return card[-1]


def danger(card: str, hand: Sequence[str]) -> float:
    """How much a card hurts to keep: the queen and the spades above her, high hearts, and any
    card of a short suit (passing it away may void the suit)."""
    suit, rank = suit_of(card), rank_of(card)
    if card == "QS":
        return 100
    if suit == "S" and rank > RANKS.index("Q"):
        return 60 + rank
    short = sum(1 for c in hand if suit_of(c) == suit) <= 2 and suit not in "S"
    return rank * (2 if suit == "H" else 1) + (15 if short else 0)


def choose_pass(cards: Sequence[str], count: int) -> list[str]:
    if moon_hand(cards):  # going for the moon: keep the winners, pass the lowest cards
        return sorted(cards, key=rank_of)[:count]
    return sorted(cards, key=lambda c: -danger(c, cards))[:count]


def moon_hand(cards: Sequence[str]) -> bool:
    """A hand worth shooting with: most of the top hearts and enough high cards to win tricks."""
    hearts = {rank_of(c) for c in cards if suit_of(c) == "H"}
    top_hearts = sum(1 for r in range(RANKS.index("J"), len(RANKS)) if r in hearts)
    high = sum(1 for c in cards if rank_of(c) >= RANKS.index("Q"))
    return top_hearts >= 3 and len(hearts) >= 5 and high >= 7


def shooter(view: dict[str, Any]) -> int | None:
    """The seat that looks to be shooting the moon: it alone has taken points this hand, and
    enough of them (at least 8) that it may be trying."""
    taken = view["points_taken"]
    holders = [s for s, p in enumerate(taken) if p > 0]
    if len(holders) == 1 and taken[holders[0]] >= 8:
        return holders[0]
    return None


def _winner(view: dict[str, Any]) -> tuple[int, int]:
    """(seat, rank) winning the trick so far."""
    trick = view["trick"]
    lead = suit_of(trick[0]["card"])
    best = max((t for t in trick if suit_of(t["card"]) == lead), key=lambda t: rank_of(t["card"]))
    return best["seat"], rank_of(best["card"])


def choose_play(view: dict[str, Any], cards: Sequence[str]) -> str:
    moon = shooter(view)
    if moon is not None and moon == view["seat"]:
        return _shoot(view, cards)
    if moon is not None and view["trick"]:
        stop = _stop(view, cards, moon)
        if stop is not None:
            return stop
    trick = view["trick"]
    if not trick:  # lead: the lowest card, keeping hearts and the high spades for later
        high_spade = RANKS.index("Q")
        safe = [
            c for c in cards if suit_of(c) != "H" and not (suit_of(c) == "S" and rank_of(c) >= high_spade)
        ]
        return min(safe or cards, key=rank_of)
    lead = suit_of(trick[0]["card"])
    following = [c for c in cards if suit_of(c) == lead]
    if following:
        best = max(rank_of(t["card"]) for t in trick if suit_of(t["card"]) == lead)
        under = [c for c in following if rank_of(c) < best]
        if under:  # duck under the current winner with the highest card that still ducks
            return max(under, key=rank_of)
        last = len(trick) == len(view["hand_sizes"]) - 1
        points = any(suit_of(t["card"]) == "H" or t["card"] == "QS" for t in trick)
        if last and not points:  # winning anyway: win with the highest, keep the low ones
            return max((c for c in following if c != "QS"), key=rank_of, default=following[0])
        return min(following, key=rank_of)
    # Void in the suit led: shed the queen, the spades above her, then the highest heart or card.
    for wanted in ("QS", "AS", "KS"):
        if wanted in cards:
            return wanted
    hearts = [c for c in cards if suit_of(c) == "H"]
    return max(hearts or cards, key=rank_of)


def _shoot(view: dict[str, Any], cards: Sequence[str]) -> str:
    """Going for the moon: win every trick with the highest card; when void, keep the points for
    later tricks and throw the lowest other card."""
    trick = view["trick"]
    if trick and not any(suit_of(c) == suit_of(trick[0]["card"]) for c in cards):
        plain = [c for c in cards if suit_of(c) != "H" and c != "QS"]
        return min(plain or cards, key=rank_of)
    return max(cards, key=rank_of)


def _stop(view: dict[str, Any], cards: Sequence[str], moon: int) -> str | None:
    """Another seat is shooting: take a trick with points from it if a card can, and never throw
    points onto a trick it is winning. None: play as usual."""
    winner, rank = _winner(view)
    lead = suit_of(view["trick"][0]["card"])
    following = [c for c in cards if suit_of(c) == lead]
    if winner != moon:
        return None
    if following:
        beating = [c for c in following if rank_of(c) > rank]
        return min(beating, key=rank_of) if beating else None
    plain = [c for c in cards if suit_of(c) != "H" and c != "QS"]
    return max(plain, key=rank_of) if plain else None


def moon_choice(view: dict[str, Any]) -> str:
    """`add` only when it ends the game with this seat among the lowest, else `subtract`."""
    seat, scores = view["seat"], view["scores"]
    target = view["options"]["target_score"]
    value = 52 if view["options"]["variant"] == "cancellation" else 26
    added = [s if i == seat else s + value for i, s in enumerate(scores)]
    return "add" if max(added) >= target and added[seat] == min(added) else "subtract"
