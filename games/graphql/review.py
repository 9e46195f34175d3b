"""GraphQL: a hand's review for one seat, `table(id) { hand(number) { review(seat, level) } }`,
answered by the same service as REST's GET /tables/{id}/hands/{n}/review."""

from __future__ import annotations

from typing import Any

import graphene

from games.errors import ServiceError
from games.graphql.enums import AdviceLevel
from games.services import review

REF = "table_ref"  # the key under which Table.hand hands its TableRef to the hand's fields


class ReviewPass(graphene.ObjectType):
    cards = graphene.List(graphene.NonNull(graphene.String), required=True, description="The seat's pass")
    bot_cards = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The bot's pass from the same view"
    )
    points_lost = graphene.Float(
        description="Estimated points the pass cost against the bot's (0 when the same); null: not weighed"
    )


class ReviewTrick(graphene.ObjectType):
    trick = graphene.Int(required=True, description="The trick's number in the hand, from 1")
    card = graphene.String(required=True, description="The card the seat played")
    bot_card = graphene.String(required=True, description="The card the bot would have played")
    points_lost = graphene.Float(description="Estimated points the card cost against the bot's: 0 or more")


class HandReview(graphene.ObjectType):
    """Per decision of the seat in the hand, the bot's choice from the same view and the estimated
    points lost (docs/bots-and-clocks.md#hand-review)."""

    table_id = graphene.Int(required=True)
    hand = graphene.Int(required=True)
    seat = graphene.Int(required=True)
    level = graphene.Field(AdviceLevel, required=True)
    pass_ = graphene.Field(ReviewPass, name="pass", description="Null in a hand without a pass")
    tricks = graphene.List(graphene.NonNull(ReviewTrick), required=True)
    total_points_lost = graphene.Float(required=True)

    @staticmethod
    def resolve_pass_(body: dict[str, Any], info: Any) -> Any:
        return body["pass"]


def resolve_review(hand: dict[str, Any], info: Any, seat: int | None = None, level: Any = None) -> Any:
    """The review of `seat` (default: the caller's own) in this hand, at `level`."""
    ref = hand.get(REF)
    if ref is None:
        raise ServiceError(
            "invalid_query",
            "ask a review of one hand: table(id) { hand(number) { review } }",
            kind="malformed",
        )
    wanted = review.DEFAULT_LEVEL if level is None else str(getattr(level, "value", level))
    return review.review(ref.principal, ref.table(), hand["number"], seat, wanted)


REVIEW_FIELD = graphene.Field(
    HandReview,
    seat=graphene.Int(description="The seat to review; default: your own (an app or a spectator gives one)"),
    level=graphene.Argument(AdviceLevel, default_value=review.DEFAULT_LEVEL),
    resolver=resolve_review,
    description="The seat's decisions set against a bot's, with the estimated points lost: your own "
    "seat once the hand is over; every seat, for anyone who may read the table, once the game is over",
)
