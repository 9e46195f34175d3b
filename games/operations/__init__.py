"""The API's operations, each declared once (games/operations/base.py) and served by REST and GraphQL.

`from games import operations as ops` gives every operation by its constant (ops.CREATE_TABLE);
`ALL` lists them, so the contract tests can check each is served and documented.
"""

from games.operations.base import Access, Call, Operation
from games.operations.bots import DELETE_BOT, REGISTER_BOT, ROTATE_BOT_SECRET, UPDATE_BOT
from games.operations.invites import CREATE_INVITE, JOIN_BY_INVITE, REVOKE_INVITE
from games.operations.players import CREATE_GUEST, CREATE_PLAYER, CREATE_PLAYER_TOKEN, REVOKE_TOKEN, UPDATE_ME
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
from games.operations.tickets import CREATE_PLAYER_STREAM_TICKET, CREATE_TABLE_STREAM_TICKET
from games.operations.tournaments import CREATE_TOURNAMENT
from games.operations.webhooks import (
    CREATE_WEBHOOK,
    DELETE_WEBHOOK,
    REDELIVER,
    ROTATE_WEBHOOK_SECRET,
    UPDATE_WEBHOOK,
)

ALL: tuple[Operation, ...] = (
    CREATE_GUEST,
    CREATE_PLAYER,
    CREATE_PLAYER_TOKEN,
    REVOKE_TOKEN,
    UPDATE_ME,
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
    REGISTER_BOT,
    UPDATE_BOT,
    ROTATE_BOT_SECRET,
    DELETE_BOT,
    CREATE_WEBHOOK,
    UPDATE_WEBHOOK,
    ROTATE_WEBHOOK_SECRET,
    DELETE_WEBHOOK,
    REDELIVER,
    CREATE_TABLE_STREAM_TICKET,
    CREATE_PLAYER_STREAM_TICKET,
    CREATE_TOURNAMENT,
)

__all__ = [
    "ABANDON_TABLE",
    "ADD_BOT",
    "ALL",
    "CREATE_GUEST",
    "CREATE_INVITE",
    "CREATE_PLAYER",
    "CREATE_PLAYER_STREAM_TICKET",
    "CREATE_PLAYER_TOKEN",
    "CREATE_TABLE",
    "CREATE_TABLE_STREAM_TICKET",
    "CREATE_TOURNAMENT",
    "CREATE_WEBHOOK",
    "DELETE_BOT",
    "DELETE_WEBHOOK",
    "JOIN_BY_INVITE",
    "JOIN_TABLE",
    "LEAVE_QUICK_PLAY",
    "LEAVE_TABLE",
    "QUICK_PLAY",
    "RECLAIM_SEAT",
    "REDELIVER",
    "REGISTER_BOT",
    "REQUEST_REMATCH",
    "REVOKE_INVITE",
    "REVOKE_TOKEN",
    "ROTATE_BOT_SECRET",
    "ROTATE_WEBHOOK_SECRET",
    "START_TABLE",
    "SUBMIT_ACTION",
    "UPDATE_BOT",
    "UPDATE_ME",
    "UPDATE_WEBHOOK",
    "Access",
    "Call",
    "Operation",
]
