"""Typed shapes of every REST answer and of the free-form parts of request bodies, for the OpenAPI
document (the views build the bodies and games/api/parsing.py, the services and the engine check
the requests: the shapes here are derived from their limits so that the two cannot drift)."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers

from games import extbots
from games.engine.options import OPTION_SPECS
from games.errors import Code
from games.operations.fields import option_field, serializer_named
from games.reads import TABLE_STATUSES, VISIBILITIES

F = serializers  # short alias: these classes are long lists of fields
PASS_DIRECTIONS = ["left", "right", "across", "hold"]  # games.engine.deal.pass_direction: hold, no pass
EXTERNAL_LEVEL_PATTERN = f"^{extbots.PREFIX}{extbots.NAME.pattern}$"  # ext:<name>, docs/bots-byo.md


# -- errors ---------------------------------------------------------------------------------


class ErrorOut(F.Serializer):
    """Every error body: a stable code, a human detail, and the structured fields of its error
    (each present only with the codes named in its description). Clients branch on `code`."""

    code = F.ChoiceField(
        choices=[c.value for c in Code], help_text="Stable machine-readable code (docs/errors.md)"
    )
    detail = F.CharField(help_text="What went wrong, for people: never branch on it")
    version = F.IntegerField(
        required=False, help_text="stale_version, invalid_after: the table's current version"
    )
    option = F.CharField(
        required=False, allow_null=True, help_text="invalid_option: the option at fault (null: not an object)"
    )
    clock = F.CharField(required=False, help_text="invalid_clock: the clock at fault")
    levels = F.ListField(child=F.CharField(), required=False, help_text="invalid_bot_level: the levels")
    reason = F.CharField(
        required=False,
        help_text="bad_pass: count, duplicate, not_held or already_passed; "
        "invalid_url: scheme, host, credentials, length, malformed or private; "
        "invite_invalid: unknown, revoked or used_up; invalid_device, invalid_push_credential: why the "
        "field is refused; review_not_allowed: hand_not_over or not_your_seat; "
        "hints_not_allowed: off, rated or tournament (docs/errors.md)",
    )
    retry_after = F.IntegerField(
        required=False,
        min_value=1,
        help_text="service_unavailable from a hint or a hand review not computed in time: seconds "
        "before asking again",
    )
    fields_ = F.DictField(
        required=False, help_text="invalid_input: the fields at fault, each with its messages"
    )
    field = F.CharField(
        required=False, help_text="invalid_input, invalid_device, invalid_push_credential: the field at fault"
    )
    turn = F.IntegerField(required=False, help_text="not_your_turn: the seat to act")
    phase = F.CharField(required=False, help_text="wrong_phase, game_over: the phase the hand is in")
    card = F.CharField(required=False, help_text="card_not_in_hand, bad_pass: the card")
    # The detail `required` (must_lead_lowest_club): DRF's stubs type Field.required, a bool.
    required = F.CharField(required=False, help_text="must_lead_lowest_club: the card to lead")  # type: ignore[assignment]
    suit = F.CharField(required=False, help_text="must_follow_suit: the suit led")
    token = F.CharField(required=False, help_text="invalid_card: the token that is not a card")
    seat = F.CharField(required=False, help_text="invalid_seat: the seat asked for")
    choice = F.CharField(required=False, help_text="moon_choice_invalid: the choice sent")
    type = F.CharField(required=False, help_text="invalid_action: the action type sent")
    known = F.ListField(child=F.CharField(), required=False, help_text="invalid_event_type: the known types")
    event_types = F.ListField(
        child=F.CharField(), required=False, help_text="invalid_event_type: the unknown types sent"
    )
    limit = F.IntegerField(
        required=False,
        help_text="request_too_large: the largest body in bytes; too_many_webhooks: the most endpoints; "
        "too_many_devices: the most devices of a player; too_many_keys: the most live keys of an app",
    )
    table = F.IntegerField(required=False, help_text="already_waiting: the table where you wait")
    quota = F.CharField(required=False, help_text="quota_exceeded (in a 429): the quota that is full")
    scope = F.CharField(
        required=False,
        help_text="missing_scope: the scope the API key lacks (docs/keys.md); too_many_sockets, "
        "too_many_subscriptions: token, app or address",
    )

    def get_fields(self) -> dict[str, F.Field]:
        fields = super().get_fields()
        fields["fields"] = fields.pop("fields_")
        return fields


class QuotaExceededOut(F.Serializer):
    """A 429: one of the app's quotas is full (docs/rest.md#quotas); free a place first, no retry helps."""

    code = F.ChoiceField(choices=[Code.quota_exceeded.value])
    detail = F.CharField()
    quota = F.ChoiceField(
        choices=[
            "streams_per_token",
            "streams_per_app",
            "open_tables",
            "tournaments_per_day",
            "bots",
            "webhooks",
        ],
        help_text="Which quota is full",
    )
    limit = F.IntegerField(min_value=0, help_text="The quota's limit for your app")


class RateLimitedOut(F.Serializer):
    """A 429: over a rate limit (the Retry-After header says the same as `retry_after`)."""

    code = F.ChoiceField(choices=[Code.rate_limited.value])
    detail = F.CharField()
    limit = F.ChoiceField(
        choices=["token", "app", "address", "export"],
        help_text="Which limit was reached (export: one data export a minute per player)",
    )
    rate = F.CharField(help_text="The limit, like 600/minute")
    retry_after = F.IntegerField(min_value=1, help_text="Seconds until the window ends")


# -- request parts with their real limits ----------------------------------------------------


class SpectatorDelayOut(F.Serializer):
    """The table's spectator delay: one of the two keys."""

    seconds = F.IntegerField(required=False)
    tricks = F.IntegerField(required=False)


TableOptionsOut = extend_schema_serializer(component_name="TableOptions")(
    serializer_named(
        "TableOptionsOut",
        "The table's options, every one of them.",
        {s.name: option_field(s, request=False) for s in OPTION_SPECS},
    )
)


# -- answers --------------------------------------------------------------------------------


class PlayerOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField()
    external_id = F.CharField()


class PlayerTokenOut(F.Serializer):
    player = PlayerOut()
    token = F.CharField(help_text="Bearer token: shown once, stored hashed")
    expires_at = F.DateTimeField(allow_null=True, help_text="When the token stops working (null: never)")


class TokenOut(F.Serializer):
    token = F.CharField(help_text="Bearer token: shown once, stored hashed")
    expires_at = F.DateTimeField(allow_null=True, help_text="When the token stops working (null: never)")


class SeatOut(F.Serializer):
    position = F.IntegerField()
    player = F.IntegerField(allow_null=True)
    name = F.CharField(allow_null=True)
    bot = F.CharField(
        allow_null=True,
        help_text="Bot level (a built-in one, or ext:<name> for a bot the app brought), or null for a "
        "person or an open seat",
    )
    away = F.BooleanField(help_text="Timed out too often: a bot plays it until the player acts again")
    timeouts = F.IntegerField(help_text="Clocks run out in a row (reset when the player acts)")


class ClocksOut(F.Serializer):
    # Named with a trailing underscore where the key is a Python keyword.
    pass_ = F.IntegerField(allow_null=True, help_text="Seconds to pass (null: no clock)")
    play = F.IntegerField(allow_null=True)
    moon = F.IntegerField(allow_null=True)
    away_after = F.IntegerField(help_text="Timeouts in a row before a seat is marked away")

    def get_fields(self) -> dict[str, F.Field]:
        fields = super().get_fields()
        fields["pass"] = fields.pop("pass_")
        return fields


class CardAt(F.Serializer):
    seat = F.IntegerField()
    card = F.CharField()


class TrickOut(F.Serializer):
    leader = F.IntegerField()
    cards = CardAt(many=True)
    winner = F.IntegerField(allow_null=True, help_text="null: a carried trick (Cancellation)")
    points = F.IntegerField()


class PassOut(F.Serializer):
    to = F.IntegerField()
    cards = F.ListField(child=F.CharField())


class ReceivedOut(F.Serializer):
    from_ = F.IntegerField()
    cards = F.ListField(child=F.CharField())

    def get_fields(self) -> dict[str, F.Field]:
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class LegalOut(F.Serializer):
    type = F.ChoiceField(choices=["pass", "play", "moon"])
    count = F.IntegerField(required=False, help_text="pass: how many cards")
    from_ = F.ListField(child=F.CharField(), required=False, help_text="pass: the cards to choose from")
    cards = F.ListField(child=F.CharField(), required=False, help_text="play: every legal card")
    choices = F.ListField(
        child=F.ChoiceField(choices=["subtract", "add"]), required=False, help_text="moon: subtract or add"
    )

    def get_fields(self) -> dict[str, F.Field]:
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class MoonChoiceOut(F.Serializer):
    """A scored moon shot: who shot it and how they chose to score it."""

    seat = F.IntegerField()
    choice = F.ChoiceField(choices=["subtract", "add"])


class MoonShotOut(F.Serializer):
    """moon_choice phase: the shooter, who chooses how to score."""

    seat = F.IntegerField()
    choices = F.ListField(child=F.ChoiceField(choices=["subtract", "add"]))


class WidowOut(F.Serializer):
    """Cancellation Hearts: the cards dealt face down, and the seat that took them with a trick."""

    size = F.IntegerField()
    taken_by = F.IntegerField(allow_null=True)


class SheetRowOut(F.Serializer):
    hand = F.IntegerField()
    points = F.ListField(child=F.IntegerField())
    totals = F.ListField(child=F.IntegerField())
    moon = MoonChoiceOut(allow_null=True, required=False, help_text="null: nobody shot the moon")


class GameOut(F.Serializer):
    """The engine's view for one seat (or a spectator): never another seat's cards."""

    seat = F.IntegerField(allow_null=True)
    hand_number = F.IntegerField()
    phase = F.ChoiceField(choices=["passing", "playing", "moon_choice", "game_over"])
    dealer = F.IntegerField()
    pass_direction = F.ChoiceField(choices=PASS_DIRECTIONS)
    deal_commitment = F.CharField(help_text="SHA-256 of this hand's seed, revealed when it ends")
    to_act = F.ListField(child=F.IntegerField(), help_text="Seats the game waits for")
    turn = F.IntegerField(allow_null=True)
    hand_sizes = F.ListField(child=F.IntegerField())
    hearts_broken = F.BooleanField()
    trick = CardAt(many=True, help_text="The trick in progress")
    leader = F.IntegerField(allow_null=True)
    tricks = TrickOut(many=True, help_text="Tricks of this hand so far")
    points_taken = F.ListField(child=F.IntegerField())
    scores = F.ListField(child=F.IntegerField())
    scoresheet = SheetRowOut(many=True)
    winners = F.ListField(child=F.IntegerField(), allow_null=True)
    passed = F.ListField(child=F.BooleanField(), required=False, help_text="passing: who has passed")
    widow = WidowOut(required=False, help_text="Cancellation Hearts only")
    moon = MoonShotOut(required=False, help_text="moon_choice phase only")
    game_seed = F.CharField(required=False, help_text="Revealed once the game is over")
    hand = F.ListField(child=F.CharField(), required=False, help_text="Your cards (a seat's view only)")
    my_pass = PassOut(required=False, allow_null=True)
    received = ReceivedOut(required=False, allow_null=True, help_text="Once every seat has passed")
    legal_actions = LegalOut(required=False, allow_null=True, help_text="When it is your turn")


class RematchOut(F.Serializer):
    """After a game: who asked for a rematch, and the rematch table once every person has."""

    asked = F.ListField(child=F.IntegerField(), help_text="Seats whose players asked")
    table = F.IntegerField(allow_null=True, help_text="The rematch table, once it started")


class TableOut(F.Serializer):
    id = F.IntegerField()
    status = F.ChoiceField(choices=TABLE_STATUSES)
    version = F.IntegerField(help_text="Send it back as If-Match to act only on what you saw")
    options = TableOptionsOut()
    clocks = ClocksOut()
    bot_think_ms = F.IntegerField(
        allow_null=True, help_text="Milliseconds bots think per move; null: their levels' fixed budgets"
    )
    bot_pace_ms = F.IntegerField(help_text="Milliseconds before each bot card played, as of the seats now")
    deadline = F.DateTimeField(allow_null=True, help_text="When the seat(s) to act time out")
    seats = SeatOut(many=True)
    your_seat = F.IntegerField(allow_null=True)
    game = GameOut(allow_null=True)
    rematch_of = F.IntegerField(allow_null=True, help_text="The finished table this one is the rematch of")
    rematch = RematchOut(allow_null=True, help_text="After the game: null until someone asks for a rematch")
    visibility = F.ChoiceField(
        choices=VISIBILITIES,
        help_text="public: listed; unlisted: by id only; private: named players and invite codes",
    )
    invited = F.ListField(child=F.IntegerField(), help_text="Players the creator named")
    spectator_delay = SpectatorDelayOut(allow_null=True, help_text="null: spectators see it live")
    delayed = F.BooleanField(
        help_text="This answer shows the table as it was spectator_delay ago (you are a spectator)"
    )
    spectators = F.IntegerField(help_text="Spectator streams open on this table now")
    rated = F.BooleanField(help_text="Its finished game updates its people's ratings (docs/ratings.md)")
    hints = F.BooleanField(help_text="Its seated players may ask for a hint on their turn (docs/hints.md)")


class TableRowOut(F.Serializer):
    id = F.IntegerField()
    status = F.ChoiceField(choices=TABLE_STATUSES)
    version = F.IntegerField()
    options = TableOptionsOut()
    hand_number = F.IntegerField()
    deadline = F.DateTimeField(allow_null=True)
    seats = SeatOut(many=True)
    open_seats = F.IntegerField()
    visibility = F.ChoiceField(choices=VISIBILITIES)


class TablePageOut(F.Serializer):
    next = F.URLField(allow_null=True)
    previous = F.URLField(allow_null=True)
    results = TableRowOut(many=True)


class ScoresheetOut(F.Serializer):
    hands = SheetRowOut(many=True)
    totals = F.ListField(child=F.IntegerField())


class MoveOut(F.Serializer):
    seq = F.IntegerField()
    hand = F.IntegerField()
    kind = F.CharField()
    position = F.IntegerField(allow_null=True)
    payload = F.DictField(help_text="Another seat's pass shows no cards until its hand is over")
    at = F.DateTimeField()


class MovesOut(F.Serializer):
    moves = MoveOut(many=True)
    version = F.IntegerField()


@extend_schema_field({"type": "array", "items": {"$ref": "#/components/schemas/Event"}})
class EventListField(F.ListField):
    """Logged events, typed by `type` (games/api/event_schemas.py adds `Event` and its variants)."""


class EventsOut(F.Serializer):
    events = EventListField(help_text="Each with `seq` (the move that caused it), `hand` and `type`")
    version = F.IntegerField(help_text="Poll again with after=version")
    more = F.BooleanField(help_text="True when a page limit cut the answer short")


class HandOut(F.Serializer):
    number = F.IntegerField()
    pass_direction = F.ChoiceField(choices=PASS_DIRECTIONS)
    deal_commitment = F.CharField()
    finished = F.BooleanField()
    seed = F.CharField(allow_null=True, help_text="Revealed once the hand is over")


class HandsOut(F.Serializer):
    hands = HandOut(many=True)


class RecordTrickOut(F.Serializer):
    leader = F.IntegerField()
    cards = F.ListField(child=F.CharField(), help_text="Card i was played by seat (leader + i) % players")
    winner = F.IntegerField(allow_null=True, help_text="null: a carried trick (Cancellation)")


class HandRecordOut(F.Serializer):
    """A finished hand's full record: the deal, the passes, every trick and the scores."""

    hand = F.IntegerField()
    seed = F.CharField(help_text="The hand's seed: SHA-256 of '<table id>:<seed>' is the commitment")
    deal_commitment = F.CharField()
    dealer = F.IntegerField()
    pass_direction = F.ChoiceField(choices=PASS_DIRECTIONS)
    dealt = F.ListField(child=F.ListField(child=F.CharField()), help_text="Each seat's cards as dealt")
    widow = F.ListField(child=F.CharField(), help_text="Cancellation Hearts: the cards dealt face down")
    passes = PassOut(many=True, help_text="Each seat's pass, in seat order")
    tricks = RecordTrickOut(many=True)
    taken_points = F.ListField(child=F.IntegerField())
    moon = MoonChoiceOut(allow_null=True)
    points = F.ListField(child=F.IntegerField())
    totals = F.ListField(child=F.IntegerField())


class HandReplayOut(HandOut):
    record = HandRecordOut(
        allow_null=True, help_text="Deals, passes, tricks and points, once the hand is over"
    )
    moves = MoveOut(many=True)


def strict_requests(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every request body is closed (`additionalProperties:
    false`), as the server refuses a field it does not know (games/api/parsing.py), its fields'
    defaults are said in their descriptions, and a body with a required field (or a choice of
    bodies) is itself required."""
    components = result.get("components", {}).get("schemas", {})
    for name, component in components.items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
            for field in component.get("properties", {}).values():
                # A default of a request field is what the server assumes when it is absent; type
                # generators (openapi-typescript) read `default` as "always present" and would
                # make the field required, so it is said in words instead.
                if "default" in field:
                    said = f"Default: `{json.dumps(field.pop('default'))}`."
                    field["description"] = (
                        f"{field['description']} {said}" if field.get("description") else said
                    )
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body is None:
                continue
            ref = body["content"].get("application/json", {}).get("schema", {}).get("$ref", "")
            component = components.get(ref.rsplit("/", 1)[-1], {})
            if component.get("required") or "oneOf" in component:
                body["required"] = True
    return result


# -- error responses per operation ----------------------------------------------------------

# The status each code is answered with by REST (docs/errors.md; a test checks the two agree).
STATUS_OF: dict[Code, int] = {
    **dict.fromkeys(
        (
            Code.invalid_card,
            Code.invalid_option,
            Code.invalid_seat,
            Code.invalid_action,
            Code.invalid_idempotency_key,
            Code.invalid_version,
            Code.invalid_after,
            Code.invalid_filter,
            Code.invalid_cursor,
            Code.invalid_clock,
            Code.invalid_bot_level,
            Code.invalid_language,
            Code.invalid_url,
            Code.invalid_event_type,
            Code.invalid_format,
            Code.invalid_last_event_id,
            Code.malformed_request,
            Code.invalid_input,
            Code.invalid_wait,
            Code.invalid_device,
            Code.invalid_push_credential,
        ),
        400,
    ),
    Code.not_authenticated: 401,
    Code.authentication_failed: 401,
    Code.ticket_invalid: 401,
    Code.ticket_expired: 401,
    Code.key_expired: 401,
    Code.key_revoked: 401,
    Code.token_expired: 401,
    Code.missing_scope: 403,
    Code.not_found: 404,
    Code.not_waiting: 404,
    **dict.fromkeys(
        (
            Code.stale_version,
            Code.idempotency_key_reused,
            Code.already_seated,
            Code.seat_taken,
            Code.table_full,
            Code.already_waiting,
            Code.too_many_webhooks,
            Code.webhook_disabled,
            Code.bot_name_taken,
            Code.too_many_devices,
            Code.not_archived,
            Code.too_many_keys,
            Code.key_not_live,
        ),
        409,
    ),
    Code.request_too_large: 413,
    Code.unsupported_media_type: 415,
    **dict.fromkeys(
        (
            Code.wrong_phase,
            Code.not_your_turn,
            Code.card_not_in_hand,
            Code.must_lead_lowest_club,
            Code.must_follow_suit,
            Code.no_points_on_first_trick,
            Code.hearts_not_broken,
            Code.bad_pass,
            Code.moon_choice_invalid,
            Code.invalid_state,
            Code.game_over,
            Code.not_seated,
            Code.table_not_open,
            Code.table_closed,
            Code.not_started,
            Code.not_finished,
            Code.review_not_allowed,
            Code.hints_not_allowed,
            Code.invite_invalid,
            Code.invite_expired,
            Code.player_token_required,
            Code.app_key_required,
            Code.not_a_player_token,
            Code.device_kind_not_allowed,
        ),
        422,
    ),
    Code.rate_limited: 429,
    Code.quota_exceeded: 429,
    Code.service_unavailable: 503,
}
BODY_CODES = (Code.malformed_request, Code.invalid_input, Code.request_too_large, Code.unsupported_media_type)
AUTH_CODES = (
    Code.not_authenticated,
    Code.authentication_failed,
    Code.key_expired,
    Code.key_revoked,
    Code.token_expired,
)
RETRY_AFTER = {
    "schema": {"type": "integer", "minimum": 1},
    "description": "Seconds to wait before retrying",
}


def error_codes(
    codes: tuple[Code | tuple[Code, int], ...], *, body: bool, auth: bool = True
) -> dict[int, list[str]]:
    """Every error an operation can answer, by status: those of its body (when it takes one), of
    its credentials (unless it needs none), its own `codes` (a code answered with another status
    than STATUS_OF's is given as `(code, status)`), the rate limit and an unavailable database."""
    by_status: dict[int, list[str]] = {}
    wanted: list[Code | tuple[Code, int]] = [
        *(BODY_CODES if body else ()),
        *(AUTH_CODES if auth else ()),
        *codes,
        Code.rate_limited,
        Code.service_unavailable,
    ]
    for entry in wanted:
        code, status = entry if isinstance(entry, tuple) else (entry, STATUS_OF[entry])
        if code.value not in by_status.setdefault(status, []):
            by_status[status].append(code.value)
    return dict(sorted(by_status.items()))


def describe_codes(status: int, codes: list[str]) -> str:
    """The description of one error response: the codes it can carry (docs/errors.md says more)."""
    if status == 429:
        text = "`rate_limited`: over a rate limit; retry after `Retry-After` seconds"
        if "quota_exceeded" in codes:
            text += "; `quota_exceeded`: a quota is full (`quota`, `limit`): free a place first"
        return text
    if status == 503:
        return (
            "`service_unavailable`: the database is not answering; nothing changed, retry after `Retry-After`"
        )
    return "Error codes: " + ", ".join(f"`{c}`" for c in codes)


def error_responses(codes: dict[int, list[str]]) -> dict[int, Any]:
    """drf-spectacular responses for error_codes(): the one error shape, RateLimitedOut for a 429
    (or, where a quota can be full too, either shape by its `code`)."""
    return {
        status: OpenApiResponse(shape_of(status, names), describe_codes(status, names))
        for status, names in codes.items()
    }


TOO_MANY = PolymorphicProxySerializer(
    component_name="TooManyOut",
    serializers={"rate_limited": RateLimitedOut, "quota_exceeded": QuotaExceededOut},
    resource_type_field_name="code",
)


def shape_of(status: int, names: list[str]) -> Any:
    """The serializer of an error response with these codes."""
    if status != 429:
        return ErrorOut
    return TOO_MANY if "quota_exceeded" in names else RateLimitedOut


def error_details(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: each error response lists its codes as `x-error-codes`
    (from the operation's `x-error-codes`, set by views.documented), a 429 or 503 has its
    Retry-After header, and an answer the headers documented() was given for it."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            codes = operation.pop("x-error-codes", {})
            for status, headers in operation.pop("x-response-headers", {}).items():
                operation["responses"][status].setdefault("headers", {}).update(headers)
            for status, response in operation["responses"].items():
                if str(status) in codes:
                    response["x-error-codes"] = codes[str(status)]
                if str(status) in ("429", "503"):
                    response.setdefault("headers", {})["Retry-After"] = RETRY_AFTER
    return result
