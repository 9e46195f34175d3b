"""GraphQL for a player's data export (docs/privacy.md): the createMyExport and createPlayerExport
mutations, which run the operations of games/operations/exports.py as REST's POST me/exports and
POST players/{id}/exports do, and the `export(id)` query, as REST's GET exports/{id}. The document
itself is downloaded over REST (its `document` URL): it is one JSON file, not a typed graph."""

from __future__ import annotations

from typing import Any

import graphene

from games import operations as ops
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.base import OperationMutation, principal_of
from games.graphql.types import Error
from games.services import exports


class ExportJobStatus(graphene.Enum):
    pending = "pending"
    done = "done"
    failed = "failed"


class ExportJob(graphene.ObjectType):
    """An export job: pending until its document is made, then done until it expires."""

    id = graphene.String(required=True, description="The job's id (a UUID)")
    player = graphene.Int(required=True, description="Whose data")
    status = graphene.Field(ExportJobStatus, required=True)
    size = graphene.Int(description="Bytes of the document, once done")
    error = graphene.String(description="Why it failed (status failed)")
    created_at = graphene.String(required=True, description="ISO 8601")
    finished_at = graphene.String(description="ISO 8601")
    expires_at = graphene.String(description="ISO 8601: the document and the job are deleted then")
    document = graphene.String(
        description="The document's URL path once done: GET it with the same credentials (REST)"
    )


class ExportPayload(graphene.ObjectType):
    export = graphene.Field(ExportJob, description="The job (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class ExportMutation(OperationMutation):
    class Meta:
        abstract = True

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: dict[str, Any]) -> ExportPayload:
        return ExportPayload(export=ExportJob(**out), errors=[])


class CreateMyExport(ExportMutation):
    class Meta:
        operation = ops.CREATE_MY_EXPORT

    Output = ExportPayload


class CreatePlayerExport(ExportMutation):
    class Meta:
        operation = ops.CREATE_PLAYER_EXPORT

    Output = ExportPayload


class ExportMutations(graphene.ObjectType):
    """The Mutation fields of exports (a base of games.graphql.schema.Mutation)."""

    create_my_export = CreateMyExport.Field()
    create_player_export = CreatePlayerExport.Field()


class ExportQueries(graphene.ObjectType):
    """The Query field of exports (a base of games.graphql.schema.Query)."""

    export = graphene.Field(
        ExportJob,
        id=graphene.String(required=True),
        description="An export job, for the player it is about or their app; null for anyone else",
    )

    def resolve_export(root: Any, info: Any, id: str) -> ExportJob | None:
        try:
            job = exports.job_of(principal_of(info), id)
        except ServiceError as exc:
            if exc.code == "not_found":
                return None
            raise
        return ExportJob(**exports.job_body(job))
