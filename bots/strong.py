"""The strong level: deal the unseen cards many times consistently with what the seat knows, play
each legal card in every sampled world to the end of the hand with fast rule-based rollouts, and
choose the card with the best expected points relative to the rest of the table."""

from __future__ import annotations

import random
import statistics
from typing import Any

from games.engine import GAME_OVER, MOON, EngineError, MoonChoice, Options, Pass, Play, State
from games.engine.cards import QS, card_ids, names, parse_cards
from games.engine.deal import cards_in_play, pass_offset

HEARTS, SPADES = 3, 2
ROLLOUTS = 160  # rollouts per decision, shared among the legal cards (the effort budget)
MIN_WORLDS = 6


def choose_play(view: dict[str, Any], rng: random.Random, rollouts: int = ROLLOUTS) -> str | None:
    """The card to play, or None when sampling does not apply (one legal card, two packs)."""
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
    for _ in range(worlds * 3):  # some sampled worlds contradict the play so far: draw again
        world = _sample_world(view, options, rng)
        if world is None:
            continue
        built += 1
        for card in candidates:
            state = world.copy()
            state.push(me, Play(card))
            totals[card] += _relative(_rollout(state, rng), me)
        if built == worlds:
            break
    if not built:
        return None
    best = min(candidates, key=lambda c: (totals[c], c))
    return names(1 << best)[0]


def _relative(points: list[int], me: int) -> float:
    """My points against the table's average: what the seat wants as low as possible."""
    return points[me] - statistics.fmean(p for s, p in enumerate(points) if s != me)


def _sample_world(view: dict[str, Any], options: Options, rng: random.Random) -> State | None:
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


def _rollout(state: State, rng: random.Random) -> list[int]:
    """Play the hand out with the fast rule-based policy; the points each seat took."""
    hand = state.hand_no
    while state.phase != GAME_OVER and state.hand_no == hand:
        if state.phase == MOON:
            state.push(state.shooter, MoonChoice(state.default_moon_choice()))
            continue
        seat = state.turn
        state.push(seat, Play(fast_card(state)))
    return list(state.sheet[-1]["points"])


def fast_card(state: State) -> int:
    """The rule-based choice of the seat on turn, on card ids (the `basic` rules, without views)."""
    cards = card_ids(state.legal_mask())
    trick = state.trick
    if not trick:
        safe = [c for c in cards if c // 13 != HEARTS and not (c // 13 == SPADES and c % 13 >= 10)]
        return min(safe or cards, key=lambda c: c % 13)
    lead = trick[0] // 13
    following = [c for c in cards if c // 13 == lead]
    if following:
        best = max(c % 13 for c in trick if c // 13 == lead)
        under = [c for c in following if c % 13 < best]
        if under:
            return max(under, key=lambda c: c % 13)
        last = len(trick) == state.options.players - 1
        if last and not any(c // 13 == HEARTS or c == QS for c in trick):
            return max((c for c in following if c != QS), key=lambda c: c % 13, default=following[0])
        return min(following, key=lambda c: c % 13)
    for wanted in (QS, QS + 2, QS + 1):  # the queen, the ace, the king of spades
        if wanted in cards:
            return wanted
    hearts = [c for c in cards if c // 13 == HEARTS]
    return max(hearts or cards, key=lambda c: c % 13)
