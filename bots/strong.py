"""The strong level: deal the unseen cards many times consistently with what the seat knows, play
each legal card in every sampled world to the end of the hand with fast rule-based rollouts, and
choose the card with the best expected points relative to the rest of the table."""

from __future__ import annotations

import itertools
import random
import statistics
import time
from typing import Any

from games.engine import GAME_OVER, MOON, EngineError, MoonChoice, Options, Pass, Play, State
from games.engine.cards import QS, card_ids, names, parse_cards
from games.engine.deal import cards_in_play, pass_offset

HEARTS, SPADES = 3, 2
HEART_BITS = ((1 << 13) - 1) << 39
PENALTY_BITS = HEART_BITS | (1 << QS)
ROLLOUTS = 160  # rollouts per decision, shared among the legal cards (the effort budget)
MIN_WORLDS = 6


def choose_play(
    view: dict[str, Any], rng: random.Random, rollouts: int = ROLLOUTS, deadline: float | None = None
) -> str | None:
    """The card to play, or None when sampling does not apply (one legal card, two packs).
    The effort is `rollouts`, or with `deadline` (a `time.monotonic()` instant) as many sampled
    worlds as fit before it, checked between worlds (at least one): a fixed budget replays the
    same choice for a seed, a deadline bounds the wall time instead (docs/bots-and-clocks.md)."""
    legal = view["legal_actions"]
    if legal is None or legal["type"] != "play" or len(set(legal["cards"])) == 1:
        return None
    options = Options.from_dict(view["options"])
    if options.two_packs:
        return None
    me = view["seat"]
    candidates = sorted(set(parse_cards(legal["cards"])))
    worlds = max(MIN_WORLDS, rollouts // len(candidates))
    totals = dict.fromkeys(candidates, 0.0)
    built = 0
    draws = itertools.count() if deadline is not None else range(worlds * 3)
    for drawn in draws:  # some sampled worlds contradict the play so far: draw again
        if deadline is not None and (built or drawn >= worlds * 3) and time.monotonic() >= deadline:
            break
        world = sample_world(view, options, rng)
        if world is None:
            continue
        built += 1
        for card in candidates:
            state = world.copy()
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


def sample_world(view: dict[str, Any], options: Options, rng: random.Random) -> State | None:
    """A full state of this hand: the seat's own cards as they are, the unseen cards dealt at
    random to the other seats in their numbers, respecting the voids they have shown and the
    cards this seat passed them; then this hand's plays replayed. None if the draw contradicts
    the plays (a discard only legal with another holding), so that the caller draws again."""
    n, me = options.players, view["seat"]
    played: list[list[int]] = [[] for _ in range(n)]
    void = [set[int]() for _ in range(n)]
    sequence: list[tuple[int, int]] = []
    for trick in [*(t["cards"] for t in view["tricks"]), view["trick"]]:
        if not trick:
            continue
        lead = parse_cards([trick[0]["card"]])[0] // 13
        for entry in trick:
            card = parse_cards([entry["card"]])[0]
            played[entry["seat"]].append(card)
            sequence.append((entry["seat"], card))
            if card // 13 != lead:
                void[entry["seat"]].add(lead)
    mine = parse_cards(view["hand"])
    holding: list[list[int]] = [[] for _ in range(n)]
    holding[me] = list(mine)
    gone = set(mine) | {c for cards in played for c in cards}
    if view.get("my_pass") and view["my_pass"]["cards"]:
        target = view["my_pass"]["to"]
        for card in parse_cards(view["my_pass"]["cards"]):
            if card not in gone:
                holding[target].append(card)
                gone.add(card)
    unseen = [c for c in card_ids(cards_in_play(options)) if c not in gone]
    rng.shuffle(unseen)
    room = [view["hand_sizes"][s] - len(holding[s]) for s in range(n)]
    room[me] = 0
    # Most constrained cards first: a card few seats may hold goes before the others.
    unseen.sort(key=lambda c: sum(1 for s in range(n) if room[s] > 0 and c // 13 not in void[s]))
    for card in unseen:
        seats = [s for s in range(n) if room[s] > 0 and card // 13 not in void[s]]
        if not seats:
            return None
        seat = rng.choices(seats, weights=[room[s] for s in seats])[0]
        holding[seat].append(card)
        room[seat] -= 1
    start = [holding[s] + played[s] for s in range(n)]  # each seat's cards once the pass was made
    number = view["hand_number"]
    offset = pass_offset(options, number)
    passes: list[list[int]] = []
    if offset:  # undo a pass consistent with what this seat knows, then let the engine redo it
        start, passes = _before_the_pass(view, start, offset, rng)
    try:
        state = State.from_deal(options, [names(_mask(h)) for h in start], hand_number=number, seed="world")
        for seat, cards in enumerate(passes):
            state.push(seat, Pass(cards))
        for seat, card in sequence:
            state.push(seat, Play(card))
    except EngineError:
        return None
    return state


def _before_the_pass(
    view: dict[str, Any], after: list[list[int]], offset: int, rng: random.Random
) -> tuple[list[list[int]], list[list[int]]]:
    """Holdings before the pass, and each seat's pass, that lead to the holdings `after`: this
    seat's own pass and the cards it received are the real ones; every other seat is given
    three of its cards as the ones it received."""
    n, me = len(after), view["seat"]
    received: list[list[int]] = [[] for _ in range(n)]
    if view.get("received"):
        received[me] = parse_cards(view["received"]["cards"])
    if view.get("my_pass"):
        received[(me + offset) % n] = parse_cards(view["my_pass"]["cards"])
    for s in range(n):
        if not received[s]:
            received[s] = rng.sample(after[s], 3)
    passes = [received[(s + offset) % n] for s in range(n)]
    before = [[c for c in after[s] if c not in received[s]] + passes[s] for s in range(n)]
    return before, passes


def _mask(cards: list[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


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
        if not state.trick and state.hands[seat].bit_count() == 1 and not state.options.two_packs:
            points = last_trick_points(state)
            if points is not None:
                return points
        state.push(seat, Play(fast_card(state)))
    return list(state.sheet[-1]["points"])


def last_trick_points(state: State) -> list[int] | None:
    """The hand's points once every seat plays its last card (one pack, no trick in progress),
    as the engine scores them; None when the last trick makes a moon (the engine's choice)."""
    n = state.options.players
    leader = state.turn
    cards = [state.hands[(leader + i) % n] for i in range(n)]
    suit = SUITS[(cards[0].bit_length() - 1) // 13]
    mask = 0
    for m in cards:
        mask |= m
    winner = (leader + cards.index(1 << ((mask & suit).bit_length() - 1))) % n
    taken = state.taken.copy()
    taken[winner] |= mask | state.carried
    penalties = state.in_play & state.options.penalty_mask
    if any(m & penalties == penalties for m in taken):
        return None
    return [state.points_of(m) for m in taken]


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
