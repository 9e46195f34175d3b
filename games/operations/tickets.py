"""The stream-ticket operations: tickets that open one event stream without an Authorization header.

Each is declared once: REST serves it (games/api/tickets.py) and GraphQL too (games/graphql/tickets.py),
answering the same ticket and URL. Each adapter gives `absolute_uri`, which makes the stream's URL
absolute from the request's host.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from games import accounts, reads
from games.accounts import Scope
from games.errors import Code
from games.operations.base import Access, Call, Operation
from games.operations.fields import EmptyIn


def _ticket(c: Call, stream: str, path: str) -> dict[str, Any]:
    ticket, expires = accounts.stream_ticket(c.principal, stream)
    url = c["absolute_uri"](f"{path}?{urlencode({'ticket': ticket})}")
    return {"ticket": ticket, "expires_at": expires.isoformat(), "url": url}


def _table_ticket(c: Call) -> dict[str, Any]:
    table_id = c["table_id"]
    reads.table_for(c.principal, table_id)  # a table the caller cannot see: not_found, no ticket
    return _ticket(c, f"table:{table_id}", f"/api/v1/tables/{table_id}/stream")


CREATE_TABLE_STREAM_TICKET = Operation(
    name="createTableStreamTicket",
    scope=Scope.tables_read,
    description="A ticket that opens this table's event stream as you (your seat's view, or a "
    "spectator's), for a client that cannot send an Authorization header, such as a browser's "
    "EventSource: it lasts 60 s and opens only this table's stream. A table you cannot see: "
    "not_found, no ticket.",
    input=EmptyIn,
    path=("table_id", "absolute_uri"),
    run=_table_ticket,
    errors=(Code.not_found,),
)

CREATE_PLAYER_STREAM_TICKET = Operation(
    name="createPlayerStreamTicket",
    description="Player token: a ticket that opens your own stream (every table of yours) for 60 s.",
    input=EmptyIn,
    path=("absolute_uri",),
    access=Access.PLAYER,
    denied="a player stream needs a player's token",
    run=lambda c: _ticket(c, "me", "/api/v1/me/stream"),
)
