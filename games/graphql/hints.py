"""GraphQL: the hint for the caller's seat, `table(id) { hint(level: STRONG) { ... } }`, answered by
the same service as REST's GET /tables/{id}/hint (games/services/hints.py, docs/hints.md)."""

from __future__ import annotations

from typing import Any

import graphene

from games.graphql.enums import ActionType, AdviceLevel, MoonChoice
from games.services import hints
from games.services.review import DEFAULT_LEVEL


class HintAction(graphene.ObjectType):
    """A legal action, as an action is sent: a card to play, cards to pass or a moon choice."""

    type = graphene.Field(ActionType, required=True)
    card = graphene.String(description="play: the card")
    cards = graphene.List(graphene.NonNull(graphene.String), description="pass: the cards")
    choice = graphene.Field(MoonChoice, description="moon: the choice")


class HintOption(graphene.ObjectType):
    action = graphene.Field(HintAction, required=True)
    points = graphene.Float(
        required=True,
        description="Estimated points the seat takes in the rest of the hand after it (lower is better)",
    )


class Hint(graphene.ObjectType):
    """The move a bot level would make for your seat, and every legal action's estimated points,
    computed from your seat's view only (docs/hints.md)."""

    table_id = graphene.Int(required=True)
    version = graphene.Int(required=True, description="The table's version the hint is for")
    hand = graphene.Int(required=True)
    seat = graphene.Int(required=True)
    level = graphene.Field(AdviceLevel, required=True)
    phase = graphene.String(required=True, description="passing, playing or moon_choice")
    choice = graphene.Field(HintAction, required=True, description="The action the bot level would take")
    options = graphene.List(graphene.NonNull(HintOption), required=True, description="Best first")
    think_ms = graphene.Int(required=True, description="Milliseconds the hints lane computed it for")


def resolve_hint(ref: Any, info: Any, level: Any = None) -> Any:
    """The hint for the caller's seat at this table."""
    wanted = DEFAULT_LEVEL if level is None else str(getattr(level, "value", level))
    return hints.hint(ref.principal, ref.table(), wanted)


HINT_FIELD = graphene.Field(
    Hint,
    level=graphene.Argument(AdviceLevel, default_value=DEFAULT_LEVEL),
    resolver=resolve_hint,
    description="For the seated player whose turn it is, at a table created with hints: the bot's move "
    "and every legal action's estimated points (hints_not_allowed elsewhere; docs/hints.md)",
)
