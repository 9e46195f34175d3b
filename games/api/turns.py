"""`GET me/turns`: the tables where it is the calling player's turn, soonest deadline first."""

from __future__ import annotations

from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import reads
from games.api.auth import IsPrincipal
from games.api.run import documented, principal_of
from games.errors import Code


class TurnOut(F.Serializer):
    table = F.IntegerField(help_text="The table's id")
    status = F.ChoiceField(choices=["passing", "playing", "moon_choice"], help_text="The table's status")
    version = F.IntegerField(help_text="The table's version (send it as If-Match to act)")
    seat = F.IntegerField(help_text="Your seat")
    action = F.ChoiceField(
        choices=["pass", "play", "moon"], help_text="What you owe: a pass, a card, or a moon choice"
    )
    deadline = F.DateTimeField(allow_null=True, help_text="When your clock runs out; null: no clock")
    clock = F.IntegerField(allow_null=True, help_text="The table's clock for this turn, in seconds")


class TurnsOut(F.Serializer):
    turns = TurnOut(
        many=True,
        help_text=f"Soonest deadline first, then the tables without a clock by id; at most {reads.MY_TURNS}",
    )
    more = F.BooleanField(help_text=f"There are more than {reads.MY_TURNS}: act on these first")


class MyTurnsView(APIView):
    """GET /me/turns (player token): every unfinished table where your seat is to act (a seat
    marked away is the server's to play), soonest deadline first: what a phone app shows as "your
    move at 3 tables". No card: open a table to see your hand."""

    permission_classes = [IsPrincipal]

    @documented(op="listMyTurns", tag="players", ok=TurnsOut, errors=(Code.player_token_required,))
    def get(self, request: Request) -> Response:
        return Response(reads.turns_of(principal_of(request)))
