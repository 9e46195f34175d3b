"""Tables that play given hands of their seed (options first_hand and hands), and the duplicate maths
that bots.tournament and the tournaments service share."""

from __future__ import annotations

import math
import random

import pytest

from games.engine import GAME_OVER, Options, State, deal, duplicate, hand_seed, state_from_dict, state_to_dict


def _play_out(state: State, rng: random.Random) -> None:
    while state.phase != GAME_OVER:
        for seat in state.to_act():
            state.push(seat, rng.choice(list(state.legal_actions(seat))))


def test_a_table_of_one_hand_deals_that_hand_of_its_seed_scores_it_and_ends() -> None:
    options = Options.from_dict({"first_hand": 3, "hands": 1})
    state = State.new_game(options, "tournament-1-2")
    assert state.hand_no == 3 and state.dealer == 2  # hand 3's dealer and its pass (across)
    assert tuple(state.hands) == deal(options, hand_seed("tournament-1-2", 3))[0]
    _play_out(state, random.Random(1))
    assert state.phase == GAME_OVER and len(state.sheet) == 1 and state.sheet[0]["hand"] == 3
    low = min(state.totals)
    assert state.winners == tuple(s for s, t in enumerate(state.totals) if t == low)  # ties shared
    assert state_from_dict(state_to_dict(state)) == state


def test_the_hands_option_ends_the_game_after_that_many_hands_below_the_target() -> None:
    state = State.new_game(Options.from_dict({"hands": 2, "target_score": 10_000}), "two")
    _play_out(state, random.Random(2))
    assert [row["hand"] for row in state.sheet] == [1, 2]


def test_default_options_keep_their_dict_and_bad_values_name_the_option() -> None:
    assert "first_hand" not in Options().to_dict() and "hands" not in Options().to_dict()
    assert Options.from_dict({"first_hand": 2, "hands": 1}).to_dict()["first_hand"] == 2
    with pytest.raises(Exception, match="first_hand"):
        Options.from_dict({"first_hand": 0})


def test_rotations_put_every_entrant_in_every_seat() -> None:
    assert [duplicate.seating(2, 4, r) for r in range(4)] == [
        [0, 1, 1, 1],
        [1, 0, 1, 1],
        [1, 1, 0, 1],
        [1, 1, 1, 0],
    ]
    for entrants in (2, 3, 4):
        rows = [duplicate.seating(entrants, 4, r) for r in range(4)]
        for entrant in range(entrants):
            assert all(any(row[s] == entrant for row in rows) for s in range(4))
    four = [duplicate.seating(4, 4, r) for r in range(4)]
    assert all(sorted(row) == [0, 1, 2, 3] for row in four)  # each entrant once at every table


def test_relative_points_compare_the_same_cards_and_sum_to_zero_between_two() -> None:
    points = [[0, 13, 13, 0], [26, 0, 0, 0], [5, 5, 16, 0], [0, 0, 0, 26]]  # [rotation][seat]
    candidate, field = duplicate.relative_points(points, 2)
    # seat s held by the candidate in rotation s: the others' mean with those cards minus its own
    expected = [(26 + 5 + 0) / 3 - 0, (13 + 5 + 0) / 3 - 0, (13 + 0 + 0) / 3 - 16, (0 + 0 + 0) / 3 - 26]
    assert candidate == pytest.approx(sum(expected) / 4)
    assert field == pytest.approx(-candidate)
    mean, low, high = duplicate.interval([1.0, 3.0])  # stdev sqrt(2) over sqrt(2) deal sets
    assert mean == 2.0 and (low, high) == pytest.approx((2.0 - 1.96, 2.0 + 1.96))
    assert duplicate.interval([1.0])[1] == -math.inf
