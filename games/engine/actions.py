"""The three kinds of action a seat takes (pass, play, moon choice) and their wire form."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .cards import card_name, names_of, parse_card, parse_cards, suit_table
from .errors import EngineError

SUBTRACT: Final = "subtract"
ADD: Final = "add"
MOON_CHOICES: Final = (SUBTRACT, ADD)


class Action:
    """Base of all actions; actions are immutable values compared by content."""

    __slots__ = ()
    type: str = ""

    def to_dict(self) -> dict[str, Any]:
        raise AssertionError("subclasses define to_dict")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"


class Play(Action):
    """Play one card (a first-pack id; with two packs either copy in the hand is played)."""

    __slots__ = ("card",)
    type = "play"

    def __init__(self, card: object) -> None:
        if type(card) is not int or not 0 <= card < 52:
            raise EngineError("invalid_card", f"{card!r} is not a card id (0 to 51)", token=repr(card))
        self.card: int = card

    def to_dict(self) -> dict[str, Any]:
        return {"type": "play", "card": card_name(self.card)}

    def __eq__(self, other: object) -> bool:
        return type(other) is Play and other.card == self.card

    def __hash__(self) -> int:
        return self.card


class Pass(Action):
    """Pass cards face down; exactly three distinct held cards are legal."""

    __slots__ = ("cards",)
    type = "pass"

    def __init__(self, cards: Iterable[object]) -> None:
        ids: list[int] = []
        for c in cards:
            if type(c) is not int or not 0 <= c < 52:
                raise EngineError("invalid_card", f"{c!r} is not a card id (0 to 51)", token=repr(c))
            ids.append(c)
        self.cards: tuple[int, ...] = tuple(ids)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "pass", "cards": names_of(self.cards)}

    def __eq__(self, other: object) -> bool:
        return type(other) is Pass and sorted(other.cards) == sorted(self.cards)

    def __hash__(self) -> int:
        return hash(("pass", tuple(sorted(self.cards))))


class MoonChoice(Action):
    """The shooter's choice: `subtract` 26 from their own score or `add` 26 to everyone else's."""

    __slots__ = ("choice",)
    type = "moon"

    def __init__(self, choice: object) -> None:
        if choice not in MOON_CHOICES:
            raise EngineError(
                "moon_choice_invalid",
                f"moon choice must be 'subtract' or 'add', got {choice!r}",
                choice=str(choice),
            )
        self.choice: str = str(choice)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "moon", "choice": self.choice}


PLAYS: Final[tuple[Play, ...]] = tuple(Play(c) for c in range(52))
SUIT_PLAYS: Final = tuple(suit_table(PLAYS[13 * s : 13 * s + 13]) for s in range(4))


_CLUBS: Final = SUIT_PLAYS[0]
_DIAMONDS: Final = SUIT_PLAYS[1]
_SPADES: Final = SUIT_PLAYS[2]
_HEARTS: Final = SUIT_PLAYS[3]


def plays_of(mask: int) -> tuple[Play, ...]:
    """The Play actions of a first-pack mask, lowest first, from per-suit tables: legal-move
    generation is the hottest path of every bot and simulation."""
    return (
        _CLUBS[mask & 0x1FFF]
        + _DIAMONDS[mask >> 13 & 0x1FFF]
        + _SPADES[mask >> 26 & 0x1FFF]
        + _HEARTS[mask >> 39 & 0x1FFF]
    )


def action_from_dict(data: Mapping[str, Any]) -> Action:
    """Parse the wire form of an action; a bad card token or shape raises with a stable code."""
    if not isinstance(data, Mapping):
        raise EngineError("invalid_action", "an action must be an object with a 'type'")
    kind = data.get("type")
    if kind == "play":
        return PLAYS[parse_card(data.get("card"))]
    if kind == "pass":
        cards = data.get("cards")
        if not isinstance(cards, list | tuple):
            raise EngineError("bad_pass", "a pass needs 'cards': a list of three card tokens", reason="count")
        return Pass(tuple(parse_cards(cards)))
    if kind == "moon":
        choice = data.get("choice")
        if choice not in MOON_CHOICES:
            raise EngineError(
                "moon_choice_invalid",
                f"moon choice must be 'subtract' or 'add', got {choice!r}",
                choice=str(choice),
            )
        return MoonChoice(choice)
    raise EngineError(
        "invalid_action", f"unknown action type {kind!r}: use play, pass or moon", type=str(kind)
    )
