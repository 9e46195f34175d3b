"""Ratings over REST: the rating system (families, bots' published ratings), an app's leaderboard
per family, a player's ratings and their history, each list in cursor pages."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import ratings
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, principal_of
from games.errors import Code

FAMILIES = list(ratings.FAMILIES)


class FamilyOut(F.Serializer[Any]):
    name = F.CharField(help_text="The family, as `family` parameters take it")
    variant = F.CharField()
    players = F.ListField(child=F.IntegerField(), help_text="The player counts rated together")


class BotRatingOut(F.Serializer[Any]):
    level = F.CharField()
    mu = F.FloatField()
    sigma = F.FloatField()
    score = F.FloatField(help_text="mu - 3 sigma")


class RatingSystemOut(F.Serializer[Any]):
    """How ratings work here (docs/ratings.md): the model, a new player's rating, the families and
    the bots' fixed ratings."""

    model = F.CharField(help_text="The openskill Weng-Lin model")
    mu = F.FloatField(help_text="A new player's mu")
    sigma = F.FloatField(help_text="A new player's sigma")
    families = FamilyOut(many=True)
    bots = BotRatingOut(many=True, help_text="Fixed and published: never updated")


class RatingOut(F.Serializer[Any]):
    player = F.IntegerField()
    name = F.CharField()
    family = F.ChoiceField(choices=FAMILIES)
    mu = F.FloatField()
    sigma = F.FloatField()
    score = F.FloatField(help_text="mu - 3 sigma: the conservative rating leaderboards sort by")
    games = F.IntegerField(help_text="Rated games played in this family")
    updated_at = F.DateTimeField()


class PlayerRatingsOut(F.Serializer[Any]):
    player = F.IntegerField()
    name = F.CharField()
    ratings = RatingOut(many=True, help_text="One per family played rated, by family name")


class LeaderboardPageOut(F.Serializer[Any]):
    next = F.URLField(allow_null=True)
    previous = F.URLField(allow_null=True)
    results = RatingOut(many=True, help_text="Best score first")


class MuSigmaOut(F.Serializer[Any]):
    mu = F.FloatField()
    sigma = F.FloatField()


class RatingChangeOut(F.Serializer[Any]):
    id = F.IntegerField()
    table = F.IntegerField()
    family = F.ChoiceField(choices=FAMILIES)
    seat = F.IntegerField()
    place = F.IntegerField(help_text="1 is first; ties share a place; a seat away at the end is last")
    before = MuSigmaOut()
    after = MuSigmaOut()
    score_before = F.FloatField()
    score_after = F.FloatField()
    created_at = F.DateTimeField()


class RatingHistoryPageOut(F.Serializer[Any]):
    next = F.URLField(allow_null=True)
    previous = F.URLField(allow_null=True)
    results = RatingChangeOut(many=True, help_text="Newest first")


_FAMILY = OpenApiParameter("family", str, enum=FAMILIES, description="A family (GET /ratings lists them)")


class RatingSystemView(APIView):
    """GET /ratings: the model, the families and the bots' published ratings."""

    permission_classes = [IsPrincipal]

    @documented(op="getRatingSystem", tag="ratings", ok=RatingSystemOut)
    def get(self, request: Request) -> Response:
        families = [{"name": k, "variant": v, "players": list(n)} for k, (v, n) in ratings.FAMILIES.items()]
        return Response(
            {
                "model": ratings.MODEL,
                "mu": ratings.MU,
                "sigma": ratings.SIGMA,
                "families": families,
                "bots": ratings.bots_body(),
            }
        )


class LeaderboardView(APIView):
    """GET /leaderboard?family=: the caller's app's ratings in one family, best first, in pages."""

    permission_classes = [IsPrincipal]

    @documented(
        op="getLeaderboard",
        tag="ratings",
        ok=LeaderboardPageOut,
        params=[_FAMILY, CURSOR],
        errors=(Code.invalid_filter, Code.invalid_cursor),
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        rows = ratings.leaderboard(principal.app, request.query_params.get("family"))
        return paged(request, rows, ratings.LEADERBOARD_PAGES, ratings.rating_body)


class PlayerRatingsView(APIView):
    """GET /players/{id}/ratings: a player's rating in each family (a player of the caller's app)."""

    permission_classes = [IsPrincipal]

    @documented(op="getPlayerRatings", tag="ratings", ok=PlayerRatingsOut, errors=(Code.not_found,))
    def get(self, request: Request, player_id: int) -> Response:
        return Response(ratings.ratings_of(principal_of(request).app, player_id))


class RatingHistoryView(APIView):
    """GET /players/{id}/rating-history: a player's rating changes, newest first, in pages."""

    permission_classes = [IsPrincipal]

    @documented(
        op="getRatingHistory",
        tag="ratings",
        ok=RatingHistoryPageOut,
        params=[_FAMILY, CURSOR],
        errors=(Code.not_found, Code.invalid_filter, Code.invalid_cursor),
    )
    def get(self, request: Request, player_id: int) -> Response:
        principal = principal_of(request)
        changes = ratings.history(principal.app, player_id, request.query_params.get("family"))
        return paged(request, changes, ratings.HISTORY_PAGES, ratings.change_body)
