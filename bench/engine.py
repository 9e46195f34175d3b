"""Engine speed: random hands per second (ours and, when installed, OpenSpiel's) on one core."""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from games.engine import GAME_OVER, PLAYING, Options, State, new_game

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "1.0"))


class OurHands:
    """Random hands on our engine: each hand is dealt by the engine from a fresh secret seed
    (a new game when the last one ended), then random legal actions, passes and moon choices
    included, until the hand is scored."""

    def __init__(self, options: Options, rng: random.Random) -> None:
        self.options, self.rng = options, rng
        self.state = new_game(options)

    def __call__(self) -> None:
        state, rng = self.state, self.rng
        if state.phase == GAME_OVER:
            state = self.state = new_game(self.options)
        hand = state.hand_no
        while state.hand_no == hand and state.phase != GAME_OVER:
            if state.phase == PLAYING:
                seat = state.turn
            else:
                seats = state.to_act()
                seat = seats[0] if len(seats) == 1 else rng.choice(seats)
            state.push(seat, rng.choice(state.legal_actions(seat)))


def openspiel_hand(game, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    """The same loop on OpenSpiel's C++ engine: chance nodes (the deal) then random legal actions."""
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice(state.chance_outcomes())[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))


def rate(fn: Callable[[], None]) -> float:
    """Calls per second of CPU time over SECONDS: CPU time, because this process is pinned to
    one core and other processes on a shared machine would otherwise count against it."""
    n = 0
    start = time.process_time()
    end = start + SECONDS
    while True:
        fn()
        n += 1
        now = time.process_time()
        if now >= end:
            return n / (now - start)


def sample_states(options: Options, count: int, rng: random.Random) -> list[State]:
    """States in the play phase, taken from random games, for timing legal-move generation."""
    out: list[State] = []
    while len(out) < count:
        state = new_game(options)
        while not state.history:
            seats = state.to_act()
            seat = rng.choice(seats)
            if state.phase == "playing":
                out.append(state.copy())
            state.push(seat, rng.choice(state.legal_actions(seat)))
    return out[:count]


def legal_actions_rate(states: list[State]) -> float:
    for s in states:
        s._legal = None  # time generation, not the per-state cache
    start = time.process_time()
    for s in states:
        s.legal_actions(s.turn)
    return len(states) / (time.process_time() - start)


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    rng = random.Random(2026)
    four, seven = Options.build(players=4), Options.build(players=7)
    try:
        import pyspiel  # type: ignore[import-not-found]

        game = pyspiel.load_game("hearts")
    except ImportError:
        game = None
    states = sample_states(four, 20_000, rng)
    results: dict[str, list[float]] = {}
    # Interleave the measurements so that machine noise hits every figure alike.
    for _ in range(ROUNDS):
        results.setdefault("random_hands_per_s_4p", []).append(rate(OurHands(four, rng)))
        results.setdefault("random_hands_per_s_7p", []).append(rate(OurHands(seven, rng)))
        results.setdefault("legal_actions_per_s", []).append(legal_actions_rate(states))
        if game is not None:
            results.setdefault("openspiel_random_hands_per_s_4p", []).append(
                rate(lambda: openspiel_hand(game, rng))
            )
    med = {k: statistics.median(v) for k, v in results.items()}
    for k, v in med.items():
        print(f"{k}: {v:.0f}")
    if game is not None:
        ours, theirs = results["random_hands_per_s_4p"], results["openspiel_random_hands_per_s_4p"]
        ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
        print(f"engine_vs_openspiel: {statistics.median(ratios):.2f}")
    else:
        print("openspiel: not installed (pip install -e '.[bench]')", file=sys.stderr)


if __name__ == "__main__":
    main()
