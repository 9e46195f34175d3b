"""REST: quick play (POST /quick-play: a seat at a matching table; GET: where you wait; DELETE: leave)."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import operations as ops
from games import reads, services
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import documented, perform, principal_of
from games.errors import Code


class QuickPlayView(APIView):
    """POST /quick-play: play as soon as possible. You are seated at the oldest table of your app
    waiting with the same options, clocks and bot level, or at a new one; the answer is that table.
    It starts when its last seat is taken; when `wait_seconds` pass first, bots of `bot_level`
    take the open seats and it starts (`bot_level` null: the table closes, `quick_play_expired`).
    Either way its events (and your player stream) say `match_found` just before `game_started`.
    You wait at one table at a time (409 already_waiting). GET: the table where you wait (404
    not_waiting). DELETE: leave the queue."""

    permission_classes = [IsPrincipal]

    @documented(ops.QUICK_PLAY, tag="play", ok=schemas.TableOut)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.QUICK_PLAY)

    @documented(
        op="getQuickPlay",
        tag="play",
        ok=schemas.TableOut,
        errors=(Code.not_waiting, Code.player_token_required),
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        table = services.waiting_of(principal.require_player())
        if table is None:
            raise services.not_waiting()
        return Response(reads.table_body(table, principal))

    @documented(ops.LEAVE_QUICK_PLAY, tag="play", ok=schemas.TableOut, body=False)
    def delete(self, request: Request) -> HttpResponseBase:
        # A DELETE has no body: none is read, whatever Content-Type says.
        return perform(request, ops.LEAVE_QUICK_PLAY, body=False)
