"""GraphQL for stream tickets (docs/streams.md): the createTableStreamTicket and
createPlayerStreamTicket mutations, over the same games.accounts.stream_ticket as REST's
POST tables/{id}/stream-tickets and POST me/stream-tickets, answering the same ticket and URL."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import graphene

from games import accounts, reads
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.base import error_of
from games.graphql.types import Error


def _principal(info: Any) -> Principal:
    principal = getattr(info.context, "principal", None)
    if not isinstance(principal, Principal):
        raise ServiceError("not_authenticated", "send 'Authorization: Bearer <key or token>'", kind="auth")
    return principal


class StreamTicketPayload(graphene.ObjectType):
    ticket = graphene.String(description="Opens this one stream as you, until expiresAt; not a bearer token")
    expires_at = graphene.String(description="ISO 8601: the stream must be opened before then")
    url = graphene.String(description="The stream's URL with the ticket: give it to EventSource as it is")
    errors = graphene.List(graphene.NonNull(Error), required=True)


def _ticket(info: Any, principal: Principal, stream: str, path: str) -> StreamTicketPayload:
    """The ticket and its URL exactly as REST answers them (absolute, from this request's host)."""
    ticket, expires = accounts.stream_ticket(principal, stream)
    relative = f"{path}?{urlencode({'ticket': ticket})}"
    build = getattr(info.context, "build_absolute_uri", None)
    url = build(relative) if callable(build) else relative
    return StreamTicketPayload(ticket=ticket, expires_at=expires.isoformat(), url=url, errors=[])


class CreateTableStreamTicket(graphene.Mutation):
    """A ticket that opens this table's event stream as you (your seat's view, or a spectator's),
    for a client that cannot send an Authorization header, such as a browser's EventSource: it
    lasts 60 s and opens only this table's stream. A table you cannot see: not_found, no ticket."""

    class Arguments:
        table_id = graphene.Int(required=True)

    Output = StreamTicketPayload

    def mutate(root: Any, info: Any, table_id: int) -> StreamTicketPayload:
        try:
            principal = _principal(info)
            reads.table_for(principal, table_id)
            return _ticket(info, principal, f"table:{table_id}", f"/api/v1/tables/{table_id}/stream")
        except ServiceError as exc:
            return StreamTicketPayload(errors=[error_of(exc)])


class CreatePlayerStreamTicket(graphene.Mutation):
    """Player token: a ticket that opens your own stream (every table of yours) for 60 s; an app
    key gets player_token_required."""

    Output = StreamTicketPayload

    def mutate(root: Any, info: Any) -> StreamTicketPayload:
        try:
            principal = _principal(info)
            principal.require_player("a player stream needs a player's token")
            return _ticket(info, principal, "me", "/api/v1/me/stream")
        except ServiceError as exc:
            return StreamTicketPayload(errors=[error_of(exc)])


class TicketMutations(graphene.ObjectType):
    """The Mutation fields of stream tickets (a base of games.graphql.schema.Mutation)."""

    create_table_stream_ticket = CreateTableStreamTicket.Field()
    create_player_stream_ticket = CreatePlayerStreamTicket.Field()
