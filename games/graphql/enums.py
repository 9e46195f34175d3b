"""GraphQL enums: the closed sets of values the API answers, derived from their sources where importable.

Every enum value's name is the wire value that REST, the event streams and webhooks use
(`passing`, `card_played`, `stale_version`): graphene sends an enum by its name, so the GraphQL
answers keep the exact strings of the other APIs. The sets that live in the models (table status,
move kind) are listed here, since the adapters never import the models; a test holds each one
equal to its source.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum as PyEnum

import graphene

from bots.advice import LEVELS as ADVICE_LEVELS
from games.engine import ADD, GAME_OVER, MOON, OPTION_SPECS, PASSING, PLAYING, SUBTRACT
from games.errors import Code
from games.extbots import REASONS


def _enum(name: str, values: Iterable[str], description: str) -> type[graphene.Enum]:
    """A graphene enum whose value names are the wire values themselves."""
    enum: type[graphene.Enum] = graphene.Enum.from_enum(
        PyEnum(name, [(v, v) for v in values]), description=description
    )  # what graphene.Enum(name, values) does, with the class (not an instance) as its type
    return enum


def _choices(option: str) -> tuple[str, ...]:
    spec = next(s for s in OPTION_SPECS if s.name == option)
    assert spec.choices is not None
    return tuple(spec.choices)


ErrorCode = graphene.Enum.from_enum(
    Code,
    name="ErrorCode",
    description="Every error code of the API (games/errors.py), the same in REST and GraphQL",
)
TableStatus = _enum(
    "TableStatus",
    ("open", "passing", "playing", "moon_choice", "finished", "abandoned"),
    "A table's status: open (seats to fill), one of the game's phases while it is played, then "
    "finished or abandoned",
)
Phase = _enum(
    "Phase",
    (PASSING, PLAYING, MOON, GAME_OVER),
    "The phase of the hand being played (moon_choice: a shooter chooses how to score)",
)
PassDirection = _enum(
    "PassDirection",
    ("left", "right", "across", "hold"),
    "Where this hand's passes go (hold: no passing this hand)",
)
ActionType = _enum(
    "ActionType", ("pass", "play", "moon"), "A player's action: pass cards, play a card, choose a moon score"
)
MoonChoice = _enum(
    "MoonChoice",
    (SUBTRACT, ADD),
    "After shooting the moon: subtract 26 from your own score, or add 26 to everyone else's",
)
# A seat's bot is a String in answers: a built-in level, or ext:<name> for a bot the app brought
# (docs/bots-byo.md), which no enum can list.
SEAT_LEVEL = "Bot level: a built-in one (random, basic, strong, expert) or ext:<name>, a bot the app brought"
BotFallbackReason = _enum(
    "BotFallbackReason",
    REASONS,
    "Why a brought bot's move was the basic bot's: timeout, failed (no connection or not 2xx), "
    "bad_answer (not an action), illegal, disabled",
)
Variant = _enum("Variant", _choices("variant"), "The table's rule set (docs/rules.md)")
TieRule = _enum(
    "TieRule",
    _choices("tie_rule"),
    "When the lowest total is tied at the end: deal more hands (play_on) or share the win (shared)",
)
OmnibusCard = _enum("OmnibusCard", _choices("omnibus_card"), "Omnibus Hearts: the diamond worth -10")
MoveKind = _enum(
    "MoveKind",
    ("join", "add_bot", "leave", "start", "pass", "play", "moon", "abandon", "back", "rematch"),
    "What a logged move did",
)
ViewerKind = _enum("ViewerKind", ("app", "player"), "Who is calling: an app key or a player token")
Visibility = _enum(
    "Visibility",
    ("public", "unlisted", "private"),
    "Who finds a table: public (listed), unlisted (by id only), private (named players and invite codes)",
)
AdviceLevel = _enum(
    "AdviceLevel",
    ADVICE_LEVELS,
    "The bot level whose choices a hint or a hand review gives: basic, strong or expert "
    "(docs/bots-and-clocks.md)",
)
