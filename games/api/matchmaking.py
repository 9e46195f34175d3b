"""REST: quick play (POST /quick-play: a seat at a matching table; GET: where you wait; DELETE: leave)."""

from __future__ import annotations

from typing import Any

from django.http.response import HttpResponseBase
from drf_spectacular.utils import extend_schema_serializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import reads, services
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.parsing import StrictIntegerField, StrictSerializer, validated
from games.api.views import _IDEMPOTENCY, _principal, answer, documented
from games.errors import Code

_CRITERIA = (Code.invalid_option, Code.invalid_clock, Code.invalid_bot_level, Code.invalid_wait)


class QuickPlayView(APIView):
    """POST /quick-play: play as soon as possible. You are seated at the oldest table of your app
    waiting with the same options, clocks and bot level, or at a new one; the answer is that table.
    It starts when its last seat is taken; when `wait_seconds` pass first, bots of `bot_level`
    take the open seats and it starts (`bot_level` null: the table closes, `quick_play_expired`).
    Either way its events (and your player stream) say `match_found` just before `game_started`.
    You wait at one table at a time (409 already_waiting). GET: the table where you wait (404
    not_waiting). DELETE: leave the queue."""

    permission_classes = [IsPrincipal]

    @extend_schema_serializer(component_name="QuickPlay")
    class QuickPlayIn(StrictSerializer):
        """What you want to play; every field has a default."""

        options = schemas.OptionsField(
            required=False, default=dict, help_text="Engine options (docs/rules.md)"
        )
        clocks = schemas.ClocksField(
            required=False,
            default=dict,
            help_text="Seconds for a pass, a play and a moon choice (null: none)",
        )
        bot_level = schemas.LevelField(
            required=False,
            allow_null=True,
            help_text="The level of the bots that fill the open seats when the wait is over (default basic); "
            "null: no bots, the request expires",
        )
        wait_seconds = StrictIntegerField(
            required=False,
            min_value=services.WAIT_LIMITS[0],
            max_value=services.WAIT_LIMITS[1],
            help_text=f"How long to wait for people (default {services.WAIT_DEFAULT})",
        )

    @documented(
        op="quickPlay",
        tag="play",
        ok=schemas.TableOut,
        request=QuickPlayIn,
        params=[_IDEMPOTENCY],
        errors=(
            *_CRITERIA,
            Code.already_waiting,
            Code.player_token_required,
            Code.invalid_idempotency_key,
            Code.idempotency_key_reused,
        ),
    )
    def post(self, request: Request) -> HttpResponseBase:
        principal = _principal(request)
        player = principal.require_player()
        data: dict[str, Any] = validated(self.QuickPlayIn, request.data)
        return answer(
            request,
            lambda idem: services.quick_play(
                player=player,
                app=principal.app,
                options=data["options"],
                clocks=data["clocks"],
                bot_level=data.get("bot_level", "basic"),
                wait_seconds=data.get("wait_seconds", services.WAIT_DEFAULT),
                idempotency=idem,
            ),
        )

    @documented(
        op="getQuickPlay",
        tag="play",
        ok=schemas.TableOut,
        errors=(Code.not_waiting, Code.player_token_required),
    )
    def get(self, request: Request) -> Response:
        principal = _principal(request)
        table = services.waiting_of(principal.require_player())
        if table is None:
            raise services.not_waiting()
        return Response(reads.table_body(table, principal))

    @documented(
        op="leaveQuickPlay",
        tag="play",
        ok=schemas.TableOut,
        params=[_IDEMPOTENCY],
        errors=(Code.not_waiting, Code.player_token_required, Code.invalid_idempotency_key),
    )
    def delete(self, request: Request) -> HttpResponseBase:
        principal = _principal(request)
        player = principal.require_player()
        return answer(  # a DELETE has no body: none is read, whatever Content-Type says
            request,
            lambda idem: services.quick_play_leave(player=player, idempotency=idem),
            reads_body=False,
        )
