"""A fair tournament between two bot levels: the same deals replayed with the candidate in every seat.

python -m bots.tournament --candidate basic --reference random --deal-sets 400 [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from multiprocessing.pool import Pool
from typing import Any

from bots import LEVELS, expert
from bots.strategy import decide
from games.engine import GAME_OVER, Options, State, action_from_dict, duplicate, view


@dataclass
class Result:
    candidate: str
    reference: str
    players: int
    variant: str
    deal_sets: int
    hands: int = 0
    candidate_points_per_hand: float = 0.0
    reference_points_per_hand: float = 0.0
    gap: float = 0.0  # reference minus candidate: positive when the candidate takes fewer points
    gap_ci95: tuple[float, float] = (0.0, 0.0)
    games: int = 0
    candidate_win_rate: float = 0.0
    fair_win_rate: float = 0.0
    candidate_ms_per_move: float = 0.0
    reference_ms_per_move: float = 0.0
    seconds: float = 0.0
    expert_iterations: int | None = None  # the expert's search budget, when expert plays
    per_deal_gaps: list[float] = field(default_factory=list, repr=False)


class Clock:
    """Time spent deciding, per level."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.moves: dict[str, int] = {}

    def decide(self, state: State, seat: int, level: str, rng: random.Random) -> Any:
        start = time.process_time()
        action = decide(view(state, seat, history=False), level, rng)
        self.seconds[level] = self.seconds.get(level, 0.0) + time.process_time() - start
        self.moves[level] = self.moves.get(level, 0) + 1
        return action_from_dict(action)

    def merge(self, timing: tuple[dict[str, float], dict[str, int]]) -> None:
        seconds, moves = timing
        for level, value in seconds.items():
            self.seconds[level] = self.seconds.get(level, 0.0) + value
        for level, count in moves.items():
            self.moves[level] = self.moves.get(level, 0) + count

    def ms_per_move(self, level: str) -> float:
        return 1000 * self.seconds.get(level, 0.0) / max(self.moves.get(level, 0), 1)


def play_hand(state: State, levels: Sequence[str], rng: random.Random, clock: Clock) -> list[int]:
    """Play the current hand to its score; the points each seat took."""
    hand = state.hand_no
    while state.phase != GAME_OVER and state.hand_no == hand:
        for seat in state.to_act():
            state.push(seat, clock.decide(state, seat, levels[seat], rng))
    return list(state.sheet[-1]["points"])


def dealt_hand(options: Options, seed: str, number: int) -> State:
    """Hand `number` of the game with this seed, on its own (so every pass direction comes up): the
    game a tournament table of the service plays (options `first_hand` and `hands`)."""
    return State.new_game(duplicate.hand_options(options, number), seed)


def process_pool(jobs: int) -> Pool:
    """Worker processes started fresh (spawn), never forked from this one: a caller may hold
    threads and open connections (`manage.py tournament` in Django, a test runner), and a forked
    child inherits them mid-use (seen: a child blocked on a Redis socket it shared with its parent)."""
    return multiprocessing.get_context("spawn").Pool(jobs)


def run(
    candidate: str,
    reference: str,
    *,
    deal_sets: int,
    players: int = 4,
    variant: str = "classic",
    games: int = 0,
    seed: int = 1,
    progress: bool = True,
    jobs: int = 1,
) -> Result:
    """Play the tournament; `jobs` > 1 spreads the deal sets and games over that many processes
    (each deal set and game has its own seeded rng, so the result is the serial one)."""
    options = Options.from_dict({"players": players, "variant": variant})
    result = Result(candidate, reference, players, variant, deal_sets)
    if "expert" in (candidate, reference):
        result.expert_iterations = expert.iterations()
    clock = Clock()
    started = time.perf_counter()
    cand_points: list[float] = []
    ref_points: list[float] = []
    pool = process_pool(jobs) if jobs > 1 else None
    try:
        deals = partial(_deal_set, candidate, reference, options.to_dict(), seed)
        outcomes = pool.imap(deals, range(deal_sets)) if pool else map(deals, range(deal_sets))
        for k, (cands, refs, gap, timing) in enumerate(outcomes):
            cand_points.extend(cands)
            ref_points.extend(refs)
            result.per_deal_gaps.append(gap)
            clock.merge(timing)
            if progress:
                _bar("deals", k + 1, deal_sets, started)
        wins = 0.0
        play = partial(_game, candidate, reference, options.to_dict(), seed)
        for g, (share, timing) in enumerate(
            pool.imap(play, range(games)) if pool else map(play, range(games))
        ):
            wins += share
            clock.merge(timing)
            if progress:
                _bar("games", g + 1, games, started)
    finally:
        if pool:
            pool.close()
            pool.join()
    if progress:
        sys.stderr.write("\n")
    gaps = result.per_deal_gaps
    result.hands = len(cand_points)
    result.candidate_points_per_hand = statistics.fmean(cand_points)
    result.reference_points_per_hand = statistics.fmean(ref_points)
    result.gap, low, high = duplicate.interval(gaps)
    result.gap_ci95 = (low, high)
    result.games = games
    result.candidate_win_rate = wins / games if games else 0.0
    result.fair_win_rate = 1 / players
    result.candidate_ms_per_move = clock.ms_per_move(candidate)
    result.reference_ms_per_move = clock.ms_per_move(reference)
    result.seconds = time.perf_counter() - started
    return result


Timing = tuple[dict[str, float], dict[str, int]]


def _deal_set(
    candidate: str, reference: str, table: dict[str, Any], seed: int, k: int
) -> tuple[list[int], list[int], float, Timing]:
    """Deal set k: the candidate's points, the reference seats' points, the gap, the timing.
    (The table's options travel as a dict: they go to worker processes.)"""
    options = Options.from_dict(table)
    players = options.players
    clock = Clock()
    game_seed = duplicate.deal_set_seed(seed, k)
    # Hand numbers cycle so that every pass direction (and the hold hand) is played.
    number = duplicate.deal_set_hand(options, k)
    cands: list[int] = []
    refs: list[int] = []
    table_points = []
    for rotation in range(players):  # the same deal, the candidate in each seat in turn
        who = duplicate.seating(2, players, rotation)
        levels = [(candidate, reference)[e] for e in who]
        rng = random.Random(duplicate.rotation_rng_seed(game_seed, rotation))
        points = play_hand(dealt_hand(options, game_seed, number), levels, rng, clock)
        cands.extend(p for s, p in enumerate(points) if who[s] == 0)
        refs.extend(p for s, p in enumerate(points) if who[s] != 0)
        table_points.append(points)
    gap = duplicate.relative_points(table_points, 2)[0]
    return cands, refs, gap, (clock.seconds, clock.moves)


def _game(candidate: str, reference: str, table: dict[str, Any], seed: int, g: int) -> tuple[float, Timing]:
    """Whole game g to the target, the candidate in seat g % players: its share of the win."""
    options = Options.from_dict(table)
    players = options.players
    clock = Clock()
    state = State.new_game(options, f"tournament-game-{seed}-{g}")
    levels = [reference] * players
    levels[g % players] = candidate
    rng = random.Random(f"game/{seed}/{g}")
    while state.phase != GAME_OVER:
        play_hand(state, levels, rng, clock)
    share = 1 / len(state.winners) if g % players in state.winners else 0.0
    return share, (clock.seconds, clock.moves)


def _bar(label: str, done: int, total: int, started: float) -> None:
    width = 30
    filled = width * done // max(total, 1)
    elapsed = time.perf_counter() - started
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {elapsed:.1f}s")
    sys.stderr.flush()


def report(result: Result) -> str:
    low, high = result.gap_ci95
    return "\n".join(
        [
            f"candidate: {result.candidate}",
            f"reference: {result.reference}",
            f"hands: {result.hands}",
            f"candidate_points_per_hand: {result.candidate_points_per_hand:.3f}",
            f"reference_points_per_hand: {result.reference_points_per_hand:.3f}",
            f"gap_points_per_hand: {result.gap:.3f}",
            f"gap_ci95_low: {low:.3f}",
            f"gap_ci95_high: {high:.3f}",
            f"games: {result.games}",
            f"candidate_win_rate: {result.candidate_win_rate:.3f} (fair share {result.fair_win_rate:.3f})",
            f"candidate_ms_per_move: {result.candidate_ms_per_move:.3f}",
            f"reference_ms_per_move: {result.reference_ms_per_move:.3f}",
            f"seconds: {result.seconds:.1f}",
            *([f"expert_iterations: {result.expert_iterations}"] if result.expert_iterations else []),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidate", choices=LEVELS, required=True)
    parser.add_argument("--reference", choices=LEVELS, required=True)
    parser.add_argument("--deal-sets", type=int, default=400, help="Deals; each is played once per seat")
    parser.add_argument("--games", type=int, default=0, help="Whole games to 100 for the win rate")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--variant", default="classic")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="Processes; the result is the serial one")
    parser.add_argument("--json", help="Also write the result to this file")
    parser.add_argument("--quiet", action="store_true", help="No progress bar")
    args = parser.parse_args(argv)
    result = run(
        args.candidate,
        args.reference,
        deal_sets=args.deal_sets,
        players=args.players,
        variant=args.variant,
        games=args.games,
        seed=args.seed,
        progress=not args.quiet,
        jobs=args.jobs,
    )
    print(report(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(asdict(result), out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
