"""GraphQL for stream tickets (docs/streams.md): the createTableStreamTicket and
createPlayerStreamTicket mutations, which run the operations of games/operations/tickets.py as
REST's POST tables/{id}/stream-tickets and POST me/stream-tickets do, answering the same ticket and
URL (absolute, from this request's host)."""

from __future__ import annotations

from typing import Any

import graphene

from games import operations as ops
from games.graphql.base import OperationMutation
from games.graphql.types import Error


class StreamTicketPayload(graphene.ObjectType):
    ticket = graphene.String(description="Opens this one stream as you, until expiresAt; not a bearer token")
    expires_at = graphene.String(description="ISO 8601: the stream must be opened before then")
    url = graphene.String(description="The stream's URL with the ticket: give it to EventSource as it is")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class TicketMutation(OperationMutation):
    """A stream ticket: its URL made absolute from this request's host, as REST's."""

    class Meta:
        abstract = True

    shaped = {"absolute_uri": None}

    @classmethod
    def context_of(cls, info: Any) -> dict[str, Any]:
        build = getattr(info.context, "build_absolute_uri", None)
        return {"absolute_uri": build if callable(build) else (lambda relative: relative)}


class CreateTableStreamTicket(TicketMutation):
    class Meta:
        operation = ops.CREATE_TABLE_STREAM_TICKET

    Output = StreamTicketPayload


class CreatePlayerStreamTicket(TicketMutation):
    class Meta:
        operation = ops.CREATE_PLAYER_STREAM_TICKET

    Output = StreamTicketPayload


class TicketMutations(graphene.ObjectType):
    """The Mutation fields of stream tickets (a base of games.graphql.schema.Mutation)."""

    create_table_stream_ticket = CreateTableStreamTicket.Field()
    create_player_stream_ticket = CreatePlayerStreamTicket.Field()
