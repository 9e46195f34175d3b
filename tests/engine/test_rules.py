"""One test per rule and decision of docs/rules.md, and one per engine error code (state left unchanged)."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from itertools import pairwise, permutations

import pytest

from games.engine import (
    GAME_OVER,
    MOON,
    PASSING,
    PLAYING,
    EngineError,
    InvalidCard,
    InvalidOption,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    action_from_dict,
    card_name,
    deal,
    hand_seed,
    new_game,
    new_seed,
    parse_card,
    parse_cards,
    replay,
    seed_commitment,
    state_to_dict,
    view,
    visible_events,
)
from games.engine.cards import names
from games.engine.deal import shuffle

from .helpers import (
    deal_state,
    event_types,
    hand,
    legal,
    pass_cards,
    play,
    play_out_hand,
    rejected,
)

RANKS = "23456789TJQKA"
ALL_TOKENS = [r + s for s in "CDSH" for r in RANKS]
HEARTS = [r + "H" for r in RANKS]

# A 4-player hold hand (hand 4: no passing) of three tricks:
#   T1 seat 0 leads 2C, seat 3 wins with AC (no points);
#   T2 seat 3 leads KC, seats 0-2 (void in clubs) discard 2H, 4H, QS: seat 3 takes 15;
#   T3 seat 3 leads 7H, seat 1 wins with AH and takes 3H, AH, 6H, 7H: 4 points.
POINTS_DEAL = ["2C 2H 3H", "3C 4H AH", "4C QS 6H", "AC KC 7H"]
POINTS_PLAY = "2C 3C 4C AC  KC 2H 4H QS  7H 3H AH 6H"

# Seat 0 shoots the moon: it wins all five tricks and takes all 13 hearts and the QS.
MOON_DEAL = ["AC KC QC JC TC", "2C AH KH QH JH", "QS TH 9H 8H 7H", "6H 5H 4H 3H 2H"]
MOON_PLAY = "2C QS 6H AC  KC AH TH 5H  QC KH 9H 4H  JC QH 8H 3H  TC JH 7H 2H"


def moon_state(**kw: object) -> State:
    """The MOON_DEAL played out: seat 0 has shot the moon and must choose."""
    state, _ = play(deal_state(MOON_DEAL, **kw), MOON_PLAY)
    assert state.phase == MOON
    return state


def dealt_cards(state: State) -> list[str]:
    """Every card dealt this hand, widow included, twins listed twice."""
    out = names(state.widow)
    for m in state.dealt:
        out += names(m)
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# Cards and notation
# ---------------------------------------------------------------------------------------------


def test_one_standard_52_card_pack() -> None:
    assert len({parse_card(t) for t in ALL_TOKENS}) == 52
    state = new_game(Options.build(players=4), seed="pack")
    assert dealt_cards(state) == sorted(ALL_TOKENS)


def test_ranks_ace_high_two_low_within_a_suit() -> None:
    # For each adjacent pair of ranks, the higher club beats the lower one; the off-suit aces
    # played by the other seats never win.
    for low, high in pairwise(RANKS):
        state = deal_state([low + "C", high + "C", "AD", "AS"])
        state, events = play(state, f"{low}C {high}C AD AS")
        won = [e for e in events if e.type == "trick_won"]
        assert won[0].data["seat"] == 1, (low, high)


def test_no_trumps_off_suit_cards_never_win() -> None:
    state = deal_state(["2C AH", "3C AS", "4C AC", "5C 6D"])
    state, _ = play(state, "2C 3C 4C 5C")
    assert state.turn == 3
    state, events = play(state, "6D AH AS AC")
    assert [e.data["seat"] for e in events if e.type == "trick_won"] == [3]
    assert state.hand_points() == [0, 0, 0, 1]


def test_wire_notation_is_rank_then_suit_upper_case() -> None:
    assert [card_name(parse_card(t)) for t in ALL_TOKENS] == ALL_TOKENS
    assert card_name(parse_card("TC")) == "TC"
    state = new_game(Options.build(), seed="notation")
    for token in view(state, 0)["hand"]:
        assert token in ALL_TOKENS


def test_card_input_is_case_insensitive() -> None:
    for variant in ("qs", "Qs", "qS", "QS"):
        assert parse_card(variant) == parse_card("QS")
    assert action_from_dict({"type": "play", "card": "2c"}) == Play(parse_card("2C"))
    state = deal_state(["2c 5d", "3c 6d", "4c 7d", "ac 8d"])
    assert hand(state, 0) == ["2C", "5D"]
    state, events = state.apply(0, action_from_dict({"type": "play", "card": "2c"}))
    assert events[0].data == {"seat": 0, "card": "2C"}


def test_10_accepted_for_t() -> None:
    for suit in "CDSH":
        assert parse_card("10" + suit) == parse_card("T" + suit)
        assert parse_card("10" + suit.lower()) == parse_card("T" + suit)
    action = action_from_dict({"type": "pass", "cards": ["10h", "10D", "qs"]})
    assert action.to_dict() == {"type": "pass", "cards": ["TH", "TD", "QS"]}


def test_output_is_always_canonical() -> None:
    state = deal_state(["2c 10h", "10c 9h", "jc 8h", "qc 7h"])
    assert view(state, 0)["hand"] == ["2C", "TH"]
    assert view(state, 1)["hand"] == ["TC", "9H"]
    state, events = play(state, "2c 10c jC Qc")
    assert [e.data["card"] for e in events if e.type == "card_played"] == ["2C", "TC", "JC", "QC"]
    trick = view(state, None)["tricks"][0]
    assert [c["card"] for c in trick["cards"]] == ["2C", "TC", "JC", "QC"]
    assert action_from_dict({"type": "play", "card": "10s"}).to_dict() == {"type": "play", "card": "TS"}


def test_bad_card_token_rejected_naming_the_token() -> None:
    for bad in ("1H", "11H", "QX", "Q", "", "QSS", "10", "ZZ", "H2", "T"):
        with pytest.raises(InvalidCard) as info:
            parse_card(bad)
        assert info.value.code == "invalid_card"
        assert info.value.details["token"] == bad
        assert repr(bad) in info.value.message
    with pytest.raises(InvalidCard) as info:
        parse_cards(["QS", "XY", "ZZ"])
    assert info.value.details["token"] == "XY"
    with pytest.raises(EngineError) as info:
        action_from_dict({"type": "play", "card": "1S"})
    assert info.value.code == "invalid_card"
    assert "1S" in info.value.message


def test_queen_of_spades_is_the_black_maria_worth_13() -> None:
    assert card_name(parse_card("qs")) == "QS"
    state = deal_state(["2C", "3C", "4C", "QS"])
    state, events = play(state, "2C 3C 4C QS")
    won = next(e for e in events if e.type == "trick_won")
    assert (won.data["seat"], won.data["points"]) == (2, 13)


# ---------------------------------------------------------------------------------------------
# Players, seats and the deal
# ---------------------------------------------------------------------------------------------


def test_classic_table_seats_3_to_7_players() -> None:
    assert Options.build().players == 4
    for n in range(3, 8):
        state = new_game(Options.build(players=n), seed="count")
        assert len(state.hands) == n
        assert state.to_act() == list(range(n))
    for n in (2, 8):
        with pytest.raises(InvalidOption) as info:
            Options.build(players=n)
        assert info.value.details["option"] == "players"


def test_seats_left_right_across() -> None:
    # Hand 1 passes left, 2 right, 3 across: each seat's pass goes to (s+1), (s-1), (s+2) mod 4.
    for hand_number, offset in ((1, 1), (2, -1), (3, 2)):
        state = deal_state(["2C 3C 4C", "5C 6C 7C", "8C 9C TC", "JC QC KC"], hand_number=hand_number)
        for seat in range(4):
            state, _ = state.apply(seat, state.legal_actions(seat)[0])
            assert view(state, seat)["my_pass"]["to"] == (seat + offset) % 4
    # With other counts the same arithmetic applies: seat 0's right is seat N-1.
    state = deal_state(["3C 4C 5C", "6C 7C 8C", "9C TC JC", "QC KC AC", "2S 3S 4S"], hand_number=2)
    state, _ = state.apply(0, state.legal_actions(0)[0])
    assert view(state, 0)["my_pass"]["to"] == 4


def test_play_goes_left() -> None:
    for n in (3, 4, 5, 6, 7):
        state = new_game(Options.build(players=n), seed=f"left-{n}")
        for seat in range(n):
            state, _ = state.apply(seat, state.legal_actions(seat)[0])
        assert state.phase == PLAYING
        leader = state.turn
        for i in range(n):
            assert state.turn == (leader + i) % n
            state, _ = state.apply(state.turn, state.legal_actions(state.turn)[0])
            if i < n - 1:
                assert state.to_act() == [(leader + i + 1) % n]
                assert view(state, None)["to_act"] == [(leader + i + 1) % n]


def _check_removed(players: int, removed: set[str], each: int) -> None:
    for seed in ("a", "b", "c"):
        state = new_game(Options.build(players=players), seed=f"removed-{seed}")
        assert [h.bit_count() for h in state.hands] == [each] * players
        assert state.widow == 0
        assert set(dealt_cards(state)) == set(ALL_TOKENS) - removed
        assert len(dealt_cards(state)) == 52 - len(removed)


def test_cards_removed_for_3_players_is_2d() -> None:
    _check_removed(3, {"2D"}, 17)


def test_cards_removed_for_4_players_none() -> None:
    _check_removed(4, set(), 13)


def test_cards_removed_for_5_players_is_2d_2c() -> None:
    _check_removed(5, {"2D", "2C"}, 10)


def test_cards_removed_for_6_players_is_2d_3d_3c_4c() -> None:
    _check_removed(6, {"2D", "3D", "3C", "4C"}, 8)


def test_cards_removed_for_7_players_is_2d_3d_3c() -> None:
    _check_removed(7, {"2D", "3D", "3C"}, 7)


def test_all_hearts_and_qs_in_play_so_each_hand_distributes_26_points() -> None:
    rng = random.Random(26)
    for n in range(3, 8):
        for k in range(3):
            state = new_game(Options.build(players=n), seed=f"26-{n}-{k}")
            assert {*HEARTS, "QS"} <= set(dealt_cards(state))
            state = play_out_hand(state, rng)
            assert sum(state.history[0]["taken_points"]) == 26


def test_deal_is_reproducible_from_its_seed() -> None:
    opts = Options.build()
    first = new_game(opts, seed="replay-me")
    assert new_game(opts, seed="replay-me") == first
    assert tuple(first.hands) == deal(opts, hand_seed("replay-me", 1))[0]
    assert new_game(opts, seed="another").hands != first.hands
    # Play a whole hand; the revealed hand seed re-deals it exactly and matches the commitment.
    rng = random.Random(1)
    moves = []
    state = first
    while not state.sheet:
        seat = state.to_act()[0]
        choices = state.legal_actions(seat)
        action = choices[rng.randrange(len(choices))]
        moves.append((seat, action))
        state, _ = state.apply(seat, action)
    record = state.history[0]
    assert record["seed"] == hand_seed("replay-me", 1)
    assert seed_commitment(record["seed"]) == record["deal_commitment"]
    assert record["dealt"] == [names(m) for m in deal(opts, record["seed"])[0]]
    assert view(first, 0)["deal_commitment"] == record["deal_commitment"]
    assert replay(opts, "replay-me", moves) == state


def test_deal_seed_is_fresh_256_bits_from_a_secure_source() -> None:
    seeds = {new_seed() for _ in range(200)}
    assert len(seeds) == 200
    for seed in seeds:
        assert len(seed) == 64
        int(seed, 16)
    games = [new_game(Options.build()) for _ in range(20)]
    assert len({g.seed for g in games}) == 20
    assert len({tuple(g.hands) for g in games}) == 20


def test_deal_is_a_uniformly_random_shuffle() -> None:
    # Every order of three cards is equally likely: 24000 deterministic seeds, 4000 expected for
    # each order, standard deviation about 58; a naive (biased) swap shuffle would give 3556 and 4444.
    counts = Counter(tuple(shuffle(f"uniform-{i}", [0, 1, 2])) for i in range(24000))
    assert set(counts) == set(permutations([0, 1, 2]))
    assert all(3750 <= c <= 4250 for c in counts.values()), counts
    # The QS lands with each of four seats about equally often (expected 500 of 2000).
    qs = 1 << parse_card("QS")
    seats = Counter(
        next(s for s, m in enumerate(deal(Options.build(), f"seat-{i}")[0]) if m & qs) for i in range(2000)
    )
    assert all(400 <= seats[s] <= 600 for s in range(4)), seats


# ---------------------------------------------------------------------------------------------
# Passing
# ---------------------------------------------------------------------------------------------


def test_each_player_passes_exactly_three_cards_from_their_hand() -> None:
    state = new_game(Options.build(), seed="three")
    assert state.phase == PASSING
    choices = state.legal_actions(0)
    assert len(choices) == 286  # C(13, 3)
    assert all(len(set(p.cards)) == 3 for p in choices)
    assert {c for p in choices for c in p.cards} == {parse_card(t) for t in hand(state, 0)}
    assert view(state, 0)["legal_actions"] == {"type": "pass", "count": 3, "from": hand(state, 0)}
    before = [set(hand(state, s)) for s in range(4)]
    passed = {}
    for seat in range(4):
        action = choices[0] if seat == 0 else state.legal_actions(seat)[seat * 7]
        passed[seat] = {card_name(c) for c in action.cards}
        state, _ = state.apply(seat, action)
    for seat in range(4):
        after = set(hand(state, seat))
        assert len(after) == 13
        assert after == (before[seat] - passed[seat]) | passed[(seat - 1) % 4]


def test_received_cards_hidden_until_every_seat_passed() -> None:
    state = new_game(Options.build(), seed="hidden")
    dealt = [hand(state, s) for s in range(4)]
    passes = ["", "", "", ""]
    log = []
    for seat in (0, 1, 2):
        action = state.legal_actions(seat)[5]
        passes[seat] = " ".join(card_name(c) for c in action.cards)
        state, events = state.apply(seat, action)
        log += events
        for viewer in range(4):
            seen = view(state, viewer)
            assert seen["hand"] == dealt[viewer]
            assert seen["received"] is None
            text = json.dumps(seen)
            for passer in range(seat + 1):
                for token in passes[passer].split():
                    assert (f'"{token}"' in text) == (viewer == passer)
        # Only the passer is told which cards it passed; everyone else learns only that it passed.
        for viewer in (None, 0, 1, 2, 3):
            text = json.dumps(visible_events(events, viewer))
            for token in passes[seat].split():
                assert (f'"{token}"' in text) == (viewer == seat)
    assert view(state, 1)["passed"] == [True, True, True, False]
    assert "cards_received" not in event_types(log)
    action = state.legal_actions(3)[9]
    passes[3] = " ".join(card_name(c) for c in action.cards)
    state, events = state.apply(3, action)
    received = [e for e in events if e.type == "cards_received"]
    assert [(e.to, e.data["from"]) for e in received] == [(0, 3), (1, 0), (2, 1), (3, 2)]
    for seat in range(4):
        giver = (seat - 1) % 4
        seen = view(state, seat)
        assert seen["received"] == {"from": giver, "cards": sorted(passes[giver].split(), key=parse_card)}
        assert set(passes[giver].split()) <= set(seen["hand"])
        assert not set(passes[giver].split()) & set(view(state, giver)["hand"])
    spectator = view(state, None)
    assert "hand" not in spectator
    assert not any(f'"{t}"' in json.dumps(spectator) for p in passes for t in p.split())


def test_pass_is_final_once_submitted() -> None:
    state = new_game(Options.build(), seed="final")
    first = state.legal_actions(0)[0]
    state, _ = state.apply(0, first)
    assert state.to_act() == [1, 2, 3]
    assert list(state.legal_actions(0)) == []
    assert view(state, 0)["legal_actions"] is None
    assert view(state, 0)["my_pass"]["cards"] == sorted((card_name(c) for c in first.cards), key=parse_card)
    other = Pass(tuple(parse_card(t) for t in hand(state, 0)[-3:]))
    exc = rejected(state, 0, other, "bad_pass")
    assert exc.details["reason"] == "already_passed"


REMOVED = {3: {"2D"}, 4: set(), 5: {"2D", "2C"}, 6: {"2D", "3D", "3C", "4C"}, 7: {"2D", "3D", "3C"}}


def _rotation(players: int, hand_number: int) -> int | None:
    """Play the passes of a hand; return the seat that received seat 0's cards (None: hold)."""
    pool = [t for t in ALL_TOKENS if t not in REMOVED[players]]
    hands = [" ".join(pool[4 * s : 4 * s + 4]) for s in range(players)]
    state = deal_state(hands, hand_number=hand_number)
    if state.phase == PLAYING:
        assert view(state, 0)["pass_direction"] == "hold"
        return None
    zero_passed = set(hand(state, 0)[:3])
    for seat in range(players):
        state, _ = state.apply(seat, state.legal_actions(seat)[0])
    for seat in range(players):
        if zero_passed <= set(hand(state, seat)):
            assert view(state, seat)["received"]["from"] == 0
            return seat
    raise AssertionError("seat 0's cards went nowhere")


def test_pass_rotation_4_players_left_right_across_hold() -> None:
    expected = {1: 1, 2: 3, 3: 2, 4: None, 5: 1, 6: 3, 7: 2, 8: None}
    names_of = {1: "left", 3: "right", 2: "across", None: "hold"}
    for hand_number, receiver in expected.items():
        assert _rotation(4, hand_number) == receiver, hand_number
        state = deal_state(["2C 3C 4C", "5C 6C 7C", "8C 9C TC", "JC QC KC"], hand_number=hand_number)
        assert view(state, None)["pass_direction"] == names_of[receiver]


def test_hold_hand_play_starts_at_once() -> None:
    state = deal_state(["2C 3C 4C", "5C 6C 7C", "8C 9C TC", "JC QC KC"], hand_number=4)
    assert state.phase == PLAYING
    assert state.to_act() == [0]
    assert list(state.legal_actions(1)) == []
    rejected(state, 1, Pass(tuple(parse_cards(["5C", "6C", "7C"]))), "wrong_phase")
    # A real hold hand (hand 4 of a game) likewise deals straight into play.
    state = State.from_deal(Options.build(), hands=[["2C"], ["3C"], ["4C"], ["5C"]], hand_number=8)
    assert state.phase == PLAYING


def test_pass_rotation_other_counts_left_right() -> None:
    for players in (3, 5, 6, 7):
        for hand_number in (1, 2, 3, 4, 5):
            receiver = _rotation(players, hand_number)
            assert receiver == (1 if hand_number % 2 else players - 1), (players, hand_number)


# ---------------------------------------------------------------------------------------------
# Tricks
# ---------------------------------------------------------------------------------------------


def test_opening_lead_is_lowest_club_holder_after_the_pass() -> None:
    # Seat 0 is dealt the 2C and passes it left: seat 1 then holds it and leads it.
    state = deal_state(["2C 3C 4C 5C", "6C 7C 8C 9C", "TC JC QC KC", "AC 2D 3D 4D"], hand_number=1)
    state, _ = pass_cards(state, 0, "2C 3C 4C")
    state, _ = pass_cards(state, 1, "6C 7C 8C")
    state, _ = pass_cards(state, 2, "TC JC QC")
    state, events = pass_cards(state, 3, "AC 2D 3D")
    assert state.turn == 1
    assert [e.to for e in events if e.type == "cards_received" and "2C" in e.data["cards"]] == [1]
    assert view(state, 1)["to_act"] == [1]
    assert legal(state) == ["2C"]


def test_opening_lead_is_2c_with_3_4_6_7_players() -> None:
    for players in (3, 4, 6, 7):
        state = new_game(Options.build(players=players), seed=f"lead-{players}")
        for seat in range(players):
            state, _ = state.apply(seat, state.legal_actions(seat)[seat])
        assert "2C" in hand(state, state.turn)
        assert legal(state) == ["2C"]


def test_opening_lead_is_3c_with_5_players() -> None:
    for k in range(3):
        state = new_game(Options.build(players=5), seed=f"five-{k}")
        for seat in range(5):
            state, _ = state.apply(seat, state.legal_actions(seat)[k])
        assert "3C" in hand(state, state.turn)
        assert legal(state) == ["3C"]
        state, events = play(state, "3C")
        assert events[0].data["card"] == "3C"


def test_opening_lead_must_be_the_lowest_club() -> None:
    state = deal_state(["2C 3C AD", "4C 5C KD", "6C 7C QD", "8C 9C JD"])
    assert legal(state) == ["2C"]
    for token in ("3C", "AD"):
        exc = rejected(state, 0, Play(parse_card(token)), "must_lead_lowest_club")
        assert exc.details["required"] == "2C"


def test_must_follow_suit_if_able() -> None:
    state = deal_state(["2C 3D 4D", "AC 5C AH", "6C 9D TD", "7C JD QD"])
    state, _ = play(state, "2C")
    assert legal(state) == ["5C", "AC"]
    exc = rejected(state, 1, Play(parse_card("AH")), "must_follow_suit")
    assert exc.details["suit"] == "C"
    state, _ = play(state, "5C 6C 7C")
    assert state.turn == 3
    state, _ = play(state, "JD")
    assert legal(state) == ["3D", "4D"]


def test_void_in_led_suit_may_play_any_card() -> None:
    state = deal_state(["2C 3D 4D", "AC 5S 6S", "6C 2H 9D", "7C JD QD"])
    state, _ = play(state, "2C AC 6C 7C")
    assert state.turn == 1
    state, _ = play(state, "5S")
    # Seat 2 has no spade: after the first trick, any card, a heart included (hearts unbroken).
    assert legal(state) == ["2H", "9D"]
    state, events = play(state, "2H")
    assert "hearts_broken" in event_types(events)
    assert legal(state) == ["JD", "QD"]


def test_first_trick_no_hearts_or_qs_when_void_in_clubs() -> None:
    state = deal_state(["2C 5D 6D", "3C 7D 8D", "4C 9D TD", "QS AH JD"])
    state, _ = play(state, "2C 3C 4C")
    assert legal(state) == ["JD"]
    rejected(state, 3, Play(parse_card("AH")), "no_points_on_first_trick")
    rejected(state, 3, Play(parse_card("QS")), "no_points_on_first_trick")
    assert view(state, 3)["legal_actions"] == {"type": "play", "cards": ["JD"]}


def test_first_trick_only_penalty_cards_may_play_any() -> None:
    state = deal_state(["2C 5D 6D", "3C 7D 8D", "4C 9D TD", "QS AH KH"])
    state, _ = play(state, "2C 3C 4C")
    assert legal(state) == ["AH", "KH", "QS"]
    state, events = play(state, "AH")
    assert "hearts_broken" in event_types(events)
    assert state.hand_points()[2] == 1


def test_highest_card_of_led_suit_wins_and_winner_leads_next() -> None:
    state = deal_state(["2C 3D", "KC 4D", "AC 5D", "TC 6D"])
    state, events = play(state, "2C KC AC TC")
    won = [e for e in events if e.type == "trick_won"]
    assert won[0].data["seat"] == 2
    assert state.turn == state.leader == 2
    assert view(state, None)["to_act"] == [2]
    assert view(state, None)["tricks"][0]["winner"] == 2
    for seat in (0, 1, 3):
        rejected(state, seat, Play(parse_card(hand(state, seat)[0])), "not_your_turn")
    # The next trick: the winner leads; a lower card of the led suit led by it still wins
    # against off-suit higher cards.
    state, events = play(state, "5D 6D 3D 4D")
    assert [e.data["seat"] for e in events if e.type == "trick_won"] == [3]


def test_hearts_may_not_be_led_until_broken() -> None:
    state = deal_state(["2C 3D 2H", "3C 4D 3H", "4C 5D 4H", "AC 6D 5H"])
    state, _ = play(state, "2C 3C 4C AC")
    assert state.turn == 3
    assert not state.broken
    assert legal(state) == ["6D"]
    rejected(state, 3, Play(parse_card("5H")), "hearts_not_broken")


def test_heart_discard_breaks_hearts_for_later_leads() -> None:
    state = deal_state(["2C 3D 4D 5S", "3C 9D 6S 7S", "4C 2H 8S 9S", "AC AD 2S 3H"])
    state, _ = play(state, "2C 3C 4C AC")
    assert legal(state) == ["2S", "AD"]
    state, events = play(state, "AD 3D 9D 2H")
    assert "hearts_broken" in event_types(events)
    assert view(state, 3)["hearts_broken"] is True
    assert state.turn == 3
    assert legal(state) == ["2S", "3H"]
    state, _ = play(state, "3H")


def test_qs_discard_breaks_hearts_for_later_leads() -> None:
    state = deal_state(["2C 3D 4D 5S", "3C 9D 6S 7S", "4C QS 8S 9S", "AC AD 2S 3H"])
    state, _ = play(state, "2C 3C 4C AC")
    state, events = play(state, "AD 3D 9D QS")
    assert "hearts_broken" in event_types(events)
    assert legal(state) == ["2S", "3H"]


def test_qs_may_be_led_before_hearts_broken() -> None:
    state = deal_state(["AC QS 5D 2H", "2C 3S 3H 6D", "3C 4S 4H 7D", "4C 5S 5H 8D"])
    state, _ = play(state, "2C 3C 4C AC")
    assert state.turn == 0
    assert not state.broken
    assert legal(state) == ["5D", "QS"]
    state, events = play(state, "QS")
    assert events[0].data == {"seat": 0, "card": "QS"}
    assert "hearts_broken" in event_types(events)


def test_only_hearts_hand_may_lead_heart_and_breaks_hearts() -> None:
    state = deal_state(["AC 2H 3H 6H", "2C 4H 2D 5D", "3C 5H 3D 6D", "4C AH 7H 4D"])
    state, _ = play(state, "2C 3C 4C AC")
    assert state.turn == 0
    assert not state.broken
    assert legal(state) == ["2H", "3H", "6H"]
    state, events = play(state, "2H")
    assert "hearts_broken" in event_types(events)
    state, _ = play(state, "4H 5H AH")
    # Seat 3 holds a diamond too, and may now lead a heart because hearts are broken.
    assert state.turn == 3
    assert legal(state) == ["4D", "7H"]


def test_only_hearts_and_qs_must_lead_qs() -> None:
    state = deal_state(["AC QS 2H 3H", "2C 2D 3D 4D", "3C 5D 6D 7D", "4C 8D 9D TD"])
    state, _ = play(state, "2C 3C 4C AC")
    assert state.turn == 0
    assert legal(state) == ["QS"]
    for token in ("2H", "3H"):
        before = json.dumps(state_to_dict(state), sort_keys=True)
        with pytest.raises(EngineError) as info:
            state.apply(0, Play(parse_card(token)))
        assert info.value.code in ("hearts_not_broken", "must_lead_queen_of_spades")
        assert "QS" in info.value.message
        assert json.dumps(state_to_dict(state), sort_keys=True) == before
    state, _ = play(state, "QS")
    assert state.broken


# ---------------------------------------------------------------------------------------------
# Scoring a hand
# ---------------------------------------------------------------------------------------------


def test_hearts_count_1_and_qs_13() -> None:
    state = deal_state(POINTS_DEAL)
    state, events = play(state, POINTS_PLAY)
    tricks = [(e.data["seat"], e.data["points"]) for e in events if e.type == "trick_won"]
    assert tricks == [(3, 0), (3, 15), (1, 4)]
    assert state.sheet[0]["points"] == [0, 4, 0, 15]
    assert list(state.totals) == [0, 4, 0, 15]


def test_moon_shot_waits_for_the_shooters_choice() -> None:
    state, events = play(deal_state(MOON_DEAL), MOON_PLAY)
    assert state.phase == MOON
    assert [e.data for e in events if e.type == "moon_shot"] == [{"seat": 0, "choices": ["subtract", "add"]}]
    assert state.to_act() == [0]
    assert list(state.legal_actions(0)) == [MoonChoice("subtract"), MoonChoice("add")]
    assert all(list(state.legal_actions(s)) == [] for s in (1, 2, 3))
    assert view(state, 0)["legal_actions"] == {"type": "moon", "choices": ["subtract", "add"]}
    assert view(state, None)["moon"] == {"seat": 0, "choices": ["subtract", "add"]}
    assert list(state.sheet) == []
    assert list(state.totals) == [0, 0, 0, 0]
    rejected(state, 1, MoonChoice("add"), "not_your_turn")


def test_moon_means_taking_all_13_hearts_and_the_qs() -> None:
    # Seat 0 takes all 13 hearts but seat 3 takes the QS: no moon, both score 13.
    deal = ["AC KC QC JC TC 2S", "2C AH KH QH JH 3S", "AD TH 9H 8H 7H 4S", "QS 6H 5H 4H 3H 2H"]
    moves = "2C AD 6H AC  KC AH TH 5H  QC KH 9H 4H  JC QH 8H 3H  TC JH 7H 2H  2S 3S 4S QS"
    state, events = play(deal_state(deal), moves)
    assert "moon_shot" not in event_types(events)
    assert state.sheet[0]["points"] == [13, 0, 0, 13]
    assert state.sheet[0]["moon"] is None


def test_moon_subtract_option() -> None:
    state = moon_state(totals=[10, 20, 30, 40])
    state, events = state.apply(0, MoonChoice("subtract"))
    assert list(state.totals) == [-16, 20, 30, 40]
    assert state.sheet[0]["points"] == [-26, 0, 0, 0]
    assert state.sheet[0]["moon"] == {"seat": 0, "choice": "subtract"}
    scored = next(e for e in events if e.type == "hand_scored")
    assert scored.data["totals"] == [-16, 20, 30, 40]


def test_moon_add_option() -> None:
    state = moon_state(totals=[10, 20, 30, 40])
    state, _ = state.apply(0, MoonChoice("add"))
    assert list(state.totals) == [10, 46, 56, 66]
    assert state.sheet[0]["points"] == [0, 26, 26, 26]
    assert state.sheet[0]["moon"] == {"seat": 0, "choice": "add"}


def test_moon_either_option_moves_shooter_26_ahead_of_everyone() -> None:
    start = [10, 20, 30, 40]
    for choice in ("subtract", "add"):
        state, _ = moon_state(totals=start).apply(0, MoonChoice(choice))
        gaps = [t - state.totals[0] for t in state.totals[1:]]
        assert gaps == [t - start[0] + 26 for t in start[1:]], choice


def test_moon_timeout_default_picks_add_when_it_ends_game_with_shooter_winning() -> None:
    state = moon_state(totals=[50, 80, 80, 80])
    assert state.default_moon_choice() == "add"
    state, _ = state.apply(0, MoonChoice(state.default_moon_choice()))
    assert state.phase == GAME_OVER
    assert list(state.winners) == [0]
    assert list(state.totals) == [50, 106, 106, 106]


def test_moon_timeout_default_picks_subtract_when_add_does_not_end_game() -> None:
    state = moon_state(totals=[0, 0, 0, 0])
    assert state.default_moon_choice() == "subtract"
    state, _ = state.apply(0, MoonChoice(state.default_moon_choice()))
    assert list(state.totals) == [-26, 0, 0, 0]
    assert state.phase != GAME_OVER


def test_moon_timeout_default_picks_subtract_when_add_ends_game_with_another_winner() -> None:
    # Adding 26 would end the game (106) but seat 1 (36) would win, not the shooter (95).
    state = moon_state(totals=[95, 10, 80, 80])
    assert state.default_moon_choice() == "subtract"
    state, _ = state.apply(0, MoonChoice("subtract"))
    assert list(state.totals) == [69, 10, 80, 80]
    assert state.phase != GAME_OVER


def test_scores_may_go_below_zero() -> None:
    state, _ = moon_state().apply(0, MoonChoice("subtract"))
    assert list(state.totals) == [-26, 0, 0, 0]
    assert view(state, None)["scores"] == [-26, 0, 0, 0]
    state, _ = moon_state(totals=[-30, 0, 0, 0]).apply(0, MoonChoice("subtract"))
    assert state.totals[0] == -56


def test_scoresheet_one_row_per_hand_with_running_totals() -> None:
    rng = random.Random(7)
    state, _ = play(deal_state(POINTS_DEAL, totals=[3, 1, 4, 1]), POINTS_PLAY)
    assert list(state.sheet) == [{"hand": 4, "points": [0, 4, 0, 15], "totals": [3, 5, 4, 16], "moon": None}]
    for _ in range(2):
        state = play_out_hand(state, rng)
    assert [row["hand"] for row in state.sheet] == [4, 5, 6]
    running = [3, 1, 4, 1]
    for row in state.sheet:
        running = [t + p for t, p in zip(running, row["points"], strict=True)]
        assert row["totals"] == running
    assert list(state.totals) == running
    assert view(state, 2)["scoresheet"] == [dict(r) for r in state.sheet]


# ---------------------------------------------------------------------------------------------
# End of the game
# ---------------------------------------------------------------------------------------------


def test_target_score_default_100() -> None:
    assert Options.build().target_score == 100
    state, _ = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, 84]), POINTS_PLAY)
    assert state.totals[3] == 99
    assert state.phase == PASSING
    state, _ = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, 85]), POINTS_PLAY)
    assert state.totals[3] == 100
    assert state.phase == GAME_OVER


def test_target_score_minimum_50() -> None:
    for bad in (49, 0, -100):
        with pytest.raises(InvalidOption) as info:
            Options.build(target_score=bad)
        assert info.value.details["option"] == "target_score"
        assert "target_score" in info.value.message
    assert Options.build(target_score=50).target_score == 50


def test_agreed_target_score_ends_the_game() -> None:
    state, _ = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, 34], target_score=50), POINTS_PLAY)
    assert state.totals[3] == 49
    assert state.phase == PASSING
    state, _ = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, 35], target_score=50), POINTS_PLAY)
    assert state.phase == GAME_OVER
    assert list(state.winners) == [1]


def test_game_ends_when_a_player_reaches_or_passes_target() -> None:
    for start, final in ((85, 100), (90, 105)):
        state, events = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, start]), POINTS_PLAY)
        assert list(state.totals) == [10, 4, 5, final]
        assert state.phase == GAME_OVER
        assert event_types(events)[-1] == "game_over"
        assert state.to_act() == []


def test_game_end_checked_only_after_hand() -> None:
    state = deal_state(POINTS_DEAL, totals=[10, 0, 5, 90])
    state, _ = play(state, "2C 3C 4C AC KC 2H 4H QS")
    # Seat 3 has taken 15 points: 105 with its total, but the hand is not over.
    assert state.hand_points()[3] == 15
    assert state.phase == PLAYING
    assert list(state.winners) == []
    assert view(state, None)["winners"] is None
    assert list(state.totals) == [10, 0, 5, 90]
    state, _ = play(state, "7H 3H AH 6H")
    assert state.phase == GAME_OVER


def test_lowest_total_wins() -> None:
    state, events = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, 90]), POINTS_PLAY)
    assert list(state.totals) == [10, 4, 5, 105]
    assert list(state.winners) == [1]
    assert events[-1].data["winners"] == [1]
    assert view(state, 0)["winners"] == [1]


def test_tie_for_lowest_plays_on() -> None:
    state, _ = play(deal_state(POINTS_DEAL, totals=[4, 0, 10, 90]), POINTS_PLAY)
    assert list(state.totals) == [4, 4, 10, 105]
    assert state.phase == PASSING
    assert state.hand_no == 5
    assert list(state.winners) == []
    rng = random.Random(3)
    for _ in range(30):
        if state.phase == GAME_OVER:
            break
        state = play_out_hand(state, rng)
    assert state.phase == GAME_OVER
    low = min(state.totals)
    assert list(state.winners) == [s for s, t in enumerate(state.totals) if t == low]
    assert len(state.winners) == 1


def test_tie_rule_shared_ends_with_shared_win() -> None:
    assert Options.build().tie_rule == "play_on"
    state = deal_state(POINTS_DEAL, totals=[4, 0, 10, 90], tie_rule="shared")
    state, events = play(state, POINTS_PLAY)
    assert state.phase == GAME_OVER
    assert list(state.winners) == [0, 1]
    assert events[-1].data["winners"] == [0, 1]
    assert view(state, 3)["winners"] == [0, 1]


# ---------------------------------------------------------------------------------------------
# Variants: table options
# ---------------------------------------------------------------------------------------------


def test_variants_are_table_options_classic_by_default() -> None:
    assert Options.build().variant == "classic"
    assert Options.from_dict({}).variant == "classic"
    assert Options.build(variant="omnibus").variant == "omnibus"
    assert Options.from_dict({"variant": "cancellation", "players": 8}).variant == "cancellation"
    with pytest.raises(InvalidOption) as info:
        Options.build(variant="black_lady")
    assert info.value.details["option"] == "variant"


def test_variant_rules_fixed_when_the_table_is_created() -> None:
    opts = Options.build(variant="omnibus", omnibus_card="TD", players=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.variant = "classic"  # type: ignore[misc]
    state = new_game(opts, seed="fixed")
    rng = random.Random(5)
    for _ in range(3):
        state = play_out_hand(state, rng)
        assert state.options == opts
    assert view(state, 0)["options"] == {
        "players": 5,
        "target_score": 100,
        "variant": "omnibus",
        "omnibus_card": "TD",
        "tie_rule": "play_on",
    }


# Omnibus: seat 2 wins the first trick, onto which seat 3 discards the bonus card;
# seat 1 takes 2H on trick 2 and seat 3 takes 3H on trick 3.
OMNIBUS_DEAL = ["2C 5D 9S", "3C 6D TS", "AC 4D 3H", "{bonus} 2H AS"]
OMNIBUS_PLAY = "2C 3C AC {bonus}  4D 2H 5D 6D  TS 3H AS 9S"


def _omnibus_hand(bonus: str, **options: object) -> State:
    hands = [h.format(bonus=bonus) for h in OMNIBUS_DEAL]
    state, _ = play(deal_state(hands, **options), OMNIBUS_PLAY.format(bonus=bonus))
    return state


def test_omnibus_players_3_to_7() -> None:
    for n in range(3, 8):
        assert Options.build(variant="omnibus", players=n).players == n
    for n in (2, 8):
        with pytest.raises(InvalidOption) as info:
            Options.build(variant="omnibus", players=n)
        assert info.value.details["option"] == "players"


def test_omnibus_jd_is_worth_minus_10_by_default() -> None:
    assert Options.build(variant="omnibus").omnibus_card == "JD"
    state = _omnibus_hand("JD", variant="omnibus")
    assert state.sheet[0]["points"] == [0, 1, -10, 1]
    assert list(state.totals) == [0, 1, -10, 1]
    # The same cards in the classic game: the JD is worth nothing.
    assert _omnibus_hand("JD").sheet[0]["points"] == [0, 1, 0, 1]


def test_omnibus_td_option_is_worth_minus_10() -> None:
    state = _omnibus_hand("TD", variant="omnibus", omnibus_card="TD")
    assert state.sheet[0]["points"] == [0, 1, -10, 1]
    state = _omnibus_hand("JD", variant="omnibus", omnibus_card="td")
    assert state.sheet[0]["points"] == [0, 1, 0, 1]


def test_omnibus_hand_distributes_16_points() -> None:
    rng = random.Random(16)
    for n in range(3, 8):
        for k in range(2):
            state = new_game(Options.build(variant="omnibus", players=n), seed=f"omni-{n}-{k}")
            state = play_out_hand(state, rng)
            assert sum(state.history[0]["taken_points"]) == 16


def test_omnibus_bonus_card_may_be_discarded_on_first_trick() -> None:
    # A seat void in clubs holding the JD and penalty cards must discard the JD (it is not a
    # penalty card, so the "only penalty cards" exception does not apply) ...
    state = deal_state(["2C 5D 6D", "3C 7D 8D", "4C 9D TD", "JD QS AH"], variant="omnibus")
    state, _ = play(state, "2C 3C 4C")
    assert legal(state) == ["JD"]
    state, events = play(state, "JD")
    won = next(e for e in events if e.type == "trick_won")
    assert (won.data["seat"], won.data["points"]) == (2, -10)
    # ... and beside other safe cards it is one of the allowed discards.
    state = deal_state(["2C 5D 6D", "3C 7D 8D", "4C 9D TD", "JD 9S AH"], variant="omnibus")
    state, _ = play(state, "2C 3C 4C")
    assert legal(state) == ["9S", "JD"]


OMNI_MOON_OTHER = ["3C AD KC QC JC TC", "AC 4D AH KH QH JH", "JD QS TH 9H 8H 7H", "2C 2H 6H 5H 4H 3H"]
OMNI_MOON_OTHER_PLAY = "2C 3C AC JD  4D QS 2H AD  KC AH TH 6H  QC KH 9H 5H  JC QH 8H 4H  TC JH 7H 3H"
OMNI_MOON_SELF = ["AC KC QC JC TC 9C", "2C AH KH QH JH JD", "QS TH 9H 8H 7H 2D", "6H 5H 4H 3H 2H 3D"]
OMNI_MOON_SELF_PLAY = "2C 2D 3D AC  KC AH QS 6H  QC KH TH 5H  JC QH 9H 4H  TC JH 8H 3H  9C JD 7H 2H"


def test_omnibus_moon_keeps_the_minus_10_of_the_bonus_taker() -> None:
    expected = {"subtract": [-26, -10, 0, 0], "add": [0, 16, 26, 26]}
    for choice, points in expected.items():
        state, _ = play(deal_state(OMNI_MOON_OTHER, variant="omnibus"), OMNI_MOON_OTHER_PLAY)
        assert state.phase == MOON
        assert state.shooter == 0
        state, _ = state.apply(0, MoonChoice(choice))
        assert state.sheet[0]["points"] == points, choice


def test_omnibus_moon_shooter_holding_bonus_keeps_minus_10() -> None:
    expected = {"subtract": [-36, 0, 0, 0], "add": [-10, 26, 26, 26]}
    for choice, points in expected.items():
        state, _ = play(deal_state(OMNI_MOON_SELF, variant="omnibus"), OMNI_MOON_SELF_PLAY)
        assert state.phase == MOON
        state, _ = state.apply(0, MoonChoice(choice))
        assert state.sheet[0]["points"] == points, choice


def test_omnibus_otherwise_plays_the_classic_rules() -> None:
    state = new_game(Options.build(variant="omnibus"), seed="omni-classic")
    assert state.phase == PASSING
    for seat in range(4):
        state, _ = state.apply(seat, state.legal_actions(seat)[seat])
    assert legal(state) == ["2C"]
    state = deal_state(["2C 5D 6D", "3C 7D 8D", "4C 9D TD", "QS AH 9S"], variant="omnibus")
    state, _ = play(state, "2C 3C 4C")
    assert legal(state) == ["9S"]


# Cancellation Hearts ---------------------------------------------------------------------------


def test_cancellation_players_6_to_10() -> None:
    for n in range(6, 11):
        assert Options.build(variant="cancellation", players=n).players == n
    for n in (4, 5, 11):
        with pytest.raises(InvalidOption) as info:
            Options.build(variant="cancellation", players=n)
        assert info.value.details["option"] == "players"
    with pytest.raises(InvalidOption):
        Options.build(players=8)


def test_cancellation_uses_two_packs_every_card_twice() -> None:
    for n in range(6, 11):
        state = new_game(Options.build(variant="cancellation", players=n), seed=f"packs-{n}")
        assert dealt_cards(state) == sorted(ALL_TOKENS * 2)


def test_cancellation_hand_sizes_and_widow_sizes_2_6_0_5_4() -> None:
    expected = {6: (17, 2), 7: (14, 6), 8: (13, 0), 9: (11, 5), 10: (10, 4)}
    for n, (each, widow) in expected.items():
        state = new_game(Options.build(variant="cancellation", players=n), seed=f"sizes-{n}")
        assert [h.bit_count() for h in state.hands] == [each] * n
        assert state.widow.bit_count() == widow
        assert view(state, 0)["widow"] == {"size": widow, "taken_by": None}
        assert view(state, 0)["hand_sizes"] == [each] * n


CANCEL_WIDOW = ["7C 2H", "KC 3D", "AC 4D", "2C 5D", "3C 6D", "4C 7D"]


def test_cancellation_widow_goes_to_first_trick_winner_with_its_points() -> None:
    state = deal_state(CANCEL_WIDOW, widow="AH QS", variant="cancellation")
    # The widow is face down: its cards are in no view while the hand is played.
    for viewer in (None, 0, 1, 2, 3, 4, 5):
        text = json.dumps(view(state, viewer))
        assert '"AH"' not in text
        assert '"QS"' not in text
    assert view(state, 2)["widow"] == {"size": 2, "taken_by": None}
    state, _ = play(state, "KC AC 2C 3C 4C 7C")
    assert state.hand_points() == [0, 0, 14, 0, 0, 0]
    assert view(state, 0)["widow"] == {"size": 2, "taken_by": 2}
    for viewer in (None, 0, 1):
        assert '"AH"' not in json.dumps(view(state, viewer))
    state, _ = play(state, "4D 5D 6D 7D 2H 3D")
    assert state.sheet[0]["points"] == [0, 0, 14, 0, 0, 1]
    assert state.history[0]["widow"] == ["QS", "AH"]


def test_cancellation_no_passing() -> None:
    for hand_number in (1, 2, 3, 4):
        state = deal_state(CANCEL_WIDOW, widow="AH QS", variant="cancellation", hand_number=hand_number)
        assert state.phase == PLAYING
        assert view(state, 0)["pass_direction"] == "hold"
        rejected(state, state.turn, Pass(tuple(parse_cards(["2C", "3C", "4C"]))), "wrong_phase")
    state = new_game(Options.build(variant="cancellation", players=7), seed="no-pass")
    assert state.phase == PLAYING
    assert len(state.to_act()) == 1


def test_cancellation_dealer_rotates_and_seat_left_of_dealer_leads() -> None:
    for hand_number in range(1, 9):
        state = deal_state(CANCEL_WIDOW, variant="cancellation", hand_number=hand_number)
        assert state.dealer == (hand_number - 1) % 6
        assert state.turn == hand_number % 6
        assert view(state, None)["dealer"] == state.dealer
    # Through a game: after hand 1, hand 2 is dealt by seat 1 and led by seat 2, and so on.
    state, _ = play(deal_state(CANCEL_WIDOW, widow="AH QS", variant="cancellation"), "KC AC 2C 3C 4C 7C")
    state, _ = play(state, "4D 5D 6D 7D 2H 3D")
    rng = random.Random(11)
    for hand_number in (2, 3, 4):
        assert (state.hand_no, state.dealer, state.turn) == (hand_number, hand_number - 1, hand_number)
        state = play_out_hand(state, rng)


def test_cancellation_first_lead_is_any_card_and_first_trick_exception_does_not_apply() -> None:
    hands = ["8D 2H", "KC 2C", "AC 4D", "QS 5D", "3C 6D", "4C 7D"]
    state = deal_state(hands, variant="cancellation")
    assert state.turn == 1
    assert legal(state) == ["2C", "KC"]
    state, _ = play(state, "KC AC")
    # Seat 3 has no club: on the first trick it may still discard the QS.
    assert legal(state) == ["5D", "QS"]
    state, _ = play(state, "QS 3C 4C")
    assert legal(state) == ["2H", "8D"]
    state, events = play(state, "2H")
    assert [e.data["points"] for e in events if e.type == "trick_won"] == [14]


def test_cancellation_hearts_must_be_broken_before_led() -> None:
    hands = ["7C 9D", "2H 3D", "AC 4D", "2C 5D", "3C 6D", "4C 7D"]
    state = deal_state(hands, variant="cancellation")
    assert legal(state) == ["3D"]
    rejected(state, 1, Play(parse_card("2H")), "hearts_not_broken")


def test_cancellation_identical_cards_cancel() -> None:
    hands = ["7C 7D", "KC 2D", "AC 3D", "AC 4D", "5C 5D", "6C 6D"]
    state, events = play(deal_state(hands, variant="cancellation"), "KC AC AC 5C 6C 7C")
    assert [e.data["seat"] for e in events if e.type == "trick_won"] == [1]
    assert state.turn == 1
    # Two pairs cancelled: the highest uncancelled club (the QC) wins.
    hands = ["2C", "QC", "AC", "AC", "KC", "KC"]
    state, events = play(deal_state(hands, variant="cancellation"), "QC AC AC KC KC 2C")
    assert [e.data["seat"] for e in events if e.type == "trick_won"] == [1]


CARRY_DEAL = ["3H 8D 7S", "KC 2D AS", "KC 3D 3S", "4D 5D 4H", "2H 6D 5S", "QS 7D 6S"]


def test_cancellation_all_cancelled_trick_carried_to_next_winner_and_leader_leads_again() -> None:
    state = deal_state(CARRY_DEAL, variant="cancellation")
    state, events = play(state, "KC KC 4D 2H QS 3H")
    assert "trick_won" not in event_types(events)
    assert [e.data["leader"] for e in events if e.type == "trick_carried"] == [1]
    assert state.turn == 1
    assert state.hand_points() == [0] * 6
    assert view(state, None)["tricks"][0]["winner"] is None
    state, events = play(state, "2D 3D 5D 6D 7D 8D")
    assert [e.data["seat"] for e in events if e.type == "trick_won"] == [0]
    assert state.hand_points() == [15, 0, 0, 0, 0, 0]
    state, _ = play(state, "7S AS 3S 4H 5S 6S")
    assert state.sheet[0]["points"] == [15, 1, 0, 0, 0, 0]


def test_cancellation_last_trick_cancelled_goes_to_its_leader() -> None:
    hands = ["6H 6S 7H", "AD 2S 8D", "2D AS KC", "3D 3S KC", "4D 4S 2H", "5D 5S 3H"]
    state = deal_state(hands, variant="cancellation")
    state, _ = play(state, "AD 2D 3D 4D 5D 6H  2S AS 3S 4S 5S 6S")
    assert state.turn == 2
    state, events = play(state, "KC KC 2H 3H 7H 8D")
    assert [e.data["seat"] for e in events if e.type == "trick_won"] == [2]
    assert state.sheet[0]["points"] == [0, 1, 3, 0, 0, 0]
    assert state.history[0]["tricks"][-1]["winner"] == 2


def test_cancellation_hand_distributes_52_points() -> None:
    rng = random.Random(52)
    for n in range(6, 11):
        state = new_game(Options.build(variant="cancellation", players=n), seed=f"52-{n}")
        state = play_out_hand(state, rng)
        assert sum(state.history[0]["taken_points"]) == 52


CANCEL_MOON = [
    "3H 3H 2H 2H 2D 3D",
    "AC KC QC JC TC 9C",
    "QS QS AH AH KH KH",
    "QH QH JH JH TH TH",
    "9H 9H 8H 8H 7H 7H",
    "6H 6H 5H 5H 4H 4H",
]


def _cancellation_moon() -> State:
    state = deal_state(CANCEL_MOON, variant="cancellation")
    while state.phase == PLAYING:
        state, _ = state.apply(state.turn, state.legal_actions(state.turn)[0])
    return state


def test_cancellation_moon_is_all_26_hearts_and_both_qs_worth_52() -> None:
    state = _cancellation_moon()
    assert state.phase == MOON
    assert state.shooter == 1
    assert state.hand_points()[1] == 52
    subtracted, _ = state.apply(1, MoonChoice("subtract"))
    assert subtracted.sheet[0]["points"] == [0, -52, 0, 0, 0, 0]
    added, _ = state.apply(1, MoonChoice("add"))
    assert added.sheet[0]["points"] == [52, 0, 52, 52, 52, 52]


# ---------------------------------------------------------------------------------------------
# Engine error codes: each rejects the action and leaves the state unchanged
# ---------------------------------------------------------------------------------------------


def _passing_state() -> State:
    return new_game(Options.build(), seed="errors")


def _game_over_state() -> State:
    state, _ = play(deal_state(POINTS_DEAL, totals=[10, 0, 5, 90]), POINTS_PLAY)
    assert state.phase == GAME_OVER
    return state


def test_error_wrong_phase() -> None:
    passing = _passing_state()
    card = parse_card(hand(passing, 0)[0])
    exc = rejected(passing, 0, Play(card), "wrong_phase")
    assert exc.details["phase"] == "passing"
    rejected(passing, 0, MoonChoice("add"), "wrong_phase")
    playing = deal_state(POINTS_DEAL)
    rejected(playing, 0, Pass(tuple(parse_cards(["2C", "2H", "3H"]))), "wrong_phase")
    rejected(playing, 0, MoonChoice("subtract"), "wrong_phase")
    with pytest.raises(EngineError) as info:
        playing.default_moon_choice()
    assert info.value.code == "wrong_phase"
    moon = moon_state()
    rejected(moon, 0, Play(parse_card("AC")), "wrong_phase")


def test_error_not_your_turn() -> None:
    state = deal_state(POINTS_DEAL)
    exc = rejected(state, 1, Play(parse_card("3C")), "not_your_turn")
    assert exc.details["turn"] == 0
    state, _ = play(state, "2C")
    rejected(state, 0, Play(parse_card("2H")), "not_your_turn")
    rejected(state, 3, Play(parse_card("AC")), "not_your_turn")
    rejected(moon_state(), 2, MoonChoice("subtract"), "not_your_turn")


def test_error_card_not_in_hand() -> None:
    state = deal_state(POINTS_DEAL)
    exc = rejected(state, 0, Play(parse_card("3C")), "card_not_in_hand")
    assert exc.details["card"] == "3C"
    assert "3C" in exc.message
    rejected(state, 0, Play(parse_card("AS")), "card_not_in_hand")


def test_error_must_lead_lowest_club() -> None:
    state = deal_state(["2C 3C AD", "4C 5C KD", "6C 7C QD", "8C 9C JD"])
    exc = rejected(state, 0, Play(parse_card("AD")), "must_lead_lowest_club")
    assert exc.details == {"card": "AD", "required": "2C"}
    five = new_game(Options.build(players=5), seed="five-errors")
    for seat in range(5):
        five, _ = five.apply(seat, five.legal_actions(seat)[0])
    other = next(t for t in hand(five, five.turn) if t != "3C")
    exc = rejected(five, five.turn, Play(parse_card(other)), "must_lead_lowest_club")
    assert exc.details["required"] == "3C"
    assert "3C" in exc.message


def test_error_must_follow_suit() -> None:
    state = deal_state(["2C 3D 4D", "AC 5C AH", "6C 9D TD", "7C JD QD"])
    state, _ = play(state, "2C")
    exc = rejected(state, 1, Play(parse_card("AH")), "must_follow_suit")
    assert exc.details == {"card": "AH", "suit": "C"}


def test_error_no_points_on_first_trick() -> None:
    state = deal_state(["2C 5D 6D", "3C 7D 8D", "4C 9D TD", "QS AH JD"])
    state, _ = play(state, "2C 3C 4C")
    for token in ("AH", "QS"):
        exc = rejected(state, 3, Play(parse_card(token)), "no_points_on_first_trick")
        assert exc.details["card"] == token


def test_error_hearts_not_broken() -> None:
    state = deal_state(["2C 3D 2H", "3C 4D 3H", "4C 5D 4H", "AC 6D 5H"])
    state, _ = play(state, "2C 3C 4C AC")
    exc = rejected(state, 3, Play(parse_card("5H")), "hearts_not_broken")
    assert exc.details["card"] == "5H"


def _bad_pass(state: State, seat: int, tokens: list[str], reason: str) -> EngineError:
    exc = rejected(state, seat, Pass(tuple(parse_cards(tokens))), "bad_pass")
    assert exc.details["reason"] == reason
    return exc


def test_error_bad_pass_count() -> None:
    state = _passing_state()
    held = hand(state, 0)
    _bad_pass(state, 0, held[:2], "count")
    _bad_pass(state, 0, held[:4], "count")
    _bad_pass(state, 0, [], "count")
    with pytest.raises(EngineError) as info:
        action_from_dict({"type": "pass", "cards": "2C 3C 4C"})
    assert info.value.code == "bad_pass"
    assert info.value.details["reason"] == "count"


def test_error_bad_pass_duplicate() -> None:
    state = _passing_state()
    held = hand(state, 0)
    _bad_pass(state, 0, [held[0], held[0], held[1]], "duplicate")
    _bad_pass(state, 0, [held[0], held[0], held[0]], "duplicate")


def test_error_bad_pass_not_held() -> None:
    state = _passing_state()
    held = hand(state, 0)
    stranger = hand(state, 1)[0]
    exc = _bad_pass(state, 0, [held[0], held[1], stranger], "not_held")
    assert exc.details["card"] == stranger


def test_error_bad_pass_already_passed() -> None:
    state = _passing_state()
    state, _ = state.apply(0, state.legal_actions(0)[0])
    held = hand(state, 0)
    _bad_pass(state, 0, held[-3:], "already_passed")


def test_error_moon_choice_invalid() -> None:
    state = moon_state()
    before = json.dumps(state_to_dict(state), sort_keys=True)
    with pytest.raises(EngineError) as info:  # refused when the choice is built
        state.apply(0, MoonChoice("double"))
    assert info.value.code == "moon_choice_invalid"
    assert info.value.details["choice"] == "double"
    assert json.dumps(state_to_dict(state), sort_keys=True) == before
    with pytest.raises(EngineError) as info:
        action_from_dict({"type": "moon", "choice": "both"})
    assert info.value.code == "moon_choice_invalid"
    assert "both" in info.value.message


def test_error_invalid_card() -> None:
    state = deal_state(POINTS_DEAL)
    before = json.dumps(state_to_dict(state), sort_keys=True)
    for bad in (52, 99, -1, "QS"):
        # The bad id is refused when the action is built or when it is applied.
        with pytest.raises(EngineError) as info:
            state.apply(0, Play(bad))  # type: ignore[arg-type]
        assert info.value.code == "invalid_card"
        assert json.dumps(state_to_dict(state), sort_keys=True) == before
    with pytest.raises(EngineError) as info:
        action_from_dict({"type": "play", "card": "ZZ"})
    assert info.value.code == "invalid_card"
    assert info.value.details["token"] == "ZZ"
    assert "ZZ" in info.value.message
    passing = _passing_state()
    before = json.dumps(state_to_dict(passing), sort_keys=True)
    with pytest.raises(EngineError) as info:  # refused when the pass is built
        passing.apply(0, Pass((0, 1, 60)))
    assert info.value.code == "invalid_card"
    assert json.dumps(state_to_dict(passing), sort_keys=True) == before


def test_error_invalid_option_unknown_name() -> None:
    for name in ("player", "variants", "jd_bonus"):
        with pytest.raises(InvalidOption) as info:
            Options.from_dict({name: 1})
        assert info.value.code == "invalid_option"
        assert info.value.details["option"] == name
        assert name in info.value.message


def test_error_invalid_option_bad_value() -> None:
    bad_values = [
        ("players", 2),
        ("players", 11),
        ("players", "4"),
        ("players", True),
        ("target_score", 49),
        ("target_score", 100.0),
        ("variant", "spot_hearts"),
        ("variant", 1),
        ("omnibus_card", "QD"),
        ("tie_rule", "never"),
    ]
    for name, value in bad_values:
        with pytest.raises(InvalidOption) as info:
            Options.from_dict({name: value})
        assert info.value.code == "invalid_option"
        assert info.value.details["option"] == name, (name, value)
        assert name in info.value.message, (name, value)


def test_error_game_over() -> None:
    state = _game_over_state()
    assert state.to_act() == []
    assert all(list(state.legal_actions(s)) == [] for s in range(4))
    for seat in range(4):
        rejected(state, seat, Play(parse_card("2C")), "game_over")
        rejected(state, seat, Pass(tuple(parse_cards(["2C", "3C", "4C"]))), "game_over")
        rejected(state, seat, MoonChoice("add"), "game_over")


def test_error_invalid_seat() -> None:
    state = deal_state(POINTS_DEAL)
    for seat in (4, -1, 99, "0", None, True, 0.0):
        exc = rejected(state, seat, Play(parse_card("2C")), "invalid_seat")
        assert exc.details["seat"] == repr(seat)
    passing = _passing_state()
    rejected(passing, 4, passing.legal_actions(0)[0], "invalid_seat")
