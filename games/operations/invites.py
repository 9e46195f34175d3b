"""The invite operations: codes that let players see and join a private table.

Each is declared once: REST serves it (games/api/invites.py) and GraphQL too (games/graphql/tables.py).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer

from games import services
from games.accounts import Scope
from games.errors import Code
from games.operations.base import Access, Operation
from games.operations.fields import EmptyIn, StrictIntegerField, StrictSerializer
from games.operations.tables import JOINING, SEATS, position_field
from games.services.invites import EXPIRY_LIMITS, USES_LIMITS

MANAGE = (Code.not_found, (Code.not_seated, 422))  # a code is managed by a seated player or the app


@extend_schema_serializer(component_name="InviteIn")  # its name in the OpenAPI document since 0.1
class CreateInviteIn(StrictSerializer):
    """A new invite code: how long it is valid and how many joins it allows (absent: no limit)."""

    expires_in = StrictIntegerField(
        required=False,
        min_value=EXPIRY_LIMITS[0],
        max_value=EXPIRY_LIMITS[1],
        help_text=f"Seconds the code stays valid, {EXPIRY_LIMITS[0]:,} to {EXPIRY_LIMITS[1]:,} (absent: "
        "until revoked)",
    )
    uses = StrictIntegerField(
        required=False,
        min_value=USES_LIMITS[0],
        max_value=USES_LIMITS[1],
        help_text=f"How many players may join with it, {USES_LIMITS[0]:,} to {USES_LIMITS[1]:,} (absent: "
        "any number)",
    )


CREATE_INVITE = Operation(
    name="createInvite",
    scope=Scope.tables_write,
    description="A new invite code to an open table, by one of its seated players or its app.",
    input=CreateInviteIn,
    path=("table_id",),
    run=lambda c: services.invite_create(
        table_id=c["table_id"],
        player=c.principal.player,
        scope=c.principal.app,
        expires_in=c.get("expires_in"),
        uses=c.get("uses"),
    ),
    errors=(*MANAGE, Code.table_not_open),
)

REVOKE_INVITE = Operation(
    name="revokeInvite",
    scope=Scope.tables_write,
    description="Revoke an invite code of a table for good (its seated players or its app).",
    input=EmptyIn,
    path=("table_id", "code"),
    run=lambda c: services.invite_revoke(
        table_id=c["table_id"], code=c["code"], player=c.principal.player, scope=c.principal.app
    ),
    errors=(*MANAGE, Code.invite_invalid),
)


class JoinByInviteIn(StrictSerializer):
    """Take a seat at the code's table: the lowest open one, or `position`."""

    position = position_field()


JOIN_BY_INVITE = Operation(
    name="joinByInvite",
    description="Take a seat with an invite code alone (the code names its table): the lowest open seat, "
    "or `position`.",
    input=JoinByInviteIn,
    path=("code",),
    access=Access.PLAYER,
    run=lambda c: services.join_by_invite(
        code=c["code"],
        player=c.principal.require_player(),
        position=c.get("position"),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(*SEATS, *JOINING),
    idempotent=True,
)
