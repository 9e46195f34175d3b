"""The data-export operations: a player's own export, and an app's export of one of its players.

Each is declared once: REST serves it (games/api/data_exports.py) and GraphQL too
(games/graphql/data_exports.py). Both answer the job (games.services.exports.job_body): `done` with
its `document` URL when it was made in the request, `pending` when a background task makes it.
Reading a job and downloading its document are reads, served beside them.
"""

from __future__ import annotations

from games.accounts import Scope
from games.errors import Code
from games.operations.base import Access, Operation
from games.operations.fields import EmptyIn
from games.services import exports

_DONE_OR_PENDING = (
    "Answers the job: `done`, with its `document` URL, when it was made at once (REST: 201), else "
    "`pending` until a background task makes it (REST: 202; read it again with getExport). At most "
    f"one export per player per {exports.CREATE_RATE.text} (rate_limited with retry_after). The "
    "document is kept until `expires_at`."
)

CREATE_MY_EXPORT = Operation(
    name="createMyExport",
    description="Player token: an export of all your data (profile, tokens' times, tables, your "
    f"moves, ratings and their history, invites, devices) as one JSON document ({exports.FORMAT}). "
    + _DONE_OR_PENDING,
    input=EmptyIn,
    access=Access.PLAYER,
    denied="your own export needs your player token; an app exports a player with createPlayerExport",
    run=lambda c: exports.job_body(exports.request_export(c.principal, c.principal.require_player().pk)),
)

CREATE_PLAYER_EXPORT = Operation(
    name="createPlayerExport",
    scope=Scope.exports_write,
    description="App key: an export of one of your players' data, as createMyExport makes it. "
    "Another app's player: not_found. " + _DONE_OR_PENDING,
    input=EmptyIn,
    path=("player_id",),
    access=Access.APP,
    denied="only an app key can export one of its players",
    run=lambda c: exports.job_body(exports.request_export(c.principal, c["player_id"])),
    errors=(Code.not_found,),
)
