"""GraphQL: a finished game as one typed document (`tableExport`) and as a transcript (`tableTranscript`)."""

from __future__ import annotations

from typing import Any

import graphene

from games import exports
from games.graphql.enums import SEAT_LEVEL, MoveKind
from games.graphql.events import HandRecord
from games.graphql.types import Clocks, MovePayload, TableOptions


class ExportSeat(graphene.ObjectType):
    seat = graphene.Int(required=True)
    name = graphene.String()
    player = graphene.Int(description="The player's id; null for a bot")
    bot = graphene.String(description=f"{SEAT_LEVEL}; null for a person")


class ExportHand(HandRecord):
    """A hand's full record, with the commitment published when it was dealt."""

    published_commitment = graphene.String(description="The deal commitment as published at the deal")


class ExportMove(graphene.ObjectType):
    seq = graphene.Int(required=True, description="The table version this move produced")
    hand = graphene.Int(required=True)
    kind = graphene.Field(MoveKind, required=True)
    seat = graphene.Int()
    action = graphene.Field(MovePayload, description="The pass, play or moon choice as submitted")
    at = graphene.String(required=True, description="ISO 8601 time of the move")


class GameExport(graphene.ObjectType):
    """A finished game: everything needed to check it with `python -m games.verify --export`
    (the REST document, docs/exports.md)."""

    format = graphene.String(required=True, description=f"Always {exports.FORMAT!r}")
    table = graphene.Int(required=True)
    options = graphene.Field(TableOptions, required=True)
    clocks = graphene.Field(Clocks, required=True)
    game_seed = graphene.String(required=True, description="Every hand's seed derives from it")
    seats = graphene.List(graphene.NonNull(ExportSeat), required=True)
    started_at = graphene.String()
    finished_at = graphene.String()
    hands = graphene.List(graphene.NonNull(ExportHand), required=True)
    totals = graphene.List(graphene.NonNull(graphene.Int), required=True)
    winners = graphene.List(graphene.NonNull(graphene.Int), required=True)
    moves = graphene.List(graphene.NonNull(ExportMove), required=True)


def document(table: Any) -> dict[str, Any]:
    """The export document of a table the caller may see (ServiceError not_finished before the end)."""
    return exports.game_document(table)


def transcript(table: Any) -> str:
    return exports.transcript(exports.game_document(table))
