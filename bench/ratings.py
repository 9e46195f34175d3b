"""Rating systems for free-for-all Hearts compared: how well and how fast each ranks known strengths."""

from __future__ import annotations

import math
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

GAMES = int(os.environ.get("BENCH_GAMES", "4000"))  # simulated 4-player games
PLAYERS = 200  # the simulated population, skills drawn from N(0, 1)
NOISE = 1.0  # one game's performance: skill + N(0, NOISE); Hearts has a lot of luck
BOT_GAMES = max(1, GAMES // 10)  # real engine games to 100, two random and two basic bots
SEED = 20261202


@dataclass
class Candidate:
    """A rating system behind one interface: new rating, one game's update (teams of one, ranked
    1 = first), and the conservative score that a leaderboard sorts by."""

    name: str
    new: Callable[[], Any]
    rate: Callable[[list[Any], list[int]], list[Any]]
    mean: Callable[[Any], float]
    score: Callable[[Any], float]


def openskill_candidate(name: str, cls: Any) -> Candidate:
    model = cls()

    def rate(ratings: list[Any], ranks: list[int]) -> list[Any]:
        return [team[0] for team in model.rate([[r] for r in ratings], ranks=[float(r) for r in ranks])]

    return Candidate(name, model.rating, rate, lambda r: float(r.mu), lambda r: float(r.mu - 3 * r.sigma))


def candidates() -> list[Candidate]:
    from openskill.models import BradleyTerryFull, PlackettLuce, ThurstoneMostellerFull

    found = [
        openskill_candidate("plackett_luce", PlackettLuce),
        openskill_candidate("bradley_terry_full", BradleyTerryFull),
        openskill_candidate("thurstone_mosteller_full", ThurstoneMostellerFull),
    ]
    try:
        import trueskill
    except ImportError:  # the bench extra installs it; without it the other figures still print
        print("trueskill: not installed (pip install trueskill)")
        return found
    env = trueskill.TrueSkill(draw_probability=0.0)

    def rate(ratings: list[Any], ranks: list[int]) -> list[Any]:
        return [team[0] for team in env.rate([(r,) for r in ratings], ranks=ranks)]

    found.append(
        Candidate("trueskill", env.create_rating, rate, lambda r: r.mu, lambda r: r.mu - 3 * r.sigma)
    )
    return found


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Rank agreement of two orders of the same players: 1 the same, 0 unrelated, -1 reversed."""
    agree = disagree = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            sign = (xs[i] - xs[j]) * (ys[i] - ys[j])
            agree += sign > 0
            disagree += sign < 0
    pairs = agree + disagree
    return (agree - disagree) / pairs if pairs else 0.0


def simulated_games(rng: random.Random) -> tuple[list[float], list[tuple[list[int], list[int]]]]:
    """Players of known skill, and games of four of them: each game's places by performance."""
    skills = [rng.gauss(0.0, 1.0) for _ in range(PLAYERS)]
    games = []
    for _ in range(GAMES):
        seats = rng.sample(range(PLAYERS), 4)
        performance = [skills[p] + rng.gauss(0.0, NOISE) for p in seats]
        order = sorted(range(4), key=lambda i: -performance[i])
        ranks = [0] * 4
        for place, i in enumerate(order, start=1):
            ranks[i] = place
        games.append((seats, ranks))
    return skills, games


def measure(
    candidate: Candidate, skills: list[float], games: list[tuple[list[int], list[int]]]
) -> dict[str, float]:
    """Ranking quality after every game, winner prediction on the last quarter, time per update."""
    ratings = [candidate.new() for _ in skills]
    held_out = len(games) - len(games) // 4
    predicted = correct = 0
    spent = 0.0
    for n, (seats, ranks) in enumerate(games):
        before = [ratings[p] for p in seats]
        if n >= held_out:
            favourite = max(range(4), key=lambda i: candidate.mean(before[i]))
            predicted += 1
            correct += ranks[favourite] == 1
        started = time.perf_counter()
        after = candidate.rate(before, ranks)
        spent += time.perf_counter() - started
        for p, rating in zip(seats, after, strict=True):
            ratings[p] = rating
    played = [p for p in range(len(skills)) if any(p in seats for seats, _ in games)]
    tau = kendall_tau([skills[p] for p in played], [candidate.score(ratings[p]) for p in played])
    return {
        "kendall_tau": tau,
        "winner_accuracy": correct / predicted if predicted else 0.0,
        "us_per_update": spent / max(len(games), 1) * 1e6,
    }


def bot_gap(games: int) -> tuple[float, float]:
    """Real engine games of two random and two basic bots rated with Plackett-Luce: the mean of
    the basic bots' mu less the random bots' (and the basic bots' share of wins)."""
    from openskill.models import PlackettLuce

    from bots.strategy import decide
    from games.engine import GAME_OVER, Options, State, action_from_dict, view

    model = PlackettLuce()
    ratings = {name: model.rating() for name in ("random_a", "random_b", "basic_a", "basic_b")}
    basic_wins = 0
    for n in range(games):
        names = list(ratings)
        random.Random(SEED + n).shuffle(names)
        rng = random.Random(SEED - n)
        state = State.new_game(Options.from_dict({"players": 4, "target_score": 100}), f"bench-ratings-{n}")
        while state.phase != GAME_OVER:
            seat = state.to_act()[0]
            level = names[seat].split("_")[0]
            state.push(seat, action_from_dict(decide(view(state, seat), level, rng)))
        totals = state.totals
        places = [1 + sum(1 for t in totals if t < total) for total in totals]
        basic_wins += sum(1 for s, p in enumerate(places) if p == 1 and names[s].startswith("basic"))
        rated = model.rate([[ratings[name]] for name in names], ranks=[float(p) for p in places])
        for name, team in zip(names, rated, strict=True):
            ratings[name] = team[0]
    gap = statistics.mean(ratings[f"basic_{x}"].mu - ratings[f"random_{x}"].mu for x in "ab")
    return gap, basic_wins / max(games, 1)


def main() -> None:
    rng = random.Random(SEED)
    skills, games = simulated_games(rng)
    results = {c.name: measure(c, skills, games) for c in candidates()}
    base = results["plackett_luce"]["us_per_update"]
    for name, figures in results.items():
        print(f"{name}_kendall_tau: {figures['kendall_tau']:.3f}")
        print(f"{name}_winner_accuracy: {figures['winner_accuracy']:.3f}")
        print(f"{name}_us_per_update: {figures['us_per_update']:.1f}")
        print(f"{name}_time_vs_plackett_luce: {figures['us_per_update'] / base if base else math.nan:.2f}")
    gap, share = bot_gap(BOT_GAMES)
    print(f"basic_minus_random_mu: {gap:.2f}")
    print(f"basic_win_share: {share:.3f}")


if __name__ == "__main__":
    main()
