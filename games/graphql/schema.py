"""The GraphQL schema: the root queries and mutations, each calling the same service as its REST operation.

A write is the mutation named as its REST operationId and a read is a query or a field of its resource
(docs/graphql.md, "Names, parity with REST and deprecations"; tests/graphql/test_graphql_parity.py);
the event streams are subscriptions instead, and renamed mutations keep their old name, deprecated.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import graphene

from bots import LEVELS
from games import accounts, messages, reads, services
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.bots import BotMutations, BotQueries
from games.graphql.enums import ViewerKind, Visibility
from games.graphql.events import STREAM_TYPES
from games.graphql.exports import GameExport
from games.graphql.exports import document as export_document
from games.graphql.exports import transcript as export_transcript
from games.graphql.inputs import ClocksInput, TableOptionsInput, clocks_given, options_given
from games.graphql.ratings import RatingsQuery
from games.graphql.subscriptions import Subscription
from games.graphql.tickets import TicketMutations
from games.graphql.tournaments import TournamentMutation, TournamentQuery
from games.graphql.types import Error, Table, TableRef, error_of
from games.graphql.webhooks import WebhookMutations, WebhookQueries
from games.services import Idempotency, Outcome

if TYPE_CHECKING:  # types only: the queries are in games.accounts
    from games.models import Player as PlayerModel

MAX_PAGE = 100
# Old names of fields renamed to their REST operationId (docs/graphql.md, "Names, parity with REST
# and deprecations"): they still work, marked @deprecated, until this date.
DEPRECATED_UNTIL = "2027-06-01"


def renamed(new: str) -> str:
    """The deprecation reason of a field renamed to `new`."""
    return f"Renamed {new} (as REST's operationId); this name is kept until {DEPRECATED_UNTIL}."


def principal_of(info: Any, *, required: bool = True) -> Principal | None:
    """The caller, authenticated by the view from `Authorization: Bearer ...`."""
    principal = getattr(info.context, "principal", None)
    if principal is None and required:
        raise ServiceError("not_authenticated", "send 'Authorization: Bearer <key or token>'", kind="auth")
    return principal


def _principal(info: Any) -> Principal:
    principal = principal_of(info)
    assert principal is not None
    return principal


# -- queries ----------------------------------------------------------------------------


class AppInfo(graphene.ObjectType):
    id = graphene.Int(required=True)
    name = graphene.String(required=True)


class PlayerInfo(graphene.ObjectType):
    id = graphene.Int(required=True)
    name = graphene.String(required=True)
    external_id = graphene.String(required=True)


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
        return services.table_seen(_principal(info), table_id)
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
        p = _principal(info)
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
        p = _principal(info)
        first = 20 if first is None else first  # an explicit null: the default page
        if not 1 <= first <= MAX_PAGE:
            raise ServiceError("invalid_filter", f"first must be 1 to {MAX_PAGE}", kind="malformed")
        tables = reads.filtered_tables(p, status=status, open_seats=bool(open_seats), mine=bool(mine))
        rows = reads.tables_before(tables, _uncursor(after) if after else None, first + 1)
        page = rows[:first]
        edges = [TableConnection.Edge(node=TableRef(p, t), cursor=_cursor(t.pk)) for t in page]
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
        p = _principal(info)
        return services.invites_of(table_id=table_id, player=p.player, scope=p.app)

    def resolve_invite_table(root: Any, info: Any, code: str) -> TableRef:
        p = _principal(info)
        return TableRef(p, services.table_by_code(code, p.app))

    def resolve_quick_play(root: Any, info: Any) -> TableRef | None:
        p = _principal(info)
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
        return None if table is None else TableRef(_principal(info), table)


# -- mutations --------------------------------------------------------------------------


class TablePayload(graphene.ObjectType):
    table = graphene.Field(Table, description="The table as you see it after the action (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)
    replayed = graphene.Boolean(
        required=True, description="True when this repeated an idempotency key: nothing acted again"
    )


def _idempotency(
    principal: Principal, name: str, key: str | None, args: dict[str, Any]
) -> Idempotency | None:
    return Idempotency.for_table(principal, key, f"graphql {name}", args)


def table_mutation(
    info: Any, name: str, args: dict[str, Any], call: Callable[[Principal, Idempotency | None], Outcome]
) -> TablePayload:
    """Run one service call for a mutation: errors come back typed, never raised; a repeated
    idempotency key answers the table exactly as the first request saw it."""
    try:
        principal = _principal(info)
        key = args.pop("idempotency_key", None)
        out = call(principal, _idempotency(principal, name, key, args))
    except ServiceError as exc:
        return TablePayload(table=None, errors=[error_of(exc)], replayed=False)
    if out.response is not None:
        ref = TableRef(principal, out.table, json.loads(out.response[1]))
    else:
        assert out.table is not None
        ref = TableRef(principal, out.table)
    return TablePayload(table=ref, errors=[], replayed=out.replayed)


def _version_args() -> dict[str, Any]:
    return {
        "expected_version": graphene.Int(description="The version you saw: stale gets stale_version"),
        "idempotency_key": graphene.String(description="A retry with the same key never acts twice"),
    }


def _mutation(name: str, description: str, args: dict[str, Any], call: Callable[..., Outcome]) -> Any:
    """A mutation class whose arguments are `args` plus expectedVersion and idempotencyKey, and
    whose body is `call(principal, idempotency, **arguments)`."""

    def mutate(root: Any, info: Any, **kwargs: Any) -> TablePayload:
        return table_mutation(info, name, dict(kwargs), lambda p, idem: call(p, idem, **kwargs))

    arguments = type("Arguments", (), {**args, **_version_args()})
    return type(
        name,
        (graphene.Mutation,),
        {"Arguments": arguments, "Output": TablePayload, "mutate": mutate, "__doc__": description},
    )


def _player(p: Principal) -> PlayerModel:
    return p.require_player()


def _level(level: str) -> str:
    services.check_level(level)
    return level


class BotSeat(graphene.InputObjectType):
    position = graphene.Int(required=True, description="The seat, 0 first")
    level = graphene.String(
        required=True,
        description=f"One of {', '.join(LEVELS)}, or ext:<name> for a bot the app brought "
        "(else invalid_bot_level)",
    )


def _create(p: Principal, idem: Idempotency | None, **kw: Any) -> Outcome:
    bots = {b["position"]: b["level"] for b in kw.get("bots") or []}
    return services.table_create(
        options=options_given(kw.get("options")),
        bots=bots,
        clocks=clocks_given(kw.get("clocks")),
        app=p.app,
        visibility=_wire(kw.get("visibility")) or "public",
        invited=kw.get("invited"),
        creator=p.player,
        spectator_delay=_given(kw.get("spectator_delay")),
        rated=bool(kw.get("rated")),
        bot_think_ms=kw.get("bot_think_ms"),
        bot_pace_ms=kw.get("bot_pace_ms"),
        idempotency=idem,
    )


def _given(delay: dict[str, Any] | None) -> dict[str, Any] | None:
    """The spectator delay from its input: only the field given a value."""
    return None if delay is None else {k: v for k, v in delay.items() if v is not None}


class SpectatorDelayInput(graphene.InputObjectType):
    """Spectators see the table this much later: give seconds (0 to 600) or tricks (0 to 13), not
    both (else invalid_input); 0 or null: live."""

    seconds = graphene.Int()
    tricks = graphene.Int()


def _wire(value: Any) -> Any:
    """An enum argument as its wire value (graphene hands resolvers the enum member)."""
    return getattr(value, "value", value)


def _action(action: dict[str, Any]) -> Callable[..., Outcome]:
    def call(p: Principal, idem: Idempotency | None, **kw: Any) -> Outcome:
        body = {**action, **{k: kw[k] for k in ("card", "cards", "choice") if k in kw}}
        return services.action_submit(
            table_id=kw["table_id"],
            player=_player(p),
            action=body,
            expected_version=kw.get("expected_version"),
            scope=p.app,
            idempotency=idem,
        )

    return call


_TABLE = {"table_id": graphene.Int(required=True)}

CreateTable = _mutation(
    "CreateTable",
    "A new table: engine options, bots by seat, clocks (seconds; null: none). "
    "Starts when every seat is a bot.",
    {
        "options": TableOptionsInput(),
        "bots": graphene.List(graphene.NonNull(BotSeat)),
        "clocks": ClocksInput(),
        "visibility": Visibility(description="public (default), unlisted or private"),
        "invited": graphene.List(
            graphene.NonNull(graphene.Int),
            description="Players of your scope who may see and join it (at most 20; else invalid_input)",
        ),
        "spectator_delay": SpectatorDelayInput(),
        "rated": graphene.Boolean(
            description="Its finished game updates its people's ratings (default false)"
        ),
        "bot_think_ms": graphene.Int(
            description="Milliseconds strong and expert bots think per move, 10 to 5,000 (else "
            "invalid_input); null: their levels' fixed budgets, which replay exactly for a seed."
        ),
        "bot_pace_ms": graphene.Int(
            description="Milliseconds before each bot card played, 0 to 2,000 (else invalid_input); "
            "null: the server's default while a person sits at the table, 0 at a bot-only table."
        ),
    },
    _create,
)
JoinTable = _mutation(
    "JoinTable",
    "Take a seat (the lowest open one unless position is given); a full table starts. A private "
    "table needs an invite code of it unless you were named.",
    {**_TABLE, "position": graphene.Int(), "invite": graphene.String(description="An invite code")},
    lambda p, idem, **kw: services.seat_join(
        table_id=kw["table_id"],
        player=_player(p),
        position=kw.get("position"),
        expected_version=kw.get("expected_version"),
        scope=p.app,
        invite=kw.get("invite"),
        idempotency=idem,
    ),
)
LeaveTable = _mutation(
    "LeaveTable",
    "Give up your seat before the game starts.",
    dict(_TABLE),
    lambda p, idem, **kw: services.seat_leave(
        table_id=kw["table_id"],
        player=_player(p),
        expected_version=kw.get("expected_version"),
        scope=p.app,
        idempotency=idem,
    ),
)
AddBot = _mutation(
    "AddBot",
    "Seat a bot of a level (random, basic, strong, expert, or ext:<name> for a bot the app brought).",
    {**_TABLE, "level": graphene.String(default_value="basic"), "position": graphene.Int()},
    lambda p, idem, **kw: services.bot_add(
        table_id=kw["table_id"],
        level=_level(kw["level"]),
        position=kw.get("position"),
        player=p.player,
        expected_version=kw.get("expected_version"),
        scope=p.app,
        idempotency=idem,
    ),
)
StartTable = _mutation(
    "StartTable",
    "Start now with bots of level fillWith in the open seats (a seated player or the app).",
    {**_TABLE, "fill_with": graphene.String(default_value="basic")},
    lambda p, idem, **kw: services.table_start(
        table_id=kw["table_id"],
        fill_with=_level(kw["fill_with"]),
        player=p.player,
        expected_version=kw.get("expected_version"),
        scope=p.app,
        idempotency=idem,
    ),
)


RequestRematch = _mutation(
    "RequestRematch",
    "After a finished game: ask for a rematch, or accept the one asked for. When every person at the "
    "table has (bots accept by themselves), a new table starts with the seats moved one place on; "
    "this table's rematch.table names it.",
    dict(_TABLE),
    lambda p, idem, **kw: services.rematch(
        table_id=kw["table_id"], player=_player(p), scope=p.app, idempotency=idem
    ),
)


def _quick_play(p: Principal, idem: Idempotency | None, **kw: Any) -> Outcome:
    return services.quick_play(
        player=_player(p),
        app=p.app,
        options=options_given(kw.get("options")),
        clocks=clocks_given(kw.get("clocks")),
        bot_level=kw.get("bot_level", "basic"),
        wait_seconds=kw.get("wait_seconds", services.WAIT_DEFAULT),
        idempotency=idem,
    )


class QuickPlay(graphene.Mutation):
    """Play as soon as possible: a seat at the oldest waiting table of your app with the same
    options, clocks and bot level, or at a new one. It starts when full; when waitSeconds pass
    first, bots of botLevel take the open seats (botLevel null: the table closes). Its events say
    match_found just before game_started. One queue at a time (already_waiting)."""

    class Arguments:
        options = TableOptionsInput()
        clocks = ClocksInput()
        bot_level = graphene.String(
            default_value="basic", description="Bots that fill the open seats at the deadline; null: none"
        )
        wait_seconds = graphene.Int(
            default_value=services.WAIT_DEFAULT,
            description=f"Seconds to wait for people: {services.WAIT_LIMITS[0]} to {services.WAIT_LIMITS[1]}",
        )
        idempotency_key = graphene.String(description="A retry with the same key never acts twice")

    Output = TablePayload

    def mutate(root: Any, info: Any, **kwargs: Any) -> TablePayload:
        return table_mutation(info, "QuickPlay", dict(kwargs), lambda p, idem: _quick_play(p, idem, **kwargs))


class LeaveQuickPlay(graphene.Mutation):
    """Leave the quick-play queue: give up your seat at the table where you wait (not_waiting)."""

    class Arguments:
        idempotency_key = graphene.String(description="A retry with the same key never acts twice")

    Output = TablePayload

    def mutate(root: Any, info: Any, **kwargs: Any) -> TablePayload:
        return table_mutation(
            info,
            "LeaveQuickPlay",
            dict(kwargs),
            lambda p, idem: services.quick_play_leave(player=_player(p), idempotency=idem),
        )


ReclaimSeat = _mutation(
    "ReclaimSeat",
    "Take your seat back after it was marked away (any action of yours does the same).",
    dict(_TABLE),
    lambda p, idem, **kw: services.seat_back(
        table_id=kw["table_id"], player=_player(p), scope=p.app, idempotency=idem
    ),
)


def _abandon(p: Principal, idem: Idempotency | None, **kw: Any) -> Outcome:
    p.require_app("only the table's app can abandon it")
    return services.table_abandon(
        table_id=kw["table_id"], expected_version=kw.get("expected_version"), scope=p.app, idempotency=idem
    )


AbandonTable = _mutation(
    "AbandonTable", "Close an unfinished table for good (app key).", dict(_TABLE), _abandon
)
PassCards = _mutation(
    "PassCards",
    "Pass three cards (card notation as in the rules: QS, 10H).",
    {**_TABLE, "cards": graphene.List(graphene.NonNull(graphene.String), required=True)},
    _action({"type": "pass"}),
)
PlayCard = _mutation(
    "PlayCard",
    "Play one card on your turn.",
    {**_TABLE, "card": graphene.String(required=True)},
    _action({"type": "play"}),
)
ChooseMoon = _mutation(
    "ChooseMoon",
    "After shooting the moon: subtract 26 from your score, or add 26 to everyone else's.",
    {**_TABLE, "choice": graphene.String(required=True)},
    _action({"type": "moon"}),
)


def _submit(p: Principal, idem: Idempotency | None, **kw: Any) -> Outcome:
    return _action({"type": kw["type"]})(p, idem, **kw)


SubmitAction = _mutation(
    "SubmitAction",
    "Any action of yours as REST's POST tables/{id}/actions takes it: type pass with cards, play "
    "with card, moon with choice (passCards, playCard and chooseMoon are the same, typed).",
    {
        **_TABLE,
        "type": graphene.String(required=True, description="pass, play or moon (else invalid_action)"),
        "cards": graphene.List(graphene.NonNull(graphene.String), description="pass: three cards"),
        "card": graphene.String(description="play: one card"),
        "choice": graphene.String(description="moon: subtract or add"),
    },
    _submit,
)


class Invite(graphene.ObjectType):
    """An invite code as its creators see it: the code itself only in createInvite's answer."""

    code = graphene.String(description="Shown once (only its hash is stored)")
    hint = graphene.String(required=True, description="The code's first 4 characters")
    table = graphene.Int(required=True)
    created_at = graphene.String(required=True)
    expires_at = graphene.String(description="Null: valid until revoked")
    uses_left = graphene.Int(description="Null: no limit")


class InvitePayload(graphene.ObjectType):
    invite = graphene.Field(Invite, description="The new code (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class CreateInvite(graphene.Mutation):
    """A new invite code to an open table, by one of its seated players or its app: valid for
    expiresIn seconds (60 to 2,592,000) and `uses` joins (1 to 1,000); left out, no limit."""

    class Arguments:
        table_id = graphene.Int(required=True)
        expires_in = graphene.Int()
        uses = graphene.Int()

    Output = InvitePayload

    def mutate(root: Any, info: Any, table_id: int, **kw: Any) -> InvitePayload:
        try:
            p = _principal(info)
            made = services.invite_create(table_id=table_id, player=p.player, scope=p.app, **kw)
            return InvitePayload(invite=made, errors=[])
        except ServiceError as exc:
            return InvitePayload(errors=[error_of(exc)])


class RevokePayload(graphene.ObjectType):
    revoked = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class RevokeInvite(graphene.Mutation):
    """Revoke an invite code of a table for good (its seated players or its app)."""

    class Arguments:
        table_id = graphene.Int(required=True)
        code = graphene.String(required=True)

    Output = RevokePayload

    def mutate(root: Any, info: Any, table_id: int, code: str) -> RevokePayload:
        try:
            p = _principal(info)
            services.invite_revoke(table_id=table_id, code=code, player=p.player, scope=p.app)
            return RevokePayload(revoked=True, errors=[])
        except ServiceError as exc:
            return RevokePayload(revoked=False, errors=[error_of(exc)])


class JoinByInvite(graphene.Mutation):
    """Take a seat with an invite code alone (the code names its table): the lowest open seat,
    or `position`."""

    class Arguments:
        code = graphene.String(required=True)
        position = graphene.Int()
        idempotency_key = graphene.String(description="A retry with the same key never acts twice")

    Output = TablePayload

    def mutate(root: Any, info: Any, **kwargs: Any) -> TablePayload:
        return table_mutation(
            info,
            "JoinByInvite",
            dict(kwargs),
            lambda p, idem: services.join_by_invite(
                code=kwargs["code"],
                player=_player(p),
                position=kwargs.get("position"),
                scope=p.app,
                idempotency=idem,
            ),
        )


class CredentialPayload(graphene.ObjectType):
    player = graphene.Field(PlayerInfo)
    token = graphene.String(description="Bearer token: shown once, stored hashed")
    errors = graphene.List(graphene.NonNull(Error), required=True)


def _credential(player: PlayerModel | None, token: str) -> CredentialPayload:
    info = PlayerInfo(id=player.pk, name=player.name, external_id=player.external_id) if player else None
    return CredentialPayload(player=info, token=token, errors=[])


def _name(name: str) -> str:
    return accounts.text(name, "name", 64)


class CreateGuest(graphene.Mutation):
    """A self-service guest player and its token (no credentials needed)."""

    class Arguments:
        name = graphene.String(required=True)

    Output = CredentialPayload

    def mutate(root: Any, info: Any, name: str) -> CredentialPayload:
        try:
            return _credential(*accounts.player_create(app=None, name=_name(name)))
        except ServiceError as exc:
            return CredentialPayload(errors=[error_of(exc)])


def _app(info: Any) -> Principal:
    p = _principal(info)
    p.require_app("only an app key can do this")
    return p


class CreatePlayer(graphene.Mutation):
    """App key: a player for one of the app's users, and a first token."""

    class Arguments:
        name = graphene.String(required=True)
        external_id = graphene.String(default_value="")

    Output = CredentialPayload

    def mutate(root: Any, info: Any, name: str, external_id: str | None) -> CredentialPayload:
        try:
            p = _app(info)
            external_id = accounts.text(external_id, "externalId", 128, blank=True)
            return _credential(*accounts.player_create(app=p.app, name=_name(name), external_id=external_id))
        except ServiceError as exc:
            return CredentialPayload(errors=[error_of(exc)])


class CreatePlayerToken(graphene.Mutation):
    """App key: another bearer token for one of the app's players."""

    class Arguments:
        player_id = graphene.Int(required=True)

    Output = CredentialPayload

    def mutate(root: Any, info: Any, player_id: int) -> CredentialPayload:
        try:
            p = _app(info)
            assert p.app is not None
            player = accounts.player_of(p.app, player_id)
            return _credential(player, accounts.token_issue(player=player))
        except ServiceError as exc:
            return CredentialPayload(errors=[error_of(exc)])


class RevokeToken(graphene.Mutation):
    """Revoke the player token this request is made with."""

    Output = CredentialPayload

    def mutate(root: Any, info: Any) -> CredentialPayload:
        try:
            _principal(info)
            if not accounts.token_revoke(token=getattr(info.context, "bearer", "")):
                raise ServiceError(
                    "not_a_player_token", "only a player token can be revoked here", kind="rules"
                )
            return CredentialPayload(errors=[])
        except ServiceError as exc:
            return CredentialPayload(errors=[error_of(exc)])


class LanguagePayload(graphene.ObjectType):
    language = graphene.String(description="The player's language now (empty: Accept-Language chooses)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


def _set_language(info: Any, language: str | None) -> PlayerModel:
    """REST's PATCH me: the player's language, when given (None: unchanged)."""
    player = _principal(info).require_player("only a player has a language: use a player's token")
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


class Mutation(TournamentMutation, BotMutations, WebhookMutations, TicketMutations, graphene.ObjectType):
    create_guest = CreateGuest.Field()
    create_player = CreatePlayer.Field()
    create_player_token = CreatePlayerToken.Field()
    issue_token = CreatePlayerToken.Field(deprecation_reason=renamed("createPlayerToken"))
    revoke_token = RevokeToken.Field()
    update_me = UpdateMe.Field()
    set_language = SetLanguage.Field(deprecation_reason=renamed("updateMe"))
    create_table = CreateTable.Field()
    join_table = JoinTable.Field()
    leave_table = LeaveTable.Field()
    add_bot = AddBot.Field()
    start_table = StartTable.Field()
    abandon_table = AbandonTable.Field()
    pass_cards = PassCards.Field()
    play_card = PlayCard.Field()
    choose_moon = ChooseMoon.Field()
    submit_action = SubmitAction.Field()
    reclaim_seat = ReclaimSeat.Field()
    im_back = ReclaimSeat.Field(deprecation_reason=renamed("reclaimSeat"))
    request_rematch = RequestRematch.Field()
    rematch = RequestRematch.Field(deprecation_reason=renamed("requestRematch"))
    quick_play = QuickPlay.Field()
    leave_quick_play = LeaveQuickPlay.Field()
    create_invite = CreateInvite.Field()
    revoke_invite = RevokeInvite.Field()
    join_by_invite = JoinByInvite.Field()


# The event types are reached through the Event interface only: named here so the schema has them.
schema = graphene.Schema(
    query=Query, mutation=Mutation, subscription=Subscription, types=list(STREAM_TYPES.values())
)
