"""REST: a finished game as one JSON document (GET /tables/{id}/export) or as a plain-text transcript."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import fields as F
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import exports, services
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import documented, principal_of
from games.errors import Code


class ExportSeatOut(serializers.Serializer[Any]):
    seat = F.IntegerField()
    name = F.CharField(allow_null=True)
    player = F.IntegerField(allow_null=True)
    bot = F.CharField(allow_null=True, help_text="Bot level, or null for a person")


class ExportHandOut(schemas.HandRecordOut):
    published_commitment = F.CharField(
        allow_null=True, help_text="The deal commitment as published when the hand was dealt"
    )


class ExportMoveOut(serializers.Serializer[Any]):
    seq = F.IntegerField(help_text="The table version this move produced")
    hand = F.IntegerField()
    kind = F.ChoiceField(choices=exports.MOVE_KINDS)
    seat = F.IntegerField(allow_null=True)
    action = F.DictField(
        allow_null=True, help_text="The pass, play or moon choice as submitted (null for other moves)"
    )
    at = F.DateTimeField()


class ExportHintsOut(serializers.Serializer[Any]):
    allowed = F.BooleanField(help_text="The table allowed hints (docs/hints.md)")
    given = F.DictField(
        child=F.IntegerField(), help_text='Hints given to each seat that asked, by seat number: {"0": 3}'
    )


class GameExportOut(serializers.Serializer[Any]):
    """A finished game: everything needed to check it with `python -m games.verify --export`."""

    format = F.ChoiceField(choices=[exports.FORMAT])
    table = F.IntegerField()
    options = schemas.TableOptionsOut()
    clocks = schemas.ClocksOut()
    game_seed = F.CharField(help_text="Every hand's seed derives from it (secret until the game is over)")
    seats = ExportSeatOut(many=True)
    started_at = F.DateTimeField(allow_null=True)
    finished_at = F.DateTimeField(allow_null=True)
    hands = ExportHandOut(many=True)
    totals = F.ListField(child=F.IntegerField())
    winners = F.ListField(child=F.IntegerField())
    moves = ExportMoveOut(many=True)
    hints = ExportHintsOut(help_text="Whether hints were allowed and how many each seat was given")


_ERRORS = (Code.not_found, (Code.not_finished, 422))
_CODES = schemas.error_codes(_ERRORS, body=False)


class ExportView(APIView):
    """GET /tables/{id}/export: the finished game as one document (deals, passes, tricks, points,
    moon choices, scores, seeds and commitments, the move log); 422 not_finished before the end."""

    permission_classes = [IsPrincipal]

    @documented(op="exportGame", tag="history", ok=GameExportOut, errors=_ERRORS)
    def get(self, request: Request, table_id: int) -> Response:
        return Response(exports.game_document(services.table_seen(principal_of(request), table_id)))


class TranscriptView(APIView):
    """GET /tables/{id}/transcript: the finished game as plain text a person can read."""

    permission_classes = [IsPrincipal]

    @extend_schema(
        operation_id="getTranscript",
        tags=["history"],
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, "The transcript, UTF-8 plain text"),
            **schemas.error_responses(_CODES),
        },
        extensions={"x-error-codes": {str(s): names for s, names in _CODES.items()}},
    )
    def get(self, request: Request, table_id: int) -> HttpResponse:
        document = exports.game_document(services.table_seen(principal_of(request), table_id))
        return HttpResponse(exports.transcript(document), content_type="text/plain; charset=utf-8")
