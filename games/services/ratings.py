"""Rating updates: a rated game's result moves its people's ratings, in the transaction that
records the game over, so a crash never loses a result or counts one twice.

The maths is openskill's Weng-Lin Plackett-Luce model (bench/ratings.py says why that one). The
rules it is applied with are in docs/ratings.md: places come from the final totals (lower is
better, ties share a place), a person's seat marked away when the game ends is placed last, bots
play with their fixed published ratings and are never updated, abandoned tables are never rated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from games.models import Player, Rating, RatingChange, SeatRow, Table
from games.ratings import BOT_RATINGS, MU, SIGMA, family_of, score_of

MODEL = PlackettLuce(mu=MU, sigma=SIGMA)


@dataclass(frozen=True)
class Result:
    """One seat's part in a rated game: who sat there and where they finished."""

    position: int
    player: int | None  # None: a bot
    bot: str | None
    place: int


def places(totals: Sequence[int], away: Sequence[bool]) -> list[int]:
    """Each seat's place (1 is first): fewer points is better and equal totals share a place;
    seats marked away at the end come after every seat that was there, sharing the last place."""
    present = [t for t, gone in zip(totals, away, strict=True) if not gone]
    return [
        len(present) + 1 if gone else 1 + sum(1 for other in present if other < total)
        for total, gone in zip(totals, away, strict=True)
    ]


def results(seating: Sequence[SeatRow], totals: Sequence[int], away: Sequence[bool]) -> list[Result]:
    order = places(totals, away)
    return [
        Result(s["position"], s["player"], s["bot"], order[s["position"]])
        for s in sorted(seating, key=lambda s: s["position"])
    ]


def new_ratings(
    seats: Sequence[Result], before: Mapping[int, tuple[float, float]]
) -> dict[int, tuple[float, float]]:
    """The people's ratings after the game (by player id), from their ratings `before` and the
    bots' fixed ones; pure, so that the replay computes exactly what the live update did."""
    teams = []
    for seat in seats:
        if seat.player is not None:
            mu, sigma = before[seat.player]
        else:
            fixed = BOT_RATINGS[seat.bot or "basic"]
            mu, sigma = fixed.mu, fixed.sigma
        teams.append([MODEL.rating(mu=mu, sigma=sigma)])
    rated = MODEL.rate(teams, ranks=[float(s.place) for s in seats])
    return {
        s.player: (float(team[0].mu), float(team[0].sigma))
        for s, team in zip(seats, rated, strict=True)
        if s.player is not None
    }


def game_over(table: Table, totals: Sequence[int]) -> dict[str, Any] | None:
    """Update the ratings of a rated table's people for the game that just ended (called inside
    the transaction that logs the game over) and say what changed, for the `ratings_changed`
    event; None at an unrated table or one without people."""
    if not table.rated:
        return None
    seats = results(table.seating, totals, [bool(s.get("away")) for s in table.seating])
    people = sorted(s.player for s in seats if s.player is not None)
    if not people:
        return None
    family = family_of(table.options)
    # An erased player (games.services.erasure) whose seat the server played to the end is rated
    # on from their history (their last change), as the replay does, but gets no Rating row back:
    # they stay off the leaderboards.
    erased = set(Player.objects.filter(pk__in=people, erased_at__isnull=False).values_list("pk", flat=True))
    # Create missing rows without a race (a concurrent insert of the same row waits, then is
    # skipped), then lock every row in player order: two games finishing at once with the same
    # players take turns, and the second starts from the first's result.
    Rating.objects.bulk_create(
        [
            Rating(
                app_id=table.app_id, player_id=p, family=family, mu=MU, sigma=SIGMA, score=score_of(MU, SIGMA)
            )
            for p in people
            if p not in erased
        ],
        ignore_conflicts=True,
    )
    rows = {
        r.player_id: r
        for r in Rating.objects.select_for_update()
        .filter(player_id__in=people, family=family)
        .order_by("player_id")
    }
    for p in sorted(erased):
        last = RatingChange.objects.filter(player_id=p, family=family).order_by("-id").first()
        mu, sigma = (last.mu_after, last.sigma_after) if last else (MU, SIGMA)
        rows[p] = Rating(player_id=p, family=family, mu=mu, sigma=sigma, score=score_of(mu, sigma))
    after = new_ratings(seats, {p: (rows[p].mu, rows[p].sigma) for p in people})
    changes, shown = [], []
    for seat in seats:
        if seat.player is None:
            continue
        row = rows[seat.player]
        mu, sigma = after[seat.player]
        changes.append(
            RatingChange(
                table=table,
                player_id=seat.player,
                family=family,
                position=seat.position,
                place=seat.place,
                mu_before=row.mu,
                sigma_before=row.sigma,
                mu_after=mu,
                sigma_after=sigma,
            )
        )
        shown.append({"seat": seat.position, "place": seat.place, "mu": mu, "sigma": sigma})
        if seat.player in erased:
            continue
        row.mu, row.sigma, row.score, row.games = mu, sigma, score_of(mu, sigma), row.games + 1
        row.save(update_fields=["mu", "sigma", "score", "games", "updated_at"])
    RatingChange.objects.bulk_create(changes)
    return {"family": family, "changes": shown}
