"""GraphQL object types: each one is filled from the same viewer-built dicts as the REST answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import graphene
from graphene.types.generic import GenericScalar

from games import reads, services
from games.accounts import Principal
from games.errors import Code, ServiceError

if TYPE_CHECKING:  # types only: the queries are in games.reads and games.services
    from games.models import Table as TableModel


def _key(name: str) -> Any:
    """A resolver reading a dict key that is a Python keyword (`pass`, `from`)."""
    return lambda parent, info: parent.get(name)


ErrorCode = graphene.Enum.from_enum(
    Code,
    name="ErrorCode",
    description="Every error code of the API (games/errors.py), the same in REST and GraphQL",
)


class Error(graphene.ObjectType):
    """A refused request: `code` is exactly the REST and engine code."""

    code = graphene.Field(ErrorCode, required=True)
    message = graphene.String(required=True)
    field = graphene.String(description="The input field at fault, when there is one")


class Seat(graphene.ObjectType):
    position = graphene.Int(required=True)
    player = graphene.Int()
    name = graphene.String()
    bot = graphene.String(description="Bot level, or null for a person or an open seat")
    away = graphene.Boolean(description="Timed out too often: a bot plays it until the player acts again")
    timeouts = graphene.Int(description="Clocks run out in a row (reset when the player acts)")


class Clocks(graphene.ObjectType):
    pass_ = graphene.Int(name="pass", resolver=_key("pass"), description="Seconds to pass; null: no clock")
    play = graphene.Int()
    moon = graphene.Int()
    away_after = graphene.Int()


class CardAt(graphene.ObjectType):
    seat = graphene.Int(required=True)
    card = graphene.String(required=True)


class Trick(graphene.ObjectType):
    leader = graphene.Int(required=True)
    cards = graphene.List(graphene.NonNull(CardAt), required=True)
    winner = graphene.Int()
    points = graphene.Int(required=True)


class PassInfo(graphene.ObjectType):
    to = graphene.Int(required=True)
    cards = graphene.List(graphene.NonNull(graphene.String), required=True)


class Received(graphene.ObjectType):
    from_ = graphene.Int(name="from", resolver=_key("from"), required=True)
    cards = graphene.List(graphene.NonNull(graphene.String), required=True)


class LegalActions(graphene.ObjectType):
    type = graphene.String(required=True, description="pass, play or moon")
    count = graphene.Int()
    from_ = graphene.List(graphene.NonNull(graphene.String), name="from", resolver=_key("from"))
    cards = graphene.List(graphene.NonNull(graphene.String))
    choices = graphene.List(graphene.NonNull(graphene.String))


class SheetRow(graphene.ObjectType):
    hand = graphene.Int(required=True)
    points = graphene.List(graphene.NonNull(graphene.Int), required=True)
    totals = graphene.List(graphene.NonNull(graphene.Int), required=True)
    moon = GenericScalar()


class Game(graphene.ObjectType):
    """The engine's view for one seat (or a spectator): never another seat's cards."""

    seat = graphene.Int()
    hand_number = graphene.Int(required=True)
    phase = graphene.String(required=True)
    dealer = graphene.Int(required=True)
    pass_direction = graphene.String(required=True)
    deal_commitment = graphene.String(required=True)
    to_act = graphene.List(graphene.NonNull(graphene.Int), required=True)
    turn = graphene.Int()
    hand_sizes = graphene.List(graphene.NonNull(graphene.Int), required=True)
    hearts_broken = graphene.Boolean(required=True)
    trick = graphene.List(graphene.NonNull(CardAt), required=True)
    leader = graphene.Int()
    tricks = graphene.List(graphene.NonNull(Trick), required=True)
    points_taken = graphene.List(graphene.NonNull(graphene.Int), required=True)
    scores = graphene.List(graphene.NonNull(graphene.Int), required=True)
    scoresheet = graphene.List(graphene.NonNull(SheetRow), required=True)
    winners = graphene.List(graphene.NonNull(graphene.Int))
    passed = graphene.List(graphene.NonNull(graphene.Boolean))
    widow = GenericScalar()
    moon = GenericScalar()
    game_seed = graphene.String()
    hand = graphene.List(graphene.NonNull(graphene.String), description="Your cards (a seat's view only)")
    my_pass = graphene.Field(PassInfo)
    received = graphene.Field(Received, description="Once every seat has passed")
    legal_actions = graphene.Field(LegalActions, description="When it is your turn")


class Move(graphene.ObjectType):
    seq = graphene.Int(required=True)
    hand = graphene.Int(required=True)
    kind = graphene.String(required=True)
    position = graphene.Int()
    payload = GenericScalar(
        required=True, description="Another seat's pass shows no cards until its hand is over"
    )
    at = graphene.String(required=True)


class Event(graphene.ObjectType):
    seq = graphene.Int(required=True, description="The move that caused it")
    hand = graphene.Int(required=True)
    type = graphene.String(required=True)
    data = GenericScalar(required=True)

    @staticmethod
    def from_dict(event: dict[str, Any]) -> Event:
        data = {k: v for k, v in event.items() if k not in ("seq", "hand", "type")}
        return Event(seq=event["seq"], hand=event["hand"], type=event["type"], data=data)


class EventsPage(graphene.ObjectType):
    events = graphene.List(graphene.NonNull(Event), required=True)
    version = graphene.Int(required=True, description="Ask again with after: version")
    more = graphene.Boolean(required=True)


class Hand(graphene.ObjectType):
    number = graphene.Int(required=True)
    pass_direction = graphene.String(required=True)
    deal_commitment = graphene.String(required=True)
    finished = graphene.Boolean(required=True)
    seed = graphene.String(description="Revealed once the hand is over")
    record = GenericScalar(description="Deals, passes, tricks and points, once the hand is over")
    moves = graphene.List(graphene.NonNull(Move))


PAGE = 100  # moves (or the events of moves) answered when `first` is not given


@dataclass
class TableRef:
    """A table as one principal sees it. `body` is the REST table body (computed on first use,
    or the stored first answer of an idempotent mutation); `model` is loaded when a field
    needs the database."""

    principal: Principal
    model: TableModel | None = None
    body: dict[str, Any] | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        if self.body is None:
            self.body = reads.table_body(self.table(), self.principal)
        return self.body

    def __getattr__(self, name: str) -> Any:
        """Plain fields (id, status, version, seats, game, ...) read from the table body."""
        body = self.view()
        if name in body:
            return body[name]
        raise AttributeError(name)

    def table(self) -> TableModel:
        if self.model is None:
            assert self.body is not None
            self.model = services.table_seen(self.principal, self.body["id"])
        return self.model


class Table(graphene.ObjectType):
    id = graphene.Int(required=True)
    status = graphene.String(required=True)
    version = graphene.Int(required=True, description="Send it back as expectedVersion")
    options = GenericScalar(required=True)
    clocks = graphene.Field(Clocks, required=True)
    deadline = graphene.String(description="When the seat(s) to act time out (ISO 8601)")
    seats = graphene.List(graphene.NonNull(Seat), required=True)
    your_seat = graphene.Int()
    game = graphene.Field(Game)
    scoresheet = graphene.List(graphene.NonNull(SheetRow), required=True)
    moves = graphene.List(
        graphene.NonNull(Move),
        required=True,
        after=graphene.Int(default_value=0),
        first=graphene.Int(default_value=PAGE, description=f"At most {reads.PAGE} moves"),
        description="The moves after sequence `after`, oldest first (a page: ask again after the last)",
    )
    events = graphene.Field(
        EventsPage,
        required=True,
        after=graphene.Int(default_value=0),
        first=graphene.Int(default_value=PAGE, description=f"The events of at most {reads.PAGE} moves"),
    )
    hands = graphene.List(graphene.NonNull(Hand), required=True)
    hand = graphene.Field(Hand, number=graphene.Int(required=True))

    def resolve_scoresheet(ref: TableRef, info: Any) -> Any:
        return reads.scoresheet(ref.table())["hands"]

    def resolve_moves(ref: TableRef, info: Any, after: int, first: int) -> Any:
        return reads.moves_after(ref.table(), ref.principal, _after(after), _first(first))["moves"]

    def resolve_events(ref: TableRef, info: Any, after: int, first: int) -> Any:
        page = reads.events_after(ref.table(), ref.principal, _after(after), _first(first))
        return EventsPage(
            events=[Event.from_dict(e) for e in page["events"]], version=page["version"], more=page["more"]
        )

    def resolve_hands(ref: TableRef, info: Any) -> Any:
        return reads.hands(ref.table())

    def resolve_hand(ref: TableRef, info: Any, number: int) -> Any:
        try:
            return reads.hand_replay(ref.table(), ref.principal, number)
        except ServiceError:
            return None


def _first(first: int | None) -> int:
    if first is None:  # an explicit null: the default page
        return PAGE
    if not 1 <= first <= reads.PAGE:
        raise ServiceError("invalid_filter", f"first must be 1 to {reads.PAGE}", kind="malformed")
    return first


def _after(after: int | None) -> int:
    if after is None:
        return 0
    if after < 0:
        raise ServiceError("invalid_after", "after must be a sequence number (0 or more)", kind="malformed")
    return after
