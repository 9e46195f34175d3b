"""Ratings over GraphQL: the rating system, an app's leaderboard per family and a player's
ratings and history, in the REST shapes (games.ratings builds both), with cursor pages."""

from __future__ import annotations

import base64
from typing import Any

import graphene

from games import ratings
from games.errors import ServiceError
from games.graphql.events import MuSigma

MAX_PAGE = 100


class RatingFamily(graphene.ObjectType):
    name = graphene.String(required=True)
    variant = graphene.String(required=True)
    players = graphene.List(graphene.NonNull(graphene.Int), required=True, description="Rated together")


class BotRating(graphene.ObjectType):
    """A bot level's fixed, published rating."""

    level = graphene.String(required=True)
    mu = graphene.Float(required=True)
    sigma = graphene.Float(required=True)
    score = graphene.Float(required=True, description="mu - 3 sigma")


class RatingSystem(graphene.ObjectType):
    """How ratings work here (docs/ratings.md)."""

    model = graphene.String(required=True, description="The openskill Weng-Lin model")
    mu = graphene.Float(required=True, description="A new player's mu")
    sigma = graphene.Float(required=True, description="A new player's sigma")
    families = graphene.List(graphene.NonNull(RatingFamily), required=True)
    bots = graphene.List(graphene.NonNull(BotRating), required=True, description="Fixed: never updated")


class Rating(graphene.ObjectType):
    """A player's rating in one family."""

    player = graphene.Int(required=True)
    name = graphene.String(required=True)
    family = graphene.String(required=True)
    mu = graphene.Float(required=True)
    sigma = graphene.Float(required=True)
    score = graphene.Float(required=True, description="mu - 3 sigma: leaderboards sort by it")
    games = graphene.Int(required=True, description="Rated games played in this family")
    updated_at = graphene.String(required=True)


class PlayerRatings(graphene.ObjectType):
    player = graphene.Int(required=True)
    name = graphene.String(required=True)
    ratings = graphene.List(graphene.NonNull(Rating), required=True, description="One per family played")


class RatingChange(graphene.ObjectType):
    """One rated game's effect on one player's rating."""

    id = graphene.Int(required=True)
    table = graphene.Int(required=True)
    family = graphene.String(required=True)
    seat = graphene.Int(required=True)
    place = graphene.Int(required=True, description="1 is first; ties share it; away at the end: last")
    before = graphene.Field(MuSigma, required=True)
    after = graphene.Field(MuSigma, required=True)
    score_before = graphene.Float(required=True)
    score_after = graphene.Float(required=True)
    created_at = graphene.String(required=True)


class LeaderboardPage(graphene.ObjectType):
    ratings = graphene.List(graphene.NonNull(Rating), required=True, description="Best score first")
    next = graphene.String(description="Pass as `after` for the next page; null on the last page")


class RatingHistoryPage(graphene.ObjectType):
    changes = graphene.List(graphene.NonNull(RatingChange), required=True, description="Newest first")
    next = graphene.String(description="Pass as `after` for the next page; null on the last page")


def _encode(*parts: object) -> str:
    return base64.urlsafe_b64encode(":".join(map(str, parts)).encode()).decode()


def _bad_cursor() -> ServiceError:
    return ServiceError("invalid_cursor", "after must be a cursor from a previous page", kind="malformed")


def _decode(cursor: str, kind: str) -> list[str]:
    try:
        found, *parts = base64.urlsafe_b64decode(cursor.encode()).decode().split(":")
        if found == kind:
            return parts
    except (ValueError, UnicodeDecodeError):
        pass
    raise _bad_cursor()


def _leaderboard_after(cursor: str) -> tuple[float, int]:
    parts = _decode(cursor, "rating")
    try:
        score, row_id = float(parts[0]), int(parts[1])
    except (IndexError, ValueError) as exc:
        raise ServiceError(
            "invalid_cursor", "after must be a cursor from a previous page", kind="malformed"
        ) from exc
    if len(parts) != 2 or score != score or abs(score) == float("inf") or not 0 < row_id < 2**63:
        raise _bad_cursor()
    return score, row_id


def _history_before(cursor: str) -> int:
    parts = _decode(cursor, "change")
    if len(parts) != 1 or not (parts[0].isascii() and parts[0].isdigit() and len(parts[0]) <= 18):
        raise _bad_cursor()
    return int(parts[0])


def _first(first: int | None) -> int:
    first = 20 if first is None else first
    if not 1 <= first <= MAX_PAGE:
        raise ServiceError("invalid_filter", f"first must be 1 to {MAX_PAGE}", kind="malformed")
    return first


def _app(info: Any) -> Any:
    """The caller's app (None for a guest): whose leaderboard and players they see."""
    principal = getattr(info.context, "principal", None)
    if principal is None:
        raise ServiceError("not_authenticated", "send 'Authorization: Bearer <key or token>'", kind="auth")
    return principal.app


class RatingsQuery(graphene.ObjectType):
    """The ratings fields of the root Query."""

    rating_system = graphene.Field(RatingSystem, required=True)
    leaderboard = graphene.Field(
        LeaderboardPage,
        required=True,
        family=graphene.String(required=True, description="A family (ratingSystem lists them)"),
        first=graphene.Int(default_value=20, description=f"At most {MAX_PAGE}"),
        after=graphene.String(),
        description="Your app's ratings in one family, best first (errors: invalid_filter, invalid_cursor)",
    )
    player_ratings = graphene.Field(
        PlayerRatings,
        required=True,
        player_id=graphene.Int(required=True),
        description="A player's rating in each family (a player of your app; else not_found)",
    )
    rating_history = graphene.Field(
        RatingHistoryPage,
        required=True,
        player_id=graphene.Int(required=True),
        family=graphene.String(),
        first=graphene.Int(default_value=20, description=f"At most {MAX_PAGE}"),
        after=graphene.String(),
        description="A player's rating changes, newest first",
    )

    def resolve_rating_system(root: Any, info: Any) -> dict[str, Any]:
        _app(info)
        families = [{"name": k, "variant": v, "players": list(n)} for k, (v, n) in ratings.FAMILIES.items()]
        return {
            "model": ratings.MODEL,
            "mu": ratings.MU,
            "sigma": ratings.SIGMA,
            "families": families,
            "bots": ratings.bots_body(),
        }

    def resolve_leaderboard(
        root: Any, info: Any, family: str, first: int | None, after: str | None = None
    ) -> dict[str, Any]:
        count = _first(first)
        rows = ratings.leaderboard_page(
            _app(info), family, _leaderboard_after(after) if after else None, count + 1
        )
        page = rows[:count]
        more = len(rows) > count and page
        return {
            "ratings": [ratings.rating_body(r) for r in page],
            "next": _encode("rating", repr(page[-1].score), page[-1].pk) if more else None,
        }

    def resolve_player_ratings(root: Any, info: Any, player_id: int) -> dict[str, Any]:
        return ratings.ratings_of(_app(info), player_id)

    def resolve_rating_history(
        root: Any,
        info: Any,
        player_id: int,
        first: int | None,
        family: str | None = None,
        after: str | None = None,
    ) -> dict[str, Any]:
        count = _first(first)
        before = _history_before(after) if after else None
        rows = ratings.history_page(_app(info), player_id, family, before, count + 1)
        page = rows[:count]
        return {
            "changes": [ratings.change_body(c) for c in page],
            "next": _encode("change", page[-1].pk) if len(rows) > count and page else None,
        }
