"""REST: a hand's review for one seat (GET /tables/{id}/hands/{n}/review), computed on the hints lane."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import services
from games.api.auth import IsPrincipal
from games.api.run import documented, principal_of
from games.errors import Code, ServiceError
from games.services import review

SEAT = OpenApiParameter(
    "seat",
    {"type": "integer", "minimum": 0, "maximum": 9},
    description="The seat to review; default: your own (an app or a spectator must give one)",
)
LEVEL = OpenApiParameter(
    "level",
    {"type": "string", "enum": list(review.LEVELS), "default": review.DEFAULT_LEVEL},
    description="The bot level whose choices the seat's are set against",
)


class ReviewPassOut(F.Serializer):
    cards = F.ListField(child=F.CharField(), help_text="The three cards the seat passed")
    bot_cards = F.ListField(child=F.CharField(), help_text="The three the bot would have passed")
    points_lost = F.FloatField(
        allow_null=True,
        help_text="Estimated points the seat's pass cost against the bot's (0 when the same); "
        "null: the estimator did not weigh the seat's pass",
    )


class ReviewTrickOut(F.Serializer):
    trick = F.IntegerField(help_text="The trick's number in the hand, from 1")
    card = F.CharField(help_text="The card the seat played")
    bot_card = F.CharField(help_text="The card the bot would have played, from the same view")
    points_lost = F.FloatField(
        allow_null=True, help_text="Estimated points the seat's card cost against the bot's: 0 or more"
    )


class HandReviewOut(F.Serializer):
    table_id = F.IntegerField()
    hand = F.IntegerField()
    seat = F.IntegerField()
    level = F.ChoiceField(choices=list(review.LEVELS))
    pass_ = ReviewPassOut(allow_null=True, help_text="Null in a hand without a pass")
    tricks = ReviewTrickOut(many=True, help_text="One per trick the seat played to, in order")
    total_points_lost = F.FloatField(help_text="The sum of the points lost above")

    def get_fields(self) -> dict[str, F.Field]:
        fields = super().get_fields()
        fields["pass"] = fields.pop("pass_")  # a Python keyword as the wire's field name
        return fields


def seat_of(request: Request) -> int | None:
    raw = request.query_params.get("seat")
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 2):
        raise ServiceError("invalid_seat", "seat must be a seat number (0 or more)", kind="malformed")
    return int(raw)


class HandReviewView(APIView):
    """GET /tables/{id}/hands/{n}/review?seat=K&level=strong: per decision of the seat in hand n
    (its pass, its card in each trick), the bot's choice from the same view and the estimated
    points lost. A seated player reviews their own seat once the hand is over; after the game,
    anyone who may read the table reviews every seat (docs/bots-and-clocks.md#hand-review)."""

    permission_classes = [IsPrincipal]

    @documented(
        op="getHandReview",
        tag="history",
        ok=HandReviewOut,
        params=[SEAT, LEVEL],
        errors=(
            Code.not_found,
            Code.review_not_allowed,
            Code.invalid_seat,
            Code.invalid_bot_level,
        ),
    )
    def get(self, request: Request, table_id: int, number: int) -> Response:
        principal = principal_of(request)
        table = services.table_seen(principal, table_id)
        level = request.query_params.get("level") or review.DEFAULT_LEVEL
        return Response(review.review(principal, table, number, seat_of(request), level))
