"""Stream tickets (streams opened without an Authorization header) and `me`: who calls, in which language."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import accounts, messages, reads
from games.accounts import Principal
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import documented
from games.errors import Code
from games.operations.fields import EmptyIn, StrictCharField, StrictSerializer, validated

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


class MeIn(StrictSerializer):
    """What a player may change about themselves: the language of their error details."""

    language = StrictCharField(
        required=False,
        allow_blank=True,
        help_text="en, mi, eu, ms or ky: error details in that language, whatever Accept-Language "
        "says; empty: follow Accept-Language again. Another value: 400 invalid_language",
    )


def principal_of(request: Request) -> Principal:
    user = request.user
    assert isinstance(user, Principal)
    return user


def _ticket(request: Request, principal: Principal, stream: str, path: str) -> Response:
    validated(EmptyIn, request.data)
    ticket, expires = accounts.stream_ticket(principal, stream)
    url = request.build_absolute_uri(f"{path}?{urlencode({'ticket': ticket})}")
    return Response({"ticket": ticket, "expires_at": expires.isoformat(), "url": url}, status=201)


class TableStreamTicketView(APIView):
    """POST /tables/{id}/stream-tickets: a ticket that opens this table's event stream as the
    caller (their seat's view, or a spectator's) for a client that cannot send an Authorization
    header, such as a browser's EventSource: `GET tables/{id}/stream?ticket=...`. It lasts 60 s
    and opens only this table's stream."""

    permission_classes = [IsPrincipal]

    @documented(
        op="createTableStreamTicket",
        tag="streams",
        ok=StreamTicketOut,
        request=EmptyIn,
        status=201,
        errors=(Code.not_found,),
    )
    def post(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        reads.table_for(principal, table_id)  # a table the caller cannot see: 404, no ticket
        return _ticket(request, principal, f"table:{table_id}", f"/api/v1/tables/{table_id}/stream")


class PlayerStreamTicketView(APIView):
    """POST /me/stream-tickets (player token): a ticket that opens the player's own stream,
    `GET me/stream?ticket=...`, for 60 s."""

    permission_classes = [IsPrincipal]

    @documented(
        op="createPlayerStreamTicket",
        tag="streams",
        ok=StreamTicketOut,
        request=EmptyIn,
        status=201,
        errors=(Code.player_token_required,),
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        principal.require_player("a player stream needs a player's token")
        return _ticket(request, principal, "me", "/api/v1/me/stream")


class MeView(APIView):
    """GET /me: who the credentials belong to (a guest, an app's player, or an app), the player's
    unfinished tables and chosen language; no secret. PATCH /me (player token): set the language."""

    permission_classes = [IsPrincipal]

    @documented(op="getMe", tag="players", ok=MeOut)
    def get(self, request: Request) -> Response:
        return Response(_me(principal_of(request)))

    @documented(
        op="updateMe",
        tag="players",
        ok=MeOut,
        request=MeIn,
        errors=(Code.invalid_language, Code.player_token_required),
    )
    def patch(self, request: Request) -> Response:
        principal = principal_of(request)
        player = principal.require_player("only a player has a language: use a player's token")
        data = validated(MeIn, request.data)
        if "language" in data:
            accounts.set_language(player, data["language"])
            messages.changed(request._request, player.language)
        return Response(_me(principal))


def _me(principal: Principal) -> dict[str, Any]:
    player, app = principal.player, principal.app
    return {
        "kind": "app" if player is None else "guest" if app is None else "player",
        "player": None if player is None else schemas.PlayerOut(player).data,
        "app": None if app is None else {"id": app.pk, "name": app.name},
        "tables": reads.seated_tables(principal, MY_TABLES),
        "language": None if player is None else player.language,
    }
