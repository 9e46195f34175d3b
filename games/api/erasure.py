"""REST endpoints of erasure: DELETE /players/{id} (app key) and DELETE /me (player token), each
answering 200 with what was erased and when, the same on every repeat."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.views import APIView

from games import operations as ops
from games.api import tickets
from games.api.auth import IsPrincipal
from games.api.run import documented, perform


class ErasedOut(F.Serializer):
    id = F.IntegerField(help_text="The erased player")
    erased = F.BooleanField(help_text="Always true")
    erased_at = F.DateTimeField(help_text="When they were erased: the same on every repeat")


class PlayerView(APIView):
    """DELETE /players/{id} (app key): erase one of your players (docs/privacy.md#erasure)."""

    permission_classes = [IsPrincipal]

    @documented(ops.ERASE_PLAYER, tag="players", ok=ErasedOut, body=False)
    def delete(self, request: Request, player_id: int) -> HttpResponseBase:
        return perform(request, ops.ERASE_PLAYER, body=False, player_id=player_id)


class MeView(tickets.MeView):
    """GET /me and PATCH /me (games.api.tickets), and DELETE /me (player token): erase yourself."""

    @documented(ops.ERASE_ME, tag="players", ok=ErasedOut, body=False)
    def delete(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.ERASE_ME, body=False)
