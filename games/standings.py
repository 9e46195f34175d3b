"""Tournament reads: the standings from the points its finished tables took, and what an app may see
of its tournaments (the maths is games.engine.duplicate's, shared with bots.tournament)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from django.db.models import Count, QuerySet

from games import paging
from games.engine import Options, duplicate
from games.errors import ServiceError
from games.models import App, ScoreRow, Table, Tournament

TOURNAMENT_PAGES = paging.Keyset("tournament", ("-id",), (int,))  # newest first (games/paging.py)


def tournaments_of(app: App) -> QuerySet[Tournament]:
    return Tournament.objects.filter(app=app).annotate(tables_created=Count("tables")).order_by("-pk")


def tournament_of(app: App, tournament_id: int) -> Tournament:
    """The app's tournament; another app's is indistinguishable from none."""
    found = (
        Tournament.objects.filter(app=app, pk=tournament_id).annotate(tables_created=Count("tables")).first()
    )
    if found is None:
        raise ServiceError("not_found", "no such tournament", kind="not_found")
    return found


def tables_of(tournament: Tournament) -> list[Table]:
    return list(tournament.tables.order_by("rotation", "deal_set", "pk"))


def points_by_deal_set(
    tournament: Tournament, ending: Mapping[tuple[int, int], list[int]] | None = None
) -> dict[int, list[list[int]]]:
    """The points of every complete deal set: `[rotation][seat]`, from the scoresheet rows of its
    tables (each plays one hand: its rows appear when it finishes), and `ending`: the points of
    the table whose finishing move is being written, by (deal set, rotation)."""
    players = Options.from_dict(tournament.options).players
    rows = ScoreRow.objects.filter(table__tournament=tournament).values_list(
        "table__deal_set", "table__rotation", "position", "points"
    )
    found: dict[int, dict[int, dict[int, int]]] = {}
    for deal_set, rotation, position, points in rows:
        if deal_set is None or rotation is None:  # never at a tournament's table
            continue
        found.setdefault(deal_set, {}).setdefault(rotation, {})[position] = points
    for (deal_set, rotation), row in (ending or {}).items():
        found.setdefault(deal_set, {})[rotation] = dict(enumerate(row))
    complete = {}
    for deal_set, rotations in found.items():
        if len(rotations) == players and all(len(seats) == players for seats in rotations.values()):
            complete[deal_set] = [[rotations[r][s] for s in range(players)] for r in range(players)]
    return complete


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def standings(tournament: Tournament) -> dict[str, Any]:
    """Per entrant: points per hand relative to the others who held the same cards (the mean over
    the complete deal sets, with its 95% interval; null bounds with fewer than two deal sets), own
    points per hand, and the rank by relative points (equal values share a rank). The stored final
    standings once the tournament is over."""
    if tournament.standings is not None:
        stored: dict[str, Any] = tournament.standings
        return stored
    return compute(tournament)


def compute(
    tournament: Tournament, ending: Mapping[tuple[int, int], list[int]] | None = None
) -> dict[str, Any]:
    """The standings now (`ending`: as in points_by_deal_set)."""
    entrants = tournament.entrants
    by_set = points_by_deal_set(tournament, ending)
    sets = sorted(by_set)
    relative: list[list[float]] = [[] for _ in entrants]
    own: list[list[int]] = [[] for _ in entrants]
    for k in sets:
        points = by_set[k]
        for e, value in enumerate(duplicate.relative_points(points, len(entrants))):
            relative[e].append(value)
        for r, seat_points in enumerate(points):
            for s, who in enumerate(duplicate.seating(len(entrants), len(seat_points), r)):
                own[who].append(seat_points[s])
    rows: list[dict[str, Any]] = []
    for e, entrant in enumerate(entrants):
        mean, low, high = duplicate.interval(relative[e]) if relative[e] else (0.0, math.inf, math.inf)
        rows.append(
            {
                "entrant": e,
                "player": entrant.get("player"),
                "bot": entrant.get("bot"),
                "name": entrant["name"],
                "relative_points": mean,
                "ci95_low": _finite(low) if relative[e] else None,
                "ci95_high": _finite(high) if relative[e] else None,
                "points_per_hand": statistics.fmean(own[e]) if own[e] else 0.0,
                "hands": len(own[e]),
            }
        )
    order = sorted(rows, key=lambda row: -row["relative_points"])
    for place, row in enumerate(order):
        ahead = order[place - 1] if place else None
        tied = ahead is not None and ahead["relative_points"] == row["relative_points"]
        row["rank"] = ahead["rank"] if tied and ahead is not None else place + 1
    return {"deal_sets_complete": len(sets), "entrants": order}


STARTING = "starting"  # a status shown, never stored: running, while its set-up creates its tables


def tables_created(tournament: Tournament) -> int:
    """How many of its tables exist so far (annotated by tournaments_of and tournament_of)."""
    counted = getattr(tournament, "tables_created", None)
    return counted if isinstance(counted, int) else tournament.tables.count()


def tables_at_start(tournament: Tournament) -> int:
    """How many tables its set-up creates: all of them when only bots play; with people the
    first one (each next one opens when the one before finishes)."""
    bots_only = all(e["player"] is None for e in tournament.entrants)
    return tournament.tables_total if bots_only else 1


def status(tournament: Tournament, created: int | None = None) -> str:
    """`starting` while the set-up task has not created the tables it starts with
    (`tables_at_start`), then `running`, then `finished`."""
    counted = tables_created(tournament) if created is None else created
    if tournament.status == Tournament.Status.RUNNING and counted < tables_at_start(tournament):
        return STARTING
    return str(tournament.status)


def body(tournament: Tournament) -> dict[str, Any]:
    """A tournament as its app sees it (the seed only once it is over, or when the app chose it)."""
    shown = tournament.status == Tournament.Status.FINISHED or tournament.seed_given
    created = tables_created(tournament)
    return {
        "id": tournament.pk,
        "name": tournament.name,
        "status": status(tournament, created),
        "entrants": tournament.entrants,
        "options": tournament.options,
        "clocks": tournament.clocks,
        "deal_sets": tournament.deal_sets,
        "seed": tournament.seed if shown else None,
        "tables_total": tournament.tables_total,
        "tables_created": created,
        "tables_finished": tournament.tables_finished,
        "created_at": tournament.created_at.isoformat() if tournament.created_at else None,
        "finished_at": tournament.finished_at.isoformat() if tournament.finished_at else None,
    }
