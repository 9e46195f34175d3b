"""GraphQL for the bots an app brings (docs/bots-byo.md): the `bots` and `bot` queries and the
registerBot, updateBot, deleteBot and rotateBotSecret mutations, over the same games.extbots
functions as REST's /bots. App key only; another app's bot is null (a query) or not_found."""

from __future__ import annotations

from typing import Any

import graphene

from games import extbots
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.base import error_of
from games.graphql.types import Error

_LOW, _HIGH = extbots.TIMEOUT_LIMITS


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


def _app(info: Any) -> Any:
    principal = getattr(info.context, "principal", None)
    if not isinstance(principal, Principal):
        raise ServiceError("not_authenticated", "send 'Authorization: Bearer <key or token>'", kind="auth")
    return principal.require_app("bots are registered with an app key")


class BotQueries(graphene.ObjectType):
    """The Query fields of brought bots (a base of games.graphql.schema.Query)."""

    bots = graphene.List(
        graphene.NonNull(BotEndpoint), required=True, description="App key: your bots, oldest first"
    )
    bot = graphene.Field(BotEndpoint, id=graphene.Int(required=True), description="Null when not yours")

    def resolve_bots(root: Any, info: Any) -> list[dict[str, Any]]:
        return [extbots.body(e) for e in extbots.endpoints_of(_app(info))]

    def resolve_bot(root: Any, info: Any, id: int) -> dict[str, Any] | None:
        try:
            return extbots.body(extbots.endpoint_of(_app(info), id))
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise


class BotPayload(graphene.ObjectType):
    bot = graphene.Field(BotEndpoint, description="The bot after the change (null on error)")
    secret = graphene.String(description="registerBot and rotateBotSecret only: shown this once, never again")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class RegisterBot(graphene.Mutation):
    """App key: a new bot endpoint; seats name it as the level ext:<name>. The answer holds its
    signing secret, shown this once. Errors: invalid_input (name, timeoutMs), invalid_url (with
    private addresses refused), bot_name_taken."""

    class Arguments:
        name = graphene.String(required=True, description="1 to 40 letters, digits, _ or -")
        url = graphene.String(required=True)
        timeout_ms = graphene.Int(
            default_value=extbots.TIMEOUT_DEFAULT, description=f"{_LOW} to {_HIGH} ms per move"
        )

    Output = BotPayload

    def mutate(root: Any, info: Any, name: str, url: str, timeout_ms: int) -> BotPayload:
        try:
            endpoint, secret = extbots.endpoint_create(
                app=_app(info), name=name, url=url, timeout_ms=timeout_ms
            )
        except ServiceError as exc:
            return BotPayload(errors=[error_of(exc)])
        return BotPayload(bot=extbots.body(endpoint), secret=secret, errors=[])


class UpdateBot(graphene.Mutation):
    """App key: change a bot's name, URL, timeout or enabled (the fields left out stay)."""

    class Arguments:
        id = graphene.Int(required=True)
        name = graphene.String()
        url = graphene.String()
        timeout_ms = graphene.Int()
        enabled = graphene.Boolean(description="false: not called, its seats' moves fall back")

    Output = BotPayload

    def mutate(root: Any, info: Any, id: int, **changes: Any) -> BotPayload:
        try:
            endpoint = extbots.endpoint_of(_app(info), id)
            return BotPayload(bot=extbots.body(extbots.endpoint_update(endpoint, changes)), errors=[])
        except ServiceError as exc:
            return BotPayload(errors=[error_of(exc)])


class RotateBotSecret(graphene.Mutation):
    """App key: a new signing secret for a bot, shown this once; the old one stops at once."""

    class Arguments:
        id = graphene.Int(required=True)

    Output = BotPayload

    def mutate(root: Any, info: Any, id: int) -> BotPayload:
        try:
            endpoint = extbots.endpoint_of(_app(info), id)
            secret = extbots.secret_rotate(endpoint)
            return BotPayload(bot=extbots.body(endpoint), secret=secret, errors=[])
        except ServiceError as exc:
            return BotPayload(errors=[error_of(exc)])


class DeleteBotPayload(graphene.ObjectType):
    deleted = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class DeleteBot(graphene.Mutation):
    """App key: forget a bot; its seats' moves fall back to the basic bot (reason disabled)."""

    class Arguments:
        id = graphene.Int(required=True)

    Output = DeleteBotPayload

    def mutate(root: Any, info: Any, id: int) -> DeleteBotPayload:
        try:
            extbots.endpoint_delete(extbots.endpoint_of(_app(info), id))
            return DeleteBotPayload(deleted=True, errors=[])
        except ServiceError as exc:
            return DeleteBotPayload(deleted=False, errors=[error_of(exc)])


class BotMutations(graphene.ObjectType):
    """The Mutation fields of brought bots (a base of games.graphql.schema.Mutation)."""

    register_bot = RegisterBot.Field()
    update_bot = UpdateBot.Field()
    rotate_bot_secret = RotateBotSecret.Field()
    delete_bot = DeleteBot.Field()
