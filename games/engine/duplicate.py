"""Duplicate scoring, shared by `bots.tournament` and the tournaments service: who sits where in each
rotation of a deal set, the hand a deal set plays, and points relative to the others who held the
same cards, with a 95% confidence interval.

A deal set is one hand dealt from its own game seed and played once per rotation (a table each).
With `m` entrants and `n` seats, rotation `r` seats entrant `min((s - r) mod n, m - 1)` at seat
`s`: with `m == n` every entrant sits once at every table and once in every seat; with fewer
entrants the last one fills the remaining seats (the reference field of `bots.tournament`, where
rotation `r` puts the candidate in seat `r`). Either way every entrant holds every seat's cards.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Final

from .deal import pass_offset
from .options import Options

T_95: Final = 1.96  # normal quantile; deal sets number in the tens to hundreds


def seating(entrants: int, players: int, rotation: int) -> list[int]:
    """The entrant (an index into the entrants) at each seat in this rotation."""
    return [min((seat - rotation) % players, entrants - 1) for seat in range(players)]


def pass_cycle(options: Options) -> int:
    """How many hands until the pass direction repeats."""
    for n in range(1, 12):
        if pass_offset(options, n + 1) == pass_offset(options, 1):
            return n
    return 1


def deal_set_hand(options: Options, deal_set: int) -> int:
    """The hand number deal set `deal_set` plays: they cycle so every pass direction (and the hold
    hand) comes up."""
    return 1 + deal_set % max(1, pass_cycle(options))


def hand_options(options: Options, hand: int) -> Options:
    """The options of a table that plays hand `hand` of its seed alone."""
    return Options.from_dict({**options.to_dict(), "first_hand": hand, "hands": 1})


def deal_set_seed(seed: object, deal_set: int) -> str:
    """The game seed of a deal set of the tournament with this seed."""
    return f"tournament-{seed}-{deal_set}"


def rotation_rng_seed(game_seed: str, rotation: int) -> str:
    """The seed of the random stream the bots of one rotation's table share, in the order they act."""
    return f"{game_seed}/{rotation}"


def relative_points(points: Sequence[Sequence[int]], entrants: int) -> list[float]:
    """Each entrant's points in one deal set relative to the others who held the same cards:
    `points[r][s]` is what seat `s` took in rotation `r`. For every seat the entrant held, the mean
    of the others' points with those cards minus the entrant's own, averaged over the seats it
    held; positive when the entrant took fewer points than the others did with the same cards."""
    players = len(points[0])
    seats = [seating(entrants, players, r) for r in range(len(points))]
    out = []
    for entrant in range(entrants):
        diffs = []
        for r, row in enumerate(seats):
            for s, who in enumerate(row):
                if who != entrant:
                    continue
                others = [points[o][s] for o in range(len(points)) if seats[o][s] != entrant]
                if others:
                    diffs.append(statistics.fmean(others) - points[r][s])
        out.append(statistics.fmean(diffs) if diffs else 0.0)
    return out


def interval(values: Sequence[float]) -> tuple[float, float, float]:
    """The mean of per-deal-set values and its 95% confidence interval (normal approximation;
    infinite with a single deal set)."""
    mean = statistics.fmean(values)
    half = T_95 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.inf
    return mean, mean - half, mean + half
