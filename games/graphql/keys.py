"""GraphQL for an app's API keys (docs/keys.md): the `apiKeys` query and the createApiKey,
revokeApiKey and rotateApiKey mutations, which run the operations of games/operations/keys.py as
REST's /app/keys does; and refreshToken, a player's new token for the one presented."""

from __future__ import annotations

from typing import Any

import graphene

from games import accounts, paging
from games import operations as ops
from games.accounts import Principal
from games.graphql import pages
from games.graphql.base import OperationMutation, app_of
from games.graphql.tables import CredentialPayload
from games.graphql.types import Error
from games.operations.keys import DENIED, KEY_PAGES, key_body

KeyState = graphene.Enum(
    "ApiKeyState",
    [("active", "active"), ("expiring", "expiring"), ("expired", "expired"), ("revoked", "revoked")],
    description="active; expiring (works until expiresAt, as a rotated key does); expired; revoked",
)


class ApiKey(graphene.ObjectType):
    """One of your app's keys: never its secret."""

    id = graphene.Int(required=True)
    name = graphene.String(required=True)
    prefix = graphene.String(required=True, description="The key's first characters, to recognise it")
    scopes = graphene.List(graphene.NonNull(graphene.String), required=True)
    state = graphene.Field(KeyState, required=True)
    created_at = graphene.DateTime(required=True)
    expires_at = graphene.DateTime()
    revoked_at = graphene.DateTime()
    last_used_at = graphene.DateTime(description="The last request with it, to the minute (null: never)")
    replaced_by = graphene.Int(description="The key a rotation replaced it with")


class ApiKeyConnection(graphene.relay.Connection):
    class Meta:
        node = ApiKey


class KeyQueries(graphene.ObjectType):
    """The Query fields of an app's keys (a base of games.graphql.schema.Query)."""

    api_keys = graphene.Field(
        ApiKeyConnection,
        required=True,
        first=graphene.Int(default_value=paging.PAGE_SIZE, description=f"At most {paging.MAX_PAGE_SIZE}"),
        after=graphene.String(),
        description="App key: your app's API keys, newest first (revoked and expired ones too)",
    )

    def resolve_api_keys(root: Any, info: Any, first: int | None, after: str | None = None) -> Any:
        rows = accounts.keys_of(app_of(info, DENIED))
        return pages.connection(ApiKeyConnection, rows, KEY_PAGES, key_body, first, after)


class ApiKeyPayload(graphene.ObjectType):
    key = graphene.Field(ApiKey, description="The key (null on error)")
    secret = graphene.String(description="The new key itself: shown only in this answer, stored hashed")
    previous = graphene.Field(
        ApiKey, description="rotateApiKey: the rotated key, working until its expiresAt"
    )
    errors = graphene.List(graphene.NonNull(Error), required=True)


class CreateApiKey(OperationMutation):
    class Meta:
        operation = ops.CREATE_API_KEY

    Output = ApiKeyPayload


class RotateApiKey(OperationMutation):
    class Meta:
        operation = ops.ROTATE_API_KEY

    Output = ApiKeyPayload


class RevokeApiKey(OperationMutation):
    class Meta:
        operation = ops.REVOKE_API_KEY

    Output = ApiKeyPayload

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: dict[str, Any]) -> ApiKeyPayload:
        return ApiKeyPayload(key=out, errors=[])


class RefreshToken(OperationMutation):
    class Meta:
        operation = ops.REFRESH_TOKEN

    Output = CredentialPayload


class KeyMutations(graphene.ObjectType):
    """The root fields of the mutations above (a base of games.graphql.schema.Mutation)."""

    create_api_key = CreateApiKey.Field()
    revoke_api_key = RevokeApiKey.Field()
    rotate_api_key = RotateApiKey.Field()
    refresh_token = RefreshToken.Field()
