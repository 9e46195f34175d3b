"""Duplicate tournaments over REST (app key only): create one, list them, show one, its standings and
its tables. The tables themselves are ordinary tables: read, stream and export them as any other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http.response import HttpResponseBase
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import operations as ops
from games import standings
from games.accounts import Principal
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, perform
from games.api.schemas import ClocksOut, TableOptionsOut
from games.errors import Code
from games.operations.tournaments import DENIED

if TYPE_CHECKING:  # types only: the queries are in games.standings
    from games.models import App


class EntrantOut(F.Serializer):
    player = F.IntegerField(allow_null=True)
    bot = F.CharField(allow_null=True)
    name = F.CharField()


STATUSES = ["starting", "running", "finished"]


class TournamentOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField()
    status = F.ChoiceField(
        choices=STATUSES,
        help_text="starting: its tables are being created (a creation answers before they exist); "
        "running once `tables_created` has them all (with people: the first one)",
    )
    entrants = EntrantOut(many=True)
    options = TableOptionsOut(help_text="The tables' options (each table adds first_hand and hands)")
    clocks = ClocksOut()
    deal_sets = F.IntegerField()
    seed = F.CharField(allow_null=True, help_text="null while running unless the app chose it")
    tables_total = F.IntegerField()
    tables_created = F.IntegerField(help_text="Its tables created so far (GET /tournaments/{id}/tables)")
    tables_finished = F.IntegerField()
    created_at = F.DateTimeField()
    finished_at = F.DateTimeField(allow_null=True)


class TournamentListOut(F.Serializer):
    next = F.URLField(allow_null=True, help_text="The next page (null on the last)")
    previous = F.URLField(allow_null=True, help_text="The page before (null on the first)")
    results = TournamentOut(many=True, help_text="The app's tournaments, newest first")


class StandingOut(F.Serializer):
    entrant = F.IntegerField(help_text="The entrant's index in `entrants`")
    player = F.IntegerField(allow_null=True)
    bot = F.CharField(allow_null=True)
    name = F.CharField()
    rank = F.IntegerField(help_text="1 is best; equal relative points share a rank")
    relative_points = F.FloatField(
        help_text="Mean points per hand the others took with the same cards, minus the entrant's own"
    )
    ci95_low = F.FloatField(allow_null=True, help_text="95% interval (null with fewer than 2 deal sets)")
    ci95_high = F.FloatField(allow_null=True)
    points_per_hand = F.FloatField()
    hands = F.IntegerField()


class StandingsOut(F.Serializer):
    tournament = F.IntegerField()
    status = F.ChoiceField(choices=STATUSES)
    deal_sets_complete = F.IntegerField(help_text="Deal sets every rotation of which has finished")
    entrants = StandingOut(many=True, help_text="Best first")


class TournamentTableOut(F.Serializer):
    id = F.IntegerField()
    deal_set = F.IntegerField()
    rotation = F.IntegerField()
    status = F.CharField()


class TournamentTablesOut(F.Serializer):
    results = TournamentTableOut(many=True, help_text="Rotation by rotation, deal set by deal set")


_APP = (Code.app_key_required,)
_ONE = (*_APP, Code.not_found)


def _app(request: Request) -> App:
    principal = request.user
    assert isinstance(principal, Principal)
    return principal.require_app(DENIED)


class TournamentsView(APIView):
    """GET /tournaments: the app's tournaments. POST /tournaments: a new one, answered at once (status
    `starting`) while a bulk task creates and starts its tables."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listTournaments",
        tag="tournaments",
        ok=TournamentListOut,
        errors=(*_APP, Code.invalid_cursor),
        params=[CURSOR],
    )
    def get(self, request: Request) -> Response:
        found = standings.tournaments_of(_app(request))
        return paged(request, found, standings.TOURNAMENT_PAGES, standings.body)

    @documented(ops.CREATE_TOURNAMENT, tag="tournaments", ok=TournamentOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_TOURNAMENT, 201)


class TournamentView(APIView):
    """GET /tournaments/{id}."""

    permission_classes = [IsPrincipal]

    @documented(op="getTournament", tag="tournaments", ok=TournamentOut, errors=_ONE)
    def get(self, request: Request, tournament_id: int) -> Response:
        return Response(standings.body(standings.tournament_of(_app(request), tournament_id)))


class StandingsView(APIView):
    """GET /tournaments/{id}/standings: over the complete deal sets so far; final once finished."""

    permission_classes = [IsPrincipal]

    @documented(op="getTournamentStandings", tag="tournaments", ok=StandingsOut, errors=_ONE)
    def get(self, request: Request, tournament_id: int) -> Response:
        found = standings.tournament_of(_app(request), tournament_id)
        return Response(
            {"tournament": found.pk, "status": standings.status(found), **standings.standings(found)}
        )


class TournamentTablesView(APIView):
    """GET /tournaments/{id}/tables: its tables so far (ordinary tables: GET /tables/{id} and so on)."""

    permission_classes = [IsPrincipal]

    @documented(op="listTournamentTables", tag="tournaments", ok=TournamentTablesOut, errors=_ONE)
    def get(self, request: Request, tournament_id: int) -> Response:
        found = standings.tournament_of(_app(request), tournament_id)
        rows = [
            {"id": t.pk, "deal_set": t.deal_set, "rotation": t.rotation, "status": t.status}
            for t in standings.tables_of(found)
        ]
        return Response({"results": rows})
