"""Bots' thinking time and pace at a table: the creation options, checked, and the values in force;
and what makes a table a correspondence table (CORRESPONDENCE_SECONDS), where bots never pace.

Both live in the table's `clocks` JSON beside the turn clocks (they are timings of the table, set
at creation and copied to a rematch with the clocks), under the keys THINK_KEY and PACE_KEY; an
absent key is the default. `turn_clocks` is what a reader sees as the clocks, without them.
- `bot_think_ms`: the time `strong` and `expert` bots think per move (THINK_MS_LIMITS), instead
  of their levels' fixed iteration budgets; absent: the budgets, and a seed replays exactly.
- `bot_pace_ms`: the delay before each bot card played (PACE_MS_LIMITS), so that a person can
  follow the trick. Absent: settings.BOT_PACE_MS while a person sits at the table, else 0 (a
  bot-only table is paced only when asked). Always 0 at a correspondence table.
- A correspondence table is one whose play clock is at least CORRESPONDENCE_SECONDS: its people
  move hours or days apart (docs/bots-and-clocks.md#correspondence-tables).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings

from games.errors import ServiceError

if TYPE_CHECKING:
    from games.models import Table

THINK_KEY, PACE_KEY = "bot_think_ms", "bot_pace_ms"
THINK_MS_LIMITS = (10, 5000)
PACE_MS_LIMITS = (0, 2000)
CORRESPONDENCE_SECONDS = 3600  # a play clock of at least this makes a correspondence table


def is_correspondence(clocks: Mapping[str, Any]) -> bool:
    """A table whose play clock is an hour or more: nobody sits watching it, so its bots move at
    once and its people are reminded before their clock runs out (services.reminders)."""
    play = clocks.get("play")
    return isinstance(play, int) and play >= CORRESPONDENCE_SECONDS


def timing_from(think_ms: object = None, pace_ms: object = None) -> dict[str, int]:
    """The entries to store in a new table's clocks (None: the default, nothing stored). Else
    `invalid_input` naming the field, and nothing is created."""
    stored: dict[str, int] = {}
    given = ((THINK_KEY, think_ms, THINK_MS_LIMITS), (PACE_KEY, pace_ms, PACE_MS_LIMITS))
    for key, value, (low, high) in given:
        if value is None:
            continue
        if type(value) is not int or not low <= value <= high:
            raise ServiceError(
                "invalid_input",
                f"{key} must be a whole number of milliseconds from {low} to {high}, or null for the default",
                kind="malformed",
                field=key,
            )
        stored[key] = value
    return stored


def think_ms(table: Table) -> int | None:
    """The bots' thinking time per move at this table, or None for their levels' fixed budgets."""
    value = table.clocks.get(THINK_KEY)
    return value if isinstance(value, int) else None


def pace_ms(table: Table) -> int:
    """The delay before each bot card played at this table, in milliseconds, as of its seats now:
    none at a correspondence table, whatever it asked for (nobody watches a card played hours
    after the last)."""
    if is_correspondence(table.clocks):
        return 0
    value = table.clocks.get(PACE_KEY)
    if isinstance(value, int):
        return value
    people = any(s["player"] is not None for s in table.seating)
    return int(settings.BOT_PACE_MS) if people else 0


def turn_clocks(clocks: Mapping[str, Any]) -> dict[str, Any]:
    """The turn clocks alone (what a reader sees as `clocks`): the bots' timings are shown apart."""
    return {k: v for k, v in clocks.items() if k not in (THINK_KEY, PACE_KEY)}
