"""REST endpoints of the bots an app brings (app key only, tag "bots"): register, list, show with
their counters, change, delete a bot endpoint and rotate its secret. Another app's bot is a 404,
as tables are. The protocol (what the service POSTs, what a bot answers) is docs/bots-byo.md.

Writes take no Idempotency-Key: the answer to a registration holds the secret, which is shown
once and must not be stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import extbots
from games.accounts import Principal
from games.api.auth import IsPrincipal
from games.api.run import documented
from games.api.webhooks import StrictBooleanField
from games.errors import Code
from games.operations.fields import EmptyIn, StrictCharField, StrictIntegerField, StrictSerializer, validated

if TYPE_CHECKING:  # types only: the queries are in games.extbots
    from games.models import App

F = serializers
_LOW, _HIGH = extbots.TIMEOUT_LIMITS

# -- schemas --------------------------------------------------------------------------------


@extend_schema_serializer(component_name="RegisterBot")
class BotIn(StrictSerializer):
    """A new bot endpoint."""

    name = StrictCharField(
        max_length=40,
        help_text="Seats name the bot as the level ext:<name>: 1 to 40 letters, digits, _ or -, "
        "unique in the app",
    )
    url = StrictCharField(help_text="Where the seat's turns are POSTed: an absolute http(s) URL")
    timeout_ms = StrictIntegerField(
        required=False,
        default=extbots.TIMEOUT_DEFAULT,
        help_text=f"How long one move may take, {_LOW} to {_HIGH} ms (default {extbots.TIMEOUT_DEFAULT}); "
        "later, the basic bot moves instead",
    )


@extend_schema_serializer(component_name="UpdateBot")
class BotPatchIn(StrictSerializer):
    """The fields of a bot endpoint to change; the others stay."""

    name = StrictCharField(required=False, max_length=40)
    url = StrictCharField(required=False)
    timeout_ms = StrictIntegerField(required=False)
    enabled = StrictBooleanField(required=False, help_text="false: not called, its seats' moves fall back")


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
    results = BotOut(many=True)


# -- views ----------------------------------------------------------------------------------

_APP = (Code.app_key_required,)
_ONE = (*_APP, Code.not_found)
_INPUT = (Code.invalid_url, Code.bot_name_taken)


def _app(request: Request) -> App:
    principal = request.user
    assert isinstance(principal, Principal)
    return principal.require_app("bots are registered with an app key")


class BotsView(APIView):
    """GET /bots: the app's bot endpoints with their counters. POST /bots {name, url, timeout_ms}:
    a new one, answered with its signing secret (shown this once)."""

    permission_classes = [IsPrincipal]

    @documented(op="listBots", tag="bots", ok=BotListOut, errors=_APP)
    def get(self, request: Request) -> Response:
        return Response({"results": [extbots.body(e) for e in extbots.endpoints_of(_app(request))]})

    @documented(
        op="registerBot", tag="bots", ok=BotSecretOut, request=BotIn, status=201, errors=(*_APP, *_INPUT)
    )
    def post(self, request: Request) -> Response:
        app = _app(request)
        data = validated(BotIn, request.data)
        endpoint, secret = extbots.endpoint_create(app=app, **data)
        return Response({**extbots.body(endpoint), "secret": secret}, status=201)


class BotView(APIView):
    """GET /bots/{id} (with its counters); PATCH it (name, url, timeout_ms, enabled); DELETE it."""

    permission_classes = [IsPrincipal]

    @documented(op="getBot", tag="bots", ok=BotOut, errors=_ONE)
    def get(self, request: Request, bot_id: int) -> Response:
        return Response(extbots.body(extbots.endpoint_of(_app(request), bot_id)))

    @documented(op="updateBot", tag="bots", ok=BotOut, request=BotPatchIn, errors=(*_ONE, *_INPUT))
    def patch(self, request: Request, bot_id: int) -> Response:
        endpoint = extbots.endpoint_of(_app(request), bot_id)
        data = validated(BotPatchIn, request.data)
        return Response(extbots.body(extbots.endpoint_update(endpoint, data)))

    @documented(op="deleteBot", tag="bots", ok=None, status=204, errors=_ONE)
    def delete(self, request: Request, bot_id: int) -> Response:
        extbots.endpoint_delete(extbots.endpoint_of(_app(request), bot_id))
        return Response(status=204)


class BotSecretView(APIView):
    """POST /bots/{id}/secret: a new signing secret, shown this once; the old one stops at once."""

    permission_classes = [IsPrincipal]

    @documented(op="rotateBotSecret", tag="bots", ok=BotSecretOut, request=EmptyIn, errors=_ONE)
    def post(self, request: Request, bot_id: int) -> Response:
        validated(EmptyIn, request.data)
        endpoint = extbots.endpoint_of(_app(request), bot_id)
        secret = extbots.secret_rotate(endpoint)
        return Response({**extbots.body(endpoint), "secret": secret})
