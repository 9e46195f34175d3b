"""GraphQL subscriptions: `tableEvents` and `myEvents`, the event streams of games/api/streams.py, typed.

A subscription is the same code path as the SSE and NDJSON streams (`streams.table_events`,
`streams.player_events`, over the process's fan-out hub): the same event ids, the same redaction
(games.reads, per viewer), the same resume rule. Only the framing differs: each message is a
`StreamEvent` (one object type per event type, plus the stream's own `TableStateEvent`,
`YourTurnEvent` and `MyTablesEvent`). The WebSocket transport is games/graphql/socket.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import graphene

from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.enums import Phase
from games.graphql.events import STREAM_TYPES, StreamEvent
from games.graphql.types import LegalActions, Table, TableRef
from games.live import events as streams
from games.operations import scopes

IDLE_SECONDS = 30.0  # a quiet subscription's generator wakes this often (liveness is the socket's)


def _caller(info: Any) -> Principal:
    principal: Principal | None = getattr(info.context, "principal", None)
    if principal is None:
        raise ServiceError(
            "not_authenticated", "send a bearer token or a ticket in connection_init", kind="auth"
        )
    return principal


class TableStateEvent(graphene.ObjectType):
    """The first message of `tableEvents` without `after`: the table as you see it now (the
    stream's `state` event); the events after it follow."""

    class Meta:
        interfaces = (StreamEvent,)

    table = graphene.Int(required=True)
    state = graphene.Field(Table, required=True, description="The table, exactly as the table query shows it")

    @staticmethod
    def resolve_state(message: dict[str, Any], info: Any) -> TableRef:
        return TableRef(_caller(info), body=message["state"])


class MyTablesEvent(graphene.ObjectType):
    """The first message of `myEvents` without `after`: every unfinished table you sit at."""

    class Meta:
        interfaces = (StreamEvent,)

    tables = graphene.List(graphene.NonNull(Table), required=True)

    @staticmethod
    def resolve_tables(message: dict[str, Any], info: Any) -> list[TableRef]:
        principal = _caller(info)
        return [TableRef(principal, body=body) for body in message["tables"]]


class YourTurnEvent(graphene.ObjectType):
    """It is your turn at this table (sent when you are caught up, once per turn)."""

    class Meta:
        interfaces = (StreamEvent,)

    table = graphene.Int(required=True)
    version = graphene.Int(required=True, description="Send it back as expectedVersion")
    hand = graphene.Int(required=True)
    phase = graphene.Field(Phase, required=True)
    seat = graphene.Int(required=True)
    legal_actions = graphene.Field(LegalActions, required=True)
    deadline = graphene.String(description="When your clock runs out (ISO 8601); null: no clock")


STREAM_TYPES.update({"state": TableStateEvent, "tables": MyTablesEvent, "your_turn": YourTurnEvent})


async def _messages(items: AsyncIterator[streams.Item]) -> AsyncIterator[dict[str, Any]]:
    """The stream's items as subscription payloads: each event with its id (idle ticks dropped)."""
    try:
        async for item in items:
            if item is not None:
                event_id, event = item
                yield {"id": event_id, **event}
    finally:
        await items.aclose()  # type: ignore[attr-defined]  # leave the hub at once, even when cancelled


async def _nothing() -> AsyncIterator[dict[str, Any]]:
    return
    yield  # an async generator that ends at once: a finished table with nothing left to send


class Subscription(graphene.ObjectType):
    """Over a WebSocket at /graphql/ (graphql-transport-ws or the legacy graphql-ws; docs/graphql.md)."""

    table_events = graphene.Field(
        graphene.NonNull(StreamEvent),
        table_id=graphene.Int(required=True),
        after=graphene.String(description="The id of the last message received: resume right after it"),
        description="A table's events as your seat sees them (public ones for a spectator or an app key): "
        "without `after` a TableStateEvent first, then every event; ends after the table's last event",
    )
    my_events = graphene.Field(
        graphene.NonNull(StreamEvent),
        after=graphene.String(description="The id of the last message received: resume right after it"),
        description="Your events at every table you sit at (a player token): without `after` a "
        "MyTablesEvent first; YourTurnEvent whenever one of them waits for you",
    )

    @staticmethod
    async def subscribe_table_events(
        root: Any, info: Any, table_id: int, after: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        principal = _caller(info)
        principal.require_scope(scopes.SUBSCRIPTIONS["tableEvents"])
        info.context.allow_stream(f"table:{table_id}")
        raw = after.strip() if after and after.strip() else None
        position, first = await streams.open_table(principal, table_id, raw)
        if first is not None and not first.events and first.over:
            return _nothing()
        idle = lambda: IDLE_SECONDS  # noqa: E731
        return _messages(streams.table_events(principal, table_id, position, first, idle))

    @staticmethod
    async def subscribe_my_events(
        root: Any, info: Any, after: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        principal = _caller(info)
        principal.require_scope(scopes.SUBSCRIPTIONS["myEvents"])
        info.context.allow_stream("me")
        principal.require_player("myEvents needs a player's token")
        raw = after.strip() if after and after.strip() else None
        positions = streams.parse_player_position(raw) if raw else None
        idle = lambda: IDLE_SECONDS  # noqa: E731
        return _messages(streams.player_events(principal, positions, idle))
