"""GraphQL inputs shared by the mutations that create tables: table options and turn clocks."""

from __future__ import annotations

from typing import Any

import graphene

from games.engine import OPTION_SPECS
from games.services.common import _CLOCK_LIMITS


def _option_input(name: str) -> str:
    spec = next(s for s in OPTION_SPECS if s.name == name)
    if spec.choices is not None:
        allowed = f"One of {', '.join(map(str, spec.choices))}"
    else:
        allowed = f"From {spec.minimum} to {spec.maximum}"
    return f"{spec.help} {allowed} (else invalid_option naming it); default {spec.default}."


class TableOptionsInput(graphene.InputObjectType):
    """The table's rules; a field left out (or null) takes its default. Checked by the engine:
    a bad value is `invalid_option` with `field` naming the option."""

    players = graphene.Int(description=_option_input("players"))
    target_score = graphene.Int(description=_option_input("target_score"))
    variant = graphene.String(description=_option_input("variant"))
    omnibus_card = graphene.String(description=_option_input("omnibus_card") + " Any card notation: jd, 10D.")
    tie_rule = graphene.String(description=_option_input("tie_rule"))
    first_hand = graphene.Int(description=_option_input("first_hand"))
    hands = graphene.Int(description=_option_input("hands"))


_LOW, _HIGH = _CLOCK_LIMITS["play"]  # the same for pass and moon
_SECONDS = (
    f"Whole seconds from {_LOW} to {_HIGH:,} ({_HIGH // 86_400} days), or null for no clock "
    + "(else invalid_clock); default {}."
)
_AWAY_LOW, _AWAY_HIGH = _CLOCK_LIMITS["away_after"]


class ClocksInput(graphene.InputObjectType):
    """Turn clocks; a clock left out takes its default, an explicit null turns it off."""

    pass_ = graphene.Int(name="pass", description="Seconds to pass. " + _SECONDS.format(60))
    play = graphene.Int(description="Seconds to play a card. " + _SECONDS.format(30))
    moon = graphene.Int(description="Seconds for a shooter to choose. " + _SECONDS.format(30))
    away_after = graphene.Int(
        description="Timeouts in a row that mark a seat away (a bot plays it until its player acts): "
        f"{_AWAY_LOW} to {_AWAY_HIGH} (else invalid_clock); default 2."
    )


def options_given(given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The engine's options from the input: only the fields given a value."""
    return None if given is None else {k: v for k, v in given.items() if v is not None}


def clocks_given(given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The service's clocks from the input: the fields given, null included (no clock)."""
    return None if given is None else {("pass" if k == "pass_" else k): v for k, v in given.items()}
