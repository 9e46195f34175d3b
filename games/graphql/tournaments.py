"""Duplicate tournaments over GraphQL (app key only): the `tournaments` and `tournament` queries, with
standings and tables as fields, and the `createTournament` mutation, which runs the operation of
games/operations/tournaments.py as REST does."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import graphene

from games import operations as ops
from games import services, standings
from games.errors import ServiceError
from games.graphql import pages
from games.graphql.base import OperationMutation, principal_of
from games.graphql.inputs import ClocksInput, TableOptionsInput, clocks_given, options_given
from games.graphql.types import Clocks, Error, Table, TableOptions, TableRef
from games.operations.tournaments import DENIED

if TYPE_CHECKING:  # types only: the queries are in games.standings
    from games.accounts import Principal
    from games.models import Tournament as TournamentModel

TournamentStatus = graphene.Enum(
    "TournamentStatus",
    [("starting", "starting"), ("running", "running"), ("finished", "finished")],
    description="A tournament's state: starting while its tables are being created (a creation answers "
    "before they exist), running once tablesCreated has them all (with people: the first one)",
)


def _tournament_caller(info: Any) -> Principal:
    """The app key a tournament query needs (app_key_required otherwise)."""
    principal = principal_of(info)
    principal.require_app(DENIED)
    return principal


class Entrant(graphene.ObjectType):
    player = graphene.Int(description="The player, or null for a bot level")
    bot = graphene.String(description="The bot level, or null for a player")
    name = graphene.String(required=True)


class Standing(graphene.ObjectType):
    """One entrant's line of the standings (docs/tournaments.md)."""

    entrant = graphene.Int(required=True, description="The entrant's index in `entrants`")
    player = graphene.Int()
    bot = graphene.String()
    name = graphene.String(required=True)
    rank = graphene.Int(required=True, description="1 is best; equal relative points share a rank")
    relative_points = graphene.Float(
        required=True,
        description="Mean points per hand the others took with the same cards, minus the entrant's own",
    )
    ci95_low = graphene.Float(description="95% interval (null with fewer than 2 deal sets)")
    ci95_high = graphene.Float()
    points_per_hand = graphene.Float(required=True)
    hands = graphene.Int(required=True)


class Standings(graphene.ObjectType):
    deal_sets_complete = graphene.Int(required=True, description="Deal sets all of whose rotations finished")
    entrants = graphene.List(graphene.NonNull(Standing), required=True, description="Best first")


class TournamentTable(graphene.ObjectType):
    """One of the tournament's tables: an ordinary table."""

    id = graphene.Int(required=True)
    deal_set = graphene.Int(required=True)
    rotation = graphene.Int(required=True)
    status = graphene.String(required=True)
    table = graphene.Field(Table, required=True, description="The table as you see it")


class Tournament(graphene.ObjectType):
    """A duplicate tournament: every deal set played once per rotation of the entrants."""

    id = graphene.Int(required=True)
    name = graphene.String(required=True)
    status = graphene.Field(TournamentStatus, required=True)
    entrants = graphene.List(graphene.NonNull(Entrant), required=True)
    options = graphene.Field(TableOptions, required=True, description="The tables' options")
    clocks = graphene.Field(Clocks, required=True)
    deal_sets = graphene.Int(required=True)
    seed = graphene.String(description="Null while running unless the app chose it")
    tables_total = graphene.Int(required=True)
    tables_created = graphene.Int(required=True, description="Its tables created so far")
    tables_finished = graphene.Int(required=True)
    created_at = graphene.String(required=True)
    finished_at = graphene.String()
    standings = graphene.Field(Standings, required=True, description="Final once it is finished")
    tables = graphene.List(graphene.NonNull(TournamentTable), required=True)

    @staticmethod
    def resolve_standings(root: dict[str, Any], info: Any) -> dict[str, Any]:
        return standings.standings(root["_model"])

    @staticmethod
    def resolve_tables(root: dict[str, Any], info: Any) -> list[dict[str, Any]]:
        principal = _tournament_caller(info)
        return [
            {
                "id": t.pk,
                "deal_set": t.deal_set,
                "rotation": t.rotation,
                "status": t.status,
                "table": TableRef(principal, t),
            }
            for t in standings.tables_of(root["_model"])
        ]


def _body(model: TournamentModel) -> dict[str, Any]:
    return {**standings.body(model), "_model": model}


class TournamentConnection(graphene.relay.Connection):
    class Meta:
        node = Tournament


class TournamentQuery(graphene.ObjectType):
    tournaments = graphene.List(
        graphene.NonNull(Tournament),
        required=True,
        description="App key: its newest 100 tournaments, newest first (tournamentPage pages them all)",
    )
    tournament_page = graphene.Field(
        TournamentConnection,
        required=True,
        **pages.args(),
        description="App key: its tournaments, newest first (errors: invalid_cursor)",
    )
    tournament = graphene.Field(
        Tournament, id=graphene.Int(required=True), description="App key: one of its tournaments"
    )

    @staticmethod
    def resolve_tournaments(root: Any, info: Any) -> list[dict[str, Any]]:
        return [_body(t) for t in standings.tournaments_of(_tournament_caller(info).app)[:100]]  # type: ignore[arg-type]

    @staticmethod
    def resolve_tournament_page(root: Any, info: Any, first: int | None, after: str | None = None) -> Any:
        rows = standings.tournaments_of(_tournament_caller(info).app)  # type: ignore[arg-type]
        return pages.connection(TournamentConnection, rows, standings.TOURNAMENT_PAGES, _body, first, after)

    @staticmethod
    def resolve_tournament(root: Any, info: Any, id: int) -> dict[str, Any] | None:
        app = _tournament_caller(info).app
        assert app is not None
        try:
            return _body(standings.tournament_of(app, id))
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise


class EntrantInput(graphene.InputObjectType):
    """Exactly one of `player` (a player of the app) and `bot` (a bot level)."""

    player = graphene.Int()
    bot = graphene.String()


class TournamentPayload(graphene.ObjectType):
    tournament = graphene.Field(Tournament, description="The new tournament (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)
    replayed = graphene.Boolean(
        required=True, description="A repeat of an idempotency key: the tournament as first created"
    )


class CreateTournament(OperationMutation):
    class Meta:
        operation = ops.CREATE_TOURNAMENT

    shaped = {
        "entrants": graphene.List(graphene.NonNull(EntrantInput), required=True),
        "options": TableOptionsInput(description="The tables' options (not firstHand nor hands)"),
        "clocks": ClocksInput(description="Turn clocks of the tables with people"),
    }
    Output = TournamentPayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        given = super().input_of(arguments)
        if "entrants" in given:
            given["entrants"] = [
                {k: v for k, v in dict(e).items() if v is not None} for e in given["entrants"]
            ]
        if "options" in given:
            given["options"] = options_given(given["options"])
        if "clocks" in given:
            given["clocks"] = clocks_given(given["clocks"])
        return given

    @classmethod
    def refused(cls, error: Error) -> TournamentPayload:
        return TournamentPayload(errors=[error], replayed=False)

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> TournamentPayload:
        """The tournament, with its model behind it for its standings and tables (a kept
        Idempotency-Key's answer: the tournament as first created)."""
        assert principal is not None and principal.app is not None
        body, replayed = out, False
        if isinstance(out, services.Outcome):
            assert out.response is not None
            body, replayed = json.loads(out.response[1]), out.replayed
        found = {**body, "_model": standings.tournament_of(principal.app, body["id"])}
        return TournamentPayload(tournament=found, errors=[], replayed=replayed)


class TournamentMutation(graphene.ObjectType):
    create_tournament = CreateTournament.Field()
