"""The only code that changes a table: each change is one transaction that locks the table row.

`lobby` creates tables and changes their seats, `rematch` starts a finished game's next table,
`play` applies the seats' actions and the moves the server owes, `reminders` recalls a
correspondence turn to its people before its deadline, `record` writes what a change
leaves behind (the move log, the state, the hands and the scoresheet, the ratings of a rated game
that ends (`ratings`), and after the commit the wake-ups and tasks), and `common` holds the
transaction (locking, the client's version, idempotent answers) they all run in. The adapters
import only what is re-exported here.
"""

from games.services.botturns import bots_play
from games.services.common import (
    CLOCK_DEFAULTS,
    SPECTATOR_DELAY_LIMITS,
    UNSCOPED,
    Idempotency,
    Outcome,
    Scope,
    check_level,
    clocks_from,
)
from games.services.invites import invite_create, invite_revoke, invites_of, table_by_code
from games.services.lobby import (
    bot_add,
    join_by_invite,
    seat_join,
    seat_leave,
    table_abandon,
    table_create,
    table_start,
)
from games.services.matchmaking import WAIT_DEFAULT, WAIT_LIMITS, not_waiting, quick_play, waiting_of
from games.services.matchmaking import leave as quick_play_leave
from games.services.play import (
    action_submit,
    clock_expired,
    clocks_expired,
    seat_back,
    table_replay,
    table_seen,
)
from games.services.ratings_replay import ratings_replay
from games.services.rematch import rematch
from games.services.reminders import remind_due
from games.services.tournaments import MAX_DEAL_SETS, MAX_SEED, created_answer, tournament_create

__all__ = [
    "CLOCK_DEFAULTS",
    "MAX_DEAL_SETS",
    "MAX_SEED",
    "SPECTATOR_DELAY_LIMITS",
    "UNSCOPED",
    "WAIT_DEFAULT",
    "WAIT_LIMITS",
    "Idempotency",
    "Outcome",
    "Scope",
    "action_submit",
    "bot_add",
    "bots_play",
    "check_level",
    "clock_expired",
    "clocks_expired",
    "clocks_from",
    "created_answer",
    "invite_create",
    "invite_revoke",
    "invites_of",
    "join_by_invite",
    "not_waiting",
    "quick_play",
    "quick_play_leave",
    "ratings_replay",
    "rematch",
    "remind_due",
    "seat_back",
    "seat_join",
    "seat_leave",
    "table_abandon",
    "table_by_code",
    "table_create",
    "table_replay",
    "table_seen",
    "table_start",
    "tournament_create",
    "waiting_of",
]
