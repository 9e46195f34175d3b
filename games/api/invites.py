"""Invite codes over REST: create, list and revoke a table's codes, preview and join a table by code."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import operations as ops
from games import reads, services
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, perform, principal_of
from games.errors import Code
from games.operations.invites import MANAGE
from games.services.invites import INVITE_PAGES, invite_body


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
    next = F.URLField(allow_null=True, help_text="The next page (null on the last)")
    previous = F.URLField(allow_null=True, help_text="The page before (null on the first)")
    invites = InviteOut(many=True, help_text="The codes still usable, oldest first (at most INVITES_MAX: 20)")


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

    @documented(
        op="listInvites",
        tag="tables",
        ok=InviteListOut,
        errors=(*MANAGE, Code.invalid_cursor),
        params=[CURSOR],
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        found = services.invites_of(table_id=table_id, player=principal.player, scope=principal.app)
        return paged(request, found, INVITE_PAGES, invite_body, key="invites")

    @documented(ops.CREATE_INVITE, tag="tables", ok=InviteCreatedOut, status=201)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.CREATE_INVITE, 201, table_id=table_id)


class InviteView(APIView):
    """DELETE /tables/{id}/invites/{code}: revoke a code for good."""

    permission_classes = [IsPrincipal]

    @documented(ops.REVOKE_INVITE, tag="tables", ok=None, status=204, body=False, params=[_CODE])
    def delete(self, request: Request, table_id: int, code: str) -> HttpResponseBase:
        return perform(request, ops.REVOKE_INVITE, 204, body=False, table_id=table_id, code=code)


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
        principal = principal_of(request)
        return Response(reads.table_body(services.table_by_code(code, principal.app), principal))


class JoinByInviteView(APIView):
    """POST /invites/{code}/join: take a seat at the code's table with the code alone."""

    permission_classes = [IsPrincipal]

    @documented(ops.JOIN_BY_INVITE, tag="play", ok=schemas.TableOut, params=[_CODE])
    def post(self, request: Request, code: str) -> HttpResponseBase:
        return perform(request, ops.JOIN_BY_INVITE, code=code)
