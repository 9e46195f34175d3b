"""REST endpoints: each view parses input, checks who may see the table, calls one service, and
answers with the viewer's view of the table (never the raw state)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import accounts, bot_timing, reads, services
from games.accounts import Principal
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.pagination import CheckedCursorPagination
from games.api.parsing import (
    EmptyIn,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictSerializer,
    VersionedIn,
    validated,
)
from games.engine.state import PASS_COUNT
from games.errors import Code, ServiceError

if TYPE_CHECKING:  # types only: the queries are in games.reads, games.services, games.accounts
    from games.models import Player


class ActionIn(StrictSerializer):
    """A seat's action: a pass, a play or a moon choice (card notation as in docs/rules.md)."""

    type = StrictCharField(max_length=16, help_text="pass, play or moon (another: 400 invalid_action)")
    card = StrictCharField(required=False, max_length=8, help_text="play: one card, like QS or 10H")
    cards = serializers.ListField(
        child=StrictCharField(max_length=8), required=False, max_length=8, help_text="pass: three cards"
    )
    choice = StrictChoiceField(choices=["subtract", "add"], required=False, help_text="moon choice")
    expected_version = StrictIntegerField(required=False, min_value=0)

    FIELDS_OF_TYPE = {"play": "card", "pass": "cards", "moon": "choice"}

    @classmethod
    def check(cls, attrs: dict[str, Any]) -> None:
        """A field of another action type is refused (a play carries no `cards`)."""
        own = cls.FIELDS_OF_TYPE.get(attrs["type"])  # an unknown type: the engine's invalid_action
        for other in cls.FIELDS_OF_TYPE.values():
            if own is not None and other != own and other in attrs:
                raise serializers.ValidationError({other: [f"not part of a {attrs['type']} action"]})


def _variant(kind: str) -> type[StrictSerializer]:
    """The body of one action type, for the OpenAPI document: ActionIn's `type` fixed to `kind`,
    its own field (required) and `expected_version`; a pass names exactly PASS_COUNT cards."""
    own = ActionIn.FIELDS_OF_TYPE[kind]
    field = ActionIn._declared_fields[own]
    kwargs: dict[str, Any] = {**copy.deepcopy(field._kwargs), "required": True}
    if own == "cards":
        kwargs |= {"min_length": PASS_COUNT, "max_length": PASS_COUNT}
    fields = {
        "type": StrictChoiceField(choices=[kind]),
        own: type(field)(*field._args, **kwargs),
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

_WRITE = (Code.invalid_version, Code.stale_version)  # If-Match / expected_version
_IDEMPOTENT = (Code.invalid_idempotency_key, Code.idempotency_key_reused)  # Idempotency-Key
_SEATS = (*_WRITE, *_IDEMPOTENT, Code.not_found, Code.table_not_open)  # a change to an open table


def documented(
    *,
    op: str,
    tag: str,
    request: Any = None,
    ok: Any = OpenApiTypes.OBJECT,
    status: int = 200,
    params: Any = (),
    errors: tuple[Code | tuple[Code, int], ...] = (),
    auth: bool = True,
    more: dict[int, Any] | None = None,
    headers: dict[int, dict[str, Any]] | None = None,
) -> Any:
    """The OpenAPI description of one operation: its id and tag, its body, its answer, and every
    error it can answer with their codes (games/api/schemas.py: error_codes); `more` answers
    (a 304) and the `headers` of answers by status (the hook schemas.error_details adds them)."""
    codes = schemas.error_codes(errors, body=request is not None, auth=auth)
    extensions: dict[str, Any] = {"x-error-codes": {str(s): names for s, names in codes.items()}}
    if headers:
        extensions["x-response-headers"] = {str(s): h for s, h in headers.items()}
    return extend_schema(
        operation_id=op,
        tags=[tag],
        request=request,
        responses={status: ok, **(more or {}), **schemas.error_responses(codes)},
        parameters=list(params),
        extensions=extensions,
    )


_IF_MATCH = OpenApiParameter(
    "If-Match",
    {"type": "string", "pattern": '^(W/)?"?[0-9]{1,18}"?$'},
    OpenApiParameter.HEADER,
    required=False,
    description="The version you saw",
)
_IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag of the table as you last read it (W/"<version>"): 304, no body, when unchanged',
)
_ETAG = {
    "schema": {"type": "string"},
    "description": 'W/"<version>": send it back as If-None-Match to read again, as If-Match to act',
}
_IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "pattern": "^[!-~]([ -~]{0,126}[!-~])?$"},
    OpenApiParameter.HEADER,
    required=False,
    description="Retry key (1 to 128 printable ASCII characters): acts at most once",
)


_AFTER = OpenApiParameter(
    "after",
    {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
    description="A sequence number up to the table's version (beyond it: 400 invalid_after)",
)


def _principal(request: Request) -> Principal:
    user = request.user
    assert isinstance(user, Principal)
    return user


def _expected_version(request: Request, body: dict[str, Any] | None = None) -> int | None:
    """The version the client saw: the If-Match header, else the body's `expected_version`."""
    raw = request.headers.get("If-Match")
    if raw is None:
        return (body or {}).get("expected_version")
    text = raw.strip().removeprefix("W/").strip('"')
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        msg = "If-Match / expected_version must be a version number"
        raise ServiceError("invalid_version", msg, kind="malformed")
    return int(text)


def _after(request: Request) -> int:
    raw = request.query_params.get("after", "0")
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise ServiceError("invalid_after", "after must be a sequence number (0 or more)", kind="malformed")
    return int(raw)


def _idempotency(
    request: Request, principal: Principal, status: int, body: bool = True
) -> services.Idempotency | None:
    """The request's Idempotency-Key, with what identifies the request (its method, path,
    If-Match and body: none for an operation without one) and how its answer is kept."""
    what = f"{request.method} {request.path}\n{request.headers.get('If-Match', '')}"
    return services.Idempotency.for_table(
        principal, request.headers.get("Idempotency-Key"), what, request.data if body else {}, status
    )


def answer(
    request: Request,
    call: Callable[[services.Idempotency | None], services.Outcome],
    status: int = 200,
    *,
    reads_body: bool = True,
) -> HttpResponseBase:
    """Run one service call and answer with the caller's view of the table. With an
    Idempotency-Key the answer is the stored first answer, byte for byte, on every repeat
    (marked by the header `Idempotent-Replayed: true`)."""
    principal = _principal(request)
    out = call(_idempotency(request, principal, status, reads_body))
    if out.response is not None:
        code, body = out.response
        response = HttpResponse(body, status=code, content_type="application/json")
        response["Idempotent-Replayed"] = "true" if out.replayed else "false"
        return response
    assert out.table is not None
    return Response(reads.table_body(out.table, principal, out.state), status=status)


class GuestsView(APIView):
    """POST /guests: a self-service guest player and its bearer token (no credentials needed)."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []

    @extend_schema_serializer(component_name="CreateGuest")
    class GuestIn(StrictSerializer):
        """A guest player: only a name."""

        name = StrictCharField(max_length=64)

    @documented(
        op="createGuest", tag="players", ok=schemas.PlayerTokenOut, request=GuestIn, status=201, auth=False
    )
    def post(self, request: Request) -> Response:
        data = validated(self.GuestIn, request.data)
        player, token = accounts.player_create(app=None, name=data["name"])
        return Response({"player": schemas.PlayerOut(player).data, "token": token}, status=201)


class PlayersView(APIView):
    """POST /players (app key): a player for one of the app's users, with a bearer token."""

    permission_classes = [IsPrincipal]

    @extend_schema_serializer(component_name="CreatePlayer")
    class PlayerIn(StrictSerializer):
        """A player of the app, with the app's own id for the user."""

        name = StrictCharField(max_length=64)
        external_id = StrictCharField(max_length=128, required=False, default="", allow_blank=True)

    @documented(
        op="createPlayer",
        tag="players",
        ok=schemas.PlayerTokenOut,
        request=PlayerIn,
        status=201,
        errors=(Code.app_key_required,),
    )
    def post(self, request: Request) -> Response:
        app = _principal(request).require_app("only an app key can create players")
        data = validated(self.PlayerIn, request.data)
        player, token = accounts.player_create(app=app, **data)
        return Response({"player": schemas.PlayerOut(player).data, "token": token}, status=201)


class PlayerTokensView(APIView):
    """POST /players/{id}/tokens (app key): a new bearer token for one of the app's players."""

    permission_classes = [IsPrincipal]

    @documented(
        op="createPlayerToken",
        tag="players",
        ok=schemas.TokenOut,
        request=EmptyIn,
        status=201,
        errors=(Code.not_found,),
    )
    def post(self, request: Request, player_id: int) -> Response:
        principal = _principal(request)
        validated(EmptyIn, request.data)
        if not principal.is_app or principal.app is None:  # a player sees no players: 404, as before
            raise ServiceError("not_found", "no such player", kind="not_found")
        player = accounts.player_of(principal.app, player_id)
        return Response({"token": accounts.token_issue(player=player)}, status=201)


class TokenRevokeView(APIView):
    """POST /tokens/revoke: revoke the bearer token this request was made with."""

    permission_classes = [IsPrincipal]

    @documented(
        op="revokeToken",
        tag="players",
        ok=None,
        request=EmptyIn,
        status=204,
        errors=(Code.not_a_player_token,),
    )
    def post(self, request: Request) -> Response:
        validated(EmptyIn, request.data)
        secret = accounts.bearer_secret(request.headers.get("Authorization", "")) or ""
        if not accounts.token_revoke(token=secret):
            raise ServiceError("not_a_player_token", "only a player token can be revoked here", kind="rules")
        return Response(status=204)


class TablePagination(CheckedCursorPagination):
    ordering = "-created_at"
    page_size = 20


class TablesView(APIView):
    """GET /tables (filters: status, open_seats, mine) and POST /tables (create)."""

    permission_classes = [IsPrincipal]

    @extend_schema_serializer(component_name="CreateTable")
    class TableIn(StrictSerializer):
        """A new table: its options, its turn clocks, and seats to fill with bots at once."""

        # Free-form maps checked by the engine and the services; documented with their limits.
        options = schemas.OptionsField(
            required=False, default=dict, help_text="Engine options (docs/rules.md)"
        )
        bots = schemas.BotsField(
            child=StrictCharField(max_length=32),
            required=False,
            default=dict,
            help_text='Seats to fill with bots at once, e.g. {"1": "basic", "2": "strong"}',
        )
        clocks = schemas.ClocksField(
            required=False,
            default=dict,
            help_text="Seconds for a pass, a play and a moon choice (null: no clock), and away_after",
        )
        visibility = StrictChoiceField(
            choices=list(reads.VISIBILITIES),
            required=False,
            default="public",
            help_text="public (listed), unlisted (by id only) or private (named players and invite codes)",
        )
        invited = serializers.ListField(
            child=StrictIntegerField(min_value=1),
            required=False,
            default=list,
            max_length=20,
            help_text="Players (of your app, or guests at a guest table) who may see and join it",
        )
        spectator_delay = schemas.SpectatorDelayField(
            child=StrictIntegerField(),
            required=False,
            default=None,
            help_text="What players not seated at it see lags by (docs/streams.md#spectators)",
        )
        rated = StrictBooleanField(
            required=False,
            default=False,
            help_text="Its finished game updates its people's ratings (docs/ratings.md; default false)",
        )
        bot_think_ms = StrictIntegerField(
            required=False,
            default=None,
            allow_null=True,
            min_value=bot_timing.THINK_MS_LIMITS[0],
            max_value=bot_timing.THINK_MS_LIMITS[1],
            help_text="Milliseconds strong and expert bots think per move (null: their fixed budgets, "
            "which replay exactly for a seed; docs/bots-and-clocks.md#thinking-time)",
        )
        bot_pace_ms = StrictIntegerField(
            required=False,
            default=None,
            allow_null=True,
            min_value=bot_timing.PACE_MS_LIMITS[0],
            max_value=bot_timing.PACE_MS_LIMITS[1],
            help_text="Milliseconds before each bot card played (null: the server's default at tables "
            "with a person, 0 at bot-only tables; docs/bots-and-clocks.md#pace)",
        )

    @documented(
        op="listTables",
        tag="tables",
        ok=schemas.TablePageOut,
        params=[
            OpenApiParameter("status", str, enum=list(reads.TABLE_STATUSES)),
            OpenApiParameter("open_seats", bool),
            OpenApiParameter("mine", bool),
            OpenApiParameter("cursor", str),
        ],
        errors=(Code.invalid_filter, Code.invalid_cursor),
    )
    def get(self, request: Request) -> Response:
        principal = _principal(request)
        tables = reads.filtered_tables(
            principal,
            status=request.query_params.get("status"),
            open_seats=_flag(request, "open_seats"),
            mine=_flag(request, "mine"),
        )
        paginator = TablePagination()
        page = paginator.paginate_queryset(tables, request, view=self)
        assert page is not None
        rows = [
            {
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
            for t in page
        ]
        return paginator.get_paginated_response(rows)

    @documented(
        op="createTable",
        tag="tables",
        ok=schemas.TableOut,
        request=TableIn,
        status=201,
        params=[_IDEMPOTENCY],
        errors=(
            Code.invalid_option,
            Code.invalid_clock,
            Code.invalid_seat,
            Code.invalid_bot_level,
            *_IDEMPOTENT,
        ),
    )
    def post(self, request: Request) -> HttpResponseBase:
        principal = _principal(request)
        data = validated(self.TableIn, request.data)
        bots: dict[int, str] = {}
        for key, level in data["bots"].items():
            if not (key.isascii() and key.isdigit() and len(key) <= 2):
                raise ServiceError(
                    "invalid_seat", f"bot seat {key[:20]!r} is not a seat number", kind="malformed"
                )
            bots[int(key)] = level
        return answer(
            request,
            lambda idem: services.table_create(
                options=data["options"],
                bots=bots,
                clocks=data["clocks"],
                app=principal.app,
                visibility=data["visibility"],
                invited=data["invited"],
                creator=principal.player,
                spectator_delay=data["spectator_delay"],
                rated=data["rated"],
                bot_think_ms=data["bot_think_ms"],
                bot_pace_ms=data["bot_pace_ms"],
                idempotency=idem,
            ),
            status=201,
        )


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
        params=[_IF_NONE_MATCH],
        errors=(Code.not_found,),
        more={304: OpenApiResponse(description="Not modified: the table is at the version of If-None-Match")},
        headers={200: {"ETag": _ETAG}, 304: {"ETag": _ETAG}},
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
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


class _PlayerAction(APIView):
    permission_classes = [IsPrincipal]

    def player(self, request: Request) -> Player:
        return _principal(request).require_player()


class JoinView(_PlayerAction):
    """POST /tables/{id}/join {position?}: take a seat; the game starts when the table is full."""

    @extend_schema_serializer(component_name="JoinTable")
    class JoinIn(VersionedIn):
        """Take a seat: the lowest open one, or `position`; `invite`: a code of this table."""

        position = StrictIntegerField(required=False, min_value=0, max_value=9)
        invite = StrictCharField(
            required=False, max_length=64, help_text="An invite code (a private table needs one unless named)"
        )

    @documented(
        op="joinTable",
        tag="play",
        ok=schemas.TableOut,
        request=JoinIn,
        params=[_IF_MATCH, _IDEMPOTENCY],
        errors=(
            *_SEATS,
            Code.invalid_seat,
            Code.already_seated,
            Code.seat_taken,
            Code.table_full,
            Code.invite_invalid,
            Code.invite_expired,
            Code.player_token_required,
        ),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        player = self.player(request)
        data = validated(self.JoinIn, request.data)
        return answer(
            request,
            lambda idem: services.seat_join(
                table_id=table_id,
                player=player,
                position=data.get("position"),
                expected_version=_expected_version(request, data),
                scope=principal.app,
                invite=data.get("invite"),
                idempotency=idem,
            ),
        )


class LeaveView(_PlayerAction):
    """POST /tables/{id}/leave: give up your seat before the game starts."""

    @documented(
        op="leaveTable",
        tag="play",
        ok=schemas.TableOut,
        request=VersionedIn,
        params=[_IF_MATCH, _IDEMPOTENCY],
        errors=(*_SEATS, (Code.not_seated, 409), Code.player_token_required),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        player = self.player(request)
        data = validated(VersionedIn, request.data)
        return answer(
            request,
            lambda idem: services.seat_leave(
                table_id=table_id,
                player=player,
                expected_version=_expected_version(request, data),
                scope=principal.app,
                idempotency=idem,
            ),
        )


class BotsView(APIView):
    """POST /tables/{id}/bots {level?, position?}: seat a bot (an app key or any player of the
    table's app may)."""

    permission_classes = [IsPrincipal]

    @extend_schema_serializer(component_name="AddBot")
    class BotIn(VersionedIn):
        """Seat a bot of `level`: in the lowest open seat, or `position`."""

        level = schemas.LevelField(required=False, default="basic")
        position = StrictIntegerField(required=False, min_value=0, max_value=9)

    @documented(
        op="addBot",
        tag="play",
        ok=schemas.TableOut,
        request=BotIn,
        params=[_IF_MATCH, _IDEMPOTENCY],
        errors=(*_SEATS, Code.invalid_seat, Code.seat_taken, Code.table_full, Code.invalid_bot_level),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        data = validated(self.BotIn, request.data)
        return answer(
            request,
            lambda idem: services.bot_add(
                table_id=table_id,
                level=data["level"],
                position=data.get("position"),
                player=principal.player,
                expected_version=_expected_version(request, data),
                scope=principal.app,
                idempotency=idem,
            ),
        )


class StartView(APIView):
    """POST /tables/{id}/start {fill_with?}: start now, with bots of level `fill_with` in every
    open seat (a seated player or the app may start). A full table starts by itself."""

    permission_classes = [IsPrincipal]

    @extend_schema_serializer(component_name="StartTable")
    class StartIn(VersionedIn):
        """Start now, with bots of level `fill_with` in the open seats."""

        fill_with = schemas.LevelField(required=False, default="basic")

    @documented(
        op="startTable",
        tag="play",
        ok=schemas.TableOut,
        request=StartIn,
        params=[_IF_MATCH, _IDEMPOTENCY],
        errors=(*_SEATS, Code.not_seated, Code.invalid_bot_level),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        data = validated(self.StartIn, request.data)
        return answer(
            request,
            lambda idem: services.table_start(
                table_id=table_id,
                fill_with=data["fill_with"],
                player=principal.player,
                expected_version=_expected_version(request, data),
                scope=principal.app,
                idempotency=idem,
            ),
        )


class AbandonView(APIView):
    """POST /tables/{id}/abandon (app key): close an unfinished table for good."""

    permission_classes = [IsPrincipal]

    @documented(
        op="abandonTable",
        tag="tables",
        ok=schemas.TableOut,
        request=VersionedIn,
        params=[_IF_MATCH, _IDEMPOTENCY],
        errors=(*_WRITE, *_IDEMPOTENT, Code.not_found, Code.table_closed, Code.app_key_required),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        principal.require_app("only the table's app can abandon it")
        data = validated(VersionedIn, request.data)
        return answer(
            request,
            lambda idem: services.table_abandon(
                table_id=table_id,
                expected_version=_expected_version(request, data),
                scope=principal.app,
                idempotency=idem,
            ),
        )


class BackView(_PlayerAction):
    """POST /tables/{id}/back: "I'm back". A seat marked away after timeouts is yours again (any
    action of yours does the same); nothing changes when it was not away."""

    @documented(
        op="reclaimSeat",
        tag="play",
        ok=schemas.TableOut,
        request=EmptyIn,
        params=[_IDEMPOTENCY],
        errors=(*_IDEMPOTENT, Code.not_found, Code.not_seated, Code.player_token_required),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        player = self.player(request)
        validated(EmptyIn, request.data)
        return answer(
            request,
            lambda idem: services.seat_back(
                table_id=table_id, player=player, scope=principal.app, idempotency=idem
            ),
        )


class RematchView(_PlayerAction):
    """POST /tables/{id}/rematch: after a finished game, ask for a rematch or accept the one asked
    for. When every person at the table has (bots accept by themselves), a new table with the same
    options, clocks and bots starts with the seats moved one place on; the answer's
    `rematch.table` names it, and the table's events say `rematch_started`. Asking twice changes
    nothing."""

    @documented(
        op="requestRematch",
        tag="play",
        ok=schemas.TableOut,
        request=EmptyIn,
        params=[_IDEMPOTENCY],
        errors=(
            *_IDEMPOTENT,
            Code.not_found,
            Code.not_seated,
            Code.player_token_required,
            (Code.not_finished, 422),
        ),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        player = self.player(request)
        validated(EmptyIn, request.data)
        return answer(
            request,
            lambda idem: services.rematch(
                table_id=table_id, player=player, scope=principal.app, idempotency=idem
            ),
        )


class ActionsView(_PlayerAction):
    """POST /tables/{id}/actions: pass {"type":"pass","cards":[...]}, play {"type":"play","card":"QS"}
    or moon {"type":"moon","choice":"add"}, for the caller's own seat. Headers: If-Match (the
    version you saw) and Idempotency-Key (a retry with the same key never acts twice and gets
    the first answer back)."""

    in_turn_exempt = True  # a player's own-turn action is never rate limited

    @documented(
        op="submitAction",
        tag="play",
        ok=schemas.TableOut,
        request=ACTION,
        params=[_IF_MATCH, _IDEMPOTENCY],
        errors=(
            *_WRITE,
            *_IDEMPOTENT,
            Code.not_found,
            Code.invalid_action,
            Code.invalid_card,
            Code.invalid_seat,
            Code.wrong_phase,
            Code.not_your_turn,
            Code.card_not_in_hand,
            Code.must_lead_lowest_club,
            Code.must_follow_suit,
            Code.no_points_on_first_trick,
            Code.hearts_not_broken,
            Code.bad_pass,
            Code.moon_choice_invalid,
            Code.game_over,
            Code.not_started,
            Code.table_closed,
            Code.not_seated,
            Code.player_token_required,
        ),
    )
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        principal = _principal(request)
        player = self.player(request)
        if not isinstance(request.data, dict):
            raise ServiceError("invalid_action", "an action is a JSON object with a 'type'", kind="malformed")
        data = validated(ActionIn, request.data)
        action = {k: v for k, v in request.data.items() if k != "expected_version"}
        return answer(
            request,
            lambda idem: services.action_submit(
                table_id=table_id,
                player=player,
                action=action,
                expected_version=_expected_version(request, data),
                scope=principal.app,
                idempotency=idem,
            ),
        )


class ScoresheetView(APIView):
    """GET /tables/{id}/scoresheet: one row per finished hand with points and running totals."""

    permission_classes = [IsPrincipal]

    @documented(op="getScoresheet", tag="history", ok=schemas.ScoresheetOut, errors=(Code.not_found,))
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        return Response(reads.scoresheet(services.table_seen(principal, table_id), principal))


class MovesView(APIView):
    """GET /tables/{id}/moves?after=N: the move log after sequence N (500 at most per page);
    another seat's pass shows no cards until its hand is over."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listMoves",
        tag="history",
        ok=schemas.MovesOut,
        params=[_AFTER],
        errors=(Code.not_found, Code.invalid_after),
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        after = _after(request)
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
        params=[_AFTER],
        errors=(Code.not_found, Code.invalid_after),
    )
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        after = _after(request)
        return Response(reads.events_after(services.table_seen(principal, table_id), principal, after))


class HandsView(APIView):
    """GET /tables/{id}/hands: every hand dealt so far, with its deal commitment; the seed of each
    finished hand (SHA-256 of the seed is the commitment)."""

    permission_classes = [IsPrincipal]

    @documented(op="listHands", tag="history", ok=schemas.HandsOut, errors=(Code.not_found,))
    def get(self, request: Request, table_id: int) -> Response:
        principal = _principal(request)
        return Response({"hands": reads.hands(services.table_seen(principal, table_id), principal)})


class HandView(APIView):
    """GET /tables/{id}/hands/{n}: a hand's replay. Once it is over: the full record (deals,
    passes, every trick, points, seed) and all its moves; before: its moves as the caller may
    see them."""

    permission_classes = [IsPrincipal]

    @documented(op="getHand", tag="history", ok=schemas.HandReplayOut, errors=(Code.not_found,))
    def get(self, request: Request, table_id: int, number: int) -> Response:
        principal = _principal(request)
        return Response(reads.hand_replay(services.table_seen(principal, table_id), principal, number))
