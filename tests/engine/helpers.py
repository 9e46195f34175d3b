"""Small builders for engine tests: hand-made deals, playing card tokens in turn order, random play-outs."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable

import pytest

from games.engine import (
    GAME_OVER,
    MOON,
    PASSING,
    Action,
    EngineError,
    Event,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    card_name,
    parse_card,
    parse_cards,
    state_to_dict,
)
from games.engine.cards import names


def deal_state(
    hands: Iterable[str],
    *,
    widow: str = "",
    hand_number: int | None = None,
    totals: Iterable[int] | None = None,
    seed: str = "rules-test",
    **options: object,
) -> State:
    """A game whose current hand is `hands` (one space-separated string of tokens per seat).

    The default hand number is 4 for a classic 4-player table (a hold hand: play starts at once)
    and 1 otherwise."""
    hand_lists = [h.split() for h in hands]
    opts = Options.build(players=len(hand_lists), **options)
    if hand_number is None:
        hand_number = 4 if opts.players == 4 and opts.variant != "cancellation" else 1
    return State.from_deal(
        opts,
        hands=hand_lists,
        widow=widow.split(),
        hand_number=hand_number,
        totals=None if totals is None else list(totals),
        seed=seed,
    )


def play(state: State, tokens: str) -> tuple[State, list[Event]]:
    """Play space-separated card tokens, each by the seat whose turn it is; all events returned."""
    events: list[Event] = []
    for token in tokens.split():
        state, new = state.apply(state.turn, Play(parse_card(token)))
        events.extend(new)
    return state, events


def pass_cards(state: State, seat: int, tokens: str) -> tuple[State, list[Event]]:
    """Submit `seat`'s pass of three space-separated tokens."""
    return state.apply(seat, Pass(tuple(parse_cards(tokens.split()))))


def hand(state: State, seat: int) -> list[str]:
    """The canonical tokens a seat holds now."""
    return names(state.hands[seat])


def legal(state: State, seat: int | None = None) -> list[str]:
    """Tokens of the cards the seat on turn (or `seat`) may play now."""
    seat = state.turn if seat is None else seat
    return sorted(card_name(a.card) for a in state.legal_actions(seat))


def event_types(events: Iterable[Event]) -> list[str]:
    return [e.type for e in events]


def rejected(state: State, seat: object, action: Action, code: str) -> EngineError:
    """Apply an action that must fail with `code` and check that the state did not change."""
    before = json.dumps(state_to_dict(state), sort_keys=True)
    with pytest.raises(EngineError) as info:
        state.apply(seat, action)  # type: ignore[arg-type]
    assert info.value.code == code, info.value.as_dict()
    assert json.dumps(state_to_dict(state), sort_keys=True) == before
    return info.value


def random_action(state: State, seat: int, rng: random.Random) -> Action:
    choices = state.legal_actions(seat)
    return choices[rng.randrange(len(choices))]


def play_out_hand(state: State, rng: random.Random) -> State:
    """Play random legal actions until the current hand is scored (or the game is over)."""
    rows = len(state.sheet)
    while len(state.sheet) == rows and state.phase != GAME_OVER:
        if state.phase == PASSING:
            seat = state.to_act()[0]
        elif state.phase == MOON:
            seat = state.shooter
            state, _ = state.apply(seat, MoonChoice(rng.choice(["subtract", "add"])))
            continue
        else:
            seat = state.turn
        state, _ = state.apply(seat, random_action(state, seat, rng))
    return state
