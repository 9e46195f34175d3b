"""`myTurns`: the tables where it is the calling player's turn, as REST's GET me/turns answers them
(games.reads.turns_of builds both)."""

from __future__ import annotations

from typing import Any

import graphene

from games import reads
from games.graphql.base import principal_of
from games.graphql.enums import ActionType, TableStatus


class Turn(graphene.ObjectType):
    """One table where your seat is to act; no card (read the table for your hand)."""

    table = graphene.Int(required=True, description="The table's id")
    status = graphene.Field(TableStatus, required=True, description="passing, playing or moon_choice")
    version = graphene.Int(required=True, description="The table's version: send it as expectedVersion")
    seat = graphene.Int(required=True, description="Your seat")
    action = graphene.Field(ActionType, required=True, description="What you owe: pass, play or moon")
    deadline = graphene.String(description="When your clock runs out (ISO 8601); null: no clock")
    clock = graphene.Int(description="The table's clock for this turn, in seconds; null: none")


class MyTurns(graphene.ObjectType):
    turns = graphene.List(
        graphene.NonNull(Turn),
        required=True,
        description="Soonest deadline first, then the tables without a clock by id; at most "
        f"{reads.MY_TURNS}",
    )
    more = graphene.Boolean(required=True, description=f"There are more than {reads.MY_TURNS}")


class TurnsQuery(graphene.ObjectType):
    """The turns field of the root Query."""

    my_turns = graphene.Field(
        MyTurns,
        required=True,
        description="Player token: every unfinished table where your seat is to act, soonest deadline "
        "first (REST GET me/turns; an app key: player_token_required)",
    )

    def resolve_my_turns(root: Any, info: Any) -> dict[str, Any]:
        return reads.turns_of(principal_of(info))
