"""REST endpoints of the bots an app brings (app key only, tag "bots"): register, list, show with
their counters, change, delete a bot endpoint and rotate its secret. Another app's bot is a 404,
as tables are. The protocol (what the service POSTs, what a bot answers) is docs/bots-byo.md.

Writes take no Idempotency-Key: the answer to a registration holds the secret, which is shown
once and must not be stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http.response import HttpResponseBase
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import extbots
from games import operations as ops
from games.accounts import Principal
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, perform
from games.errors import Code
from games.operations.bots import DENIED

if TYPE_CHECKING:  # types only: the queries are in games.extbots
    from games.models import App

F = serializers

# -- schemas --------------------------------------------------------------------------------


class FallbacksOut(F.Serializer):
    """Moves the basic bot made instead, by reason."""

    timeout = F.IntegerField(help_text="no answer within timeout_ms")
    failed = F.IntegerField(help_text="no connection, a refused address, or a status that is not 2xx")
    bad_answer = F.IntegerField(help_text="the answer is not JSON, or not an action")
    illegal = F.IntegerField(help_text="an action the rules refuse here")
    disabled = F.IntegerField(help_text="the bot was disabled (or renamed): not called")


class BotOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField(help_text="Seats name it as the level ext:<name>")
    level = F.CharField(help_text="The seat level naming this bot: ext:<name>")
    url = F.CharField()
    timeout_ms = F.IntegerField()
    enabled = F.BooleanField()
    calls = F.IntegerField(help_text="Moves it was asked for")
    answered = F.IntegerField(help_text="Moves it answered in time with a legal action")
    fallbacks = FallbacksOut()
    last_error = F.CharField(help_text="Why the last fallback happened (empty when none)")
    last_called_at = F.DateTimeField(allow_null=True)
    created_at = F.DateTimeField()
    updated_at = F.DateTimeField()


class BotSecretOut(BotOut):
    secret = F.CharField(
        help_text="The signing secret: shown only in this answer (and when rotated), never again"
    )


class BotListOut(F.Serializer):
    next = F.URLField(allow_null=True, help_text="The next page (null on the last)")
    previous = F.URLField(allow_null=True, help_text="The page before (null on the first)")
    results = BotOut(many=True, help_text="Oldest first; at most BOTS_MAX (100) in all")


# -- views ----------------------------------------------------------------------------------

_APP = (Code.app_key_required,)
_ONE = (*_APP, Code.not_found)


def _app(request: Request) -> App:
    principal = request.user
    assert isinstance(principal, Principal)
    return principal.require_app(DENIED)


class BotsView(APIView):
    """GET /bots: the app's bot endpoints with their counters. POST /bots {name, url, timeout_ms}:
    a new one, answered with its signing secret (shown this once)."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listBots", tag="bots", ok=BotListOut, errors=(*_APP, Code.invalid_cursor), params=[CURSOR]
    )
    def get(self, request: Request) -> Response:
        return paged(request, extbots.endpoints_of(_app(request)), extbots.BOT_PAGES, extbots.body)

    @documented(ops.REGISTER_BOT, tag="bots", ok=BotSecretOut, status=201)
    def post(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.REGISTER_BOT, 201)


class BotView(APIView):
    """GET /bots/{id} (with its counters); PATCH it (name, url, timeout_ms, enabled); DELETE it."""

    permission_classes = [IsPrincipal]

    @documented(op="getBot", tag="bots", ok=BotOut, errors=_ONE)
    def get(self, request: Request, bot_id: int) -> Response:
        return Response(extbots.body(extbots.endpoint_of(_app(request), bot_id)))

    @documented(ops.UPDATE_BOT, tag="bots", ok=BotOut)
    def patch(self, request: Request, bot_id: int) -> HttpResponseBase:
        return perform(request, ops.UPDATE_BOT, bot_id=bot_id)

    @documented(ops.DELETE_BOT, tag="bots", ok=None, status=204, body=False)
    def delete(self, request: Request, bot_id: int) -> HttpResponseBase:
        return perform(request, ops.DELETE_BOT, 204, body=False, bot_id=bot_id)


class BotSecretView(APIView):
    """POST /bots/{id}/secret: a new signing secret, shown this once; the old one stops at once."""

    permission_classes = [IsPrincipal]

    @documented(ops.ROTATE_BOT_SECRET, tag="bots", ok=BotSecretOut)
    def post(self, request: Request, bot_id: int) -> HttpResponseBase:
        return perform(request, ops.ROTATE_BOT_SECRET, bot_id=bot_id)
