"""The replay check of ratings: every rating recomputed from the rated games alone, in the order
they were rated, and compared with what is stored, exactly (floats included)."""

from __future__ import annotations

from django.db.models import Min

from games.models import Player, Rating, RatingChange, SeatRow, Table
from games.ratings import MU, SIGMA, family_of, score_of
from games.records import log as records
from games.services.play import table_replay
from games.services.ratings import new_ratings, results


def away_at_end(table: Table) -> list[bool]:
    """Which seats were marked away when the game ended, from the move log alone."""
    away = [False] * int(table.options["players"])
    for move in records.moves(table):
        types = [event[0] for event in move.events]
        for kind, data, *_ in move.events:
            if kind in ("seat_away", "seat_back"):
                away[data["seat"]] = kind == "seat_away"
        if "game_over" in types:
            break
    return away


def ratings_replay() -> tuple[int, list[str]]:
    """Recompute every rating from the finished rated games (each rebuilt from its deal and move
    log) in the order they were rated; return how many games were replayed and every difference
    from the stored history and ratings (none: the stored ratings are exact)."""
    problems: list[str] = []
    rated = Table.objects.filter(rated=True, status=Table.Status.FINISHED)
    first = dict(
        RatingChange.objects.values_list("table_id")
        .annotate(first=Min("id"))
        .values_list("table_id", "first")
    )
    current: dict[tuple[int, str], tuple[float, float, int]] = {}
    games = 0
    for table in sorted(rated, key=lambda t: (first.get(t.pk, 0), t.pk)):
        seats = list(table.seats.order_by("position"))
        seating = [
            SeatRow(
                position=s.position,
                player=s.player_id,
                name=None,
                bot=s.bot_level or None,
                away=False,
                timeouts=0,
            )
            for s in seats
        ]
        people = [s.player_id for s in seats if s.player_id is not None]
        stored = {c.player_id: c for c in RatingChange.objects.filter(table=table)}
        if not people:
            continue
        if table.pk not in first:
            problems.append(f"table {table.pk}: a rated game with no rating changes")
            continue
        state = table_replay(table)
        if state is None or not state.is_over:
            problems.append(f"table {table.pk}: its move log does not replay to a finished game")
            continue
        games += 1
        family = family_of(table.options)
        seated = results(seating, state.totals, away_at_end(table))
        before = {p: current.get((p, family), (MU, SIGMA, 0))[:2] for p in people}
        after = new_ratings(seated, before)
        for seat in seated:
            if seat.player is None:
                continue
            change = stored.get(seat.player)
            expected = (seat.place, *before[seat.player], *after[seat.player])
            if change is None:
                problems.append(f"table {table.pk}: player {seat.player} has no rating change")
            else:
                got = (
                    change.place,
                    change.mu_before,
                    change.sigma_before,
                    change.mu_after,
                    change.sigma_after,
                )
                if got != expected:
                    problems.append(
                        f"table {table.pk}: player {seat.player} stored {got}, replayed {expected}"
                    )
            games_before = current.get((seat.player, family), (MU, SIGMA, 0))[2]
            current[(seat.player, family)] = (*after[seat.player], games_before + 1)
    by_key: dict[tuple[int, str], Rating] = {(r.player_id, r.family): r for r in Rating.objects.all()}
    # An erased player's history stays (the others' ratings follow from it); their rows do not.
    erased = set(Player.objects.filter(erased_at__isnull=False).values_list("pk", flat=True))
    for key in sorted(set(by_key) | set(current)):
        row = by_key.get(key)
        mu, sigma, count = current.get(key, (MU, SIGMA, 0))
        expected_row = None if key[0] in erased else (mu, sigma, score_of(mu, sigma), count)
        got_row = None if row is None else (row.mu, row.sigma, row.score, row.games)
        if got_row != expected_row and expected_row is None:
            problems.append(f"player {key[0]} in {key[1]}: erased, yet a rating is stored")
        elif got_row != expected_row:
            problems.append(f"player {key[0]} in {key[1]}: stored {got_row}, replayed {expected_row}")
    return games, problems
