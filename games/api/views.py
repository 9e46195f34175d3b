"""REST endpoints of players, tables and their history: a write runs its operation (games/operations,
through games/api/run.py: perform); a read checks who may see the table and answers the viewer's
view of it (never the raw state)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.http.response import HttpResponseBase
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import accounts, reads, services
from games import operations as ops
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import (
    AFTER,
    CURSOR,
    ETAG,
    IF_NONE_MATCH,
    after_of,
    documented,
    paged,
    perform,
    principal_of,
)
from games.engine.state import PASS_COUNT
from games.errors import Code, ServiceError
from games.operations.fields import StrictChoiceField, StrictSerializer
from games.operations.tables import ActionIn

if TYPE_CHECKING:  # types only: the queries are in games.reads, games.services, games.accounts
    from games.models import Table


def _variant(kind: str) -> type[StrictSerializer]:
    """The body of one action type, for the OpenAPI document: ActionIn's `type` fixed to `kind`,
    its own field (required) and `expected_version`; a pass names exactly PASS_COUNT cards."""
    own = ActionIn.FIELDS_OF_TYPE[kind]
    field = ActionIn._declared_fields[own]
    # DRF keeps a field's constructor arguments to copy it (Field.__deepcopy__); its stubs leave them out.
    kwargs: dict[str, Any] = {**copy.deepcopy(field._kwargs), "required": True}  # type: ignore[attr-defined]
    if own == "cards":
        kwargs |= {"min_length": PASS_COUNT, "max_length": PASS_COUNT}
    fields = {
        "type": StrictChoiceField(choices=[kind]),
        own: type(field)(*field._args, **kwargs),  # type: ignore[attr-defined]
        "expected_version": ActionIn._declared_fields["expected_version"],
    }
    name = f"{kind.capitalize()}Action"
    return type(name, (StrictSerializer,), {"__doc__": f"A {kind} action.", "__module__": __name__, **fields})


# The action body as a union of its three types, told apart by `type`.
ACTION = PolymorphicProxySerializer(
    component_name="Action",
    serializers={kind: _variant(kind) for kind in ActionIn.FIELDS_OF_TYPE},
    resource_type_field_name="type",
)


class GuestsView(APIView):
    """POST /guests: a self-service guest player and its bearer token (no credentials needed)."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []

    @documented(ops.CREATE_GUEST, tag="players", ok=schemas.PlayerTokenOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_GUEST, 201)


class PlayersView(APIView):
    """POST /players (app key): a player for one of the app's users, with a bearer token."""

    permission_classes = [IsPrincipal]

    @documented(ops.CREATE_PLAYER, tag="players", ok=schemas.PlayerTokenOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_PLAYER, 201)


class PlayerTokensView(APIView):
    """POST /players/{id}/tokens (app key): a new bearer token for one of the app's players."""

    permission_classes = [IsPrincipal]

    @documented(ops.CREATE_PLAYER_TOKEN, tag="players", ok=schemas.TokenOut, status=201)
    def post(self, request: Request, player_id: int) -> HttpResponseBase:
        return perform(request, ops.CREATE_PLAYER_TOKEN, 201, player_id=player_id)


class TokenRevokeView(APIView):
    """POST /tokens/revoke: revoke the bearer token this request was made with."""

    permission_classes = [IsPrincipal]

    @documented(ops.REVOKE_TOKEN, tag="players", ok=None, status=204)
    def post(self, request: Request) -> HttpResponseBase:
        bearer = accounts.bearer_secret(request.headers.get("Authorization", "")) or ""
        return perform(request, ops.REVOKE_TOKEN, 204, bearer=bearer)


class TablesView(APIView):
    """GET /tables (filters: status, open_seats, mine) and POST /tables (create)."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listTables",
        tag="tables",
        ok=schemas.TablePageOut,
        params=[
            OpenApiParameter("status", str, enum=list(reads.TABLE_STATUSES)),
            OpenApiParameter("open_seats", bool),
            OpenApiParameter("mine", bool),
            CURSOR,
        ],
        errors=(Code.invalid_filter, Code.invalid_cursor),
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        tables = reads.filtered_tables(
            principal,
            status=request.query_params.get("status"),
            open_seats=_flag(request, "open_seats"),
            mine=_flag(request, "mine"),
        )
        return paged(request, tables, reads.TABLE_PAGES, _row)

    @documented(ops.CREATE_TABLE, tag="tables", ok=schemas.TableOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.CREATE_TABLE, 201)


def _row(t: Table) -> dict[str, Any]:
    """A table as the list shows it."""
    return {
        "id": t.pk,
        "status": t.status,
        "version": t.version,
        "options": t.options,
        "hand_number": t.hand_number,
        "deadline": reads.iso(t.deadline),
        "seats": t.seating,
        "open_seats": sum(1 for s in t.seating if s["player"] is None and s["bot"] is None),
        "visibility": t.visibility,
    }


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name, "")
    if raw.lower() in ("", "0", "false"):
        return False
    if raw.lower() in ("1", "true"):
        return True
    raise ServiceError("invalid_filter", f"{name} must be true or false", kind="malformed")


class TableView(APIView):
    """GET /tables/{id}: the table as the caller may see it."""

    permission_classes = [IsPrincipal]

    @documented(
        op="getTable",
        tag="tables",
        ok=schemas.TableOut,
        params=[IF_NONE_MATCH],
        errors=(Code.not_found,),
        more={304: OpenApiResponse(description="Not modified: the table is at the version of If-None-Match")},
        headers={200: {"ETag": ETAG}, 304: {"ETag": ETAG}},
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        table = services.table_seen(principal, table_id)
        version = reads.shown_version(table, principal)  # a delayed spectator's: the cut
        return _tagged(request, version, lambda: reads.table_body(table, principal))


def _tagged(request: Request, version: int, body: Callable[[], dict[str, Any]]) -> Response:
    """A table read with `ETag: W/"<version>"` (the same tag as the If-Match of writes takes): 304
    without a body when If-None-Match names it. What a version shows depends on who asks, hence
    `Vary: Authorization`; `private` keeps shared caches out."""
    etag = f'W/"{version}"'
    wanted = parse_etags(request.headers.get("If-None-Match", ""))
    if "*" in wanted or any(tag.removeprefix("W/") == etag.removeprefix("W/") for tag in wanted):
        response = Response(status=304)
    else:
        response = Response(body())
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"
    patch_vary_headers(response, ["Authorization"])
    return response


class JoinView(APIView):
    """POST /tables/{id}/join {position?, invite?}: take a seat; the game starts when the table is full."""

    permission_classes = [IsPrincipal]

    @documented(ops.JOIN_TABLE, tag="play", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.JOIN_TABLE, table_id=table_id)


class LeaveView(APIView):
    """POST /tables/{id}/leave: give up your seat before the game starts."""

    permission_classes = [IsPrincipal]

    @documented(ops.LEAVE_TABLE, tag="play", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.LEAVE_TABLE, table_id=table_id)


class BotsView(APIView):
    """POST /tables/{id}/bots {level?, position?}: seat a bot (an app key or any player of the
    table's app may)."""

    permission_classes = [IsPrincipal]

    @documented(ops.ADD_BOT, tag="play", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.ADD_BOT, table_id=table_id)


class StartView(APIView):
    """POST /tables/{id}/start {fill_with?}: start now, with bots of level `fill_with` in every
    open seat (a seated player or the app may start). A full table starts by itself."""

    permission_classes = [IsPrincipal]

    @documented(ops.START_TABLE, tag="play", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.START_TABLE, table_id=table_id)


class AbandonView(APIView):
    """POST /tables/{id}/abandon (app key): close an unfinished table for good."""

    permission_classes = [IsPrincipal]

    @documented(ops.ABANDON_TABLE, tag="tables", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.ABANDON_TABLE, table_id=table_id)


class BackView(APIView):
    """POST /tables/{id}/back: "I'm back": a seat marked away is yours again."""

    permission_classes = [IsPrincipal]

    @documented(ops.RECLAIM_SEAT, tag="play", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.RECLAIM_SEAT, table_id=table_id)


class RematchView(APIView):
    """POST /tables/{id}/rematch: after a finished game, ask for a rematch or accept it."""

    permission_classes = [IsPrincipal]

    @documented(ops.REQUEST_REMATCH, tag="play", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.REQUEST_REMATCH, table_id=table_id)


class ActionsView(APIView):
    """POST /tables/{id}/actions: pass {"type":"pass","cards":[...]}, play {"type":"play","card":"QS"}
    or moon {"type":"moon","choice":"add"}, for the caller's own seat. Headers: If-Match (the
    version you saw) and Idempotency-Key (a retry with the same key never acts twice and gets
    the first answer back)."""

    permission_classes = [IsPrincipal]
    in_turn_exempt = True  # a player's own-turn action is never rate limited

    @documented(ops.SUBMIT_ACTION, tag="play", ok=schemas.TableOut, request=ACTION)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        if not isinstance(request.data, dict):
            raise ServiceError("invalid_action", "an action is a JSON object with a 'type'", kind="malformed")
        return perform(request, ops.SUBMIT_ACTION, table_id=table_id)


class ScoresheetView(APIView):
    """GET /tables/{id}/scoresheet: one row per finished hand with points and running totals."""

    permission_classes = [IsPrincipal]

    @documented(op="getScoresheet", tag="history", ok=schemas.ScoresheetOut, errors=(Code.not_found,))
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        return Response(reads.scoresheet(services.table_seen(principal, table_id), principal))


class MovesView(APIView):
    """GET /tables/{id}/moves?after=N: the move log after sequence N (500 at most per page);
    another seat's pass shows no cards until its hand is over."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listMoves",
        tag="history",
        ok=schemas.MovesOut,
        params=[AFTER],
        errors=(Code.not_found, Code.invalid_after),
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        after = after_of(request)
        return Response(reads.moves_after(services.table_seen(principal, table_id), principal, after))


class EventsView(APIView):
    """GET /tables/{id}/events?after=N: what happened after sequence N, as the caller may see it
    (their own dealt, passed and received cards; everything public). Poll with after = the
    `version` of the previous answer; nothing is missed or repeated."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listTableEvents",
        tag="history",
        ok=schemas.EventsOut,
        params=[AFTER],
        errors=(Code.not_found, Code.invalid_after),
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        after = after_of(request)
        return Response(reads.events_after(services.table_seen(principal, table_id), principal, after))


class HandsView(APIView):
    """GET /tables/{id}/hands: every hand dealt so far, with its deal commitment; the seed of each
    finished hand (SHA-256 of the seed is the commitment)."""

    permission_classes = [IsPrincipal]

    @documented(op="listHands", tag="history", ok=schemas.HandsOut, errors=(Code.not_found,))
    def get(self, request: Request, table_id: int) -> Response:
        principal = principal_of(request)
        return Response({"hands": reads.hands(services.table_seen(principal, table_id), principal)})


class HandView(APIView):
    """GET /tables/{id}/hands/{n}: a hand's replay. Once it is over: the full record (deals,
    passes, every trick, points, seed) and all its moves; before: its moves as the caller may
    see them."""

    permission_classes = [IsPrincipal]

    @documented(op="getHand", tag="history", ok=schemas.HandReplayOut, errors=(Code.not_found,))
    def get(self, request: Request, table_id: int, number: int) -> Response:
        principal = principal_of(request)
        return Response(reads.hand_replay(services.table_seen(principal, table_id), principal, number))
