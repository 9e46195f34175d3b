"""Our bots against OpenSpiel's information-set MCTS on its C++ Hearts, both engines in lockstep.

An outside yardstick for the bots (issue 19): each deal is played four times, our bot in each seat
in turn deciding from our engine's view, `pyspiel.ISMCTSBot` (random-rollout evaluator) in the
other three deciding from OpenSpiel's state of the same hand. Every action goes to both engines and
their legal sets are compared at every step. The gap is the one of `python -m bots.tournament`.

    python bench/vs_openspiel.py --candidate strong --ismcts-sims 600 --deal-sets 400 --jobs 2
    python bench/vs_openspiel.py --candidate expert --match-time 1 --deal-sets 100 --jobs 2

A run too long for one sitting is played in parts: each part is a range of deal sets of the same
seed and simulations (`--first-deal K --deal-sets N`, `--json`), and `--combine` joins the parts'
files into the run's figures, as if it had been played at once (deal set k is the same deal in any
part). `--paired` compares two runs (or combined runs) deal set by deal set.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from bots import LEVELS
from bots.strategy import decide
from bots.tournament import _bar, dealt_hand, process_pool
from games.engine import (
    ADD,
    MOON,
    PASSING,
    PLAYING,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    action_from_dict,
    duplicate,
    view,
)
from games.engine.cards import NAMES, RANKS, bits
from games.engine.deal import pass_offset

try:
    import pyspiel  # type: ignore[import-not-found]
except ImportError:  # the benchmark says so and prints what it can
    pyspiel = None

PLAYERS = 4  # OpenSpiel's Hearts is the 4-player classic game with passing
HAND_POINTS = 26  # OpenSpiel's return for a seat is 26 minus its points (the shooter's is 26)
PASS_CARDS = 3
SPIEL_SUITS = "CDHS"  # OpenSpiel's card action is rank * 4 + suit, in this suit order
# Ours to OpenSpiel's card numbering and back (ours is suit * 13 + rank, suits CDSH).
TO_SPIEL = tuple(RANKS.index(NAMES[c][0]) * 4 + SPIEL_SUITS.index(NAMES[c][1]) for c in range(52))
FROM_SPIEL = tuple(TO_SPIEL.index(a) for a in range(52))
CALIBRATION_SIMS = 400  # the first search size timed to find the simulations that match a CPU time


@dataclass
class Timing:
    """CPU seconds spent deciding and cards decided (a passed card counts as a card), per side."""

    ours_seconds: float = 0.0
    ours_cards: int = 0
    ismcts_seconds: float = 0.0
    ismcts_cards: int = 0

    def add(self, other: Timing) -> None:
        self.ours_seconds += other.ours_seconds
        self.ours_cards += other.ours_cards
        self.ismcts_seconds += other.ismcts_seconds
        self.ismcts_cards += other.ismcts_cards

    def ours_ms(self) -> float:
        return 1000 * self.ours_seconds / max(self.ours_cards, 1)

    def ismcts_ms(self) -> float:
        return 1000 * self.ismcts_seconds / max(self.ismcts_cards, 1)


@dataclass
class Result:
    candidate: str
    ismcts_sims: int
    uct_c: float
    deal_sets: int
    seed: int
    hands: int = 0
    candidate_points_per_hand: float = 0.0
    ismcts_points_per_hand: float = 0.0
    gap: float = 0.0  # ISMCTS seats' mean minus ours: positive when our bot takes fewer points
    gap_ci95: tuple[float, float] = (0.0, 0.0)
    candidate_ms_per_card: float = 0.0
    ismcts_ms_per_card: float = 0.0
    time_ratio: float = 0.0  # ISMCTS's CPU time per card over ours
    moons: int = 0
    seconds: float = 0.0
    calibration: dict[str, float] = field(default_factory=dict)
    first_deal: int = 0  # the deal sets played are first_deal .. first_deal + deal_sets - 1
    timing: dict[str, float] = field(default_factory=dict)  # the sums behind the ms per card
    per_deal_gaps: list[float] = field(default_factory=list, repr=False)


def spiel_deal(game: Any, offset: int, hands: Sequence[int]) -> Any:
    """OpenSpiel's state of one of our deals. Its chance nodes are the pass direction (0 none,
    1 left, 2 across, 3 right: the same seats-to-the-receiver as our `pass_offset`) and then the
    52 cards, the k-th dealt card going to player k % 4; its players are our seats."""
    state = game.new_initial_state()
    state.apply_action(offset)
    cards = [list(bits(h)) for h in hands]
    for k in range(52):
        state.apply_action(TO_SPIEL[cards[k % PLAYERS][k // PLAYERS]])
    return state


def agreed_seat(spiel: Any, state: State, chosen: Sequence[Sequence[int]]) -> int:
    """The seat OpenSpiel asks to act next, once both engines agree on it and on what it may do:
    while passing (OpenSpiel takes the passes one card at a time, seat 0 first; ours takes each
    seat's three at once, in any order), the cards it holds and has not chosen yet; while playing,
    whose turn it is and the cards it may play. `chosen` holds each seat's pass cards so far."""
    p: int = spiel.current_player()
    theirs = sorted(spiel.legal_actions())
    if state.phase == PASSING:
        left = state.hands[p] & ~sum(1 << c for c in chosen[p])
        assert state.legal_actions(p), f"seat {p} may not pass in our engine"
        assert theirs == sorted(TO_SPIEL[c] for c in bits(left)), f"pass sets differ at seat {p}"
    else:
        assert state.phase == PLAYING and state.turn == p, f"turns differ: ours {state.turn}, {p}"
        ours = sorted(TO_SPIEL[a.card] for a in state.legal_actions(p))  # type: ignore[attr-defined]
        assert theirs == ours, f"legal sets differ at seat {p}: {theirs} vs {ours}"
    return p


def apply_card(spiel: Any, state: State, p: int, card: int, chosen: list[list[int]]) -> None:
    """Seat p's card (ours) to both engines: a play at once, a pass card to OpenSpiel at once and
    to ours as the seat's pass when it is the third (kept in `chosen` until then)."""
    spiel.apply_action(TO_SPIEL[card])
    if state.phase == PASSING:
        chosen[p].append(card)
        if len(chosen[p]) == PASS_CARDS:
            state.push(p, Pass(chosen[p]))
    else:
        state.push(p, Play(card))


class Ismcts:
    """The ISMCTS seats of one hand: one `pyspiel.ISMCTSBot` (it builds a new tree each step)."""

    def __init__(self, game: Any, sims: int, uct_c: float, seed: int) -> None:
        self.game = game
        evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
        self.bot = pyspiel.ISMCTSBot(
            seed, evaluator, uct_c, sims, -1, pyspiel.ISMCTSFinalPolicyType.MAX_VISIT_COUNT, False, False
        )

    def step(
        self, spiel: Any, passing: bool, offset: int, dealt: Sequence[int], passed: Sequence[int]
    ) -> tuple[int, float]:
        """Seat `spiel.current_player()`'s action, and the CPU seconds its search took.

        OpenSpiel 2.0.2's resampler treats the cards already passed to a seat as known while
        passing is under way, and `step` then crashes. A pass step is therefore decided on a
        copy of the deal rotated so that the deciding seat is player 0 (it passes first, so
        nothing has been passed to it yet), holding its own earlier pass cards of this hand; the
        information-state string of that copy is asserted to be the seat's own."""
        seat = spiel.current_player()
        state = spiel
        if seat and passing:
            state = spiel_deal(self.game, offset, [dealt[(s + seat) % PLAYERS] for s in range(PLAYERS)])
            for card in passed:
                state.apply_action(TO_SPIEL[card])
            assert state.information_state_string(0) == spiel.information_state_string(seat)
        start = time.process_time()
        action = self.bot.step(state)
        return action, time.process_time() - start


def play_hand(
    game: Any, ismcts: Ismcts, state: State, seat: int, level: str, rng: random.Random, timing: Timing
) -> tuple[list[int], bool]:
    """Play the current hand of `state` with our bot in `seat`, ISMCTS elsewhere, both engines
    in lockstep; the points each seat took and whether the moon was shot."""
    offset = pass_offset(state.options, state.hand_no)
    dealt = list(state.hands)
    spiel = spiel_deal(game, offset, dealt)
    chosen: list[list[int]] = [[] for _ in range(PLAYERS)]  # each seat's pass cards so far
    while not spiel.is_terminal():
        p = agreed_seat(spiel, state, chosen)
        if p == seat:
            start = time.process_time()
            action = action_from_dict(decide(view(state, p, history=False), level, rng))
            timing.ours_seconds += time.process_time() - start
            cards = list(action.cards) if isinstance(action, Pass) else [action.card]  # type: ignore[attr-defined]
            timing.ours_cards += len(cards)
            for card in cards:
                apply_card(spiel, state, p, card, chosen)
            continue
        move, seconds = ismcts.step(spiel, state.phase == PASSING, offset, dealt, chosen[p])
        timing.ismcts_seconds += seconds
        timing.ismcts_cards += 1
        apply_card(spiel, state, p, FROM_SPIEL[move], chosen)
    returns = [round(r) for r in spiel.returns()]
    moon = state.phase == MOON
    if moon:  # OpenSpiel scores a moon as "add": the shooter 0, everyone else 26
        shooter = state.shooter
        assert returns == [HAND_POINTS if s == shooter else 0 for s in range(PLAYERS)], returns
        if shooter == seat:
            choice = action_from_dict(decide(view(state, seat, history=False), level, rng))
        else:
            choice = MoonChoice(ADD)
        state.push(shooter, choice)
    points = list(state.sheet[-1]["points"])
    if not moon:
        assert returns == [HAND_POINTS - p for p in points], (returns, points)
    return points, moon


def deal_set(
    level: str, sims: int, uct_c: float, seed: int, k: int
) -> tuple[list[int], list[int], float, Timing, int]:
    """Deal set k: our points in each seat, the ISMCTS seats' points, the gap, the timing, moons.
    The deals and our bot's rngs are those of `bots.tournament` under another seed prefix."""
    game = pyspiel.load_game("hearts")
    options = Options.build(players=PLAYERS)
    game_seed = f"vs-openspiel-{seed}-{k}"
    number = duplicate.deal_set_hand(options, k)  # every pass direction and the hold hand come up
    timing = Timing()
    ours: list[int] = []
    theirs: list[int] = []
    table_points = []
    moons = 0
    for seat in range(PLAYERS):
        ismcts = Ismcts(game, sims, uct_c, (seed * 100_003 + k * 4 + seat) % 2**31)
        rng = random.Random(f"{game_seed}/{seat}")
        state = dealt_hand(options, game_seed, number)
        points, moon = play_hand(game, ismcts, state, seat, level, rng, timing)
        moons += moon
        others = [p for s, p in enumerate(points) if s != seat]
        ours.append(points[seat])
        theirs.extend(others)
        table_points.append(points)
    # bots.tournament's gap: ISMCTS's points with the same cards minus ours, over the seats
    return ours, theirs, duplicate.relative_points(table_points, 2)[0], timing, moons


def calibrate(level: str, sims: int, deal_sets: int, seed: int, uct_c: float, jobs: int) -> Timing:
    """Our bot's and ISMCTS's CPU time over `deal_sets` deal sets of their own (seed -1 - seed,
    never the measured deals), ISMCTS at `sims` simulations."""
    timing = Timing()
    for *_, t, _moons in _map(partial(deal_set, level, sims, uct_c, -1 - seed), range(deal_sets), jobs):
        timing.add(t)
    return timing


def matched_sims(
    level: str, factor: float, deal_sets: int, seed: int, uct_c: float, jobs: int
) -> tuple[int, dict[str, float]]:
    """The simulations that give ISMCTS `factor` times our bot's CPU time per card. Two rounds:
    time per simulation at CALIBRATION_SIMS gives a first count, and the time measured at that
    count scales it once more (a search's time is not quite proportional to its size)."""
    first = calibrate(level, CALIBRATION_SIMS, deal_sets, seed, uct_c, jobs)
    sims = max(1, round(factor * first.ours_ms() / first.ismcts_ms() * CALIBRATION_SIMS))
    second = calibrate(level, sims, deal_sets, seed, uct_c, jobs)
    ours_ms = (first.ours_seconds + second.ours_seconds) * 1000 / (first.ours_cards + second.ours_cards)
    final = max(1, round(factor * ours_ms / second.ismcts_ms() * sims))
    return final, {
        "candidate_ms_per_card": ours_ms,
        "ismcts_ms_per_card_at_400": first.ismcts_ms(),
        "first_sims": sims,
        "ismcts_ms_per_card_at_first_sims": second.ismcts_ms(),
    }


def _map(fn: Any, items: range, jobs: int) -> list[Any]:
    if jobs <= 1:
        return list(map(fn, items))
    with process_pool(jobs) as pool:
        return list(pool.imap(fn, items))


def run(
    level: str,
    *,
    deal_sets: int,
    sims: int | None,
    match_time: float | None,
    uct_c: float,
    seed: int,
    jobs: int,
    calibration_deals: int,
    progress: bool,
    first_deal: int = 0,
) -> Result:
    """The tournament over deal sets first_deal .. first_deal + deal_sets - 1; with `match_time`
    the simulations are set so that ISMCTS's CPU time per card is `match_time` times our bot's,
    both measured on calibration deals first."""
    started = time.perf_counter()
    calibration: dict[str, float] = {}
    if match_time is not None:
        sims, calibration = matched_sims(level, match_time, calibration_deals, seed, uct_c, jobs)
    assert sims is not None
    result = Result(level, sims, uct_c, deal_sets, seed, calibration=calibration, first_deal=first_deal)
    ours: list[float] = []
    theirs: list[float] = []
    timing = Timing()
    pool = process_pool(jobs) if jobs > 1 else None
    try:
        play = partial(deal_set, level, sims, uct_c, seed)
        deals = range(first_deal, first_deal + deal_sets)
        outcomes = pool.imap(play, deals) if pool else map(play, deals)
        for k, (mine, others, gap, t, moons) in enumerate(outcomes):
            ours.extend(mine)
            theirs.extend(others)
            result.per_deal_gaps.append(gap)
            result.moons += moons
            timing.add(t)
            if progress:
                _bar("deals", k + 1, deal_sets, started)
    finally:
        if pool:
            pool.close()
            pool.join()
    if progress:
        sys.stderr.write("\n")
    gaps = result.per_deal_gaps
    result.hands = len(ours)
    result.candidate_points_per_hand = statistics.fmean(ours)
    result.ismcts_points_per_hand = statistics.fmean(theirs)
    result.gap, low, high = duplicate.interval(gaps)
    result.gap_ci95 = (low, high)
    result.timing = asdict(timing)
    _times(result, timing)
    result.seconds = time.perf_counter() - started
    return result


def _times(result: Result, timing: Timing) -> None:
    result.candidate_ms_per_card = timing.ours_ms()
    result.ismcts_ms_per_card = timing.ismcts_ms()
    result.time_ratio = result.ismcts_ms_per_card / max(result.candidate_ms_per_card, 1e-9)


def _load(path: str) -> dict[str, Any]:
    with open(path) as f:
        loaded: dict[str, Any] = json.load(f)
    return loaded


def _gaps_by_deal(run: dict[str, Any]) -> dict[int, float]:
    """Deal set number to gap (files written before parts existed start at deal set 0)."""
    first = run.get("first_deal", 0)
    return {first + i: gap for i, gap in enumerate(run["per_deal_gaps"])}


def combine(paths: Sequence[str]) -> Result:
    """One run's figures from its parts: the same candidate, simulations, exploration and seed,
    deal sets that neither overlap nor leave a hole. Points per hand are weighted by each part's
    hands, CPU times summed, the gap's interval taken over all the deal sets."""
    parts = sorted((_load(p) for p in paths), key=lambda r: r.get("first_deal", 0))
    keys = ("candidate", "ismcts_sims", "uct_c", "seed")
    for part in parts[1:]:
        differ = [k for k in keys if part[k] != parts[0][k]]
        if differ:
            raise SystemExit(f"the parts differ in {', '.join(differ)}: not one run")
    gaps: dict[int, float] = {}
    for part in parts:
        mine = _gaps_by_deal(part)
        if not part.get("timing"):
            raise SystemExit("a part has no CPU-time sums (written before --combine existed)")
        if gaps.keys() & mine.keys():
            raise SystemExit(f"deal sets played twice: {sorted(gaps.keys() & mine.keys())[:5]}")
        gaps.update(mine)
    first, last = min(gaps), max(gaps)
    missing = sorted(set(range(first, last + 1)) - gaps.keys())
    if missing:
        raise SystemExit(f"deal sets missing between the parts: {missing[:5]}")
    head = parts[0]
    result = Result(head["candidate"], head["ismcts_sims"], head["uct_c"], len(gaps), head["seed"])
    result.first_deal = first
    result.per_deal_gaps = [gaps[k] for k in range(first, last + 1)]
    result.calibration = next((p["calibration"] for p in parts if p.get("calibration")), {})
    result.hands = sum(p["hands"] for p in parts)
    for side in ("candidate_points_per_hand", "ismcts_points_per_hand"):
        setattr(result, side, sum(p[side] * p["hands"] for p in parts) / result.hands)
    result.gap, low, high = duplicate.interval(result.per_deal_gaps)
    result.gap_ci95 = (low, high)
    timing = Timing()
    for part in parts:
        timing.add(Timing(**part["timing"]))
    result.timing = asdict(timing)
    _times(result, timing)
    result.moons = sum(p["moons"] for p in parts)
    result.seconds = sum(p["seconds"] for p in parts)
    return result


def report(result: Result) -> str:
    low, high = result.gap_ci95
    lines = [
        "openspiel_installed: 1",
        f"candidate: {result.candidate}",
        f"ismcts_sims: {result.ismcts_sims}",
        f"ismcts_uct_c: {result.uct_c}",
        f"seed: {result.seed}",
        f"first_deal: {result.first_deal}",
        f"deal_sets: {result.deal_sets}",
        f"hands: {result.hands}",
        f"candidate_points_per_hand: {result.candidate_points_per_hand:.3f}",
        f"ismcts_points_per_hand: {result.ismcts_points_per_hand:.3f}",
        f"gap_points_per_hand: {result.gap:.3f}",
        f"gap_ci95_low: {low:.3f}",
        f"gap_ci95_high: {high:.3f}",
        f"candidate_ms_per_card: {result.candidate_ms_per_card:.3f}",
        f"ismcts_ms_per_card: {result.ismcts_ms_per_card:.3f}",
        f"ismcts_vs_candidate_time: {result.time_ratio:.2f}",
        f"moons: {result.moons}",
        f"seconds: {result.seconds:.1f}",
    ]
    for name, value in result.calibration.items():
        lines.append(f"calibration_{name}: {value:.3f}")
    return "\n".join(lines)


def paired(first: str, second: str) -> str:
    """The first run's gap minus the second's over the deal sets both played (same seed: deal set
    k is the same deal in both), with a 95% interval over those deal sets: comparing two of our
    bots against ISMCTS on the same deals cancels the deals' luck."""
    runs = [_load(first), _load(second)]
    if runs[0]["seed"] != runs[1]["seed"]:
        raise SystemExit(f"different seeds ({runs[0]['seed']}, {runs[1]['seed']}): not the same deals")
    a, b = (_gaps_by_deal(r) for r in runs)
    diffs = [a[k] - b[k] for k in sorted(a.keys() & b.keys())]
    if not diffs:
        raise SystemExit("the runs have no deal set in common")
    mean, low, high = duplicate.interval(diffs)
    return "\n".join(
        [
            f"paired_deal_sets: {len(diffs)}",
            f"paired_gap_difference: {mean:.3f}",
            f"paired_ci95_low: {low:.3f}",
            f"paired_ci95_high: {high:.3f}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidate", choices=[lv for lv in LEVELS if lv != "random"], default="strong")
    parser.add_argument(
        "--deal-sets",
        type=int,
        default=int(os.environ.get("BENCH_DEALS", "400")),
        help="Deals; each is played once per seat (4 hands). Default BENCH_DEALS or 400",
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--ismcts-sims", type=int, default=600, help="Simulations per ISMCTS step")
    budget.add_argument(
        "--match-time",
        type=float,
        metavar="FACTOR",
        help="Set the simulations so that ISMCTS's CPU time per card is FACTOR times ours (calibrated)",
    )
    parser.add_argument(
        "--calibration-deals", type=int, default=int(os.environ.get("BENCH_CALIBRATION", "6"))
    )
    parser.add_argument("--uct-c", type=float, default=2.0, help="ISMCTS's exploration constant")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--first-deal", type=int, default=0, help="Play deal sets from this one on (a part of a run)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="Processes")
    parser.add_argument("--json", help="Also write the result to this file")
    parser.add_argument("--quiet", action="store_true", help="No progress bar")
    parser.add_argument(
        "--paired",
        nargs=2,
        metavar="JSON",
        help="Print the first run's gap minus the second's on their common deal sets, and stop",
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="JSON",
        help="Print one run's figures from the files of its parts (and write --json), and stop",
    )
    args = parser.parse_args(argv)
    if args.paired:
        print(paired(*args.paired))
        return 0
    if args.combine:
        combined = combine(args.combine)
        print(report(combined))
        _write(args.json, combined)
        return 0
    if pyspiel is None:
        print("openspiel_installed: 0")
        print("openspiel: not installed (pip install -e '.[bench]')", file=sys.stderr)
        return 0
    result = run(
        args.candidate,
        deal_sets=args.deal_sets,
        sims=None if args.match_time is not None else args.ismcts_sims,
        match_time=args.match_time,
        uct_c=args.uct_c,
        seed=args.seed,
        jobs=args.jobs,
        calibration_deals=args.calibration_deals,
        progress=not args.quiet,
        first_deal=args.first_deal,
    )
    print(report(result))
    _write(args.json, result)
    return 0


def _write(path: str | None, result: Result) -> None:
    if path:
        with open(path, "w") as out:
            json.dump(asdict(result), out, indent=2)


if __name__ == "__main__":
    raise SystemExit(main())
