"""The tournament operation: create a duplicate tournament (docs/tournaments.md); a bulk task creates
and starts its tables, so the creation answers at once (status `starting`).

Declared once: REST serves it (games/api/tournaments.py) and GraphQL too (games/graphql/tournaments.py).
App key only. With an Idempotency-Key, a repeat answers the tournament as first created.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rest_framework import serializers

from bots import LEVELS
from games import services, standings
from games.accounts import Scope
from games.audit import Audited
from games.errors import Code
from games.models import Tournament
from games.operations.base import Access, Call, Operation
from games.operations.fields import (
    ClocksField,
    OptionsField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from games.services import MAX_DEAL_SETS, MAX_SEED

DENIED = "tournaments are run with an app key"
NAME_MAX = Tournament._meta.get_field("name").max_length


class EntrantIn(serializers.Serializer):
    """One entrant: a player of the app, or a bot level (exactly one of the two)."""

    player = StrictIntegerField(required=False, help_text="A player of the app")
    bot = StrictCharField(required=False, help_text=f"A bot level: {', '.join(LEVELS)}")

    def to_internal_value(self, data: Any) -> Any:
        """Closed, as every request body: another key is refused, not dropped."""
        if isinstance(data, dict) and set(data) - set(self.fields):
            unknown = ", ".join(sorted(map(str, set(data) - set(self.fields))))
            raise serializers.ValidationError(f"an entrant has player or bot, not {unknown}")
        return super().to_internal_value(data)


class TournamentIn(StrictSerializer):
    """A new duplicate tournament (docs/tournaments.md)."""

    name = StrictCharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=NAME_MAX,
        help_text=f"At most {NAME_MAX} characters",
    )
    entrants = EntrantIn(
        many=True,
        help_text="2 to `players` entrants; with fewer than `players`, the last one (a bot) fills the "
        "other seats",
    )
    deal_sets = StrictIntegerField(
        help_text=f"Deal sets (each one hand, played once per rotation): 1 to {MAX_DEAL_SETS}"
    )
    options = OptionsField(required=False, help_text="The tables' options (not first_hand nor hands)")
    clocks = ClocksField(required=False, help_text="Turn clocks of the tables with people")
    seed = StrictCharField(
        required=False,
        max_length=MAX_SEED,
        help_text="Reproducible deals: the same as `python -m bots.tournament --seed` (absent: secret)",
    )


def _create(c: Call) -> services.Outcome | dict[str, Any]:
    """The service call; a new tournament answers its body, a kept Idempotency-Key's the Outcome
    with the stored answer (the tournament as first created, byte for byte)."""
    idem = c.idempotency and dataclasses.replace(c.idempotency, render=services.created_answer)
    out = services.tournament_create(
        app=c.app,
        entrants=c["entrants"],
        deal_sets=c["deal_sets"],
        name=c["name"],
        options=c.get("options"),
        clocks=c.get("clocks"),
        seed=c.get("seed"),
        idempotency=idem,
    )
    return out if out.response is not None else standings.body(out.made)


CREATE_TOURNAMENT = Operation(
    name="createTournament",
    quota="tournaments_per_day",
    # never its entrants (names) nor its seed (a secret until it is over)
    audited=Audited("tournament", Tournament, ("name", "deal_sets", "options", "clocks", "seed_given")),
    scope=Scope.tournaments_write,
    description="App key: a duplicate tournament, answered at once with status `starting` while a task "
    "creates and starts its tables (`tablesCreated`), then `running` (docs/tournaments.md). `seed` makes "
    "the deals those of `python -m bots.tournament --seed`. Errors: invalid_input (entrants, deal_sets), "
    "invalid_bot_level, invalid_option, invalid_clock.",
    input=TournamentIn,
    access=Access.APP,
    denied=DENIED,
    run=_create,
    errors=(Code.invalid_option, Code.invalid_clock, Code.invalid_bot_level),
    idempotent=True,
)
