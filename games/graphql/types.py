"""GraphQL object types: each one is filled from the same viewer-built dicts as the REST answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import graphene

from games import reads, services
from games.accounts import Principal
from games.engine import OPTION_SPECS
from games.errors import ServiceError
from games.graphql.enums import (
    SEAT_LEVEL,
    ActionType,
    ErrorCode,
    MoonChoice,
    MoveKind,
    OmnibusCard,
    PassDirection,
    Phase,
    TableStatus,
    TieRule,
    Variant,
    Visibility,
)
from games.graphql.events import EventsPage, HandRecord, MoonResult, PassInfo, key
from games.graphql.hints import HINT_FIELD
from games.graphql.review import REF, REVIEW_FIELD

if TYPE_CHECKING:  # types only: the queries are in games.reads and games.services
    from games.models import Table as TableModel


class Error(graphene.ObjectType):
    """A refused request: `code` is exactly the REST and engine code."""

    code = graphene.Field(ErrorCode, required=True)
    message = graphene.String(required=True)
    field = graphene.String(description="The input field at fault, when there is one")
    quota = graphene.String(description="quota_exceeded: the quota that is full (docs/rest.md#quotas)")
    limit = graphene.Int(description="quota_exceeded: the quota's limit (and the limit of other caps)")


class Seat(graphene.ObjectType):
    position = graphene.Int(required=True)
    player = graphene.Int()
    name = graphene.String()
    bot = graphene.String(description=f"{SEAT_LEVEL}; null for a person or an open seat")
    away = graphene.Boolean(description="Timed out too often: a bot plays it until the player acts again")
    timeouts = graphene.Int(description="Clocks run out in a row (reset when the player acts)")


class Clocks(graphene.ObjectType):
    """Turn clocks in seconds: when one runs out, the server acts for the seat (docs/bots-and-clocks.md)."""

    pass_ = graphene.Int(name="pass", resolver=key("pass"), description="Seconds to pass; null: no clock")
    play = graphene.Int(description="Seconds to play a card; null: no clock")
    moon = graphene.Int(description="Seconds for a shooter to choose; null: no clock")
    away_after = graphene.Int(
        description="Timeouts in a row after which a bot plays the seat until its player acts"
    )


def _option(name: str) -> str:
    """The description of one table option, from its declaration in the engine."""
    spec = next(s for s in OPTION_SPECS if s.name == name)
    bounds = f" {spec.minimum} to {spec.maximum}." if spec.minimum is not None else ""
    return f"{spec.help}{bounds} Default {spec.default}."


class TableOptions(graphene.ObjectType):
    """The table's rules, fixed at creation."""

    players = graphene.Int(required=True, description=_option("players"))
    target_score = graphene.Int(required=True, description=_option("target_score"))
    variant = graphene.Field(Variant, required=True, description=_option("variant"))
    omnibus_card = graphene.Field(OmnibusCard, required=True, description=_option("omnibus_card"))
    tie_rule = graphene.Field(TieRule, required=True, description=_option("tie_rule"))
    first_hand = graphene.Int(
        required=True, description=_option("first_hand"), resolver=lambda o, _: o.get("first_hand", 1)
    )
    hands = graphene.Int(required=True, description=_option("hands"), resolver=lambda o, _: o.get("hands", 0))


class CardAt(graphene.ObjectType):
    seat = graphene.Int(required=True)
    card = graphene.String(required=True)


class Trick(graphene.ObjectType):
    leader = graphene.Int(required=True)
    cards = graphene.List(graphene.NonNull(CardAt), required=True)
    winner = graphene.Int()
    points = graphene.Int(required=True)


class Received(graphene.ObjectType):
    from_ = graphene.Int(name="from", resolver=key("from"), required=True)
    cards = graphene.List(graphene.NonNull(graphene.String), required=True)


class LegalActions(graphene.ObjectType):
    type = graphene.Field(ActionType, required=True)
    count = graphene.Int(description="Cards to pass")
    from_ = graphene.List(graphene.NonNull(graphene.String), name="from", resolver=key("from"))
    cards = graphene.List(graphene.NonNull(graphene.String), description="The cards you may play")
    choices = graphene.List(graphene.NonNull(MoonChoice))


class SheetRow(graphene.ObjectType):
    hand = graphene.Int(required=True)
    points = graphene.List(graphene.NonNull(graphene.Int), required=True)
    totals = graphene.List(graphene.NonNull(graphene.Int), required=True)
    moon = graphene.Field(MoonResult, description="Null when no moon was shot")


class Widow(graphene.ObjectType):
    """Cancellation Hearts: the cards set aside at the deal, face down until the hand is over."""

    size = graphene.Int(required=True)
    taken_by = graphene.Int(description="The seat that took the widow with its first trick, if any yet")


class MoonShot(graphene.ObjectType):
    seat = graphene.Int(required=True, description="The shooter, who chooses")
    choices = graphene.List(graphene.NonNull(MoonChoice), required=True)


class Game(graphene.ObjectType):
    """The engine's view for one seat (or a spectator): never another seat's cards."""

    seat = graphene.Int()
    hand_number = graphene.Int(required=True)
    phase = graphene.Field(Phase, required=True)
    dealer = graphene.Int(required=True)
    pass_direction = graphene.Field(PassDirection, required=True)
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
    widow = graphene.Field(Widow, description="Cancellation Hearts only")
    moon = graphene.Field(MoonShot, description="While a shooter chooses")
    game_seed = graphene.String()
    hand = graphene.List(graphene.NonNull(graphene.String), description="Your cards (a seat's view only)")
    my_pass = graphene.Field(PassInfo)
    received = graphene.Field(Received, description="Once every seat has passed")
    legal_actions = graphene.Field(LegalActions, description="When it is your turn")


class MovePayload(graphene.ObjectType):
    """What a move carried; only the fields of its kind are set."""

    type = graphene.Field(ActionType, description="pass, play and moon moves")
    cards = graphene.List(
        graphene.NonNull(graphene.String),
        description="A pass: null for another seat's pass until its hand is over",
    )
    card = graphene.String(description="A play")
    choice = graphene.Field(MoonChoice, description="A moon choice")
    player = graphene.Int(description="join and leave")
    level = graphene.String(description=f"add_bot. {SEAT_LEVEL}")


class Move(graphene.ObjectType):
    seq = graphene.Int(required=True)
    hand = graphene.Int(required=True)
    kind = graphene.Field(MoveKind, required=True)
    position = graphene.Int()
    payload = graphene.Field(
        MovePayload, required=True, description="Another seat's pass shows no cards until its hand is over"
    )
    at = graphene.String(required=True)


class Hand(graphene.ObjectType):
    number = graphene.Int(required=True)
    pass_direction = graphene.Field(PassDirection, required=True)
    deal_commitment = graphene.String(required=True)
    finished = graphene.Boolean(required=True)
    seed = graphene.String(description="Revealed once the hand is over")
    record = graphene.Field(HandRecord, description="Deals, passes, tricks and points, once the hand is over")
    moves = graphene.List(graphene.NonNull(Move))
    review = REVIEW_FIELD


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


class SpectatorDelay(graphene.ObjectType):
    """How far behind spectators see the table: one of the two is set."""

    seconds = graphene.Int()
    tricks = graphene.Int()


class Rematch(graphene.ObjectType):
    """After a game: who asked for a rematch, and the rematch table once every person has."""

    asked = graphene.List(graphene.NonNull(graphene.Int), required=True, description="Seats that asked")
    table = graphene.Int(description="The rematch table, once it started")


class Table(graphene.ObjectType):
    id = graphene.Int(required=True)
    status = graphene.Field(TableStatus, required=True)
    version = graphene.Int(required=True, description="Send it back as expectedVersion")
    options = graphene.Field(TableOptions, required=True)
    clocks = graphene.Field(Clocks, required=True)
    bot_think_ms = graphene.Int(
        description="Milliseconds bots think per move; null: their levels' fixed budgets"
    )
    bot_pace_ms = graphene.Int(
        required=True, description="Milliseconds before each bot card played, as of the seats now"
    )
    deadline = graphene.String(description="When the seat(s) to act time out (ISO 8601)")
    seats = graphene.List(graphene.NonNull(Seat), required=True)
    your_seat = graphene.Int()
    game = graphene.Field(Game)
    rematch_of = graphene.Int(description="The finished table this one is the rematch of")
    rematch = graphene.Field(Rematch, description="After the game: null until someone asks for a rematch")
    visibility = graphene.Field(Visibility, required=True)
    invited = graphene.List(
        graphene.NonNull(graphene.Int), required=True, description="Players the creator named"
    )
    spectator_delay = graphene.Field(SpectatorDelay, description="Null: spectators see the table live")
    delayed = graphene.Boolean(
        required=True, description="This answer shows the table as it was spectatorDelay ago (you spectate)"
    )
    spectators = graphene.Int(required=True, description="Spectator streams open on this table now")
    rated = graphene.Boolean(
        required=True, description="Its finished game updates its people's ratings (docs/ratings.md)"
    )
    hints = graphene.Boolean(
        required=True, description="Its seated players may ask for a hint on their turn (docs/hints.md)"
    )
    hint = HINT_FIELD
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

    @staticmethod
    def resolve_status(ref: TableRef, info: Any) -> str:
        return str(ref.status)  # the model's choice (a str enum) or a stored answer's string

    @staticmethod
    def resolve_rematch_of(ref: TableRef, info: Any) -> int | None:
        return ref.view().get("rematch_of")

    @staticmethod
    def resolve_hints(ref: TableRef, info: Any) -> bool:
        return bool(ref.view().get("hints"))  # answers stored before hints have no `hints`

    @staticmethod
    def resolve_rated(ref: TableRef, info: Any) -> bool:
        return bool(ref.view().get("rated"))  # answers stored before ratings have no `rated`

    @staticmethod
    def resolve_rematch(ref: TableRef, info: Any) -> Any:
        return ref.view().get("rematch")

    @staticmethod
    def resolve_scoresheet(ref: TableRef, info: Any) -> Any:
        return reads.scoresheet(ref.table(), ref.principal)["hands"]

    @staticmethod
    def resolve_moves(ref: TableRef, info: Any, after: int, first: int) -> Any:
        return reads.moves_after(ref.table(), ref.principal, _after(after), _first(first))["moves"]

    @staticmethod
    def resolve_events(ref: TableRef, info: Any, after: int, first: int) -> Any:
        page = reads.events_after(ref.table(), ref.principal, _after(after), _first(first), ids=True)
        events = [{**event, "table": ref.id} for event in page["events"]]
        return EventsPage(events=events, version=page["version"], more=page["more"])

    @staticmethod
    def resolve_hands(ref: TableRef, info: Any) -> Any:
        return reads.hands(ref.table(), ref.principal)

    @staticmethod
    def resolve_hand(ref: TableRef, info: Any, number: int) -> Any:
        try:
            return {**reads.hand_replay(ref.table(), ref.principal, number), REF: ref}
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
