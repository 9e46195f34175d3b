"""Typed shapes of the API's JSON bodies and events, with the wire's own field names."""

from typing import Any, Literal, NotRequired, TypedDict, Union, get_args, get_type_hints

# -- tables -----------------------------------------------------------------------------------

TableStatus = Literal["open", "passing", "playing", "moon_choice", "finished", "abandoned"]
Visibility = Literal["public", "unlisted", "private"]
Phase = Literal["passing", "playing", "moon_choice", "game_over"]
BotLevel = Literal["random", "basic", "strong", "expert"]
# A seat's bot: a built-in BotLevel, or "ext:<name>" for a bot the app brought (docs/bots-byo.md).
SeatLevel = BotLevel | str
BotFallbackReason = Literal["timeout", "failed", "bad_answer", "illegal", "disabled"]
MoonChoice = Literal["subtract", "add"]
PassDirection = Literal["left", "right", "across", "hold"]


class Player(TypedDict):
    id: int
    name: str
    external_id: str


class PlayerToken(TypedDict):
    player: Player
    token: str
    expires_at: str | None  # when the token stops working (None: never)


class Seat(TypedDict):
    position: int
    player: int | None
    name: str | None
    bot: str | None
    away: bool
    timeouts: int


Clocks = TypedDict("Clocks", {"pass": int | None, "play": int | None, "moon": int | None, "away_after": int})


class CardAt(TypedDict):
    seat: int
    card: str


class Trick(TypedDict):
    leader: int
    cards: list[CardAt]
    winner: int | None
    points: int


class MyPass(TypedDict):
    to: int
    cards: list[str]


Received = TypedDict("Received", {"from": int, "cards": list[str]})

LegalActions = TypedDict(
    "LegalActions",
    {
        "type": Literal["pass", "play", "moon"],
        "count": NotRequired[int],  # pass: how many cards
        "from": NotRequired[list[str]],  # pass: the cards to choose from
        "cards": NotRequired[list[str]],  # play: every legal card
        "choices": NotRequired[list[str]],  # moon: subtract or add
    },
)


class SheetRow(TypedDict):
    hand: int
    points: list[int]
    totals: list[int]
    moon: NotRequired[Any]


class Game(TypedDict):
    """One seat's view of the game (never another seat's cards); `hand`, `my_pass`, `received` and
    `legal_actions` only for a seat."""

    seat: int | None
    hand_number: int
    phase: Phase
    dealer: int
    pass_direction: PassDirection
    deal_commitment: str
    to_act: list[int]
    turn: int | None
    hand_sizes: list[int]
    hearts_broken: bool
    trick: list[CardAt]
    leader: int | None
    tricks: list[Trick]
    points_taken: list[int]
    scores: list[int]
    scoresheet: list[SheetRow]
    winners: list[int] | None
    passed: NotRequired[list[bool]]
    widow: NotRequired[Any]
    moon: NotRequired[Any]
    game_seed: NotRequired[str]
    hand: NotRequired[list[str]]
    my_pass: NotRequired[MyPass | None]
    received: NotRequired[Received | None]
    legal_actions: NotRequired[LegalActions | None]


class Rematch(TypedDict):
    """After a game: the seats that asked for a rematch, and the rematch table once it started."""

    asked: list[int]
    table: int | None


class SpectatorDelay(TypedDict, total=False):
    """How far behind a table's spectators see it: one of the two keys."""

    seconds: int
    tricks: int


class Table(TypedDict):
    """A table as the caller sees it (`GET tables/{id}` and every write's answer)."""

    id: int
    status: TableStatus
    version: int
    options: dict[str, Any]
    clocks: Clocks
    bot_think_ms: int | None  # bots' thinking time per move; None: their levels' fixed budgets
    bot_pace_ms: int  # the delay before each bot card played, in force now
    deadline: str | None
    seats: list[Seat]
    your_seat: int | None
    game: Game | None
    rematch_of: int | None
    rematch: Rematch | None
    visibility: Visibility
    invited: list[int]
    spectator_delay: SpectatorDelay | None
    delayed: bool
    spectators: int
    rated: bool
    hints: bool  # its seated players may ask for a hint on their turn (docs/hints.md)


class TableRow(TypedDict):
    id: int
    status: TableStatus
    version: int
    options: dict[str, Any]
    hand_number: int
    deadline: str | None
    seats: list[Seat]
    open_seats: int
    visibility: Visibility


class TablePage(TypedDict):
    next: str | None
    previous: str | None
    results: list[TableRow]


class Scoresheet(TypedDict):
    hands: list[SheetRow]
    totals: list[int]


class MyTable(TypedDict):
    id: int
    status: str
    version: int
    seat: int | None


class App(TypedDict):
    id: int
    name: str


class Me(TypedDict):
    """Who the credentials belong to, the player's unfinished tables and chosen language (`GET me`)."""

    kind: Literal["guest", "player", "app"]
    player: Player | None
    app: App | None
    tables: list[MyTable]
    language: str | None  # en, mi, eu, ms or ky; "": Accept-Language chooses; None for an app key


class Turn(TypedDict):
    """A table where your seat is to act (`GET me/turns`); no card: read the table for your hand."""

    table: int
    status: Literal["passing", "playing", "moon_choice"]
    version: int  # send it as the version when you act
    seat: int
    action: Literal["pass", "play", "moon"]  # what you owe
    deadline: str | None  # when your clock runs out (ISO 8601); None: no clock
    clock: int | None  # the table's clock for this turn, in seconds


class MyTurns(TypedDict):
    """Your turns, soonest deadline first, then the tables without a clock (`GET me/turns`)."""

    turns: list[Turn]
    more: bool  # more than the 100 listed: act on these first


class ExportHints(TypedDict):
    """Whether the table allowed hints, and how many each seat was given (by seat number: {"0": 3})."""

    allowed: bool
    given: dict[str, int]


class GameExport(TypedDict):
    """A finished game's document (`GET tables/{id}/export`, format `hearts-game/1`; docs/exports.md)."""

    format: str
    table: int
    options: dict[str, Any]
    clocks: Clocks
    seats: list[dict[str, Any]]
    started_at: str | None
    finished_at: str | None
    game_seed: str
    hands: list[dict[str, Any]]
    moves: list[dict[str, Any]]
    totals: list[int]
    winners: list[int]
    hints: ExportHints


# starting: its tables are being created (a creation answers before they exist), then running
TournamentStatus = Literal["starting", "running", "finished"]


class Entrant(TypedDict):
    """A tournament's entrant: a player of the app, or a bot level (the other one is None)."""

    player: int | None
    bot: str | None
    name: str


class Tournament(TypedDict):
    """A duplicate tournament (`GET tournaments/{id}`; docs/tournaments.md)."""

    id: int
    name: str
    status: TournamentStatus
    entrants: list[Entrant]
    options: dict[str, Any]
    clocks: Clocks
    deal_sets: int
    seed: str | None  # None while running, unless the app chose it
    tables_total: int
    tables_created: int  # so far: all of them (with people: the first) once it is running
    tables_finished: int
    created_at: str
    finished_at: str | None


class Standing(TypedDict):
    """One entrant's line: points per hand the others took with the same cards, minus its own."""

    entrant: int
    player: int | None
    bot: str | None
    name: str
    rank: int
    relative_points: float
    ci95_low: float | None
    ci95_high: float | None
    points_per_hand: float
    hands: int


class Standings(TypedDict):
    """`GET tournaments/{id}/standings`: over the complete deal sets, best first."""

    tournament: int
    status: TournamentStatus
    deal_sets_complete: int
    entrants: list[Standing]


class TournamentTableRow(TypedDict):
    """One of a tournament's tables (an ordinary table: `get_table(id)`)."""

    id: int
    deal_set: int
    rotation: int
    status: str


# -- bots an app brings (docs/bots-byo.md) ------------------------------------------------------


class BotFallbacks(TypedDict):
    """Moves the basic bot made instead of the brought bot, by reason."""

    timeout: int
    failed: int
    bad_answer: int
    illegal: int
    disabled: int


class BotEndpoint(TypedDict):
    """A bot the app brought: where its seats' turns are POSTed, and how it answered."""

    id: int
    name: str
    level: str  # ext:<name>, the seat level naming it
    url: str
    timeout_ms: int
    enabled: bool
    calls: int
    answered: int
    fallbacks: BotFallbacks
    last_error: str
    last_called_at: str | None
    created_at: str
    updated_at: str


class BotEndpointWithSecret(BotEndpoint):
    """A registration's (or a rotation's) answer: the signing secret, shown this once."""

    secret: str


class BotTurn(TypedDict):
    """The body the service POSTs to a brought bot when its seat must act."""

    id: str
    type: Literal["bot.turn"]
    bot: int
    name: str
    table: int
    version: int
    seat: int
    hand: int
    timeout_ms: int
    view: Game
    legal_actions: LegalActions


class StreamTicket(TypedDict):
    """Opens one stream without an Authorization header (`url` is that stream's, with the ticket)."""

    ticket: str
    expires_at: str
    url: str


# Every code the API answers (docs/errors.md); `HeartsError.code` is one of them, or the client's
# own `transport_error` (no answer) or `http_<status>` (an answer that is not the API's).
ErrorCode = Literal[
    "wrong_phase",
    "not_your_turn",
    "card_not_in_hand",
    "must_lead_lowest_club",
    "must_follow_suit",
    "no_points_on_first_trick",
    "hearts_not_broken",
    "bad_pass",
    "moon_choice_invalid",
    "invalid_card",
    "invalid_option",
    "invalid_seat",
    "invalid_action",
    "invalid_state",
    "game_over",
    "not_found",
    "stale_version",
    "idempotency_key_reused",
    "invalid_idempotency_key",
    "invalid_version",
    "invalid_after",
    "invalid_filter",
    "invalid_cursor",
    "invalid_clock",
    "invalid_bot_level",
    "already_seated",
    "not_seated",
    "seat_taken",
    "table_full",
    "already_waiting",
    "not_waiting",
    "invalid_wait",
    "invite_invalid",
    "invite_expired",
    "too_many_invites",
    "table_not_open",
    "table_closed",
    "not_started",
    "not_finished",
    "review_not_allowed",
    "hints_not_allowed",
    "not_archived",
    "player_token_required",
    "app_key_required",
    "not_a_player_token",
    "missing_scope",
    "key_expired",
    "key_revoked",
    "token_expired",
    "too_many_keys",
    "key_not_live",
    "invalid_language",
    "invalid_url",
    "invalid_event_type",
    "too_many_webhooks",
    "webhook_disabled",
    "bot_name_taken",
    "too_many_bots",
    "invalid_device",
    "device_kind_not_allowed",
    "too_many_devices",
    "invalid_push_credential",
    "invalid_format",
    "invalid_last_event_id",
    "ticket_invalid",
    "ticket_expired",
    "too_many_sockets",
    "too_many_subscriptions",
    "not_authenticated",
    "authentication_failed",
    "permission_denied",
    "rate_limited",
    "quota_exceeded",
    "malformed_request",
    "invalid_input",
    "request_too_large",
    "unsupported_media_type",
    "not_acceptable",
    "method_not_allowed",
    "invalid_request",
    "csrf_failed",
    "metrics_forbidden",
    "server_error",
    "service_unavailable",
    "invalid_query",
    "invalid_variables",
    "query_too_deep",
    "query_too_complex",
    "too_many_aliases",
    "internal_error",
]


class Error(TypedDict):
    """Every error body: a stable `code`, a `detail` for people, and the error's own fields."""

    code: ErrorCode
    detail: str


# -- actions ----------------------------------------------------------------------------------


class PassAction(TypedDict):
    type: Literal["pass"]
    cards: list[str]


class PlayAction(TypedDict):
    type: Literal["play"]
    card: str


class MoonAction(TypedDict):
    type: Literal["moon"]
    choice: MoonChoice


Action = Union[PassAction, PlayAction, MoonAction]  # noqa: UP007 (a runtime alias)

# -- events -----------------------------------------------------------------------------------


class _Streamed(TypedDict):
    """What a stream adds to every event: its position (`id`) and, on a player stream, its table."""

    id: NotRequired[str]
    table: NotRequired[int]


class _Logged(_Streamed):
    """An event of the move log: the move's sequence number and its hand."""

    seq: int
    hand: int


class GameStarted(_Logged):
    type: Literal["game_started"]


class SeatTaken(_Logged):
    type: Literal["seat_taken"]
    seat: int
    player: int
    name: str


class SeatLeft(_Logged):
    type: Literal["seat_left"]
    seat: int
    player: int


class BotAdded(_Logged):
    type: Literal["bot_added"]
    seat: int
    level: SeatLevel


class BotFallback(_Logged):
    type: Literal["bot_fallback"]
    seat: int
    reason: BotFallbackReason


class HandStarted(_Logged):
    type: Literal["hand_started"]
    dealer: int
    pass_direction: PassDirection
    deal_commitment: str


class CardsDealt(_Logged):
    type: Literal["cards_dealt"]
    seat: int
    cards: list[str]


class PassSubmitted(_Logged):
    type: Literal["pass_submitted"]
    seat: int


class CardsPassed(_Logged):
    type: Literal["cards_passed"]
    seat: int
    to: int
    cards: list[str]


class PassesComplete(_Logged):
    type: Literal["passes_complete"]


_From = TypedDict("_From", {"from": int})


class CardsReceived(_Logged, _From):
    type: Literal["cards_received"]
    seat: int
    cards: list[str]


class CardPlayed(_Logged):
    type: Literal["card_played"]
    seat: int
    card: str


class HeartsBroken(_Logged):
    type: Literal["hearts_broken"]
    seat: int
    card: str


class TrickWon(_Logged):
    type: Literal["trick_won"]
    seat: int
    trick: int
    cards: list[str]
    points: int


class TrickCarried(_Logged):
    type: Literal["trick_carried"]
    leader: int
    cards: list[str]


class MoonShot(_Logged):
    type: Literal["moon_shot"]
    seat: int
    choices: list[MoonChoice]


class MoonChosen(_Logged):
    type: Literal["moon_chosen"]
    seat: int
    choice: str


class HandScored(_Logged):
    type: Literal["hand_scored"]
    points: list[int]
    totals: list[int]
    moon: dict[str, Any] | None


class HandRevealed(_Logged):
    type: Literal["hand_revealed"]
    record: dict[str, Any]


class GameOver(_Logged):
    type: Literal["game_over"]
    winners: list[int]
    totals: list[int]
    seed: str


class TableAbandoned(_Logged):
    type: Literal["table_abandoned"]


class TableFinished(_Logged):
    type: Literal["table_finished"]
    status: Literal["finished", "abandoned"]
    winners: list[int] | None
    totals: list[int] | None


class MuSigma(TypedDict):
    """A Weng-Lin rating: the mean and its uncertainty."""

    mu: float
    sigma: float


class RatingMove(TypedDict):
    """One person's rating after a rated game (`ratings_changed`; the history has the before)."""

    seat: int
    place: int
    mu: float
    sigma: float


class RatingsChanged(_Logged):
    """A rated game ended: its people's new ratings (docs/ratings.md)."""

    type: Literal["ratings_changed"]
    family: str
    changes: list[RatingMove]


class TurnTimedOut(_Logged):
    type: Literal["turn_timed_out"]
    seat: int
    deadline: str | None


class SeatAway(_Logged):
    type: Literal["seat_away"]
    seat: int


class SeatBack(_Logged):
    type: Literal["seat_back"]
    seat: int


class MatchFound(_Logged):
    """Quick play: the table is full (bots took `bots` at the deadline): it starts."""

    type: Literal["match_found"]
    bots: list[int]


class QuickPlayExpired(_Logged):
    type: Literal["quick_play_expired"]


class RematchProposed(_Logged):
    type: Literal["rematch_proposed"]
    seat: int


class RematchAccepted(_Logged):
    type: Literal["rematch_accepted"]
    seat: int


class RematchStarted(_Logged):
    type: Literal["rematch_started"]
    new_table: int


class TournamentTable(_Logged):
    """This table plays a deal set of a duplicate tournament."""

    type: Literal["tournament_table"]
    tournament: int
    deal_set: int
    rotation: int


class TournamentProgress(_Logged):
    """A table of the tournament finished; `status` is finished on its last one."""

    type: Literal["tournament_progress"]
    tournament: int
    tables_finished: int
    tables_total: int
    status: Literal["running", "finished"]


class TournamentNextTable(_Logged):
    """A tournament with people: the table that starts now that this one is over."""

    type: Literal["tournament_next_table"]
    tournament: int
    next_table: int


class State(_Streamed):
    """First event of a table stream: the table as you see it."""

    type: Literal["state"]
    state: Table


class Tables(_Streamed):
    """First event of a player stream: each of your unfinished tables."""

    type: Literal["tables"]
    tables: list[Table]


class YourTurn(_Streamed):
    """The table waits for you: act on `version` with one of `legal_actions` before `deadline`."""

    type: Literal["your_turn"]
    seq: int
    version: int
    hand: int
    phase: Phase
    seat: int
    legal_actions: LegalActions
    deadline: str | None


Event = Union[  # noqa: UP007 (a runtime alias)
    GameStarted,
    SeatTaken,
    SeatLeft,
    BotAdded,
    BotFallback,
    HandStarted,
    CardsDealt,
    PassSubmitted,
    CardsPassed,
    PassesComplete,
    CardsReceived,
    CardPlayed,
    HeartsBroken,
    TrickWon,
    TrickCarried,
    MoonShot,
    MoonChosen,
    HandScored,
    HandRevealed,
    GameOver,
    TableAbandoned,
    TableFinished,
    RatingsChanged,
    TurnTimedOut,
    SeatAway,
    SeatBack,
    MatchFound,
    QuickPlayExpired,
    RematchProposed,
    RematchAccepted,
    RematchStarted,
    TournamentTable,
    TournamentProgress,
    TournamentNextTable,
    State,
    Tables,
    YourTurn,
]


class TurnReminder(TypedDict):
    """A correspondence turn runs out soon (webhooks only, in a body of type `table.reminder`): the
    seats still to act and their deadline; `seq` and `hand` are the table's as it was sent."""

    type: Literal["turn_reminder"]
    seq: int
    hand: int
    seats: list[int]
    deadline: str


WebhookOnlyEvent = TurnReminder  # sent by webhooks only, never by a stream or the events list


def _event_types() -> dict[str, type[Any]]:
    """Each event type and its TypedDict (tests compare them with the OpenAPI document's `Event_<type>`):
    the events of streams and logs, and the webhook-only ones."""
    out: dict[str, type[Any]] = {}
    for cls in (*get_args(Event), WebhookOnlyEvent):
        literal = get_type_hints(cls)["type"]
        out[get_args(literal)[0]] = cls
    return out


EVENT_TYPES = _event_types()


class RatingFamily(TypedDict):
    name: str
    variant: str
    players: list[int]


class BotRating(TypedDict):
    level: str
    mu: float
    sigma: float
    score: float


class RatingSystem(TypedDict):
    """`GET ratings`: the model, a new player's rating, the families and the bots' fixed ratings."""

    model: str
    mu: float
    sigma: float
    families: list[RatingFamily]
    bots: list[BotRating]


class Rating(TypedDict):
    """A player's rating in one family; `score` (mu - 3 sigma) orders leaderboards."""

    player: int
    name: str
    family: str
    mu: float
    sigma: float
    score: float
    games: int
    updated_at: str


class PlayerRatings(TypedDict):
    player: int
    name: str
    ratings: list[Rating]


class LeaderboardPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[Rating]


class RatingChange(TypedDict):
    """One rated game's effect on one player's rating."""

    id: int
    table: int
    family: str
    seat: int
    place: int
    before: MuSigma
    after: MuSigma
    score_before: float
    score_after: float
    created_at: str


class RatingHistoryPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[RatingChange]


# -- webhooks (docs/webhooks.md) and a table's hands ---------------------------------------------

DeliveryStatus = Literal["pending", "succeeded", "failed"]


class Webhook(TypedDict):
    """An app's webhook endpoint (never its secret)."""

    id: int
    url: str
    event_types: list[str]
    description: str
    active: bool
    created_at: str
    updated_at: str


class WebhookWithSecret(Webhook):
    """A creation's (or a rotation's) answer: the signing secret, shown this once."""

    secret: str


class Delivery(TypedDict):
    """One move's public events sent to one endpoint, and how its attempts went."""

    id: str
    webhook: int
    table: int
    seq: int
    event_types: list[str]
    status: DeliveryStatus
    attempts: int
    next_attempt_at: str | None
    last_attempt_at: str | None
    last_status_code: int | None
    last_error: str
    delivered_at: str | None
    created_at: str


class DeliveryDetail(Delivery):
    """A delivery with its `body` and its latest attempts (`log`)."""

    body: dict[str, Any]
    log: list[dict[str, Any]]


class DeliveryPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[Delivery]


class AuditEntry(TypedDict):
    """One configuration change of the app (docs/audit.md): who, when, which request, what changed."""

    id: int
    at: str
    actor_kind: Literal["app_key", "admin", "operator"]
    actor: str
    request_id: str
    action: str
    target: str
    changes: dict[str, list[Any]]  # {"field": [before, after]}; a secret shows only "(secret)"
    hash: str
    prev_hash: str


class AuditPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[AuditEntry]


class Hand(TypedDict):
    """One hand of a table: its deal's commitment, and its seed once it is over."""

    number: int
    pass_direction: PassDirection
    deal_commitment: str
    finished: bool
    seed: str | None


class HandReplay(Hand):
    """A hand with its record (once over: deals, passes, tricks, points) and its moves."""

    record: dict[str, Any] | None
    moves: list[dict[str, Any]]


class HintAction(TypedDict, total=False):
    """A legal action as it is sent: `type` play (`card`), pass (`cards`) or moon (`choice`)."""

    type: Literal["pass", "play", "moon"]
    card: str
    cards: list[str]
    choice: Literal["subtract", "add"]


class HintOption(TypedDict):
    """One legal action and its estimated points for the rest of the hand (lower is better)."""

    action: HintAction
    points: float


class Hint(TypedDict):
    """The bot level's move for your seat and every legal action's estimate (docs/hints.md)."""

    table_id: int
    version: int
    hand: int
    seat: int
    level: str
    phase: str
    choice: HintAction
    options: list[HintOption]
    think_ms: int


class ReviewPass(TypedDict):
    """A reviewed pass: the seat's cards, the bot's, the estimated points lost (None: not weighed)."""

    cards: list[str]
    bot_cards: list[str]
    points_lost: float | None


class ReviewTrick(TypedDict):
    """One trick of a review: the seat's card, the bot's card from the same view, the points lost."""

    trick: int
    card: str
    bot_card: str
    points_lost: float | None


HandReview = TypedDict(  # `pass` is a Python keyword: the functional form
    "HandReview",
    {
        "table_id": int,
        "hand": int,
        "seat": int,
        "level": str,
        "pass": ReviewPass | None,
        "tricks": list[ReviewTrick],
        "total_points_lost": float,
    },
)
HandReview.__doc__ = """A seat's review of a finished hand (docs/bots-and-clocks.md#hand-review)."""


class Token(TypedDict):
    """A bearer token, shown once, and when it stops working (None: never)."""

    token: str
    expires_at: str | None


ApiKeyState = Literal["active", "expiring", "expired", "revoked"]


class ApiKey(TypedDict):
    """One of an app's API keys (docs/keys.md): never the key itself, only its first characters."""

    id: int
    name: str
    prefix: str
    scopes: list[str]
    state: ApiKeyState
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    last_used_at: str | None
    replaced_by: int | None


class ApiKeyWithSecret(TypedDict):
    """A new key: `secret` is the key, shown this once."""

    key: ApiKey
    secret: str


class RotatedApiKey(ApiKeyWithSecret):
    """A rotation: the new key and its secret, and the old key, working until its `expires_at`."""

    previous: ApiKey


class ApiKeyPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[ApiKey]


class Erased(TypedDict):
    """What erasing a player answers, the same on every repeat (docs/privacy.md#erasure)."""

    id: int
    erased: bool
    erased_at: str


class AppSettings(TypedDict):
    """An app's own settings (docs/data.md#archives-and-retention): how many days its finished
    tables stay in the database before they move to the archive (None: the service's default)."""

    id: int
    name: str
    retention_days: int | None


ExportStatus = Literal["pending", "done", "failed"]


class ExportJob(TypedDict):
    """A player's data export (docs/privacy.md#export): pending until a background task makes its
    document, then done, with the `document` URL path, until `expires_at`."""

    id: str
    player: int
    status: ExportStatus
    size: int | None
    error: str | None
    created_at: str
    finished_at: str | None
    expires_at: str | None
    document: str | None


# -- push notifications (docs/push.md) -----------------------------------------------------------

DeviceKind = Literal["fcm", "apns", "webpush"]


class Device(TypedDict):
    """A phone or browser a player is pushed to: never its whole token, only `token_hint`."""

    id: int
    kind: DeviceKind
    label: str
    token_hint: str
    topic: str | None
    created_at: str
    expires_at: str | None
    last_pushed_at: str | None


class WebPushKeys(TypedDict):
    """A Web Push subscription's keys, as PushSubscription.toJSON() gives them (base64url)."""

    p256dh: str
    auth: str


class FcmSettings(TypedDict):
    project_id: str
    client_email: str
    private_key_id: str
    token_uri: str
    updated_at: str


class ApnsSettings(TypedDict):
    key_id: str
    team_id: str
    topic: str
    sandbox: bool
    updated_at: str


class VapidKey(TypedDict):
    """The VAPID public key a browser subscribes with (applicationServerKey)."""

    public_key: str


class PushSettings(TypedDict):
    """An app's push settings: the public fields of its keys (null: not set), never a secret."""

    fcm: FcmSettings | None
    apns: ApnsSettings | None
    webpush: VapidKey


# The pages of the lists an app or a player grows (docs/rest.md#limits): `next` and `previous` are
# the addresses of the pages around this one (null at either end).


class InvitePage(TypedDict):
    next: str | None
    previous: str | None
    invites: list[dict[str, Any]]


class TournamentPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[Tournament]


class BotEndpointPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[BotEndpoint]


class WebhookPage(TypedDict):
    next: str | None
    previous: str | None
    results: list[Webhook]


class DevicePage(TypedDict):
    next: str | None
    previous: str | None
    results: list[Device]
