"""REST: the hint for the caller's seat (GET /tables/{id}/hint?level=strong), computed on the hints
lane from the seat's view only (games/services/hints.py, docs/hints.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import services
from games.api.auth import IsPrincipal
from games.api.run import documented, principal_of
from games.errors import Code
from games.services import hints, review

LEVEL = OpenApiParameter(
    "level",
    {"type": "string", "enum": list(review.LEVELS), "default": review.DEFAULT_LEVEL},
    description="The bot level whose move and estimates the hint gives",
)


class HintActionOut(F.Serializer):
    type = F.ChoiceField(choices=["pass", "play", "moon"])
    card = F.CharField(required=False, help_text="play: the card")
    cards = F.ListField(child=F.CharField(), required=False, help_text="pass: the cards")
    choice = F.ChoiceField(choices=["subtract", "add"], required=False, help_text="moon: the choice")


class HintOptionOut(F.Serializer):
    action = HintActionOut()
    points = F.FloatField(help_text="Estimated points the seat takes in the rest of the hand after it")


class HintOut(F.Serializer):
    table_id = F.IntegerField()
    version = F.IntegerField(help_text="The table's version the hint is for")
    hand = F.IntegerField()
    seat = F.IntegerField()
    level = F.ChoiceField(choices=list(review.LEVELS))
    phase = F.CharField(help_text="passing, playing or moon_choice")
    choice = HintActionOut(help_text="The action the bot level would take")
    options = HintOptionOut(many=True, help_text="Every legal action considered, best (fewest points) first")
    think_ms = F.IntegerField(help_text="Milliseconds the hints lane computed it for")


class HintView(APIView):
    """GET /tables/{id}/hint?level=strong: for the seated player whose turn it is, at a table
    created with hints, the move the bot level would make and every legal action's estimated points
    for the rest of the hand, from the seat's own view only (docs/hints.md)."""

    permission_classes = [IsPrincipal]

    @documented(
        op="getTableHint",
        tag="tables",
        ok=HintOut,
        params=[LEVEL],
        errors=(
            Code.not_found,
            Code.player_token_required,
            Code.hints_not_allowed,
            Code.not_seated,
            Code.not_started,
            Code.not_your_turn,
            Code.invalid_bot_level,
            Code.rate_limited,
            Code.service_unavailable,
        ),
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        table = services.table_seen(principal, table_id)
        return Response(hints.hint(principal, table, request.query_params.get("level") or None))
