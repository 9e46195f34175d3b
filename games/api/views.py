"""REST endpoints: each view parses input, checks who may see the table, calls one service, and
answers with the viewer's view of the table (never the raw state)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import accounts, services
from games.accounts import Principal
from games.api.auth import IsPrincipal
from games.engine import state_from_dict, view
from games.models import Move, Player, Table
from games.services import ServiceError


class ErrorOut(serializers.Serializer):
    """Every error body: a stable code, a human detail, and any structured fields of the error."""

    code = serializers.CharField()
    detail = serializers.CharField()


class ActionIn(serializers.Serializer):
    """A seat's action: a pass, a play or a moon choice (card notation as in RULES.md)."""

    type = serializers.ChoiceField(choices=["pass", "play", "moon"])
    card = serializers.CharField(required=False, help_text="play: one card, like QS or 10H")
    cards = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="pass: three cards"
    )
    choice = serializers.ChoiceField(choices=["subtract", "add"], required=False, help_text="moon choice")
    expected_version = serializers.IntegerField(required=False)


_ERRORS = dict.fromkeys((400, 401, 404, 409, 422), ErrorOut)


def documented(
    *,
    request: Any = None,
    ok: Any = OpenApiTypes.OBJECT,
    status: int = 200,
    params: Any = (),
    op: str | None = None,
) -> Any:
    """The OpenAPI description of one operation: its body, its answer and every error status."""
    return extend_schema(
        request=request, responses={status: ok, **_ERRORS}, parameters=list(params), operation_id=op
    )


_IF_MATCH = OpenApiParameter(
    "If-Match", str, OpenApiParameter.HEADER, required=False, description="The version you saw"
)
_IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Retry key: acts at most once",
)


def _principal(request: Request) -> Principal:
    user = request.user
    assert isinstance(user, Principal)
    return user


def _visible_tables(principal: Principal) -> QuerySet[Table]:
    """An app sees its own tables; a player sees its app's tables (guests: the guest tables)."""
    return Table.objects.filter(app=principal.app)


def _table(principal: Principal, table_id: int) -> Table:
    table = _visible_tables(principal).filter(pk=table_id).first()
    if table is None:  # another app's table is indistinguishable from no table
        raise ServiceError("not_found", "no such table", kind="not_found")
    return table


def _seat_of(table: Table, principal: Principal) -> int | None:
    if principal.player is None:
        return None
    seat = table.seats.filter(player=principal.player).first()
    return None if seat is None else seat.position


def _expected_version(request: Request) -> int | None:
    """The version the client saw: the If-Match header, else an `expected_version` field."""
    raw = request.headers.get("If-Match")
    if raw is None and isinstance(request.data, dict):
        raw = request.data.get("expected_version")
    if raw is None or raw == "":
        return None
    try:
        return int(str(raw).strip().strip('"'))
    except ValueError as exc:
        msg = "If-Match / expected_version must be a version number"
        raise ServiceError("invalid_version", msg, kind="malformed") from exc


def table_body(table: Table, principal: Principal) -> dict[str, Any]:
    """The table as this principal may see it: seats, status, version and the engine's view."""
    seat = _seat_of(table, principal)
    body: dict[str, Any] = {
        "id": table.pk,
        "status": table.status,
        "version": table.version,
        "options": table.options,
        "seats": [
            {
                "position": s.position,
                "player": s.player_id,
                "name": s.player.name if s.player else None,
                "bot": s.bot_level or None,
            }
            for s in table.seats.select_related("player")
        ],
        "your_seat": seat,
        "game": None,
    }
    if table.state is not None:
        body["game"] = view(state_from_dict(table.state), seat)
    return body


class PlayerOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    external_id = serializers.CharField()


class GuestsView(APIView):
    """POST /guests: a self-service guest player and its bearer token (no credentials needed)."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []

    class GuestIn(serializers.Serializer):
        name = serializers.CharField(max_length=64)

    @documented(request=GuestIn, status=201)
    def post(self, request: Request) -> Response:
        data = self.GuestIn(data=request.data)
        data.is_valid(raise_exception=True)
        player, token = accounts.player_create(app=None, name=data.validated_data["name"])
        return Response({"player": PlayerOut(player).data, "token": token}, status=201)


class PlayersView(APIView):
    """POST /players (app key): a player for one of the app's users, with a bearer token."""

    permission_classes = [IsPrincipal]

    class PlayerIn(serializers.Serializer):
        name = serializers.CharField(max_length=64)
        external_id = serializers.CharField(max_length=128, required=False, default="")

    @documented(request=PlayerIn, status=201)
    def post(self, request: Request) -> Response:
        principal = _principal(request)
        if not principal.is_app:
            raise ServiceError("app_key_required", "only an app key can create players", kind="rules")
        data = self.PlayerIn(data=request.data)
        data.is_valid(raise_exception=True)
        player, token = accounts.player_create(app=principal.app, **data.validated_data)
        return Response({"player": PlayerOut(player).data, "token": token}, status=201)


class PlayerTokensView(APIView):
    """POST /players/{id}/tokens (app key): a new bearer token for one of the app's players."""

    permission_classes = [IsPrincipal]

    @documented(status=201)
    def post(self, request: Request, player_id: int) -> Response:
        principal = _principal(request)
        player = Player.objects.filter(pk=player_id, app=principal.app).first() if principal.is_app else None
        if player is None:
            raise ServiceError("not_found", "no such player", kind="not_found")
        return Response({"token": accounts.token_issue(player=player)}, status=201)


class TokenRevokeView(APIView):
    """POST /tokens/revoke: revoke the bearer token this request was made with."""

    permission_classes = [IsPrincipal]

    @documented(ok=None, status=204)
    def post(self, request: Request) -> Response:
        secret = request.headers.get("Authorization", "").partition(" ")[2].strip()
        if not accounts.token_revoke(token=secret):
            raise ServiceError("not_a_player_token", "only a player token can be revoked here", kind="rules")
        return Response(status=204)


class TablePagination(CursorPagination):
    ordering = "-created_at"
    page_size = 20


class TablesView(APIView):
    """GET /tables (filters: status, open_seats, mine) and POST /tables (create)."""

    permission_classes = [IsPrincipal]

    class TableIn(serializers.Serializer):
        options = serializers.DictField(required=False, default=dict)
        bots = serializers.DictField(child=serializers.CharField(max_length=32), required=False, default=dict)

    @documented(
        params=[
            OpenApiParameter("status", str),
            OpenApiParameter("open_seats", bool),
            OpenApiParameter("mine", bool),
            OpenApiParameter("cursor", str),
        ],
        op="v1_tables_list",
    )
    def get(self, request: Request) -> Response:
        principal = _principal(request)
        tables = _visible_tables(principal)
        status = request.query_params.get("status")
        if status:
            tables = tables.filter(status=status)
        if request.query_params.get("open_seats") in ("1", "true"):
            tables = tables.annotate(
                free=Count("seats", filter=Q(seats__player__isnull=True, seats__bot_level=""))
            ).filter(status=Table.Status.OPEN, free__gt=0)
        if request.query_params.get("mine") in ("1", "true") and principal.player is not None:
            tables = tables.filter(seats__player=principal.player)
        paginator = TablePagination()
        page = paginator.paginate_queryset(tables.prefetch_related("seats"), request, view=self)
        assert page is not None
        rows = [
            {
                "id": t.pk,
                "status": t.status,
                "version": t.version,
                "options": t.options,
                "hand_number": t.hand_number,
                "open_seats": sum(1 for s in t.seats.all() if not s.taken),
            }
            for t in page
        ]
        return paginator.get_paginated_response(rows)

    @documented(request=TableIn, status=201)
    def post(self, request: Request) -> Response:
        principal = _principal(request)
        data = self.TableIn(data=request.data)
        data.is_valid(raise_exception=True)
        bots: dict[int, str] = {}
        for key, level in data.validated_data["bots"].items():
            try:
                bots[int(key)] = level
            except ValueError as exc:
                raise ServiceError(
                    "invalid_seat", f"bot seat {key!r} is not a number", kind="malformed"
                ) from exc
        table = services.table_create(options=data.validated_data["options"], bots=bots, app=principal.app)
        return Response(table_body(table, principal), status=201)


class TableView(APIView):
    """GET /tables/{id}: the table as the caller may see it."""

    permission_classes = [IsPrincipal]

    @documented()
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        return Response(table_body(_table(principal, table_id), principal))


class _PlayerAction(APIView):
    permission_classes = [IsPrincipal]

    def player(self, request: Request) -> Player:
        principal = _principal(request)
        if principal.player is None:
            raise ServiceError(
                "player_token_required", "act with a player's token, not an app key", kind="rules"
            )
        return principal.player


class JoinView(_PlayerAction):
    """POST /tables/{id}/join {position?}: take a seat; the game starts when the table is full."""

    class JoinIn(serializers.Serializer):
        position = serializers.IntegerField(required=False, min_value=0, max_value=9)

    @documented(request=JoinIn, params=[_IF_MATCH])
    def post(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        player = self.player(request)
        data = self.JoinIn(data=request.data)
        data.is_valid(raise_exception=True)
        table = _table(principal, table_id)
        out = services.seat_join(
            table_id=table.pk,
            player=player,
            position=data.validated_data.get("position"),
            expected_version=_expected_version(request),
        )
        return Response(table_body(out.table, principal))


class LeaveView(_PlayerAction):
    """POST /tables/{id}/leave: give up your seat before the game starts."""

    @documented(params=[_IF_MATCH])
    def post(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        player = self.player(request)
        table = _table(principal, table_id)
        out = services.seat_leave(
            table_id=table.pk, player=player, expected_version=_expected_version(request)
        )
        return Response(table_body(out.table, principal))


class BotsView(APIView):
    """POST /tables/{id}/bots {level?, position?}: seat a bot."""

    permission_classes = [IsPrincipal]

    class BotIn(serializers.Serializer):
        level = serializers.CharField(max_length=32, required=False, default="random")
        position = serializers.IntegerField(required=False, min_value=0, max_value=9)

    @documented(request=BotIn, params=[_IF_MATCH])
    def post(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        data = self.BotIn(data=request.data)
        data.is_valid(raise_exception=True)
        table = _table(principal, table_id)
        out = services.bot_add(
            table_id=table.pk,
            level=data.validated_data["level"],
            position=data.validated_data.get("position"),
            expected_version=_expected_version(request),
        )
        return Response(table_body(out.table, principal))


class ActionsView(_PlayerAction):
    """POST /tables/{id}/actions: pass {"type":"pass","cards":[...]}, play {"type":"play","card":"QS"}
    or moon {"type":"moon","choice":"add"}, for the caller's own seat. Headers: If-Match (the
    version you saw) and Idempotency-Key (a retry with the same key never acts twice)."""

    @documented(request=ActionIn, params=[_IF_MATCH, _IDEMPOTENCY])
    def post(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        self.player(request)
        table = _table(principal, table_id)
        seat = _seat_of(table, principal)
        if seat is None:
            raise ServiceError("not_seated", "you have no seat at this table", kind="rules")
        if not isinstance(request.data, dict):
            raise ServiceError("invalid_action", "an action is a JSON object with a 'type'", kind="malformed")
        action = {k: v for k, v in request.data.items() if k != "expected_version"}
        out = services.action_submit(
            table_id=table.pk,
            position=seat,
            action=action,
            expected_version=_expected_version(request),
            idempotency_key=request.headers.get("Idempotency-Key", "")[:128],
        )
        body = table_body(out.table, principal)
        body["replayed"] = out.replayed
        return Response(body)


class ScoresheetView(APIView):
    """GET /tables/{id}/scoresheet: one row per finished hand with points and running totals."""

    permission_classes = [IsPrincipal]

    @documented()
    def get(self, request: Request, table_id: int) -> Response:
        table = _table(_principal(request), table_id)
        rows: dict[int, dict[str, Any]] = {}
        for r in table.score_rows.all():
            row = rows.setdefault(r.hand_number, {"hand": r.hand_number, "points": [], "totals": []})
            row["points"].append(r.points)
            row["totals"].append(r.total)
        return Response({"hands": list(rows.values())})


class MovesView(APIView):
    """GET /tables/{id}/moves?after=N: the move log after sequence N. A pass shows its cards only
    to the seat that passed, until that hand is over."""

    permission_classes = [IsPrincipal]

    @documented(params=[OpenApiParameter("after", int)])
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        table = _table(principal, table_id)
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError as exc:
            raise ServiceError("invalid_after", "after must be a sequence number", kind="malformed") from exc
        seat = _seat_of(table, principal)
        finished = table.status == Table.Status.FINISHED
        out = []
        for m in table.moves.filter(seq__gt=after).order_by("seq")[:500]:
            payload = m.payload
            if (
                m.kind == Move.Kind.PASS
                and m.position != seat
                and not finished
                and m.hand >= table.hand_number
            ):
                payload = {"type": "pass"}
            out.append(
                {"seq": m.seq, "hand": m.hand, "kind": m.kind, "position": m.position, "payload": payload}
            )
        return Response({"moves": out, "version": table.version})
