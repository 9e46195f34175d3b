"""Bots' thinking time (bots/strategy.py `think_ms`): a fixed budget replays the same decision for
a seed; a thinking time bounds the wall time of `strong` and `expert` decisions instead."""

from __future__ import annotations

import random
import time

import pytest

from bots.strategy import decide
from games.engine import Options, State, action_from_dict, view

# A time budget is checked between worlds (or rounds of the pass search): one more world or deal
# may run past it. On a loaded two-core machine that is tens of milliseconds at most.
TOLERANCE_MS = 150


def _views(seed: str, count: int) -> list[dict[str, object]]:
    """Views of the seat to act with a real choice (a pass, or a play among several cards), from
    a game played by `basic` bots."""
    state = State.new_game(Options(), seed)
    rng = random.Random(seed)
    found: list[dict[str, object]] = []
    while len(found) < count and not state.is_over:
        for seat in state.to_act():
            v = view(state, seat, history=False)
            legal = v["legal_actions"]
            if legal["type"] == "pass" or (legal["type"] == "play" and len(set(legal["cards"])) > 1):
                found.append(v)
            state.push(seat, action_from_dict(decide(v, "basic", rng)))
    return found[:count]


@pytest.mark.parametrize("level", ["strong", "expert"])
def test_with_a_fixed_budget_the_same_seed_makes_the_same_decisions(
    level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTS_EXPERT_ITERATIONS", "200")
    views = _views("think-fixed", 8)
    first = [decide(v, level, random.Random(f"seed/{i}")) for i, v in enumerate(views)]
    again = [decide(v, level, random.Random(f"seed/{i}")) for i, v in enumerate(views)]
    assert first == again
    for v, action in zip(views, first, strict=True):
        legal = v["legal_actions"]
        if action["type"] == "play":
            assert action["card"] in legal["cards"]
        else:
            assert set(action["cards"]) <= set(legal["from"]) and len(set(action["cards"])) == 3


@pytest.mark.parametrize(("level", "think_ms"), [("strong", 60), ("expert", 60), ("expert", 300)])
def test_a_thinking_time_is_respected_within_a_tolerance(level: str, think_ms: int) -> None:
    for i, v in enumerate(_views("think-timed", 6)):
        start = time.monotonic()
        action = decide(v, level, random.Random(i), think_ms=think_ms)
        took_ms = (time.monotonic() - start) * 1000
        assert took_ms <= think_ms + TOLERANCE_MS, f"decision {i} took {took_ms:.0f} ms"
        legal = v["legal_actions"]
        if action["type"] == "play":
            assert action["card"] in legal["cards"]
        else:
            assert set(action["cards"]) <= set(legal["from"]) and len(set(action["cards"])) == 3


def test_a_longer_thinking_time_searches_more() -> None:
    """The time is used, not just bounded: the expert's search runs until its deadline."""
    v = next(v for v in _views("think-used", 6) if v["legal_actions"]["type"] == "play")
    start = time.monotonic()
    decide(v, "expert", random.Random(1), think_ms=250)
    took_ms = (time.monotonic() - start) * 1000
    assert took_ms >= 250 * 0.8
