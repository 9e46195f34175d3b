"""Stream tickets (streams opened without an Authorization header) and `me`: who calls, in which language."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http.response import HttpResponseBase
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import messages, reads
from games import operations as ops
from games.accounts import Principal
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import documented, perform, principal_of

if TYPE_CHECKING:  # types only: the adapters never touch the ORM
    from games.models import Player

MY_TABLES = 100  # most tables listed by GET me (GET tables?mine=true lists them all)


class StreamTicketOut(F.Serializer):
    ticket = F.CharField(help_text="Opens this one stream as you, until expires_at; not a bearer token")
    expires_at = F.DateTimeField(help_text="The stream must be opened before then")
    url = F.URLField(help_text="The stream's URL with the ticket: give it to EventSource as it is")


class AppOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField()


class MyTableOut(F.Serializer):
    id = F.IntegerField()
    status = F.CharField()
    version = F.IntegerField()
    seat = F.IntegerField(allow_null=True)


class MeOut(F.Serializer):
    kind = F.ChoiceField(choices=["guest", "player", "app"], help_text="Who the credentials belong to")
    player = schemas.PlayerOut(allow_null=True, help_text="The player of a token; null for an app key")
    app = AppOut(allow_null=True, help_text="The player's or key's app; null for a guest")
    tables = MyTableOut(many=True, help_text="The player's unfinished tables, newest first (at most 100)")
    language = F.CharField(
        allow_null=True,
        help_text="The language the player chose for error details (en, mi, eu, ms or ky); empty: "
        "each request's Accept-Language chooses; null for an app key",
    )


class TableStreamTicketView(APIView):
    """POST /tables/{id}/stream-tickets: a ticket that opens this table's event stream as the
    caller (their seat's view, or a spectator's) for a client that cannot send an Authorization
    header, such as a browser's EventSource: `GET tables/{id}/stream?ticket=...`. It lasts 60 s
    and opens only this table's stream."""

    permission_classes = [IsPrincipal]

    @documented(ops.CREATE_TABLE_STREAM_TICKET, tag="streams", ok=StreamTicketOut, status=201)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(
            request,
            ops.CREATE_TABLE_STREAM_TICKET,
            201,
            table_id=table_id,
            absolute_uri=request.build_absolute_uri,
        )


class PlayerStreamTicketView(APIView):
    """POST /me/stream-tickets (player token): a ticket that opens the player's own stream,
    `GET me/stream?ticket=...`, for 60 s."""

    permission_classes = [IsPrincipal]

    @documented(ops.CREATE_PLAYER_STREAM_TICKET, tag="streams", ok=StreamTicketOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_PLAYER_STREAM_TICKET, 201, absolute_uri=request.build_absolute_uri)


class MeView(APIView):
    """GET /me: who the credentials belong to (a guest, an app's player, or an app), the player's
    unfinished tables and chosen language; no secret. PATCH /me (player token): set the language."""

    permission_classes = [IsPrincipal]

    @documented(op="getMe", tag="players", ok=MeOut)
    def get(self, request: Request) -> Response:
        return Response(_me(principal_of(request)))

    @documented(ops.UPDATE_ME, tag="players", ok=MeOut)
    def patch(self, request: Request) -> HttpResponseBase:
        def me(principal: Principal, player: Player) -> dict[str, Any]:
            messages.changed(request._request, player.language)  # this answer in the new language
            return _me(principal)

        return perform(request, ops.UPDATE_ME, then=me)


def _me(principal: Principal) -> dict[str, Any]:
    player, app = principal.player, principal.app
    return {
        "kind": "app" if player is None else "guest" if app is None else "player",
        "player": None if player is None else schemas.PlayerOut(player).data,
        "app": None if app is None else {"id": app.pk, "name": app.name},
        "tables": reads.seated_tables(principal, MY_TABLES),
        "language": None if player is None else player.language,
    }
