"""Ratings over GraphQL: the rating system, an app's leaderboard per family and a player's
ratings and history, in the REST shapes (games.ratings builds both), with cursor pages."""

from __future__ import annotations

from typing import Any

import graphene

from games import paging, ratings
from games.graphql.base import principal_of
from games.graphql.events import MuSigma


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


class RatingsQuery(graphene.ObjectType):
    """The ratings fields of the root Query."""

    rating_system = graphene.Field(RatingSystem, required=True)
    leaderboard = graphene.Field(
        LeaderboardPage,
        required=True,
        family=graphene.String(required=True, description="A family (ratingSystem lists them)"),
        first=graphene.Int(default_value=paging.PAGE_SIZE, description=f"At most {paging.MAX_PAGE_SIZE}"),
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
        first=graphene.Int(default_value=paging.PAGE_SIZE, description=f"At most {paging.MAX_PAGE_SIZE}"),
        after=graphene.String(),
        description="A player's rating changes, newest first",
    )

    def resolve_rating_system(root: Any, info: Any) -> dict[str, Any]:
        principal_of(info)  # authenticated (the rating system is the same for every caller)
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
        rows = ratings.leaderboard(principal_of(info).app, family)
        page = paging.paginate(rows, ratings.LEADERBOARD_PAGES, after, paging.page_size(first))
        return {"ratings": [ratings.rating_body(r) for r in page.rows], "next": page.next}

    def resolve_player_ratings(root: Any, info: Any, player_id: int) -> dict[str, Any]:
        return ratings.ratings_of(principal_of(info).app, player_id)

    def resolve_rating_history(
        root: Any,
        info: Any,
        player_id: int,
        first: int | None,
        family: str | None = None,
        after: str | None = None,
    ) -> dict[str, Any]:
        changes = ratings.history(principal_of(info).app, player_id, family)
        page = paging.paginate(changes, ratings.HISTORY_PAGES, after, paging.page_size(first))
        return {"changes": [ratings.change_body(c) for c in page.rows], "next": page.next}
