"""The expert level: ISMCTS over worlds sampled from the seat's view (bots/expert.py)."""

from __future__ import annotations

import json
import random

import pytest

from bots import expert
from bots.strategy import decide
from bots.strong import SUITS, fast_card
from games.engine import Options, Play, State, action_from_dict, view
from games.engine.cards import card_ids, names, parse_cards

SMALL = 24  # iterations: enough to exercise the search, small enough to keep the tests fast


def _play_hand(state: State, levels: list[str], rng: random.Random) -> int:
    """Play the current hand out; how many decisions the expert seats made."""
    hand, made = state.hand_no, 0
    while not state.is_over and state.hand_no == hand:
        for seat in state.to_act():
            v = view(state, seat, history=False)
            action = decide(v, levels[seat], rng)
            legal = v["legal_actions"]
            if legal["type"] == "play":
                assert action["card"] in legal["cards"]
            elif legal["type"] == "pass":
                assert len(set(action["cards"])) == legal["count"] and set(action["cards"]) <= set(
                    legal["from"]
                )
            else:
                assert action["choice"] in legal["choices"]
            state.push(seat, action_from_dict(action))  # the engine refuses anything illegal
            made += levels[seat] == "expert"
    return made


@pytest.mark.parametrize(
    ("players", "variant"),
    [
        (3, "classic"),
        (4, "classic"),
        (5, "omnibus"),
        (6, "classic"),
        (7, "omnibus"),
        (4, "omnibus"),
        (6, "cancellation"),
    ],
)
def test_expert_plays_whole_hands_legally_at_every_table_size_and_variant(
    players: int, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTS_EXPERT_ITERATIONS", str(SMALL))
    options = Options.from_dict({"players": players, "variant": variant})
    state = State.new_game(options, f"expert-{players}-{variant}")
    levels = ["expert", "basic", "expert", "random", "expert", "basic", "expert"][:players]
    # Hand 1 has a pass (no pass with two packs); every seat plays its whole hand.
    assert _play_hand(state, levels, random.Random(players)) >= 3 * options.players // 2


def _decision_view(hand_number: int, seed: str = "expert-view") -> tuple[State, dict[str, object]]:
    """A state part-way through a hand, and the view of the seat on turn."""
    state = State.new_game(Options(), seed)
    rng = random.Random(5)
    while state.hand_no < hand_number:
        _play_hand(state, ["basic"] * 4, rng)
    for _ in range(9):  # some cards played, so that voids and points may show
        for seat in state.to_act():
            state.push(seat, action_from_dict(decide(view(state, seat, history=False), "basic", rng)))
    while len(view(state, state.turn)["legal_actions"]["cards"]) < 2:
        state.push(state.turn, action_from_dict(decide(view(state, state.turn), "basic", rng)))
    return state, view(state, state.turn, history=False)


def test_expert_is_deterministic_for_a_seed_and_decides_from_the_view_alone() -> None:
    state, v = _decision_view(2)
    first = expert.choose_play(v, random.Random(11), budget=60)
    assert first in v["legal_actions"]["cards"]
    assert first == expert.choose_play(json.loads(json.dumps(v)), random.Random(11), budget=60)
    # Another deal of the cards this seat cannot see gives the same view, hence the same card.
    me = v["seat"]
    other = state.copy()
    a, b = [s for s in range(4) if s != me][:2]
    swap = min(other.hands[a].bit_count(), other.hands[b].bit_count())
    ca, cb = card_ids(other.hands[a])[:swap], card_ids(other.hands[b])[:swap]
    other.hands[a] = sum(1 << c for c in cb) | (other.hands[a] & ~sum(1 << c for c in ca))
    other.hands[b] = sum(1 << c for c in ca) | (other.hands[b] & ~sum(1 << c for c in cb))
    assert other.hands != state.hands
    assert view(other, me, history=False) == v
    assert expert.choose_play(view(other, me, history=False), random.Random(11), budget=60) == first


def test_the_budget_is_a_count_of_iterations(monkeypatch: pytest.MonkeyPatch) -> None:
    played_out: list[int] = []
    real = expert._finish

    def counting(state: State, shooter: int) -> list[int]:
        played_out.append(shooter)
        return real(state, shooter)

    monkeypatch.setattr(expert, "_finish", counting)
    _, v = _decision_view(3)
    expert.choose_play(v, random.Random(1), budget=77)
    assert len(played_out) == 77  # one rollout per iteration, the moon search included
    played_out.clear()
    monkeypatch.setenv("HEARTS_EXPERT_ITERATIONS", "50")
    assert expert.iterations() == 50
    expert.choose_play(v, random.Random(1))
    assert len(played_out) == 50
    monkeypatch.delenv("HEARTS_EXPERT_ITERATIONS")
    assert expert.iterations() == expert.ITERATIONS < expert.PLAY_ITERATIONS
    # The pass: every candidate pass is played out in the same deals, within the budget.
    state = State.new_game(Options(), "expert-pass")
    pv = view(state, 0, history=False)
    played_out.clear()
    chosen = expert.choose_pass(pv, random.Random(2), budget=40)
    assert chosen is not None and len(set(chosen)) == 3 and set(chosen) <= set(pv["hand"])
    assert 0 < len(played_out) <= 40
    assert chosen == expert.choose_pass(pv, random.Random(2), budget=40)


def test_rollouts_score_the_hand_as_the_engine_does() -> None:
    """The rollout settles the last trick itself; the rewards match the engine's scoring."""
    options = Options()
    for k in range(30):
        state = State.new_game(options, f"rollout-{k}")
        state = State.from_deal(options, [names(h) for h in state.hands], hand_number=4, seed="x")
        engine = state.copy()
        ours = expert._finish(state.copy(), -1)
        hand, threat = engine.hand_no, -1
        while engine.hand_no == hand:
            if engine.phase == "moon_choice":
                engine.push(engine.shooter, action_from_dict({"type": "moon", "choice": "subtract"}))
                continue
            if not engine.trick:  # the same policy: moon defence once a seat looks to shoot
                threat = expert._threat(engine)
            card = expert._policy(engine, threat) if threat >= 0 else expert.ROLLOUT(engine)
            engine.push(engine.turn, Play(card))
        assert ours == engine.sheet[-1]["points"]
    assert expert._rewards([0, 26, 26, 26]) == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    assert expert._rewards([-26, 0, 0, 0])[0] == 1.0  # either moon choice: the shooter 26 ahead


def test_rollouts_stop_a_seat_that_is_shooting_the_moon() -> None:
    """Seat 1 alone has taken 10 hearts and the QS: seat 2 takes its trick rather than duck."""
    hands = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC AC 2D",
        "KC 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "3H KH 2S 3S 4S 5S 6S 7S 8S 9S TS JS AH",
        "QS KS AS 2H 4H 5H 6H 7H 8H 9H TH JH QH",
    ]
    state = State.from_deal(Options(), [h.split() for h in hands], hand_number=4, seed="moon")
    state.tricks = [(0, (0, 13, 26, 39), 1)]  # pretend a first trick went by
    state.broken = True
    state.taken[1] = sum(
        1 << c for c in parse_cards(["2H", "4H", "5H", "6H", "7H", "8H", "9H", "TH", "JH", "QH", "QS"])
    )
    state.leader = state.turn = 1
    state._legal = None
    state.push(1, Play(parse_cards(["3D"])[0]))
    # Seat 2 is void in diamonds: while seat 1 shoots, it throws no points on seat 1's trick.
    assert expert._threat(state) == 1
    assert names(1 << expert._policy(state, 1))[0] not in ("3H", "KH", "AH")
    assert names(1 << fast_card(state))[0] == "AH"  # the plain policy would hand it the AH


def test_sampled_worlds_agree_with_everything_the_seat_knows() -> None:
    state, v = _decision_view(1, seed="expert-worlds")  # hand 1: this seat passed three cards left
    me, target = v["seat"], v["my_pass"]["to"]
    passed = [c for c in parse_cards(v["my_pass"]["cards"]) if state.hands[target] >> c & 1]
    worlds = expert._Worlds(v, Options(), random.Random(4))
    for i in range(30):
        world = worlds.get(i, 30)
        assert world is not None
        assert world.hands[me] == state.hands[me] and world.trick == state.trick and world.turn == state.turn
        assert [h.bit_count() for h in world.hands] == [h.bit_count() for h in state.hands]
        assert sum(world.hands) == sum(state.hands)  # the same cards, dealt among the same seats
        assert all(world.hands[target] >> c & 1 for c in passed)  # the pass it knows about
        for leader, cards, _ in [*world.tricks, (world.leader, tuple(world.trick), -1)]:
            for k, c in enumerate(cards):  # a seat that showed a void holds none of that suit
                if c // 13 != cards[0] // 13:
                    assert not world.hands[(leader + k) % 4] & SUITS[cards[0] // 13]


def _midhand(
    hands: list[str], leader: int, plays: tuple[str, ...] = (), options: Options | None = None
) -> State:
    """A hand after a pretend first trick, `leader` to lead, then `plays` made."""
    state = State.from_deal(options or Options(), [h.split() for h in hands], hand_number=4, seed="p")
    state.tricks = [(0, (0, 13, 26, 39), 1)]
    state.leader = state.turn = leader
    state._legal = None
    for card in plays:
        state.push(state.turn, Play(parse_cards([card])[0]))
    return state


def _card(state: State) -> str:
    return names(1 << expert.smart_card(state))[0]


@pytest.mark.parametrize(
    ("players", "variant"), [(3, "classic"), (4, "classic"), (4, "omnibus"), (5, "classic"), (7, "omnibus")]
)
def test_the_rollout_policy_plays_legal_cards_from_what_the_seat_may_see(players: int, variant: str) -> None:
    """Whole hands of smart_card at every seat are legal (the engine refuses anything else), and
    its choice depends only on the seat's own hand and the cards played: every world sampled from
    one view gives the same card."""
    options = Options.from_dict({"players": players, "variant": variant})
    for k in range(12):
        state = State.new_game(options, f"smart-{players}-{variant}-{k}")
        state = State.from_deal(options, [names(h) for h in state.hands], hand_number=4, seed="x")
        while state.phase == "playing" and (state.trick or any(h.bit_count() > 1 for h in state.hands)):
            if k % 4 == 0 and len(card_ids(state.legal_mask())) > 1:
                v = view(state, state.turn, history=False)
                worlds = expert._Worlds(v, options, random.Random(k))
                chosen = {expert.smart_card(w) for w in (worlds.get(i, 8) for i in range(8)) if w is not None}
                assert chosen == {expert.smart_card(state)}
            state.push(state.turn, Play(expert.smart_card(state)))


def test_the_rollout_policy_sheds_the_queen_and_the_spades_above_it() -> None:
    hands = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC AC 2D",
        "KC 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "QS KS AS 2H 3H 4H 5H 6H 7H 8H 9H TH JH",
        "QH KH AH 2S 3S 4S 5S 6S 7S 8S 9S TS JS",
    ]
    state = _midhand(hands, 0, ("AC", "KC"))
    assert _card(state) == "QS"  # void in clubs: the queen goes first
    queen = 1 << parse_cards(["QS"])[0]
    state.hands[2] &= ~queen
    state.taken[1] |= queen  # now say the queen has been played
    state._legal = None
    # Then the ace of spades is a plain high card of a short suit, ranked above the jack of hearts.
    assert _card(state) == "AS"
    state.hands[2] &= ~sum(1 << c for c in parse_cards(["AS", "KS"]))
    state._legal = None
    assert _card(state) == "JH"  # no spades left: the highest heart


def test_the_rollout_policy_leads_spades_to_flush_the_queen_and_sheds_on_a_clean_last_trick() -> None:
    hands = [
        "3C 4C 5C 6C 8C 9C TC JC 2S 3S 4S JH JS",
        "KC QC 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
        "QS KS AS 2H 3H 4H 5H 6H 7H 8H 9H TH 7C",
        "AC 2C AD 2D QH KH AH 5S 6S 7S 8S 9S TS",
    ]
    assert _card(_midhand(hands, 0)) == "2S"  # no spade above the jack: flush the queen
    assert _card(_midhand(hands, 1, ("3D", "2H"))) == "2D"  # a point in the trick: duck
    assert _card(_midhand(hands, 0, ("3C", "QC", "7C"))) == "AC"  # last to a clean trick: shed the ace
    assert names(1 << fast_card(_midhand(hands, 0, ("3C", "QC", "7C"))))[0] == "2C"  # strong's rule ducks


def test_the_rollout_policy_takes_and_keeps_the_omnibus_bonus() -> None:
    options = Options.from_dict({"variant": "omnibus"})
    hands = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC 2D 2S 3S 4S",
        "KC QC 3D 4D 5D 6D 7D 8D 9D JD JC QD KD",
        "QS KS AS 2H 3H 4H 5H 6H 7H 8H 9H TH JH",
        "AC AD QH KH AH 5S 6S 7S 8S 9S TS JS TD",
    ]
    assert _card(_midhand(hands, 0, ("2D", "JD", "2H"), options)) == "AD"  # worth -9: take it
    assert _card(_midhand(hands, 3, ("5S", "2S"), options)) != "JD"  # void: shed anything but the bonus
