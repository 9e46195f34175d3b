"""Typed shapes of every REST answer, for the OpenAPI document (the views build the bodies)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from games.reads import TABLE_STATUSES

F = serializers  # short alias: these classes are long lists of fields


class ErrorOut(F.Serializer):
    """Every error body: a stable code, a human detail, and any structured fields of the error
    (for example `version` with stale_version, `option` with invalid_option, `fields` with
    invalid_input)."""

    code = F.CharField(help_text="Stable machine-readable code (the engine's codes unchanged)")
    detail = F.CharField(help_text="What went wrong, for people")


class PlayerOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField()
    external_id = F.CharField()


class PlayerTokenOut(F.Serializer):
    player = PlayerOut()
    token = F.CharField(help_text="Bearer token: shown once, stored hashed")


class TokenOut(F.Serializer):
    token = F.CharField(help_text="Bearer token: shown once, stored hashed")


class SeatOut(F.Serializer):
    position = F.IntegerField()
    player = F.IntegerField(allow_null=True)
    name = F.CharField(allow_null=True)
    bot = F.CharField(allow_null=True, help_text="Bot level, or null for a person or an open seat")
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
    choices = F.ListField(child=F.CharField(), required=False, help_text="moon: subtract or add")

    def get_fields(self) -> dict[str, F.Field]:
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class SheetRowOut(F.Serializer):
    hand = F.IntegerField()
    points = F.ListField(child=F.IntegerField())
    totals = F.ListField(child=F.IntegerField())
    moon = F.JSONField(allow_null=True, required=False)


class GameOut(F.Serializer):
    """The engine's view for one seat (or a spectator): never another seat's cards."""

    seat = F.IntegerField(allow_null=True)
    hand_number = F.IntegerField()
    phase = F.ChoiceField(choices=["passing", "playing", "moon_choice", "game_over"])
    dealer = F.IntegerField()
    pass_direction = F.CharField()
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
    widow = F.JSONField(required=False, help_text="Cancellation: size and who took it")
    moon = F.JSONField(required=False, help_text="moon_choice: the shooter and the choices")
    game_seed = F.CharField(required=False, help_text="Revealed once the game is over")
    hand = F.ListField(child=F.CharField(), required=False, help_text="Your cards (a seat's view only)")
    my_pass = PassOut(required=False, allow_null=True)
    received = ReceivedOut(required=False, allow_null=True, help_text="Once every seat has passed")
    legal_actions = LegalOut(required=False, allow_null=True, help_text="When it is your turn")


class TableOut(F.Serializer):
    id = F.IntegerField()
    status = F.ChoiceField(choices=TABLE_STATUSES)
    version = F.IntegerField(help_text="Send it back as If-Match to act only on what you saw")
    options = F.DictField()
    clocks = ClocksOut()
    deadline = F.DateTimeField(allow_null=True, help_text="When the seat(s) to act time out")
    seats = SeatOut(many=True)
    your_seat = F.IntegerField(allow_null=True)
    game = GameOut(allow_null=True)


class TableRowOut(F.Serializer):
    id = F.IntegerField()
    status = F.ChoiceField(choices=TABLE_STATUSES)
    version = F.IntegerField()
    options = F.DictField()
    hand_number = F.IntegerField()
    deadline = F.DateTimeField(allow_null=True)
    seats = SeatOut(many=True)
    open_seats = F.IntegerField()


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


class EventOut(F.Serializer):
    seq = F.IntegerField(help_text="The move that caused it: resume with after=seq")
    hand = F.IntegerField()
    type = F.CharField(help_text="game_started, seat_taken, cards_dealt, card_played, trick_won, ...")


class EventsOut(F.Serializer):
    events = EventOut(many=True)
    version = F.IntegerField(help_text="Poll again with after=version")
    more = F.BooleanField(help_text="True when a page limit cut the answer short")


class HandOut(F.Serializer):
    number = F.IntegerField()
    pass_direction = F.CharField()
    deal_commitment = F.CharField()
    finished = F.BooleanField()
    seed = F.CharField(allow_null=True, help_text="Revealed once the hand is over")


class HandsOut(F.Serializer):
    hands = HandOut(many=True)


class HandReplayOut(HandOut):
    record = F.DictField(allow_null=True, help_text="Deals, passes, tricks and points, once the hand is over")
    moves = MoveOut(many=True)


def strict_requests(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every request body is closed (`additionalProperties:
    false`), as the server refuses a field it does not know (games/api/parsing.py); the free-form
    maps inside a body (options, bots, clocks) are not request components and stay open."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
    return result
