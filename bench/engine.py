"""Engine speed on one core: random hands per second, ours (installed and pure source) and OpenSpiel's."""

from __future__ import annotations

import importlib.util
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "1.0"))
SOURCE = Path(__file__).resolve().parent.parent / "games" / "engine"


def installed_engine() -> ModuleType:
    """The engine as installed: compiled by mypyc under `make bench`, plain source in the dev venv."""
    import games.engine

    return games.engine


def pure_engine() -> ModuleType:
    """The engine's source loaded as plain Python under another name, so that one process
    can time the interpreted and the installed engine side by side."""
    spec = importlib.util.spec_from_file_location(
        "pure_engine", SOURCE / "__init__.py", submodule_search_locations=[str(SOURCE)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pure_engine"] = module
    spec.loader.exec_module(module)
    return module


def is_compiled(engine: ModuleType) -> bool:
    return not str(sys.modules[engine.__name__ + ".state"].__file__).endswith(".py")


class RandomHands:
    """Random hands on one of our engines: each hand is dealt by the engine from a fresh secret
    seed (a new game when the last one ended), then random legal actions, passes and moon
    choices included, until the hand is scored. Actions go through `push`, which changes the
    state in place like OpenSpiel's `apply_action`, and still returns the events."""

    def __init__(self, engine: ModuleType, players: int, rng: random.Random) -> None:
        self.engine, self.rng = engine, rng
        self.options = engine.Options.build(players=players)
        self.state = engine.new_game(self.options)

    def __call__(self) -> None:
        game_over, playing = self.engine.GAME_OVER, self.engine.PLAYING
        state, rng = self.state, self.rng
        if state.phase == game_over:
            state = self.state = self.engine.new_game(self.options)
        hand = state.hand_no
        while state.hand_no == hand and state.phase != game_over:
            if state.phase == playing:
                seat = state.turn
            else:
                seats = state.to_act()
                seat = seats[0] if len(seats) == 1 else rng.choice(seats)
            state.push(seat, rng.choice(state.legal_actions(seat)))


def openspiel_hand(game: Any, rng: random.Random) -> None:
    """The same loop on OpenSpiel's C++ engine: a new hand (its chance nodes are the deal and the
    pass direction), then random legal actions, passes included, until the hand is over."""
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


def sample_states(engine: ModuleType, count: int, rng: random.Random) -> list[Any]:
    """Copies of play-phase states from random games, for timing legal-move generation."""
    options = engine.Options.build(players=4)
    out: list[Any] = []
    state = engine.new_game(options)
    while len(out) < count:
        if state.phase == engine.GAME_OVER:
            state = engine.new_game(options)
        seats = state.to_act()
        seat = rng.choice(seats)
        if state.phase == engine.PLAYING:
            out.append(state.copy())
        state.push(seat, rng.choice(state.legal_actions(seat)))
    return out


def legal_actions_rate(states: list[Any]) -> float:
    for s in states:
        s._legal = None  # time generation, not the per-state cache
    start = time.process_time()
    for s in states:
        s.legal_actions(s.turn)
    return len(states) / (time.process_time() - start)


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    rng = random.Random(2026)
    ours, pure = installed_engine(), pure_engine()
    try:
        import pyspiel  # type: ignore[import-not-found]

        game = pyspiel.load_game("hearts")
    except ImportError:
        game = None
    runs: dict[str, Callable[[], None]] = {
        "random_hands_per_s_4p": RandomHands(ours, 4, rng),
        "random_hands_per_s_7p": RandomHands(ours, 7, rng),
        "pure_random_hands_per_s_4p": RandomHands(pure, 4, rng),
    }
    if game is not None:
        runs["openspiel_random_hands_per_s_4p"] = lambda: openspiel_hand(game, rng)
    states = sample_states(ours, 20_000, rng)
    results: dict[str, list[float]] = {name: [] for name in [*runs, "legal_actions_per_s"]}
    # Interleave the measurements so that machine noise hits every figure alike.
    for _ in range(ROUNDS):
        for name, fn in runs.items():
            results[name].append(rate(fn))
        results["legal_actions_per_s"].append(legal_actions_rate(states))
    print(f"engine_compiled: {int(is_compiled(ours))}")
    for name, values in results.items():
        print(f"{name}: {statistics.median(values):.0f}")
    if game is not None:
        theirs = results["openspiel_random_hands_per_s_4p"]
        pairs = (
            ("engine_vs_openspiel", "random_hands_per_s_4p"),
            ("pure_engine_vs_openspiel", "pure_random_hands_per_s_4p"),
        )
        for label, key in pairs:
            ratios = [o / t for o, t in zip(results[key], theirs, strict=True)]
            print(f"{label}: {statistics.median(ratios):.2f}")
    else:
        print("openspiel: not installed (pip install -e '.[bench]')", file=sys.stderr)


if __name__ == "__main__":
    main()
