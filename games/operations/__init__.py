"""The API's operations, each declared once (games/operations/base.py) and served by REST and GraphQL.

`from games import operations as ops` gives every operation by its constant (ops.CREATE_TABLE);
`ALL` lists them, so the contract tests can check each is served and documented.
"""

from games.operations.base import Access, Call, Operation
from games.operations.invites import CREATE_INVITE, JOIN_BY_INVITE, REVOKE_INVITE
from games.operations.players import CREATE_GUEST, CREATE_PLAYER, CREATE_PLAYER_TOKEN, REVOKE_TOKEN
from games.operations.tables import (
    ABANDON_TABLE,
    ADD_BOT,
    CREATE_TABLE,
    JOIN_TABLE,
    LEAVE_QUICK_PLAY,
    LEAVE_TABLE,
    QUICK_PLAY,
    RECLAIM_SEAT,
    REQUEST_REMATCH,
    START_TABLE,
    SUBMIT_ACTION,
)

ALL: tuple[Operation, ...] = (
    CREATE_GUEST,
    CREATE_PLAYER,
    CREATE_PLAYER_TOKEN,
    REVOKE_TOKEN,
    CREATE_TABLE,
    JOIN_TABLE,
    LEAVE_TABLE,
    ADD_BOT,
    START_TABLE,
    ABANDON_TABLE,
    RECLAIM_SEAT,
    REQUEST_REMATCH,
    SUBMIT_ACTION,
    QUICK_PLAY,
    LEAVE_QUICK_PLAY,
    CREATE_INVITE,
    REVOKE_INVITE,
    JOIN_BY_INVITE,
)

__all__ = [
    "ABANDON_TABLE",
    "ADD_BOT",
    "ALL",
    "CREATE_GUEST",
    "CREATE_INVITE",
    "CREATE_PLAYER",
    "CREATE_PLAYER_TOKEN",
    "CREATE_TABLE",
    "JOIN_BY_INVITE",
    "JOIN_TABLE",
    "LEAVE_QUICK_PLAY",
    "LEAVE_TABLE",
    "QUICK_PLAY",
    "RECLAIM_SEAT",
    "REQUEST_REMATCH",
    "REVOKE_INVITE",
    "REVOKE_TOKEN",
    "START_TABLE",
    "SUBMIT_ACTION",
    "Access",
    "Call",
    "Operation",
]
