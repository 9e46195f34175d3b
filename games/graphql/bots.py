"""GraphQL for the bots an app brings (docs/bots-byo.md): the `bots` and `bot` queries and the
registerBot, updateBot, deleteBot and rotateBotSecret mutations, which run the operations of
games/operations/bots.py as REST's /bots does. App key only; another app's bot is null (a query)
or not_found."""

from __future__ import annotations

from typing import Any

import graphene

from games import extbots
from games import operations as ops
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql import pages
from games.graphql.base import OperationMutation, app_of
from games.graphql.types import Error
from games.operations.bots import DENIED


class BotFallbacks(graphene.ObjectType):
    """Moves the basic bot made instead of the brought bot, by reason."""

    timeout = graphene.Int(required=True, description="No answer within timeoutMs")
    failed = graphene.Int(required=True, description="No connection, a refused address, or not 2xx")
    bad_answer = graphene.Int(required=True, description="The answer is not JSON, or not an action")
    illegal = graphene.Int(required=True, description="An action the rules refuse here")
    disabled = graphene.Int(required=True, description="The bot was disabled (or renamed): not called")


class BotEndpoint(graphene.ObjectType):
    """A bot the app brought: where its seats' turns are sent, and how it answered."""

    id = graphene.Int(required=True)
    name = graphene.String(required=True)
    level = graphene.String(required=True, description="The seat level naming this bot: ext:<name>")
    url = graphene.String(required=True)
    timeout_ms = graphene.Int(required=True)
    enabled = graphene.Boolean(required=True)
    calls = graphene.Int(required=True, description="Moves it was asked for")
    answered = graphene.Int(required=True, description="Moves it answered in time with a legal action")
    fallbacks = graphene.Field(BotFallbacks, required=True)
    last_error = graphene.String(required=True, description="Why the last fallback happened (empty: none)")
    last_called_at = graphene.String(description="ISO 8601")
    created_at = graphene.String(required=True)
    updated_at = graphene.String(required=True)


class BotEndpointConnection(graphene.relay.Connection):
    class Meta:
        node = BotEndpoint


class BotQueries(graphene.ObjectType):
    """The Query fields of brought bots (a base of games.graphql.schema.Query)."""

    bots = graphene.List(
        graphene.NonNull(BotEndpoint),
        required=True,
        description="App key: your bots, oldest first: all of them, at most 100 (botPage pages them)",
    )
    bot_page = graphene.Field(
        BotEndpointConnection,
        required=True,
        **pages.args(),
        description="App key: your bots, oldest first (errors: invalid_cursor)",
    )
    bot = graphene.Field(BotEndpoint, id=graphene.Int(required=True), description="Null when not yours")

    def resolve_bots(root: Any, info: Any) -> list[dict[str, Any]]:
        return [extbots.body(e) for e in extbots.endpoints_of(app_of(info, DENIED))]

    def resolve_bot_page(root: Any, info: Any, first: int | None, after: str | None = None) -> Any:
        rows = extbots.endpoints_of(app_of(info, DENIED))
        return pages.connection(BotEndpointConnection, rows, extbots.BOT_PAGES, extbots.body, first, after)

    def resolve_bot(root: Any, info: Any, id: int) -> dict[str, Any] | None:
        try:
            return extbots.body(extbots.endpoint_of(app_of(info, DENIED), id))
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise


class BotPayload(graphene.ObjectType):
    bot = graphene.Field(BotEndpoint, description="The bot after the change (null on error)")
    secret = graphene.String(description="registerBot and rotateBotSecret only: shown this once, never again")
    errors = graphene.List(graphene.NonNull(Error), required=True)


# The bot an operation names: `id` in GraphQL, `bot_id` in the operation (REST's path).
_ID = {"bot_id": graphene.Int(required=True, name="id")}


class BotMutation(OperationMutation):
    """A change to one of the app's bots: answers the bot after it, and its secret when it has one."""

    class Meta:
        abstract = True

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> BotPayload:
        secret = out.pop("secret", None)
        return BotPayload(bot=out, secret=secret, errors=[])


class RegisterBot(BotMutation):
    class Meta:
        operation = ops.REGISTER_BOT

    Output = BotPayload


class UpdateBot(BotMutation):
    class Meta:
        operation = ops.UPDATE_BOT

    shaped = _ID
    Output = BotPayload


class RotateBotSecret(BotMutation):
    class Meta:
        operation = ops.ROTATE_BOT_SECRET

    shaped = _ID
    Output = BotPayload


class DeleteBotPayload(graphene.ObjectType):
    deleted = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class DeleteBot(OperationMutation):
    class Meta:
        operation = ops.DELETE_BOT

    shaped = _ID
    Output = DeleteBotPayload

    @classmethod
    def refused(cls, error: Error) -> DeleteBotPayload:
        return DeleteBotPayload(deleted=False, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> DeleteBotPayload:
        return DeleteBotPayload(deleted=True, errors=[])


class BotMutations(graphene.ObjectType):
    """The Mutation fields of brought bots (a base of games.graphql.schema.Mutation)."""

    register_bot = RegisterBot.Field()
    update_bot = UpdateBot.Field()
    rotate_bot_secret = RotateBotSecret.Field()
    delete_bot = DeleteBot.Field()
