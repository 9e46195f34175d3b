"""Invite codes over REST: create, list and revoke a table's codes, preview and join a table by code."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import reads, services
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.parsing import StrictIntegerField, StrictSerializer, validated
from games.api.views import _IDEMPOTENCY, _PlayerAction, _principal, answer, documented
from games.errors import Code
from games.services.invites import EXPIRY_LIMITS, USES_LIMITS


class InviteIn(StrictSerializer):
    """A new invite code: how long it is valid and how many joins it allows (absent: no limit)."""

    expires_in = StrictIntegerField(
        required=False,
        min_value=EXPIRY_LIMITS[0],
        max_value=EXPIRY_LIMITS[1],
        help_text="Seconds the code stays valid (absent: until revoked)",
    )
    uses = StrictIntegerField(
        required=False,
        min_value=USES_LIMITS[0],
        max_value=USES_LIMITS[1],
        help_text="How many players may join with it (absent: any number)",
    )


class InviteOut(F.Serializer):
    """An invite code as its creators see it (the code itself only when it is created)."""

    hint = F.CharField(help_text="The code's first 4 characters, to tell codes apart")
    table = F.IntegerField()
    created_at = F.DateTimeField()
    expires_at = F.DateTimeField(allow_null=True, help_text="null: valid until revoked")
    uses_left = F.IntegerField(allow_null=True, help_text="null: no limit")


class InviteCreatedOut(InviteOut):
    code = F.CharField(help_text="The code: shown once (only its hash is stored)")


class InviteListOut(F.Serializer):
    invites = InviteOut(many=True, help_text="The codes still usable, oldest first")


class JoinByInviteIn(StrictSerializer):
    """Take a seat at the code's table: the lowest open one, or `position`."""

    position = StrictIntegerField(required=False, min_value=0, max_value=9)


_MANAGE = (Code.not_found, (Code.not_seated, 422))
_CODE = OpenApiParameter(
    "code",
    {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
    OpenApiParameter.PATH,
    description="An invite code (anything else matches no route: 404)",
)


class InvitesView(APIView):
    """GET and POST /tables/{id}/invites: a table's live codes, or a new code (by a seated player
    or the table's app; the table must be open)."""

    permission_classes = [IsPrincipal]

    @documented(op="listInvites", tag="tables", ok=InviteListOut, errors=_MANAGE)
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        found = services.invites_of(table_id=table_id, player=principal.player, scope=principal.app)
        return Response({"invites": found})

    @documented(
        op="createInvite",
        tag="tables",
        ok=InviteCreatedOut,
        request=InviteIn,
        status=201,
        errors=(*_MANAGE, Code.table_not_open),
    )
    def post(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        data = validated(InviteIn, request.data)
        created = services.invite_create(
            table_id=table_id,
            player=principal.player,
            scope=principal.app,
            expires_in=data.get("expires_in"),
            uses=data.get("uses"),
        )
        return Response(created, status=201)


class InviteView(APIView):
    """DELETE /tables/{id}/invites/{code}: revoke a code for good."""

    permission_classes = [IsPrincipal]

    @documented(
        op="revokeInvite",
        tag="tables",
        ok=None,
        status=204,
        params=[_CODE],
        errors=(*_MANAGE, Code.invite_invalid),
    )
    def delete(self, request: Request, table_id: int, code: str) -> Response:
        principal = _principal(request)
        services.invite_revoke(table_id=table_id, code=code, player=principal.player, scope=principal.app)
        return Response(status=204)


class InviteTableView(APIView):
    """GET /invites/{code}: the table a usable code joins, as a spectator sees it (so that whoever
    holds a code of a private table can look before joining)."""

    permission_classes = [IsPrincipal]

    @documented(
        op="getInviteTable",
        tag="tables",
        ok=schemas.TableOut,
        params=[_CODE],
        errors=(Code.not_found, Code.invite_invalid, Code.invite_expired),
    )
    def get(self, request: Request, code: str) -> Response:
        principal = _principal(request)
        return Response(reads.table_body(services.table_by_code(code, principal.app), principal))


class JoinByInviteView(_PlayerAction):
    """POST /invites/{code}/join: take a seat at the code's table with the code alone."""

    @documented(
        op="joinByInvite",
        tag="play",
        ok=schemas.TableOut,
        request=JoinByInviteIn,
        params=[_CODE, _IDEMPOTENCY],
        errors=(
            Code.invalid_idempotency_key,
            Code.idempotency_key_reused,
            Code.not_found,
            Code.table_not_open,
            Code.invalid_seat,
            Code.already_seated,
            Code.seat_taken,
            Code.table_full,
            Code.invite_invalid,
            Code.invite_expired,
            Code.player_token_required,
        ),
    )
    def post(self, request: Request, code: str) -> HttpResponseBase:
        principal = _principal(request)
        player = self.player(request)
        data = validated(JoinByInviteIn, request.data)
        return answer(
            request,
            lambda idem: services.join_by_invite(
                code=code, player=player, position=data.get("position"), scope=principal.app, idempotency=idem
            ),
        )
