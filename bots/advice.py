"""Advice for a seat from its own view only: the move a bot level would make there, and each legal
action's estimated points for the rest of the hand (the hints of docs/hints.md, the hand reviews).

Everything here is computed from `view` (what games/engine/view.py shows the seat, what
bots.strategy.decide receives) and the `rng` passed in: the cards the seat cannot see are dealt
again in worlds consistent with what it knows (bots/sampling.py), and every legal action is played
out in the same worlds (common random numbers) to the end of the hand. Two re-deals of the unseen
cards that leave the view the same therefore give the same advice for the same seed
(tests/bots/test_advice.py proves it on views of real games).

Levels (the effort and the rollout policy):
- `basic`: few worlds, the strong level's fast rollouts; the choice is basic's rules;
- `strong`: the strong bot's budget and rollouts (bots/strong.py); the choice is the card with the
  best expected points against the rest of the table, which is how the strong bot chooses;
- `expert`: more worlds, the expert's moon-aware rollouts (bots/expert.py); the choice is the expert
  search's (bots.expert.choose_play / choose_pass) with its fixed budget.

Points are the seat's expected score for this hand as the scoresheet counts it (a moon applied),
less the points it has already taken this hand: what the rest of the hand costs it. For a pass, the
chosen set and its neighbours (any three of the five cards basic ranks most dangerous, the three
lowest) are estimated over deals of the cards the seat has not seen, the other seats passing as
basic does. For a moon choice the points are exact (the hand is over).

With `think_ms` the sampling stops drawing worlds at that deadline (at least a few worlds), so the
advice depends on the machine's speed; without it a seed replays the same advice exactly.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bots import basic, expert, strong
from bots.sampling import Redealer, knowledge, world
from games.engine import GAME_OVER, MOON, Options, Pass, Play, State
from games.engine.cards import card_ids, names, parse_cards
from games.engine.deal import cards_in_play

LEVELS = ("basic", "strong", "expert")
# Rollouts per decision, shared among the legal actions, and the fewest worlds each action meets.
BUDGETS = {"basic": (48, 3), "strong": (strong.ROLLOUTS, strong.MIN_WORLDS), "expert": (640, 12)}
TEMPLATE_DRAWS = 20  # replayed worlds tried before the view is taken to have none (never seen)


@dataclass
class Advice:
    """What a bot of `level` advises the seat: `choice` (a wire action, as bots.strategy.decide
    returns) and `options`, every legal action considered with its estimated points for the rest of
    the hand (lower is better), best first."""

    level: str
    choice: dict[str, Any]
    options: list[tuple[dict[str, Any], float]] = field(default_factory=list)
    worlds: int = 0  # sampled worlds (deals, for a pass) the estimates are averaged over


def estimates(
    view: dict[str, Any],
    level: str,
    rng: random.Random,
    think_ms: int | None = None,
    *,
    also: Sequence[dict[str, Any]] = (),
) -> Advice:
    """The advice of `level` for the seat whose view this is; the view must offer legal actions
    (ValueError otherwise, and for an unknown level). Every legal card is estimated; of the passes,
    the chosen one, its neighbours and each pass in `also` (a review's: the pass the seat made)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}: expected one of {', '.join(LEVELS)}")
    legal = view.get("legal_actions")
    if legal is None:
        raise ValueError("this seat has nothing to do")
    deadline = None if think_ms is None else time.monotonic() + think_ms / 1000
    if legal["type"] == "moon":
        return _moon(view, level)
    if legal["type"] == "pass":
        return _pass(
            view, level, rng, deadline, [sorted(a["cards"]) for a in also if a.get("type") == "pass"]
        )
    return _play(view, level, rng, deadline)


def _rest(points: list[int], me: int, taken: int) -> float:
    return float(points[me] - taken)


def _play_out(state: State, level: str, rng: random.Random, hand: int) -> list[int]:
    """Each seat's points for the hand, played out by the level's rollout policy (the scoresheet's
    row when the action just taken ended the hand)."""
    if state.phase == GAME_OVER or state.hand_no != hand:
        return list(state.sheet[-1]["points"])
    if level == "expert" and state.phase != MOON:
        return expert._finish(state, -1)
    return strong.rollout(state, rng)


def _ordered(options: list[tuple[dict[str, Any], float]]) -> list[tuple[dict[str, Any], float]]:
    """Best (fewest points) first; ties in the order the actions were considered."""
    return sorted(options, key=lambda o: o[1])


def _play(view: dict[str, Any], level: str, rng: random.Random, deadline: float | None) -> Advice:
    options = Options.from_dict(view["options"])
    me = view["seat"]
    taken = view["points_taken"][me]
    candidates = sorted(set(parse_cards(view["legal_actions"]["cards"])))
    rollouts, least = BUDGETS[level]
    wanted = max(least, rollouts // len(candidates))
    known = knowledge(view, options)
    template = None
    for _ in range(TEMPLATE_DRAWS):
        template = world(known, view, rng)
        if template is not None:
            break
    points = dict.fromkeys(candidates, 0.0)
    relative = dict.fromkeys(candidates, 0.0)
    built = 0
    if template is not None:
        redealer = Redealer(known, template)
        for attempt in range(wanted * 3):
            if deadline is not None and built >= least and time.monotonic() >= deadline:
                break
            drawn = template if attempt == 0 else redealer.redeal(rng)
            if drawn is None:
                continue
            built += 1
            for card in candidates:
                state = drawn.copy()
                state.push(me, Play(card))
                result = _play_out(state, level, rng, view["hand_number"])
                points[card] += _rest(result, me, taken)
                relative[card] += strong._relative(result, me)
            if built == wanted:
                break
    worlds = max(built, 1)
    wire = {c: {"type": "play", "card": names(1 << c)[0]} for c in candidates}
    if not built:  # no world drawn (not expected from a real view): the rules' card, no estimates
        rules = basic.choose_play(view, view["legal_actions"]["cards"])
        return Advice(level, {"type": "play", "card": rules}, [({"type": "play", "card": rules}, 0.0)], 0)
    if level == "basic":
        choice = {"type": "play", "card": basic.choose_play(view, view["legal_actions"]["cards"])}
    elif level == "expert" and len(candidates) > 1:
        searched = expert.choose_play(view, rng, budget=expert.ITERATIONS, deadline=deadline)
        choice = wire[min(candidates, key=lambda c: (relative[c], c))]
        if searched is not None:
            choice = {"type": "play", "card": searched}
    else:  # strong: the best expected points against the rest of the table (bots/strong.py)
        choice = wire[min(candidates, key=lambda c: (relative[c], c))]
    estimated = [(wire[c], round(points[c] / worlds, 2)) for c in candidates]
    return Advice(level, choice, _ordered(estimated), built)


def _pass(
    view: dict[str, Any], level: str, rng: random.Random, deadline: float | None, also: list[list[str]]
) -> Advice:
    options = Options.from_dict(view["options"])
    legal = view["legal_actions"]
    hand: list[str] = legal["from"]
    count = legal["count"]
    if level == "expert":
        searched = expert.choose_pass(view, rng, deadline=deadline)
        chosen = sorted(searched) if searched is not None else sorted(basic.choose_pass(hand, count))
    else:
        chosen = sorted(basic.choose_pass(hand, count))
    ranked = sorted(hand, key=lambda c: -basic.danger(c, hand))
    candidates = [chosen]
    for combo in [*itertools.combinations(ranked[:5], count), sorted(hand, key=basic.rank_of)[:count], *also]:
        if sorted(combo) not in candidates:
            candidates.append(sorted(combo))
    rollouts, least = BUDGETS[level]
    deals = max(least, rollouts // len(candidates))
    n, me = options.players, view["seat"]
    mine = parse_cards(hand)
    unseen = [c for c in card_ids(cards_in_play(options)) if c not in set(mine)]
    size = len(mine)
    others = [s for s in range(n) if s != me]
    totals = [0.0] * len(candidates)
    passes = [parse_cards(c) for c in candidates]
    dealt = 0
    for dealt in range(1, deals + 1):
        if deadline is not None and dealt > least and time.monotonic() >= deadline:
            dealt -= 1
            break
        rng.shuffle(unseen)
        holdings: list[list[int]] = [[] for _ in range(n)]
        holdings[me] = mine
        for k, s in enumerate(others):
            holdings[s] = unseen[k * size : (k + 1) * size]
        base = State.from_deal(
            options, [names(expert._mask(h)) for h in holdings], hand_number=view["hand_number"], seed="pass"
        )
        for s in others:
            base.push(s, Pass(tuple(parse_cards(basic.choose_pass(names(expert._mask(holdings[s])), count)))))
        for k, cards in enumerate(passes):
            state = base.copy()
            state.push(me, Pass(tuple(cards)))
            result = _play_out(state, level, rng, view["hand_number"])
            totals[k] += result[me]
    estimated = [
        ({"type": "pass", "cards": c}, round(totals[k] / max(dealt, 1), 2)) for k, c in enumerate(candidates)
    ]
    return Advice(level, {"type": "pass", "cards": chosen}, _ordered(estimated), dealt)


def _moon(view: dict[str, Any], level: str) -> Advice:
    """The moon choice: `add` leaves the shooter only its bonus, `subtract` takes the moon's value
    off its score; the points (exact) are what each costs against the points already taken."""
    options = Options.from_dict(view["options"])
    value = 52 if options.two_packs else 26
    estimated = [
        ({"type": "moon", "choice": "add"}, float(-value)),
        ({"type": "moon", "choice": "subtract"}, float(-2 * value)),
    ]
    return Advice(level, {"type": "moon", "choice": basic.moon_choice(view)}, _ordered(estimated), 0)
