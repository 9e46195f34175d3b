"""GraphQL mutations of players, tables and invites: one class per operation of games/operations.

Each names its operation; its arguments, description, checks and service call are the operation's
(games/graphql/base.py). Where GraphQL's shape of an input differs from REST's JSON (a list of bot
seats for a map, typed option and clock inputs, an enum), `shaped` declares it and `input_of`
turns it back into the operation's input.
"""

from __future__ import annotations

from typing import Any

import graphene

from bots import LEVELS
from games import operations as ops
from games.accounts import Principal
from games.graphql.base import OperationMutation, TableMutation, TablePayload
from games.graphql.enums import Visibility
from games.graphql.inputs import ClocksInput, TableOptionsInput, clocks_given, options_given
from games.graphql.types import Error

# Old names of fields renamed to their REST operationId (docs/graphql.md, "Names, parity with REST
# and deprecations"): they still work, marked @deprecated, until this date.
DEPRECATED_UNTIL = "2027-06-01"
# expectedVersion was an argument of every table mutation; where the operation takes no version it
# never did anything, and stays until the same date.
IGNORED_VERSION = graphene.Int(
    deprecation_reason=f"Ignored by this mutation (it takes no version); removed after {DEPRECATED_UNTIL}."
)


def renamed(new: str) -> str:
    """The deprecation reason of a field renamed to `new`."""
    return f"Renamed {new} (as REST's operationId); this name is kept until {DEPRECATED_UNTIL}."


def _wire(value: Any) -> Any:
    """An enum argument as its wire value (graphene hands resolvers the enum member)."""
    return getattr(value, "value", value)


# -- tables -----------------------------------------------------------------------------------


class BotSeat(graphene.InputObjectType):
    position = graphene.Int(required=True, description="The seat, 0 first")
    level = graphene.String(
        required=True,
        description=f"One of {', '.join(LEVELS)}, or ext:<name> for a bot the app brought "
        "(else invalid_bot_level)",
    )


class SpectatorDelayInput(graphene.InputObjectType):
    """Spectators see the table this much later: give seconds (0 to 600) or tricks (0 to 13), not
    both (else invalid_input); 0 or null: live."""

    seconds = graphene.Int()
    tricks = graphene.Int()


class CreateTable(TableMutation):
    class Meta:
        operation = ops.CREATE_TABLE

    shaped = {
        "options": TableOptionsInput(),
        "bots": graphene.List(graphene.NonNull(BotSeat)),
        "clocks": ClocksInput(),
        "visibility": Visibility(description="public (default), unlisted or private"),
        "spectator_delay": SpectatorDelayInput(),
        "expected_version": IGNORED_VERSION,
    }
    Output = TablePayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        given = super().input_of(arguments)
        if "bots" in given:
            given["bots"] = {str(seat["position"]): seat["level"] for seat in given["bots"]}
        if "options" in given:
            given["options"] = options_given(given["options"])
        if "clocks" in given:
            given["clocks"] = clocks_given(given["clocks"])
        if "visibility" in given:
            given["visibility"] = _wire(given["visibility"])
        if given.get("spectator_delay") is not None:
            given["spectator_delay"] = {k: v for k, v in given["spectator_delay"].items() if v is not None}
        return given


class JoinTable(TableMutation):
    class Meta:
        operation = ops.JOIN_TABLE

    Output = TablePayload


class LeaveTable(TableMutation):
    class Meta:
        operation = ops.LEAVE_TABLE

    Output = TablePayload


class AddBot(TableMutation):
    class Meta:
        operation = ops.ADD_BOT

    Output = TablePayload


class StartTable(TableMutation):
    class Meta:
        operation = ops.START_TABLE

    Output = TablePayload


class AbandonTable(TableMutation):
    class Meta:
        operation = ops.ABANDON_TABLE

    Output = TablePayload


class ReclaimSeat(TableMutation):
    class Meta:
        operation = ops.RECLAIM_SEAT

    shaped = {"expected_version": IGNORED_VERSION}
    Output = TablePayload


class RequestRematch(TableMutation):
    class Meta:
        operation = ops.REQUEST_REMATCH

    shaped = {"expected_version": IGNORED_VERSION}
    Output = TablePayload


class SubmitAction(TableMutation):
    class Meta:
        operation = ops.SUBMIT_ACTION

    shaped = {"choice": graphene.String(description="moon: subtract or add")}
    Output = TablePayload


class PassCards(TableMutation):
    """Pass three cards (card notation as in the rules: QS, 10H): submitAction of type pass."""

    class Meta:
        operation = ops.SUBMIT_ACTION

    shaped = {
        "type": None,
        "card": None,
        "choice": None,
        "cards": graphene.List(graphene.NonNull(graphene.String), required=True),
    }
    Output = TablePayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "pass", **super().input_of(arguments)}


class PlayCard(TableMutation):
    """Play one card on your turn: submitAction of type play."""

    class Meta:
        operation = ops.SUBMIT_ACTION

    shaped = {"type": None, "cards": None, "choice": None, "card": graphene.String(required=True)}
    Output = TablePayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "play", **super().input_of(arguments)}


class ChooseMoon(TableMutation):
    """After shooting the moon: subtract 26 from your score, or add 26 to everyone else's
    (submitAction of type moon)."""

    class Meta:
        operation = ops.SUBMIT_ACTION

    shaped = {"type": None, "cards": None, "card": None, "choice": graphene.String(required=True)}
    Output = TablePayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "moon", **super().input_of(arguments)}


class QuickPlay(TableMutation):
    class Meta:
        operation = ops.QUICK_PLAY

    shaped = {"options": TableOptionsInput(), "clocks": ClocksInput()}
    Output = TablePayload

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        given = super().input_of(arguments)
        if "options" in given:
            given["options"] = options_given(given["options"])
        if "clocks" in given:
            given["clocks"] = clocks_given(given["clocks"])
        return given


class LeaveQuickPlay(TableMutation):
    class Meta:
        operation = ops.LEAVE_QUICK_PLAY

    Output = TablePayload


# -- invites ----------------------------------------------------------------------------------


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


class CreateInvite(OperationMutation):
    class Meta:
        operation = ops.CREATE_INVITE

    Output = InvitePayload

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> InvitePayload:
        return InvitePayload(invite=out, errors=[])


class RevokePayload(graphene.ObjectType):
    revoked = graphene.Boolean(required=True)
    errors = graphene.List(graphene.NonNull(Error), required=True)


class RevokeInvite(OperationMutation):
    class Meta:
        operation = ops.REVOKE_INVITE

    Output = RevokePayload

    @classmethod
    def refused(cls, error: Error) -> RevokePayload:
        return RevokePayload(revoked=False, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> RevokePayload:
        return RevokePayload(revoked=True, errors=[])


class JoinByInvite(TableMutation):
    class Meta:
        operation = ops.JOIN_BY_INVITE

    Output = TablePayload


# -- players ----------------------------------------------------------------------------------


class PlayerInfo(graphene.ObjectType):
    id = graphene.Int(required=True)
    name = graphene.String(required=True)
    external_id = graphene.String(required=True)


class CredentialPayload(graphene.ObjectType):
    player = graphene.Field(PlayerInfo)
    token = graphene.String(description="Bearer token: shown once, stored hashed")
    expires_at = graphene.DateTime(description="When the token stops working (null: never)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class CreateGuest(OperationMutation):
    class Meta:
        operation = ops.CREATE_GUEST

    Output = CredentialPayload


class CreatePlayer(OperationMutation):
    class Meta:
        operation = ops.CREATE_PLAYER

    Output = CredentialPayload


class CreatePlayerToken(OperationMutation):
    class Meta:
        operation = ops.CREATE_PLAYER_TOKEN

    Output = CredentialPayload


class RevokeToken(OperationMutation):
    class Meta:
        operation = ops.REVOKE_TOKEN

    shaped = {"bearer": None}
    Output = CredentialPayload

    @classmethod
    def context_of(cls, info: Any) -> dict[str, Any]:
        return {"bearer": getattr(info.context, "bearer", "")}


class TableMutations(graphene.ObjectType):
    """The root fields of the mutations above (old names kept, deprecated, until DEPRECATED_UNTIL)."""

    create_guest = CreateGuest.Field()
    create_player = CreatePlayer.Field()
    create_player_token = CreatePlayerToken.Field()
    issue_token = CreatePlayerToken.Field(deprecation_reason=renamed("createPlayerToken"))
    revoke_token = RevokeToken.Field()
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
