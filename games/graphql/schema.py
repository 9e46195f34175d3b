"""The GraphQL schema: the root queries and mutations, each calling the same service as its REST operation.

A write is the mutation named as its REST operationId and a read is a query or a field of its resource
(docs/graphql.md, "Names, parity with REST and deprecations"; tests/graphql/test_graphql_parity.py);
the event streams are subscriptions instead, and renamed mutations keep their old name, deprecated.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import graphene

from games import accounts, messages, reads, services
from games.errors import ServiceError
from games.graphql.base import error_of, principal_of
from games.graphql.bots import BotMutations, BotQueries
from games.graphql.enums import ViewerKind
from games.graphql.events import STREAM_TYPES
from games.graphql.exports import GameExport
from games.graphql.exports import document as export_document
from games.graphql.exports import transcript as export_transcript
from games.graphql.ratings import RatingsQuery
from games.graphql.subscriptions import Subscription
from games.graphql.tables import Invite, PlayerInfo, TableMutations, renamed
from games.graphql.tickets import TicketMutations
from games.graphql.tournaments import TournamentMutation, TournamentQuery
from games.graphql.types import Error, Table, TableRef
from games.graphql.webhooks import WebhookMutations, WebhookQueries

if TYPE_CHECKING:  # types only: the queries are in games.accounts
    from games.models import Player as PlayerModel

MAX_PAGE = 100


# -- queries ----------------------------------------------------------------------------


class AppInfo(graphene.ObjectType):
    id = graphene.Int(required=True)
    name = graphene.String(required=True)


class Viewer(graphene.ObjectType):
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


def _cursor(table_id: int) -> str:
    return base64.urlsafe_b64encode(f"table:{table_id}".encode()).decode()


def _uncursor(cursor: str) -> int:
    try:
        kind, _, number = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind == "table" and number.isascii() and number.isdigit() and len(number) <= 18:
            return int(number)
    except (ValueError, UnicodeDecodeError):
        pass
    raise ServiceError("invalid_cursor", "after must be a cursor from a previous page", kind="malformed")


class Query(RatingsQuery, TournamentQuery, BotQueries, WebhookQueries, graphene.ObjectType):
    me = graphene.Field(Viewer, required=True)
    tables = graphene.Field(
        TableConnection,
        required=True,
        status=graphene.String(),
        open_seats=graphene.Boolean(),
        mine=graphene.Boolean(),
        first=graphene.Int(default_value=20, description=f"At most {MAX_PAGE}"),
        after=graphene.String(),
        description="Your app's tables, newest first (filters as REST)",
    )
    table = graphene.Field(Table, id=graphene.Int(required=True), description="Null when not yours to see")
    quick_play = graphene.Field(Table, description="The table where you wait in quick play, or null")
    invites = graphene.List(
        graphene.NonNull(lambda: Invite),
        table_id=graphene.Int(required=True),
        description="A table's usable invite codes (hints only), for its seated players or its app",
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
        first = 20 if first is None else first  # an explicit null: the default page
        if not 1 <= first <= MAX_PAGE:
            raise ServiceError("invalid_filter", f"first must be 1 to {MAX_PAGE}", kind="malformed")
        tables = reads.filtered_tables(p, status=status, open_seats=bool(open_seats), mine=bool(mine))
        rows = reads.tables_before(tables, _uncursor(after) if after else None, first + 1)
        page = rows[:first]
        edge = TableConnection.Edge  # type: ignore[attr-defined]  # graphene makes it with the class
        edges = [edge(node=TableRef(p, t), cursor=_cursor(t.pk)) for t in page]
        return TableConnection(
            edges=edges,
            page_info=graphene.relay.PageInfo(
                has_next_page=len(rows) > first,
                has_previous_page=bool(after),
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
        )

    def resolve_invites(root: Any, info: Any, table_id: int) -> list[dict[str, Any]]:
        p = principal_of(info)
        return services.invites_of(table_id=table_id, player=p.player, scope=p.app)

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


def _set_language(info: Any, language: str | None) -> PlayerModel:
    """REST's PATCH me: the player's language, when given (None: unchanged)."""
    player = principal_of(info).require_player("only a player has a language: use a player's token")
    if language is not None:
        accounts.set_language(player, language)
        messages.changed(info.context, player.language)
    return player


class SetLanguage(graphene.Mutation):
    """Player token: the language of your error messages (en, mi, eu, ms or ky), whatever
    Accept-Language says; empty: follow Accept-Language again. Another value: invalid_language.
    The same as updateMe(language)."""

    class Arguments:
        language = graphene.String(required=True)

    Output = LanguagePayload

    def mutate(root: Any, info: Any, language: str) -> LanguagePayload:
        try:
            return LanguagePayload(language=_set_language(info, language).language, errors=[])
        except ServiceError as exc:
            return LanguagePayload(errors=[error_of(exc)])


class MePayload(graphene.ObjectType):
    me = graphene.Field(Viewer, description="You after the change (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class UpdateMe(graphene.Mutation):
    """Player token: change what a player may change about themselves, as REST's PATCH me: the
    language of your error messages (en, mi, eu, ms or ky), whatever Accept-Language says; empty:
    follow Accept-Language again; left out: unchanged. Another value: invalid_language."""

    class Arguments:
        language = graphene.String()

    Output = MePayload

    def mutate(root: Any, info: Any, language: str | None = None) -> MePayload:
        try:
            _set_language(info, language)
            return MePayload(me=Query.resolve_me(root, info), errors=[])
        except ServiceError as exc:
            return MePayload(errors=[error_of(exc)])


class Mutation(
    TableMutations, TournamentMutation, BotMutations, WebhookMutations, TicketMutations, graphene.ObjectType
):
    update_me = UpdateMe.Field()
    set_language = SetLanguage.Field(deprecation_reason=renamed("updateMe"))


# The event types are reached through the Event interface only: named here so the schema has them.
schema = graphene.Schema(
    query=Query, mutation=Mutation, subscription=Subscription, types=list(STREAM_TYPES.values())
)
