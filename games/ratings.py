"""What a caller may read about ratings: the families, the bots' published ratings, a player's
ratings and history, and an app's leaderboards (games.services.ratings writes them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from django.db.models import QuerySet

from games import paging
from games.errors import ServiceError
from games.models import App, Player, Rating, RatingChange

# The Weng-Lin model's defaults (openskill): a new player's rating, and the conservative score.
MU: Final = 25.0
SIGMA: Final = 25.0 / 3.0
MODEL: Final = "PlackettLuce"

# Variant, and the player counts that are rated together: 3 and 4 players each on their own, the
# larger classic tables together, Cancellation Hearts (6 to 10, two packs) as one family.
FAMILIES: Final[dict[str, tuple[str, tuple[int, ...]]]] = {
    "classic-3": ("classic", (3,)),
    "classic-4": ("classic", (4,)),
    "classic-5to7": ("classic", (5, 6, 7)),
    "omnibus-3": ("omnibus", (3,)),
    "omnibus-4": ("omnibus", (4,)),
    "omnibus-5to7": ("omnibus", (5, 6, 7)),
    "cancellation-6to10": ("cancellation", (6, 7, 8, 9, 10)),
}


@dataclass(frozen=True)
class BotRating:
    """A bot level's fixed, published rating: bots are rated against, never updated."""

    mu: float
    sigma: float

    @property
    def score(self) -> float:
        return score_of(self.mu, self.sigma)


# Published in docs/ratings.md; the same in every family. basic is level with a new player (MU);
# random sits below it by the gap bench/ratings.py measures in real games (basic wins 99% of them),
# strong and expert above it by the points per hand they gain on the level below (bots.tournament,
# bench/HISTORY.md) at the same mu per point. The small sigma says they are known: a person's result
# against a bot moves the person; the bot is never updated.
BOT_RATINGS: Final[dict[str, BotRating]] = {
    "random": BotRating(-13.0, 1.0),
    "basic": BotRating(25.0, 1.0),
    "strong": BotRating(42.0, 1.0),
    "expert": BotRating(47.0, 1.0),
}


def score_of(mu: float, sigma: float) -> float:
    """The conservative rating leaderboards sort by: mu - 3 sigma (openskill's ordinal)."""
    return mu - 3.0 * sigma


def family_of(options: Mapping[str, Any]) -> str:
    """The family a table's games are rated in, from its engine options."""
    variant, players = options.get("variant", "classic"), options.get("players", 4)
    return next(name for name, (v, counts) in FAMILIES.items() if v == variant and players in counts)


def check_family(family: object) -> str:
    """A known family name, or `invalid_filter` naming the known ones."""
    if not isinstance(family, str) or family not in FAMILIES:
        raise ServiceError("invalid_filter", f"family must be one of {', '.join(FAMILIES)}", kind="malformed")
    return family


def player_in_scope(app: App | None, player_id: int) -> Player:
    """A player of the caller's app (or a guest, for a guest): anyone else is `not_found`."""
    player = Player.objects.filter(pk=player_id, app=app).first()
    if player is None:
        raise ServiceError("not_found", "no such player", kind="not_found")
    return player


def rating_body(rating: Rating) -> dict[str, Any]:
    return {
        "player": rating.player_id,
        "name": rating.player.name,
        "family": rating.family,
        "mu": rating.mu,
        "sigma": rating.sigma,
        "score": rating.score,
        "games": rating.games,
        "updated_at": rating.updated_at.isoformat(),
    }


def ratings_of(app: App | None, player_id: int) -> dict[str, Any]:
    """A player's rating in each family they played rated games in."""
    player = player_in_scope(app, player_id)
    rows = Rating.objects.filter(player=player).select_related("player").order_by("family")
    return {"player": player.pk, "name": player.name, "ratings": [rating_body(r) for r in rows]}


LEADERBOARD_PAGES = paging.Keyset("rating", ("-score", "id"), (float, int))  # best first (games/paging.py)
HISTORY_PAGES = paging.Keyset("change", ("-id",), (int,))  # newest first


def leaderboard(app: App | None, family: object) -> QuerySet[Rating]:
    """The app's ratings in one family, best conservative score first (pages: the adapters)."""
    return (
        Rating.objects.filter(app=app, family=check_family(family))
        .select_related("player")
        .order_by("-score", "id")
    )


def history(app: App | None, player_id: int, family: object = None) -> QuerySet[RatingChange]:
    """A player's rating changes, newest first; `family` narrows them to one family."""
    player = player_in_scope(app, player_id)
    changes = RatingChange.objects.filter(player=player)
    if family is not None and family != "":
        changes = changes.filter(family=check_family(family))
    return changes.order_by("-id")


def change_body(change: RatingChange) -> dict[str, Any]:
    return {
        "id": change.pk,
        "table": change.table_id,
        "family": change.family,
        "seat": change.position,
        "place": change.place,
        "before": {"mu": change.mu_before, "sigma": change.sigma_before},
        "after": {"mu": change.mu_after, "sigma": change.sigma_after},
        "score_before": score_of(change.mu_before, change.sigma_before),
        "score_after": score_of(change.mu_after, change.sigma_after),
        "created_at": change.created_at.isoformat(),
    }


def bots_body() -> list[dict[str, Any]]:
    """The bots' published ratings."""
    return [{"level": k, "mu": b.mu, "sigma": b.sigma, "score": b.score} for k, b in BOT_RATINGS.items()]
