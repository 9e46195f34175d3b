"""GraphQL for an app's own settings and its archived tables (docs/data.md): the `app` query and the
updateApp and restoreTable mutations, which run the operations of games/operations/apps.py as REST's
/app and /tables/{id}/restore do."""

from __future__ import annotations

from typing import Any

import graphene

from games import operations as ops
from games.accounts import Principal
from games.graphql.base import OperationMutation, TableMutation, TablePayload, app_of
from games.graphql.types import Error
from games.operations.apps import DENIED, app_body


class AppSettings(graphene.ObjectType):
    """The calling app's settings: never its key."""

    id = graphene.Int(required=True)
    name = graphene.String(required=True)
    retention_days = graphene.Int(
        description="Days your finished tables stay in the database before the archive (null: the "
        "service's default, ARCHIVE_AFTER_DAYS)"
    )


class AppQueries(graphene.ObjectType):
    """The Query fields of an app's settings (a base of games.graphql.schema.Query)."""

    app = graphene.Field(AppSettings, required=True, description="App key: your app's settings")

    def resolve_app(root: Any, info: Any) -> dict[str, Any]:
        return app_body(app_of(info, DENIED))


class AppPayload(graphene.ObjectType):
    app = graphene.Field(AppSettings, description="Your app's settings after the change (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class UpdateApp(OperationMutation):
    class Meta:
        operation = ops.UPDATE_APP

    Output = AppPayload

    @classmethod
    def refused(cls, error: Error) -> AppPayload:
        return AppPayload(app=None, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: dict[str, Any]) -> AppPayload:
        return AppPayload(app=out, errors=[])


class RestoreTable(TableMutation):
    class Meta:
        operation = ops.RESTORE_TABLE

    Output = TablePayload


class AppMutations(graphene.ObjectType):
    """The root fields of the mutations above (a base of games.graphql.schema.Mutation)."""

    update_app = UpdateApp.Field()
    restore_table = RestoreTable.Field()
