"""The bot dispatcher: the action a seat's bot of a given level takes, from that seat's view only.

Each level lives in its own module and depends on the engine only: `random` here, `basic`
(bots/basic.py: rules of thumb), `strong` (bots/strong.py: sampled worlds, each card rolled out) and
`expert` (bots/expert.py: sequential halving and ISMCTS over sampled worlds, its pass too).
"""

from __future__ import annotations

import random
import time
from typing import Any

from bots import basic, expert, strong


def decide(
    view: dict[str, Any], level: str, rng: random.Random, think_ms: int | None = None
) -> dict[str, Any]:
    """The wire form of the action this seat's bot takes; `view` must offer legal actions.
    `random` picks uniformly; `basic` plays the rules below; `strong` samples worlds and rolls
    each card out (bots/strong.py); `expert` searches the sampled worlds with ISMCTS
    (bots/expert.py), its pass too; both sample worlds with bots/sampling.py at every table size,
    two packs included. With one legal card, or when no world consistent with the view can be
    drawn, a level falls back to the one below it. `think_ms` gives `strong` and `expert` that
    thinking time per decision (counted from here) instead of their fixed budgets; without it a
    seed replays the same decision (docs/bots-and-clocks.md#thinking-time)."""
    deadline = None if think_ms is None else time.monotonic() + think_ms / 1000
    legal = view["legal_actions"]
    if legal is None:
        raise ValueError("this seat has nothing to do")
    if legal["type"] == "moon":
        return {
            "type": "moon",
            "choice": rng.choice(legal["choices"]) if level == "random" else basic.moon_choice(view),
        }
    if legal["type"] == "pass":
        cards = legal["from"]
        if level == "expert":
            searched = expert.choose_pass(view, rng, deadline=deadline)
            if searched is not None:
                return {"type": "pass", "cards": searched}
        chosen = (
            rng.sample(cards, legal["count"])
            if level == "random"
            else basic.choose_pass(cards, legal["count"])
        )
        return {"type": "pass", "cards": chosen}
    cards = legal["cards"]
    if level == "random":
        return {"type": "play", "card": rng.choice(cards)}
    if level == "expert":
        searched_card = expert.choose_play(view, rng, deadline=deadline)
        if searched_card is not None:
            return {"type": "play", "card": searched_card}
    if level in ("strong", "expert"):
        rolled_out = strong.choose_play(view, rng, deadline=deadline)
        if rolled_out is not None:
            return {"type": "play", "card": rolled_out}
    return {"type": "play", "card": basic.choose_play(view, cards)}
