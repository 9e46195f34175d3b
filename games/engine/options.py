"""Table options, declared once with their defaults, and validated into an immutable Options."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .cards import HEARTS_MASK, ONE_PACK, QS_MASK, SUIT_MASK, TWO_PACKS, card_name, parse_card
from .errors import InvalidCard, InvalidOption

CLASSIC: Final = "classic"
OMNIBUS: Final = "omnibus"
CANCELLATION: Final = "cancellation"
PLAY_ON: Final = "play_on"
SHARED: Final = "shared"


@dataclass(frozen=True)
class OptionSpec:
    """What one option accepts; the API documents options from these specs."""

    name: str
    default: Any
    kind: type
    help: str
    choices: tuple[Any, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "default": self.default, "type": self.kind.__name__}
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        out["help"] = self.help
        return out


OPTION_SPECS: Final[tuple[OptionSpec, ...]] = (
    OptionSpec("players", 4, int, "Number of seats: 3 to 7 (6 to 10 for Cancellation Hearts).", None, 3, 10),
    OptionSpec(
        "target_score",
        100,
        int,
        "The game ends after a hand in which someone reaches this.",
        None,
        50,
        10_000,
    ),
    OptionSpec("variant", CLASSIC, str, "Rule set of the table.", (CLASSIC, OMNIBUS, CANCELLATION)),
    OptionSpec("omnibus_card", "JD", str, "Omnibus Hearts: the diamond worth -10.", ("JD", "TD")),
    OptionSpec(
        "tie_rule",
        PLAY_ON,
        str,
        "When the lowest total is tied at the end: deal more hands (play_on) or share the win (shared).",
        (PLAY_ON, SHARED),
    ),
    OptionSpec(
        "first_hand",
        1,
        int,
        "The number of the first hand dealt from the seed (a duplicate tournament replays one hand).",
        None,
        1,
        10_000,
    ),
    OptionSpec(
        "hands",
        0,
        int,
        "Hands to play, then the game ends, the lowest total winning (ties shared); 0: to the target.",
        None,
        0,
        1_000,
    ),
)
# Options whose default leaves every table as before: left out of `to_dict` when at the default, so
# the stored options and the answers of ordinary tables do not change.
QUIET_DEFAULTS: Final = {"first_hand": 1, "hands": 0}
SPECS_BY_NAME: Final[dict[str, OptionSpec]] = {s.name: s for s in OPTION_SPECS}
PLAYER_RANGE: Final = {CLASSIC: (3, 7), OMNIBUS: (3, 7), CANCELLATION: (6, 10)}


@dataclass(frozen=True, slots=True)
class Options:
    """The validated options of one table; build it with `Options.build` or `Options.from_dict`."""

    players: int = 4
    target_score: int = 100
    variant: str = CLASSIC
    omnibus_card: str = "JD"
    tie_rule: str = PLAY_ON
    first_hand: int = 1
    hands: int = 0
    # Derived once here so the engine's hot paths read a flag instead of comparing strings,
    # and card masks that cover only the packs in use: with one pack every mask fits in a
    # machine word, which the compiled engine handles without allocating.
    bonus_mask: int = field(init=False, compare=False, repr=False)
    two_packs: bool = field(init=False, compare=False, repr=False)
    first_trick_rule: bool = field(init=False, compare=False, repr=False)
    suit_masks: tuple[int, int, int, int] = field(init=False, compare=False, repr=False)
    hearts_mask: int = field(init=False, compare=False, repr=False)
    queens_mask: int = field(init=False, compare=False, repr=False)
    penalty_mask: int = field(init=False, compare=False, repr=False)
    scoring_mask: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        two = self.variant == CANCELLATION
        packs = TWO_PACKS if two else ONE_PACK
        suits = (SUIT_MASK[0] & packs, SUIT_MASK[1] & packs, SUIT_MASK[2] & packs, SUIT_MASK[3] & packs)
        bonus = 1 << parse_card(self.omnibus_card) if self.variant == OMNIBUS else 0
        hearts, queens = HEARTS_MASK & packs, QS_MASK & packs
        for name, value in (
            ("bonus_mask", bonus),
            ("two_packs", two),
            ("first_trick_rule", not two),
            ("suit_masks", suits),
            ("hearts_mask", hearts),
            ("queens_mask", queens),
            ("penalty_mask", hearts | queens),
            # Cards that can score: penalty cards and the diamonds (the Omnibus bonus is one).
            ("scoring_mask", hearts | queens | suits[1]),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def build(cls, **values: Any) -> Options:
        return cls.from_dict(values)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> Options:
        """Validate raw options (for example from JSON); unknown or bad values name the option."""
        if values is None:
            values = {}
        if not isinstance(values, Mapping):
            raise InvalidOption("invalid_option", "options must be an object", option=None)
        clean: dict[str, Any] = {}
        for name, value in values.items():
            spec = SPECS_BY_NAME.get(name)
            if spec is None:
                known = ", ".join(SPECS_BY_NAME)
                raise InvalidOption(
                    "invalid_option", f"unknown option {name!r} (known: {known})", option=str(name)
                )
            clean[name] = _check(spec, value)
        opts = cls(**clean)
        low, high = PLAYER_RANGE[opts.variant]
        if not low <= opts.players <= high:
            raise InvalidOption(
                "invalid_option",
                f"option 'players' must be {low} to {high} for the {opts.variant} variant, "
                f"got {opts.players}",
                option="players",
            )
        return opts

    def to_dict(self) -> dict[str, Any]:
        out = {spec.name: getattr(self, spec.name) for spec in OPTION_SPECS}
        for name, default in QUIET_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        return out


def _check(spec: OptionSpec, value: Any) -> Any:
    if spec.kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidOption(
                "invalid_option", f"option {spec.name!r} must be an integer, got {value!r}", option=spec.name
            )
        if (spec.minimum is not None and value < spec.minimum) or (
            spec.maximum is not None and value > spec.maximum
        ):
            raise InvalidOption(
                "invalid_option",
                f"option {spec.name!r} must be between {spec.minimum} and {spec.maximum}, got {value}",
                option=spec.name,
            )
        return value
    if not isinstance(value, str):
        raise InvalidOption(
            "invalid_option", f"option {spec.name!r} must be a string, got {value!r}", option=spec.name
        )
    if spec.name == "omnibus_card":
        # Any card notation ("jd", "10D"); a non-card is reported below, naming the option.
        with contextlib.suppress(InvalidCard):
            value = card_name(parse_card(value))
    if spec.choices is not None and value not in spec.choices:
        allowed = ", ".join(map(str, spec.choices))
        raise InvalidOption(
            "invalid_option",
            f"option {spec.name!r} must be one of {allowed}, got {value!r}",
            option=spec.name,
        )
    return value


def describe_options() -> list[dict[str, Any]]:
    """The option specs as data, for API documentation and discovery endpoints."""
    return [s.describe() for s in OPTION_SPECS]
