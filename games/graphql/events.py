"""GraphQL events: the `Event` interface, one object type per event type, and the records they carry.

The event types and their fields are those of the REST and stream events (the OpenAPI
`Event_<type>` schemas); a test holds the two lists equal. Each object is filled from the event
dict that `games.reads` built for the viewer, so the redaction is the one of every other answer.
Two event types carry a field of the same name and another type (`points`: one trick's points in
`TrickWonEvent`, a hand's row in `HandScoredEvent`; `totals` is nullable in `TableFinishedEvent`
only): a query selecting both in one set of fragments gives one of them an alias.
"""

from __future__ import annotations

from typing import Any

import graphene

from games.graphql.enums import SEAT_LEVEL, BotFallbackReason, MoonChoice, PassDirection, TableStatus


def key(name: str) -> Any:
    """A resolver reading a dict key that is a Python keyword (`pass`, `from`)."""
    return lambda parent, info: parent.get(name)


def _cards(description: str | None = None) -> graphene.List:
    return graphene.List(graphene.NonNull(graphene.String), required=True, description=description)


def _ints(required: bool = True, description: str | None = None) -> graphene.List:
    return graphene.List(graphene.NonNull(graphene.Int), required=required, description=description)


class MoonResult(graphene.ObjectType):
    """How a shot moon was scored."""

    seat = graphene.Int(required=True, description="The shooter")
    choice = graphene.Field(MoonChoice, required=True)


class PassInfo(graphene.ObjectType):
    to = graphene.Int(required=True, description="The seat the cards went to")
    cards = _cards()


class RecordTrick(graphene.ObjectType):
    leader = graphene.Int(required=True)
    cards = _cards("In the order played, from the leader")
    winner = graphene.Int(description="Null for a trick carried on (Cancellation Hearts)")


class HandRecord(graphene.ObjectType):
    """A finished hand in full: public once the hand is over."""

    hand = graphene.Int(required=True)
    seed = graphene.String(required=True, description="The hand's seed: check it against deal_commitment")
    deal_commitment = graphene.String(required=True, description="SHA-256 of '<table id>:<hand seed>'")
    dealer = graphene.Int(required=True)
    pass_direction = graphene.Field(PassDirection, required=True)
    dealt = graphene.List(
        graphene.NonNull(graphene.List(graphene.NonNull(graphene.String))),
        required=True,
        description="Each seat's cards as dealt, by seat",
    )
    widow = _cards("Cards set aside at the deal (Cancellation Hearts; empty otherwise)")
    passes = graphene.List(graphene.NonNull(PassInfo), required=True, description="Each seat's pass, by seat")
    tricks = graphene.List(graphene.NonNull(RecordTrick), required=True)
    taken_points = _ints(description="Points taken in tricks, by seat, before any moon")
    moon = graphene.Field(MoonResult)
    points = _ints(description="The hand's points, by seat")
    totals = _ints(description="Running totals after the hand, by seat")


class MuSigma(graphene.ObjectType):
    """A Weng-Lin rating: the mean and its uncertainty."""

    mu = graphene.Float(required=True)
    sigma = graphene.Float(required=True)


class RatingMove(graphene.ObjectType):
    """One person's rating after a rated game (their history has the rating before)."""

    seat = graphene.Int(required=True, description="The person's seat (the table's seats say who)")
    place = graphene.Int(required=True, description="1 is first; ties share a place")
    mu = graphene.Float(required=True)
    sigma = graphene.Float(required=True)


# type -> (description, fields): the REST event shapes, typed.
_SEAT = {"seat": lambda: graphene.Int(required=True, description="Seat position, 0 first")}
EVENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "game_started": ("Every seat is taken: the first hand is dealt next.", {}),
    "seat_taken": (
        "A player sat down.",
        {
            **_SEAT,
            "player": lambda: graphene.Int(required=True),
            "name": lambda: graphene.String(required=True),
        },
    ),
    "seat_left": (
        "A player gave up their seat before the start.",
        {**_SEAT, "player": lambda: graphene.Int(required=True)},
    ),
    "bot_added": (
        "A bot took a seat.",
        {**_SEAT, "level": lambda: graphene.String(required=True, description=SEAT_LEVEL)},
    ),
    "bot_fallback": (
        "A bot the app brought was late, failed or answered an illegal move: the basic bot moved for it.",
        {**_SEAT, "reason": lambda: graphene.Field(BotFallbackReason, required=True)},
    ),
    "hand_started": (
        "A hand was dealt; the commitment is SHA-256 of the table id and the hand's seed.",
        {
            "dealer": lambda: graphene.Int(required=True),
            "pass_direction": lambda: graphene.Field(PassDirection, required=True),
            "deal_commitment": lambda: graphene.String(required=True),
        },
    ),
    "cards_dealt": ("Your cards for this hand (only to their seat).", {**_SEAT, "cards": _cards}),
    "pass_submitted": ("A seat passed (which cards stays hidden).", dict(_SEAT)),
    "cards_passed": (
        "The cards you passed (only to their seat).",
        {**_SEAT, "to": lambda: graphene.Int(required=True), "cards": _cards},
    ),
    "passes_complete": ("Every seat has passed: play begins.", {}),
    "cards_received": (
        "The cards passed to you (only to their seat).",
        {
            **_SEAT,
            "from_": lambda: graphene.Int(name="from", resolver=key("from"), required=True),
            "cards": _cards,
        },
    ),
    "card_played": (
        "A card was played to the trick.",
        {**_SEAT, "card": lambda: graphene.String(required=True)},
    ),
    "hearts_broken": (
        "The first penalty card was played.",
        {**_SEAT, "card": lambda: graphene.String(required=True)},
    ),
    "trick_won": (
        "A trick was taken.",
        {
            **_SEAT,
            "trick": lambda: graphene.Int(required=True, description="The trick's number in the hand"),
            "cards": _cards,
            "points": lambda: graphene.Int(required=True, description="The trick's points"),
        },
    ),
    "trick_carried": (
        "Cancellation Hearts: a trick with no winner, carried on.",
        {"leader": lambda: graphene.Int(required=True), "cards": _cards},
    ),
    "moon_shot": (
        "A seat took every penalty card: it chooses how to score.",
        {**_SEAT, "choices": lambda: graphene.List(graphene.NonNull(MoonChoice), required=True)},
    ),
    "moon_chosen": (
        "The shooter's choice.",
        {**_SEAT, "choice": lambda: graphene.Field(MoonChoice, required=True)},
    ),
    "hand_scored": (
        "Points of the hand and running totals.",
        {
            "points": lambda: _ints(description="The hand's points, by seat"),
            "totals": _ints,
            "moon": lambda: graphene.Field(MoonResult, description="Null when no moon was shot"),
        },
    ),
    "hand_revealed": (
        "The finished hand's full record, with its seed (public once it is over).",
        {"record": lambda: graphene.Field(HandRecord, required=True)},
    ),
    "game_over": (
        "The game ended: winners, totals and the game seed.",
        {"winners": _ints, "totals": _ints, "seed": lambda: graphene.String(required=True)},
    ),
    "table_abandoned": ("The app closed the table before the end.", {}),
    "table_finished": (
        "The table is over, however it ended (finished or abandoned).",
        {
            "status": lambda: graphene.Field(TableStatus, required=True, description="finished or abandoned"),
            "winners": lambda: _ints(required=False, description="Null when abandoned"),
            "totals": lambda: _ints(required=False, description="Null when abandoned"),
        },
    ),
    "ratings_changed": (
        "A rated game ended: its people's new ratings, by seat (bots' are fixed; history has the before).",
        {
            "family": lambda: graphene.String(required=True),
            "changes": lambda: graphene.List(graphene.NonNull(RatingMove), required=True),
        },
    ),
    "turn_timed_out": (
        "A seat's clock ran out: the server acted for it.",
        {**_SEAT, "deadline": lambda: graphene.String(description="The deadline missed (ISO 8601)")},
    ),
    "seat_away": ("A seat timed out too often in a row: the server plays for it.", dict(_SEAT)),
    "seat_back": ("The seat's player acted again (or called back).", dict(_SEAT)),
    "match_found": (
        "Quick play: the table is full (or its wait ran out and bots took the open seats): it starts.",
        {"bots": lambda: _ints(description="Seats bots took at the deadline")},
    ),
    "quick_play_expired": ("Quick play: the wait ran out with no bots asked for: the table closes.", {}),
    "rematch_proposed": ("After the game, a seated player asked for a rematch.", dict(_SEAT)),
    "rematch_accepted": ("Another seated player accepted the rematch.", dict(_SEAT)),
    "rematch_started": (
        "Every person accepted: the rematch table started, seats moved one place on.",
        {"new_table": lambda: graphene.Int(required=True, description="The rematch table's id")},
    ),
    "tournament_table": (
        "This table plays a deal set of a duplicate tournament (docs/tournaments.md): its first event.",
        {
            "tournament": lambda: graphene.Int(required=True),
            "deal_set": lambda: graphene.Int(required=True),
            "rotation": lambda: graphene.Int(required=True),
        },
    ),
    "tournament_progress": (
        "A table of the tournament finished: how many have; status finished on its last one.",
        {
            "tournament": lambda: graphene.Int(required=True),
            "tables_finished": lambda: graphene.Int(required=True),
            "tables_total": lambda: graphene.Int(required=True),
            "status": lambda: graphene.String(required=True, description="running or finished"),
        },
    ),
    "tournament_next_table": (
        "A tournament with people: the table that starts now that this one is over.",
        {
            "tournament": lambda: graphene.Int(required=True),
            "next_table": lambda: graphene.Int(required=True, description="The next table's id"),
        },
    ),
}

EventType = graphene.Enum(
    "EventType",
    [(k, k) for k in EVENTS],
    description="Every type of logged event (the same names as REST, streams and webhooks)",
)


class StreamEvent(graphene.Interface):
    """One message of a subscription (`tableEvents`, `myEvents`): a logged event, the table's
    state, `your_turn` or a player's tables. Resume after a dropped socket with `after: <id>` of the
    last message received: nothing is missed, nothing repeated. The ids are the streams' event ids
    (docs/streams.md); select a type's fields with `... on CardPlayedEvent { seat card }`."""

    id = graphene.String(required=True, description="The position after this message: resume with after: id")

    @classmethod
    def resolve_type(cls, instance: dict[str, Any], info: Any) -> type[graphene.ObjectType]:
        return STREAM_TYPES[instance["type"]]


class Event(graphene.Interface):
    """One event of the move log as you may see it; select the fields of a type with
    `... on CardPlayedEvent { seat card }`."""

    seq = graphene.Int(required=True, description="The move that caused it")
    hand = graphene.Int(required=True, description="The hand it belongs to")
    # Not `type`: graphene would take the interface's resolve_type for this field's resolver.
    type_ = graphene.Field(EventType, name="type", required=True, resolver=key("type"))

    @classmethod
    def resolve_type(cls, instance: dict[str, Any], info: Any) -> type[graphene.ObjectType]:
        return EVENT_TYPES[instance["type"]]


def _type_name(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.split("_")) + "Event"


def _event_type(kind: str, description: str, fields: dict[str, Any]) -> type[graphene.ObjectType]:
    meta = type("Meta", (), {"interfaces": (Event, StreamEvent), "description": description})
    table = graphene.Int(required=True, description="The table it happened at")
    return type(
        _type_name(kind),
        (graphene.ObjectType,),
        {"Meta": meta, "table": table, **{n: f() for n, f in fields.items()}},
    )


EVENT_TYPES: dict[str, type[graphene.ObjectType]] = {
    kind: _event_type(kind, description, fields) for kind, (description, fields) in EVENTS.items()
}


# The subscriptions' own messages (games/graphql/subscriptions.py) join these: type -> object type.
STREAM_TYPES: dict[str, type[graphene.ObjectType]] = dict(EVENT_TYPES)


class EventsPage(graphene.ObjectType):
    events = graphene.List(graphene.NonNull(Event), required=True)
    version = graphene.Int(required=True, description="Ask again with after: version")
    more = graphene.Boolean(required=True)
