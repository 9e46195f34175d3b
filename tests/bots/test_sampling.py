"""The worlds the strong and expert bots sample (bots/sampling.py): consistent with everything the seat
knows at every table size, and with two packs (Cancellation Hearts) where every card exists twice."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from bots import expert, sampling, strong
from bots.sampling import Redealer, knowledge, sample_world, world
from bots.strategy import decide
from games.engine import Options, Play, State, action_from_dict, view
from games.engine.cards import PACK, QS, card_ids, parse_cards
from games.engine.deal import cards_in_play

HEARTS = 3

TABLES = [
    (3, "classic"),
    (4, "classic"),
    (5, "omnibus"),
    (6, "classic"),
    (7, "classic"),
    (4, "omnibus"),
    (6, "cancellation"),
    (7, "cancellation"),
    (8, "cancellation"),
]


def _part_way(players: int, variant: str, seed: str, plays: int) -> tuple[State, dict[str, Any]]:
    """A hand `plays` cards in (basic bots), and the view of the seat on turn, which has a choice."""
    options = Options.from_dict({"players": players, "variant": variant})
    state = State.new_game(options, seed)
    rng = random.Random(seed)
    done = 0
    while True:
        seat = state.to_act()[0]
        v = view(state, seat, history=False)
        if v["legal_actions"]["type"] == "play":
            if done >= plays and len(v["legal_actions"]["cards"]) > 1:
                return state, v
            done += 1
        state.push(seat, action_from_dict(decide(v, "basic", rng)))


def _shown_voids(state: State) -> list[set[int]]:
    """The suits each seat has shown it lacks, by not following suit (from the real state)."""
    n = state.options.players
    void: list[set[int]] = [set() for _ in range(n)]
    for leader, cards, _ in [*state.tricks, (state.leader, tuple(state.trick), -1)]:
        for k, c in enumerate(cards):
            if c % PACK // 13 != cards[0] % PACK // 13:
                void[(leader + k) % n].add(cards[0] % PACK // 13)
    return void


def _check_world(state: State, v: dict[str, Any], w: State) -> None:
    """Everything the seat may see is the same in the world; the hidden cards respect what it knows."""
    me, n = v["seat"], state.options.players
    seen = view(w, me, history=False)
    for key in ("hand", "trick", "tricks", "hand_sizes", "points_taken", "legal_actions", "hearts_broken"):
        assert seen[key] == v[key], key
    assert card_ids(w.hands[me]) == card_ids(state.hands[me]) and w.turn == state.turn  # twins: either copy
    # Card counts: every card of the table once (one pack) or twice (two packs), each bit in one place.
    places = [*w.hands, w.carried, *w.taken, sum(1 << c for c in w.trick)]  # the widow: carried or taken
    everything = 0
    for m in places:
        assert not everything & m, "a card is in two places"
        everything |= m
    assert everything == cards_in_play(state.options)
    assert Counter(card_ids(everything)) == Counter(card_ids(cards_in_play(state.options)))
    # Never a card the seat has seen elsewhere: its own cards and the played ones are not dealt again.
    mine = Counter(card_ids(state.hands[me]))
    played = Counter(c % PACK for _, cards, _ in [*state.tricks, (0, state.trick, 0)] for c in cards)
    copies = 2 if state.options.two_packs else 1
    hidden = Counter(card_ids(w.widow))
    for s in range(n):
        if s != me:
            hidden += Counter(card_ids(w.hands[s]))
    for card, count in hidden.items():
        assert count + mine[card] + played[card] <= copies
    # Voids shown are respected.
    for s, suits in enumerate(_shown_voids(state)):
        for suit in suits:
            assert not any(c // 13 == suit for c in card_ids(w.hands[s])), (s, suit)
    # The cards this seat passed and the receiver has not played are in the receiver's hand.
    if v.get("my_pass"):
        target = v["my_pass"]["to"]
        for card in parse_cards(v["my_pass"]["cards"]):
            if state.hands[target] >> card & 1:
                assert w.hands[target] >> card & 1


@pytest.mark.parametrize(("players", "variant"), TABLES)
def test_sampled_worlds_agree_with_the_view_at_every_table_size_and_with_two_packs(
    players: int, variant: str
) -> None:
    for plays in (0, players + 1, 3 * players + 2):
        state, v = _part_way(players, variant, f"sampling-{players}-{variant}-{plays}", plays)
        rng = random.Random(plays)
        known = knowledge(v)
        drawn = 0
        for _ in range(40):
            w = world(known, v, rng)
            if w is None:
                continue
            drawn += 1
            _check_world(state, v, w)
            redealer = Redealer(known, w)
            for _ in range(5):
                again = redealer.redeal(rng)
                if again is not None:
                    _check_world(state, v, again)
        assert drawn >= 10  # most draws are consistent with the plays


def test_two_packs_deal_twins_to_one_seat_and_the_widow_is_sampled_too() -> None:
    state, v = _part_way(6, "cancellation", "sampling-twins", 6)
    me = v["seat"]
    known = knowledge(v)
    assert known.room[-1] == 2 == v["widow"]["size"]  # 104 cards among 6 seats: a widow of 2
    both, widows = 0, set()
    rng = random.Random(3)
    for _ in range(60):
        w = sample_world(v, state.options, rng)
        assert w is not None
        widows.add(w.widow)
        for s in range(6):
            if s != me and w.hands[s] & (w.hands[s] >> PACK):
                both += 1  # a seat holding both copies of one card
    assert both > 0
    assert len(widows) > 10  # the face-down widow is not fixed by any one draw


def test_plays_tell_more_than_voids() -> None:
    """A seat that throws a heart on the first trick held only hearts and the QS (one pack)."""
    hands = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "QS 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS AH",
    ]
    options = Options()
    state = State.from_deal(options, [h.split() for h in hands], hand_number=4, seed="plays")
    state.push(0, Play(parse_cards(["2C"])[0]))
    state.push(1, Play(parse_cards(["KH"])[0]))  # no club, nothing but hearts and the QS
    v = view(state, 2, history=False)
    known = knowledge(v)
    assert {c for c in range(52) if known.allowed[1] >> c & 1} == {QS, *range(39, 52)}
    rng = random.Random(1)
    for _ in range(20):
        w = sample_world(v, options, rng)
        assert w is not None
        assert all(c // 13 == 3 or c == QS for c in card_ids(w.hands[1]))


def test_a_seed_draws_the_same_world() -> None:
    for players, variant in ((4, "classic"), (6, "cancellation")):
        state, v = _part_way(players, variant, f"sampling-seed-{variant}", 5)
        a = sample_world(v, state.options, random.Random(9))
        b = sample_world(v, state.options, random.Random(9))
        assert a is not None and b is not None and a.hands == b.hands and a.widow == b.widow


@pytest.mark.parametrize("players", [6, 7, 8])
def test_strong_and_expert_search_with_two_packs_instead_of_playing_basic(players: int) -> None:
    _, v = _part_way(players, "cancellation", f"sampling-search-{players}", players + 2)
    card = strong.choose_play(v, random.Random(2), rollouts=40)
    assert card is not None and card in v["legal_actions"]["cards"]
    assert card == strong.choose_play(v, random.Random(2), rollouts=40)
    searched = expert.choose_play(v, random.Random(2), budget=60)
    assert searched is not None and searched in v["legal_actions"]["cards"]
    assert searched == expert.choose_play(v, random.Random(2), budget=60)


def test_two_pack_rollouts_score_the_hand_as_the_engine_does() -> None:
    """The rollouts settle the last trick themselves (twins cancel): the engine's points."""
    options = Options.from_dict({"players": 6, "variant": "cancellation"})
    checked = 0
    for k in range(12):
        state = State.new_game(options, f"two-pack-rollout-{k}")
        engine = state.copy()
        hand = engine.hand_no
        while engine.hand_no == hand:
            if engine.phase == "moon_choice":
                engine.push(engine.shooter, action_from_dict({"type": "moon", "choice": "subtract"}))
                continue
            engine.push(engine.turn, Play(strong.fast_card(engine)))
        ours = strong.rollout(state.copy(), random.Random(0))
        if engine.sheet[-1]["moon"] is None:
            assert ours == engine.sheet[-1]["points"]
        # expert's rollout: the moon-aware policy, the last trick settled without the engine
        engine, threat = state.copy(), -1
        while engine.hand_no == hand:
            if engine.phase == "moon_choice":
                engine.push(engine.shooter, action_from_dict({"type": "moon", "choice": "subtract"}))
                continue
            if not engine.trick:
                threat = expert._threat(engine)
            card = expert._policy(engine, threat) if threat >= 0 else strong.fast_card(engine)
            engine.push(engine.turn, Play(card))
        assert expert._finish(state.copy(), -1) == engine.sheet[-1]["points"]
        checked += sum(engine.sheet[-1]["points"]) == 52
    assert checked >= 6  # hands without a moon, scored alike


def _two_pack_rule(state: State) -> int:
    """strong's two-pack rollout rule written on lists of card ids: the reference for the bit-mask
    version (a card equal to one already in the trick cancels it)."""
    legal = state.legal_mask()
    ids = card_ids(legal)
    trick = [c % PACK for c in state.trick]
    if not trick:
        safe = [c for c in ids if c // 13 != HEARTS and c not in (QS, QS + 1, QS + 2)]
        return min(safe or ids, key=lambda c: (c % 13, c))
    lead = trick[0] // 13
    follow = [c for c in ids if c // 13 == lead]
    if follow:
        live = [c for c in trick if c // 13 == lead and trick.count(c) == 1]
        best = max(live, default=-1)
        under = [c for c in follow if c < best]
        if under:
            return max(under)
        if len(trick) == state.options.players - 1 and not any(c // 13 == HEARTS or c == QS for c in trick):
            plain = [c for c in follow if c != QS]
            return max(plain) if plain else QS
        return min(follow)
    for wanted in (QS, QS + 2, QS + 1):
        if wanted in ids:
            return wanted
    hearts = [c for c in ids if c // 13 == HEARTS]
    return max(hearts or ids, key=lambda c: (c % 13, -c))


def test_the_two_pack_rollout_rule_on_masks_is_the_rule_on_lists() -> None:
    options = Options.from_dict({"players": 7, "variant": "cancellation"})
    compared = 0
    for k in range(6):
        state = State.new_game(options, f"two-pack-rule-{k}")
        while state.hand_no == 1 and state.phase == "playing":
            card = strong.fast_card(state)
            assert card == _two_pack_rule(state)
            state.push(state.turn, Play(card))
            compared += 1
    assert compared == 6 * 7 * 14  # every card of six whole hands (7 seats, 14 cards each)


def test_a_seat_that_passed_up_the_queen_is_dealt_it_less_often_only_when_asked() -> None:
    """Seats 1 and 2 threw a card on a club trick while the queen was out (where they would shed
    it): with `infer` they get the queen at the odds QUEEN_ODDS against seat 3, which followed
    suit; without it every seat's odds are 1."""
    hands = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC 2D 3D",
        "4D 5D 6D 7D 8D 9D TD JD QD KD AD 2S 3S",
        "4S 5S 6S 7S 8S 9S TS JS QS KS AS 2H 3H",
        "KC AC 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    ]
    state = State.from_deal(Options(), [h.split() for h in hands], hand_number=4, seed="infer")
    # Trick 1 (no points may be thrown on it: it proves nothing) is won by seat 3's king; trick 2
    # (seat 3 leads the ace) is the chance seats 1 and 2 passed up.
    for _ in range(8):
        legal = card_ids(state.legal_mask())
        state.push(state.turn, Play(min(legal, key=lambda c: (c == QS, c))))
    v = view(state, 0, history=False)
    options = Options()
    assert knowledge(v, options).queen_odds == [1.0] * 5
    inferred = knowledge(v, options, infer=True)
    assert inferred.queen_odds[:4] == [1.0, sampling.QUEEN_ODDS, sampling.QUEEN_ODDS, 1.0]
    counts: Counter[int] = Counter()
    rng = random.Random(3)
    for _ in range(600):
        drawn = world(inferred, v, rng)
        assert drawn is not None
        counts[next(s for s in range(4) if drawn.hands[s] >> QS & 1)] += 1
    # 11 unknown cards each: the queen at odds 0.35 : 0.35 : 1 (about 21%, 21% and 59%).
    assert counts[3] > 2 * max(counts[1], counts[2]) > 0
