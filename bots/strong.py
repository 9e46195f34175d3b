"""The strong level: deal the unseen cards many times consistently with what the seat knows, play
each legal card in every sampled world to the end of the hand with fast rule-based rollouts, and
choose the card with the best expected points relative to the rest of the table."""

from __future__ import annotations

import itertools
import random
import statistics
import time
from typing import Any

from bots.sampling import knowledge, world
from bots.sampling import sample_world as sample_world  # where it lived before bots/sampling.py
from games.engine import GAME_OVER, MOON, MoonChoice, Options, Play, State
from games.engine.cards import ONE_PACK, PACK, QS, names, parse_cards

HEARTS, SPADES = 3, 2
HEART_BITS = ((1 << 13) - 1) << 39
PENALTY_BITS = HEART_BITS | (1 << QS)
ROLLOUTS = 160  # rollouts per decision, shared among the legal cards (the effort budget)
MIN_WORLDS = 6


def choose_play(
    view: dict[str, Any], rng: random.Random, rollouts: int = ROLLOUTS, deadline: float | None = None
) -> str | None:
    """The card to play, or None when sampling does not apply (one legal card, or no world
    consistent with the view was drawn). Worlds come from bots/sampling.py, at every table size and
    with two packs. The effort is `rollouts`, or with `deadline` (a `time.monotonic()` instant) as
    many sampled worlds as fit before it, checked between worlds (at least one): a fixed budget
    replays the same choice for a seed, a deadline bounds the wall time instead
    (docs/bots-and-clocks.md)."""
    legal = view["legal_actions"]
    if legal is None or legal["type"] != "play" or len(set(legal["cards"])) == 1:
        return None
    options = Options.from_dict(view["options"])
    known = knowledge(view, options)
    me = view["seat"]
    candidates = sorted(set(parse_cards(legal["cards"])))
    worlds = max(MIN_WORLDS, rollouts // len(candidates))
    totals = dict.fromkeys(candidates, 0.0)
    built = 0
    draws = itertools.count() if deadline is not None else range(worlds * 3)
    for attempt in draws:  # some sampled worlds contradict the play so far: draw again
        if deadline is not None and (built or attempt >= worlds * 3) and time.monotonic() >= deadline:
            break
        drawn = world(known, view, rng)
        if drawn is None:
            continue
        built += 1
        for card in candidates:
            state = drawn.copy()
            state.push(me, Play(card))
            totals[card] += _relative(rollout(state, rng), me)
        if built == worlds and deadline is None:
            break
    if not built:
        return None
    best = min(candidates, key=lambda c: (totals[c], c))
    return names(1 << best)[0]


def _relative(points: list[int], me: int) -> float:
    """My points against the table's average: what the seat wants as low as possible."""
    return points[me] - statistics.fmean(p for s, p in enumerate(points) if s != me)


def rollout(state: State, rng: random.Random) -> list[int]:
    """Play the hand out with the fast rule-based policy; the points each seat took. The last
    trick is settled here, when it makes no moon, rather than by the engine (which would score
    the hand and deal the next one): the same points, in a fraction of the time."""
    hand = state.hand_no
    while state.phase != GAME_OVER and state.hand_no == hand:
        if state.phase == MOON:
            state.push(state.shooter, MoonChoice(state.default_moon_choice()))
            continue
        seat = state.turn
        if not state.trick and state.hands[seat].bit_count() == 1:
            points = last_trick_points(state)
            if points is not None:
                return points
        state.push(seat, Play(fast_card(state)))
    return list(state.sheet[-1]["points"])


def last_trick_points(state: State) -> list[int] | None:
    """The hand's points once every seat plays its last card (no trick in progress), as the
    engine scores them; None when the last trick makes a moon (the engine's choice)."""
    n = state.options.players
    leader = state.turn
    cards = [state.hands[(leader + i) % n] for i in range(n)]
    mask = 0
    for m in cards:
        mask |= m
    if state.options.two_packs:
        winner = trick_winner([m.bit_length() - 1 for m in cards], leader, n)
    else:
        suit = SUITS[(cards[0].bit_length() - 1) // 13]
        winner = (leader + cards.index(1 << ((mask & suit).bit_length() - 1))) % n
    taken = state.taken.copy()
    taken[winner] |= mask | state.carried
    penalties = state.in_play & state.options.penalty_mask
    if any(m & penalties == penalties for m in taken):
        return None
    return [state.points_of(m) for m in taken]


def trick_winner(trick: list[int], leader: int, n: int) -> int:
    """Who takes a full trick with two packs (Cancellation Hearts): the highest card of the led
    suit that no twin cancelled; the leader when every such card is cancelled (the last trick)."""
    base = [c % PACK for c in trick]
    lead = base[0] // 13
    best, win = -1, -1
    for i, c in enumerate(base):
        if c // 13 == lead and c > best and base.count(c) == 1:
            best, win = c, i
    return leader if win < 0 else (leader + win) % n


SUITS = tuple(((1 << 13) - 1) << (13 * k) for k in range(4))
HIGH_SPADES = (1 << QS) | (1 << (QS + 1)) | (1 << (QS + 2))


def _low(mask: int) -> int:
    """The lowest-ranked card of the mask (the lowest suit among equal ranks)."""
    best = -1
    for suit in SUITS:
        m = mask & suit
        if m:
            c = (m & -m).bit_length() - 1
            if best < 0 or c % 13 < best % 13:
                best = c
    return best


def _high(mask: int) -> int:
    """The highest-ranked card of the mask (the lowest suit among equal ranks)."""
    best = -1
    for suit in SUITS:
        m = mask & suit
        if m:
            c = m.bit_length() - 1
            if best < 0 or c % 13 > best % 13:
                best = c
    return best


def fast_card(state: State) -> int:
    """The rule-based choice of the seat on turn (the `basic` rules, without views), on bit masks."""
    if state.options.two_packs:
        return _fast_card_two_packs(state)
    legal = state.legal_mask()
    trick = state.trick
    if not trick:
        return _low(legal & ~HEART_BITS & ~HIGH_SPADES or legal)
    suit = SUITS[trick[0] // 13]
    follow = legal & suit
    if follow:
        played = 0
        for c in trick:
            played |= 1 << c
        best = (played & suit).bit_length() - 1
        under = follow & ((1 << best) - 1)
        if under:
            return under.bit_length() - 1
        if len(trick) == state.options.players - 1 and not played & PENALTY_BITS:
            plain = follow & ~(1 << QS)
            return plain.bit_length() - 1 if plain else QS
        return (follow & -follow).bit_length() - 1
    for wanted in (QS, QS + 2, QS + 1):
        if legal >> wanted & 1:
            return wanted
    return _high(legal & HEART_BITS or legal)


def _fast_card_two_packs(state: State) -> int:
    """`fast_card` with two packs: the same rules on the folded mask (each card once, whichever
    copy), where a card equal to one already in the trick cancels it, so the card to beat is the
    highest one left uncancelled (none when all are)."""
    legal = state.legal_mask()
    legal = (legal & ONE_PACK) | (legal >> PACK)
    trick = state.trick
    if not trick:
        return _low(legal & ~HEART_BITS & ~HIGH_SPADES or legal)
    suit = SUITS[trick[0] % PACK // 13]
    follow = legal & suit
    if follow:
        once = twice = 0
        for c in trick:
            bit = 1 << (c % PACK)
            if once & bit:
                twice |= bit
            once |= bit
        best = (once & ~twice & suit).bit_length() - 1
        under = follow & ((1 << best) - 1) if best >= 0 else 0
        if under:
            return under.bit_length() - 1
        if len(trick) == state.options.players - 1 and not once & PENALTY_BITS:
            plain = follow & ~(1 << QS)
            return plain.bit_length() - 1 if plain else QS
        return (follow & -follow).bit_length() - 1
    for wanted in (QS, QS + 2, QS + 1):
        if legal >> wanted & 1:
            return wanted
    return _high(legal & HEART_BITS or legal)
