"""The GraphQL schema: the root queries and mutations, each calling the same service as its REST operation.

A write is the mutation named as its REST operationId and a read is a query or a field of its resource
(docs/graphql.md, "Names, parity with REST and deprecations"; tests/graphql/test_graphql_parity.py);
the event streams are subscriptions instead, and renamed mutations keep their old name, deprecated.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import graphene

from games import messages, paging, reads, services
from games import operations as ops
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql import pages
from games.graphql.apps import AppMutations, AppQueries
from games.graphql.audit import AuditQueries
from games.graphql.base import OperationMutation, principal_of
from games.graphql.bots import BotMutations, BotQueries
from games.graphql.data_exports import ExportMutations, ExportQueries
from games.graphql.enums import ViewerKind
from games.graphql.erasure import ErasureMutations
from games.graphql.events import STREAM_TYPES
from games.graphql.exports import GameExport
from games.graphql.exports import document as export_document
from games.graphql.exports import transcript as export_transcript
from games.graphql.keys import KeyMutations, KeyQueries
from games.graphql.push import PushMutations, PushQueries, ViewerDevices
from games.graphql.ratings import RatingsQuery
from games.graphql.subscriptions import Subscription
from games.graphql.tables import Invite, PlayerInfo, TableMutations, renamed
from games.graphql.tickets import TicketMutations
from games.graphql.tournaments import TournamentMutation, TournamentQuery
from games.graphql.turns import TurnsQuery
from games.graphql.types import Error, Table, TableRef
from games.graphql.webhooks import WebhookMutations, WebhookQueries
from games.services.invites import INVITE_PAGES, invite_body

if TYPE_CHECKING:  # types only: the queries are in games.accounts
    from games.models import Player as PlayerModel

# -- queries ----------------------------------------------------------------------------


class AppInfo(graphene.ObjectType):
    id = graphene.Int(required=True)
    name = graphene.String(required=True)


class Viewer(ViewerDevices, graphene.ObjectType):
    kind = graphene.Field(ViewerKind, required=True)
    app = graphene.Field(AppInfo, description="The app (null for a guest player)")
    player = graphene.Field(PlayerInfo)
    language = graphene.String(
        description="The language the player chose for error messages (en, mi, eu, ms or ky); empty: "
        "each request's Accept-Language chooses; null for an app key"
    )


def _seen(info: Any, table_id: int) -> Any:
    """The table as REST reads it, or None when the caller may not see it."""
    try:
        return services.table_seen(principal_of(info), table_id)
    except ServiceError as exc:
        if exc.code == "not_found":
            return None
        raise


class TableConnection(graphene.relay.Connection):
    class Meta:
        node = Table


class InviteConnection(graphene.relay.Connection):
    class Meta:
        node = Invite


class Query(
    RatingsQuery,
    TournamentQuery,
    BotQueries,
    WebhookQueries,
    TurnsQuery,
    PushQueries,
    ExportQueries,
    AppQueries,
    KeyQueries,
    AuditQueries,
    graphene.ObjectType,
):
    me = graphene.Field(Viewer, required=True)
    tables = graphene.Field(
        TableConnection,
        required=True,
        status=graphene.String(),
        open_seats=graphene.Boolean(),
        mine=graphene.Boolean(),
        first=graphene.Int(default_value=paging.PAGE_SIZE, description=f"At most {paging.MAX_PAGE_SIZE}"),
        after=graphene.String(),
        description="Your app's tables, newest first (filters as REST)",
    )
    table = graphene.Field(Table, id=graphene.Int(required=True), description="Null when not yours to see")
    quick_play = graphene.Field(Table, description="The table where you wait in quick play, or null")
    invites = graphene.List(
        graphene.NonNull(lambda: Invite),
        table_id=graphene.Int(required=True),
        description="A table's usable invite codes (hints only), for its seated players or its app: all "
        "of them, at most 20 (invitePage pages them)",
    )
    invite_page = graphene.Field(
        InviteConnection,
        required=True,
        table_id=graphene.Int(required=True),
        **pages.args(),
        description="A table's usable invite codes (hints only), oldest first, for its seated players or "
        "its app (errors: not_found, not_seated, invalid_cursor)",
    )
    invite_table = graphene.Field(
        Table,
        code=graphene.String(required=True),
        description="The table an invite code joins, as a spectator sees it (errors: invite_invalid, "
        "invite_expired)",
    )
    table_export = graphene.Field(
        GameExport,
        id=graphene.Int(required=True),
        description="A finished game as one document (not_finished before its end); null when not yours",
    )
    table_transcript = graphene.String(
        id=graphene.Int(required=True),
        description="A finished game as plain text (error not_finished before the end); null when not yours",
    )

    def resolve_me(root: Any, info: Any) -> Viewer:
        p = principal_of(info)
        app = AppInfo(id=p.app.pk, name=p.app.name) if p.app else None
        player = (
            PlayerInfo(id=p.player.pk, name=p.player.name, external_id=p.player.external_id)
            if p.player
            else None
        )
        language = None if p.player is None else p.player.language
        return Viewer(kind="app" if p.is_app else "player", app=app, player=player, language=language)

    def resolve_tables(
        root: Any,
        info: Any,
        first: int | None,
        status: str | None = None,
        open_seats: bool | None = None,
        mine: bool | None = None,
        after: str | None = None,
    ) -> TableConnection:
        p = principal_of(info)
        tables = reads.filtered_tables(p, status=status, open_seats=bool(open_seats), mine=bool(mine))
        return pages.connection(
            TableConnection, tables, reads.TABLE_PAGES, partial(TableRef, p), first, after
        )

    def resolve_invites(root: Any, info: Any, table_id: int) -> list[dict[str, Any]]:
        p = principal_of(info)
        live = services.invites_of(table_id=table_id, player=p.player, scope=p.app)
        return [invite_body(i) for i in live.order_by(*INVITE_PAGES.fields)]

    def resolve_invite_page(
        root: Any, info: Any, table_id: int, first: int | None, after: str | None = None
    ) -> Any:
        p = principal_of(info)
        live = services.invites_of(table_id=table_id, player=p.player, scope=p.app)
        return pages.connection(InviteConnection, live, INVITE_PAGES, invite_body, first, after)

    def resolve_invite_table(root: Any, info: Any, code: str) -> TableRef:
        p = principal_of(info)
        return TableRef(p, services.table_by_code(code, p.app))

    def resolve_quick_play(root: Any, info: Any) -> TableRef | None:
        p = principal_of(info)
        table = services.waiting_of(p.require_player())
        return None if table is None else TableRef(p, table)

    def resolve_table_export(root: Any, info: Any, id: int) -> dict[str, Any] | None:
        table = _seen(info, id)
        return None if table is None else export_document(table)

    def resolve_table_transcript(root: Any, info: Any, id: int) -> str | None:
        table = _seen(info, id)
        return None if table is None else export_transcript(table)

    def resolve_table(root: Any, info: Any, id: int) -> TableRef | None:
        """The table as REST reads it (an overdue clock is enforced first); null when not yours."""
        table = _seen(info, id)
        return None if table is None else TableRef(principal_of(info), table)


# -- mutations --------------------------------------------------------------------------


class LanguagePayload(graphene.ObjectType):
    language = graphene.String(description="The player's language now (empty: Accept-Language chooses)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class SetLanguage(OperationMutation):
    """Player token: the language of your error messages (en, mi, eu, ms or ky), whatever
    Accept-Language says; empty: follow Accept-Language again. Another value: invalid_language.
    The same as updateMe(language)."""

    class Meta:
        operation = ops.UPDATE_ME

    shaped = {"language": graphene.String(required=True)}
    Output = LanguagePayload

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: PlayerModel) -> LanguagePayload:
        messages.changed(info.context, out.language)
        return LanguagePayload(language=out.language, errors=[])


class MePayload(graphene.ObjectType):
    me = graphene.Field(Viewer, description="You after the change (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class UpdateMe(OperationMutation):
    class Meta:
        operation = ops.UPDATE_ME

    Output = MePayload

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: PlayerModel) -> MePayload:
        messages.changed(info.context, out.language)  # this answer in the new language
        return MePayload(me=Query.resolve_me(None, info), errors=[])


class Mutation(
    ErasureMutations,
    TableMutations,
    TournamentMutation,
    BotMutations,
    WebhookMutations,
    TicketMutations,
    PushMutations,
    ExportMutations,
    AppMutations,
    KeyMutations,
    graphene.ObjectType,
):
    update_me = UpdateMe.Field()
    set_language = SetLanguage.Field(deprecation_reason=renamed("updateMe"))


# The event types are reached through the Event interface only: named here so the schema has them.
schema = graphene.Schema(
    query=Query, mutation=Mutation, subscription=Subscription, types=list(STREAM_TYPES.values())
)
