"""Bot decisions from one seat's view only (the same dict the API shows that player)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

RANKS = "23456789TJQKA"


def _rank(card: str) -> int:
    return RANKS.index("T" if card[:-1] == "10" else card[:-1])


def _suit(card: str) -> str:
    return card[-1]


def decide(view: dict[str, Any], level: str, rng: random.Random) -> dict[str, Any]:
    """The wire form of the action this seat's bot takes; `view` must offer legal actions.
    `random` picks uniformly; `basic` plays the rules below; `strong` samples worlds and rolls
    each card out (bots/strong.py); `expert` searches the sampled worlds with ISMCTS
    (bots/expert.py), its pass too. Where a search does not apply (two packs) a level falls back
    to the one below it."""
    legal = view["legal_actions"]
    if legal is None:
        raise ValueError("this seat has nothing to do")
    if legal["type"] == "moon":
        return {"type": "moon", "choice": rng.choice(legal["choices"]) if level == "random" else _moon(view)}
    if legal["type"] == "pass":
        cards = legal["from"]
        if level == "expert":
            from bots.expert import choose_pass

            searched = choose_pass(view, rng)
            if searched is not None:
                return {"type": "pass", "cards": searched}
        chosen = rng.sample(cards, legal["count"]) if level == "random" else _pass(cards, legal["count"])
        return {"type": "pass", "cards": chosen}
    cards = legal["cards"]
    if level == "random":
        return {"type": "play", "card": rng.choice(cards)}
    if level == "expert":
        from bots.expert import choose_play as expert_play

        searched_card = expert_play(view, rng)
        if searched_card is not None:
            return {"type": "play", "card": searched_card}
    if level in ("strong", "expert"):
        from bots.strong import choose_play

        chosen = choose_play(view, rng)
        if chosen is not None:
            return {"type": "play", "card": chosen}
    return {"type": "play", "card": _play(view, cards)}


def _danger(card: str, hand: Sequence[str]) -> float:
    """How much a card hurts to keep: the queen and the spades above her, high hearts, and any
    card of a short suit (passing it away may void the suit)."""
    suit, rank = _suit(card), _rank(card)
    if card == "QS":
        return 100
    if suit == "S" and rank > RANKS.index("Q"):
        return 60 + rank
    short = sum(1 for c in hand if _suit(c) == suit) <= 2 and suit not in "S"
    return rank * (2 if suit == "H" else 1) + (15 if short else 0)


def _pass(cards: Sequence[str], count: int) -> list[str]:
    if _moon_hand(cards):  # going for the moon: keep the winners, pass the lowest cards
        return sorted(cards, key=_rank)[:count]
    return sorted(cards, key=lambda c: -_danger(c, cards))[:count]


def _moon_hand(cards: Sequence[str]) -> bool:
    """A hand worth shooting with: most of the top hearts and enough high cards to win tricks."""
    hearts = {_rank(c) for c in cards if _suit(c) == "H"}
    top_hearts = sum(1 for r in range(RANKS.index("J"), len(RANKS)) if r in hearts)
    high = sum(1 for c in cards if _rank(c) >= RANKS.index("Q"))
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
    lead = _suit(trick[0]["card"])
    best = max((t for t in trick if _suit(t["card"]) == lead), key=lambda t: _rank(t["card"]))
    return best["seat"], _rank(best["card"])


def _play(view: dict[str, Any], cards: Sequence[str]) -> str:
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
        safe = [c for c in cards if _suit(c) != "H" and not (_suit(c) == "S" and _rank(c) >= high_spade)]
        return min(safe or cards, key=_rank)
    lead = _suit(trick[0]["card"])
    following = [c for c in cards if _suit(c) == lead]
    if following:
        best = max(_rank(t["card"]) for t in trick if _suit(t["card"]) == lead)
        under = [c for c in following if _rank(c) < best]
        if under:  # duck under the current winner with the highest card that still ducks
            return max(under, key=_rank)
        last = len(trick) == len(view["hand_sizes"]) - 1
        points = any(_suit(t["card"]) == "H" or t["card"] == "QS" for t in trick)
        if last and not points:  # winning anyway: win with the highest, keep the low ones
            return max((c for c in following if c != "QS"), key=_rank, default=following[0])
        return min(following, key=_rank)
    # Void in the suit led: shed the queen, the spades above her, then the highest heart or card.
    for wanted in ("QS", "AS", "KS"):
        if wanted in cards:
            return wanted
    hearts = [c for c in cards if _suit(c) == "H"]
    return max(hearts or cards, key=_rank)


def _shoot(view: dict[str, Any], cards: Sequence[str]) -> str:
    """Going for the moon: win every trick with the highest card; when void, keep the points for
    later tricks and throw the lowest other card."""
    trick = view["trick"]
    if trick and not any(_suit(c) == _suit(trick[0]["card"]) for c in cards):
        plain = [c for c in cards if _suit(c) != "H" and c != "QS"]
        return min(plain or cards, key=_rank)
    return max(cards, key=_rank)


def _stop(view: dict[str, Any], cards: Sequence[str], moon: int) -> str | None:
    """Another seat is shooting: take a trick with points from it if a card can, and never throw
    points onto a trick it is winning. None: play as usual."""
    winner, rank = _winner(view)
    lead = _suit(view["trick"][0]["card"])
    following = [c for c in cards if _suit(c) == lead]
    if winner != moon:
        return None
    if following:
        beating = [c for c in following if _rank(c) > rank]
        return min(beating, key=_rank) if beating else None
    plain = [c for c in cards if _suit(c) != "H" and c != "QS"]
    return max(plain, key=_rank) if plain else None


def _moon(view: dict[str, Any]) -> str:
    """`add` only when it ends the game with this seat among the lowest, else `subtract`."""
    seat, scores = view["seat"], view["scores"]
    target = view["options"]["target_score"]
    value = 52 if view["options"]["variant"] == "cancellation" else 26
    added = [s if i == seat else s + value for i, s in enumerate(scores)]
    return "add" if max(added) >= target and added[seat] == min(added) else "subtract"
