"""The table operations: create a table, take and leave seats, seat bots, start, act, rematch, quick play.

Each is declared once: REST serves it (games/api/views.py, matchmaking.py) and GraphQL too
(games/graphql/tables.py), both through games.operations.base.Operation.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from games import bot_timing, reads, services
from games.accounts import Scope
from games.engine.options import OPTION_SPECS
from games.errors import Code, ServiceError
from games.operations.base import Access, Call, Operation
from games.operations.fields import (
    BotsField,
    ClocksField,
    EmptyIn,
    LevelField,
    OptionsField,
    SpectatorDelayField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictSerializer,
    VersionedIn,
)
from games.services.invites import MAX_INVITED

# A change to an open table answers these besides its own codes.
SEATS = (Code.not_found, Code.table_not_open)
# Taking a seat, by table or by invite code, answers these besides.
JOINING = (
    Code.invalid_seat,
    Code.already_seated,
    Code.seat_taken,
    Code.table_full,
    Code.invite_invalid,
    Code.invite_expired,
)


def _most_seats() -> int:
    """The most seats a table can have (the engine's `players` option at its maximum)."""
    most = next(s.maximum for s in OPTION_SPECS if s.name == "players")
    assert most is not None
    return most


LAST_SEAT = _most_seats() - 1  # a seat number is 0 to this


def position_field() -> StrictIntegerField:
    """An optional seat number (the lowest open seat when absent)."""
    return StrictIntegerField(required=False, min_value=0, max_value=LAST_SEAT, help_text="The seat, 0 first")


# -- create -----------------------------------------------------------------------------------


@extend_schema_serializer(component_name="CreateTable")
class CreateTableIn(StrictSerializer):
    """A new table: its options, its turn clocks, and seats to fill with bots at once."""

    # Free-form maps checked by the engine and the services; documented with their limits.
    options = OptionsField(required=False, default=dict, help_text="Engine options (docs/rules.md)")
    bots = BotsField(
        child=StrictCharField(max_length=32),
        required=False,
        default=dict,
        help_text='Seats to fill with bots at once, e.g. {"1": "basic", "2": "strong"}',
    )
    clocks = ClocksField(
        required=False,
        default=dict,
        help_text="Seconds for a pass, a play and a moon choice (null: no clock), and away_after",
    )
    visibility = StrictChoiceField(
        choices=list(reads.VISIBILITIES),
        required=False,
        default="public",
        help_text="public (listed), unlisted (by id only) or private (named players and invite codes)",
    )
    invited = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        required=False,
        default=list,
        max_length=MAX_INVITED,
        help_text=f"Players (of your app, or guests at a guest table) who may see and join it (at most "
        f"{MAX_INVITED})",
    )
    spectator_delay = SpectatorDelayField(
        child=StrictIntegerField(),
        required=False,
        default=None,
        help_text="What players not seated at it see lags by (docs/streams.md#spectators)",
    )
    rated = StrictBooleanField(
        required=False,
        default=False,
        help_text="Its finished game updates its people's ratings (docs/ratings.md; default false)",
    )
    hints = StrictBooleanField(
        required=False,
        default=False,
        help_text="Its seated players may ask for a hint on their turn (docs/hints.md; default false; "
        "never with rated: hints_not_allowed)",
    )
    bot_think_ms = StrictIntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=bot_timing.THINK_MS_LIMITS[0],
        max_value=bot_timing.THINK_MS_LIMITS[1],
        help_text=f"Milliseconds strong and expert bots think per move, {bot_timing.THINK_MS_LIMITS[0]:,} to "
        f"{bot_timing.THINK_MS_LIMITS[1]:,} (null: their fixed budgets, which replay exactly for a seed; "
        "docs/bots-and-clocks.md#thinking-time)",
    )
    bot_pace_ms = StrictIntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=bot_timing.PACE_MS_LIMITS[0],
        max_value=bot_timing.PACE_MS_LIMITS[1],
        help_text=f"Milliseconds before each bot card played, {bot_timing.PACE_MS_LIMITS[0]:,} to "
        f"{bot_timing.PACE_MS_LIMITS[1]:,} (null: the server's default at tables with a person, 0 at "
        "bot-only tables; docs/bots-and-clocks.md#pace)",
    )


def bot_seats(bots: dict[str, str]) -> dict[int, str]:
    """The `bots` map's seats as numbers ("1" -> 1); a key that is not a seat number: invalid_seat."""
    seats: dict[int, str] = {}
    for key, level in bots.items():
        if not (key.isascii() and key.isdigit() and len(key) <= 2):
            raise ServiceError(
                "invalid_seat", f"bot seat {key[:20]!r} is not a seat number", kind="malformed"
            )
        seats[int(key)] = level
    return seats


def _create(c: Call) -> services.Outcome:
    p = c.principal
    return services.table_create(
        options=c["options"],
        bots=bot_seats(c["bots"]),
        clocks=c["clocks"],
        app=p.app,
        visibility=c["visibility"],
        invited=c["invited"],
        creator=p.player,
        spectator_delay=c["spectator_delay"],
        rated=c["rated"],
        hints=c["hints"],
        bot_think_ms=c["bot_think_ms"],
        bot_pace_ms=c["bot_pace_ms"],
        idempotency=c.idempotency,
    )


CREATE_TABLE = Operation(
    name="createTable",
    quota="open_tables",
    scope=Scope.tables_write,
    description="A new table: engine options, bots by seat, turn clocks (seconds; null: none), who may "
    "see it, and its spectators' delay. It starts at once when every seat is a bot.",
    input=CreateTableIn,
    run=_create,
    errors=(
        Code.invalid_option,
        Code.invalid_clock,
        Code.invalid_seat,
        Code.invalid_bot_level,
        Code.hints_not_allowed,
    ),
    idempotent=True,
)


# -- seats ------------------------------------------------------------------------------------


@extend_schema_serializer(component_name="JoinTable")
class JoinTableIn(VersionedIn):
    """Take a seat: the lowest open one, or `position`; `invite`: a code of this table."""

    position = position_field()
    invite = StrictCharField(
        required=False, max_length=64, help_text="An invite code (a private table needs one unless named)"
    )


JOIN_TABLE = Operation(
    name="joinTable",
    description="Take a seat (the lowest open one unless `position` is given); a full table starts. A "
    "private table needs an invite code of it unless you were named.",
    input=JoinTableIn,
    path=("table_id",),
    access=Access.PLAYER,
    run=lambda c: services.seat_join(
        table_id=c["table_id"],
        player=c.principal.require_player(),
        position=c.get("position"),
        expected_version=c.get("expected_version"),
        scope=c.principal.app,
        invite=c.get("invite"),
        idempotency=c.idempotency,
    ),
    errors=(*SEATS, *JOINING),
    versioned=True,
    idempotent=True,
)

LEAVE_TABLE = Operation(
    name="leaveTable",
    description="Give up your seat before the game starts.",
    input=VersionedIn,
    path=("table_id",),
    access=Access.PLAYER,
    run=lambda c: services.seat_leave(
        table_id=c["table_id"],
        player=c.principal.require_player(),
        expected_version=c.get("expected_version"),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(*SEATS, (Code.not_seated, 409)),
    versioned=True,
    idempotent=True,
)


@extend_schema_serializer(component_name="AddBot")
class AddBotIn(VersionedIn):
    """Seat a bot of `level`: in the lowest open seat, or `position`."""

    level = LevelField(required=False, default="basic")
    position = position_field()


ADD_BOT = Operation(
    name="addBot",
    scope=Scope.tables_write,
    description="Seat a bot of a level (random, basic, strong, expert, or ext:<name> for a bot the app "
    "brought): an app key or any player of the table's app may.",
    input=AddBotIn,
    path=("table_id",),
    run=lambda c: services.bot_add(
        table_id=c["table_id"],
        level=c["level"],
        position=c.get("position"),
        player=c.principal.player,
        expected_version=c.get("expected_version"),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(*SEATS, Code.invalid_seat, Code.seat_taken, Code.table_full, Code.invalid_bot_level),
    versioned=True,
    idempotent=True,
)


@extend_schema_serializer(component_name="StartTable")
class StartTableIn(VersionedIn):
    """Start now, with bots of level `fill_with` in the open seats."""

    fill_with = LevelField(required=False, default="basic")


START_TABLE = Operation(
    name="startTable",
    scope=Scope.tables_write,
    description="Start now with bots of level `fill_with` in the open seats (a seated player or the "
    "app may start). A full table starts by itself.",
    input=StartTableIn,
    path=("table_id",),
    run=lambda c: services.table_start(
        table_id=c["table_id"],
        fill_with=c["fill_with"],
        player=c.principal.player,
        expected_version=c.get("expected_version"),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(*SEATS, Code.not_seated, Code.invalid_bot_level),
    versioned=True,
    idempotent=True,
)

ABANDON_TABLE = Operation(
    name="abandonTable",
    scope=Scope.tables_write,
    description="Close an unfinished table for good (app key).",
    input=VersionedIn,
    path=("table_id",),
    access=Access.APP,
    denied="only the table's app can abandon it",
    run=lambda c: services.table_abandon(
        table_id=c["table_id"],
        expected_version=c.get("expected_version"),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(Code.not_found, Code.table_closed),
    versioned=True,
    idempotent=True,
)

RECLAIM_SEAT = Operation(
    name="reclaimSeat",
    description='"I\'m back": take your seat back after it was marked away after timeouts (any action of '
    "yours does the same); nothing changes when it was not away.",
    input=EmptyIn,
    path=("table_id",),
    access=Access.PLAYER,
    run=lambda c: services.seat_back(
        table_id=c["table_id"],
        player=c.principal.require_player(),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(Code.not_found, Code.not_seated),
    idempotent=True,
)

REQUEST_REMATCH = Operation(
    name="requestRematch",
    description="After a finished game: ask for a rematch, or accept the one asked for. When every person "
    "at the table has (bots accept by themselves), a new table with the same options, clocks and bots "
    "starts with the seats moved one place on; this table's `rematch.table` names it, and its events say "
    "`rematch_started`. Asking twice changes nothing.",
    input=EmptyIn,
    path=("table_id",),
    access=Access.PLAYER,
    run=lambda c: services.rematch(
        table_id=c["table_id"],
        player=c.principal.require_player(),
        scope=c.principal.app,
        idempotency=c.idempotency,
    ),
    errors=(Code.not_found, Code.not_seated, (Code.not_finished, 422)),
    idempotent=True,
)


# -- actions ----------------------------------------------------------------------------------


class ActionIn(StrictSerializer):
    """A seat's action: a pass, a play or a moon choice (card notation as in docs/rules.md)."""

    type = StrictCharField(max_length=16, help_text="pass, play or moon (another: 400 invalid_action)")
    card = StrictCharField(required=False, max_length=8, help_text="play: one card, like QS or 10H")
    cards = serializers.ListField(
        child=StrictCharField(max_length=8), required=False, max_length=8, help_text="pass: three cards"
    )
    choice = StrictChoiceField(choices=["subtract", "add"], required=False, help_text="moon: subtract or add")
    expected_version = StrictIntegerField(required=False, min_value=0, help_text="The version you saw")

    FIELDS_OF_TYPE = {"play": "card", "pass": "cards", "moon": "choice"}

    @classmethod
    def check(cls, attrs: dict[str, Any]) -> None:
        """A field of another action type is refused (a play carries no `cards`)."""
        own = cls.FIELDS_OF_TYPE.get(attrs["type"])  # an unknown type: the engine's invalid_action
        for other in cls.FIELDS_OF_TYPE.values():
            if own is not None and other != own and other in attrs:
                raise serializers.ValidationError({other: [f"not part of a {attrs['type']} action"]})


def _act(c: Call) -> services.Outcome:
    action = {k: v for k, v in c.input.items() if k in ("type", *ActionIn.FIELDS_OF_TYPE.values())}
    return services.action_submit(
        table_id=c["table_id"],
        player=c.principal.require_player(),
        action=action,
        expected_version=c.get("expected_version"),
        scope=c.principal.app,
        idempotency=c.idempotency,
    )


SUBMIT_ACTION = Operation(
    name="submitAction",
    description="Your seat's action: pass {type: pass, cards: [three cards]}, play {type: play, card: "
    "QS} or the moon choice {type: moon, choice: subtract or add}. A retry with the same idempotency key "
    "never acts twice and gets the first answer back.",
    input=ActionIn,
    path=("table_id",),
    access=Access.PLAYER,
    run=_act,
    errors=(
        Code.not_found,
        Code.invalid_action,
        Code.invalid_card,
        Code.invalid_seat,
        Code.wrong_phase,
        Code.not_your_turn,
        Code.card_not_in_hand,
        Code.must_lead_lowest_club,
        Code.must_follow_suit,
        Code.no_points_on_first_trick,
        Code.hearts_not_broken,
        Code.bad_pass,
        Code.moon_choice_invalid,
        Code.game_over,
        Code.not_started,
        Code.table_closed,
        Code.not_seated,
    ),
    versioned=True,
    idempotent=True,
)


# -- quick play -------------------------------------------------------------------------------


@extend_schema_serializer(component_name="QuickPlay")
class QuickPlayIn(StrictSerializer):
    """What you want to play; every field has a default."""

    options = OptionsField(required=False, default=dict, help_text="Engine options (docs/rules.md)")
    clocks = ClocksField(
        required=False, default=dict, help_text="Seconds for a pass, a play and a moon choice (null: none)"
    )
    bot_level = LevelField(
        required=False,
        allow_null=True,
        default="basic",
        help_text="The level of the bots that fill the open seats when the wait is over (default basic); "
        "null: no bots, the request expires",
    )
    wait_seconds = StrictIntegerField(
        required=False,
        default=services.WAIT_DEFAULT,
        min_value=services.WAIT_LIMITS[0],
        max_value=services.WAIT_LIMITS[1],
        help_text=f"Seconds to wait for people, {services.WAIT_LIMITS[0]} to {services.WAIT_LIMITS[1]} "
        f"(default {services.WAIT_DEFAULT})",
    )


QUICK_PLAY = Operation(
    name="quickPlay",
    description="Play as soon as possible: a seat at the oldest table of your app waiting with the same "
    "options, clocks and bot level, or at a new one; the answer is that table. It starts when its last "
    "seat is taken; when `wait_seconds` pass first, bots of `bot_level` take the open seats and it starts "
    "(`bot_level` null: the table closes, quick_play_expired). Either way its events say match_found just "
    "before game_started. You wait at one table at a time (already_waiting).",
    input=QuickPlayIn,
    access=Access.PLAYER,
    run=lambda c: services.quick_play(
        player=c.principal.require_player(),
        app=c.principal.app,
        options=c["options"],
        clocks=c["clocks"],
        bot_level=c["bot_level"],
        wait_seconds=c["wait_seconds"],
        idempotency=c.idempotency,
    ),
    errors=(
        Code.invalid_option,
        Code.invalid_clock,
        Code.invalid_bot_level,
        Code.invalid_wait,
        Code.already_waiting,
    ),
    idempotent=True,
)

LEAVE_QUICK_PLAY = Operation(
    name="leaveQuickPlay",
    description="Leave the quick-play queue: give up your seat at the table where you wait (not_waiting).",
    input=EmptyIn,
    access=Access.PLAYER,
    run=lambda c: services.quick_play_leave(player=c.principal.require_player(), idempotency=c.idempotency),
    errors=(Code.not_waiting,),
    idempotent=True,
)
