"""What a notification says, in the player's language: a title and a body per kind, built only from
public facts (the table's number, a player's name, a deadline), never a card."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from games.push.providers import Note

_ = gettext_noop  # marked for makemessages; translated when a notification is built

# kind -> (title, body); the turn has one body per phase. Fields: table, name, hours, minutes.
TITLES = {
    "turn": _("Your turn at table %(table)s"),
    "reminder": _("Your move is due soon"),
    "invite": _("You are invited to a game"),
    "rematch": _("A rematch is offered"),
    "finished": _("The game is over"),
}
BODIES = {
    "turn:pass": _("Choose the three cards you pass."),
    "turn:play": _("It is your turn to play a card."),
    "turn:moon": _("You shot the moon: choose how it scores."),
    "reminder:hours": _("Table %(table)s: your time runs out in about %(hours)s hours."),
    "reminder:minutes": _("Table %(table)s: your time runs out in about %(minutes)s minutes."),
    "invite": _("You are invited to play at table %(table)s."),
    "rematch": _("%(name)s wants a rematch at table %(table)s."),
    "finished": _("The game at table %(table)s is over: see the final scores."),
}
KINDS = tuple(TITLES)
DAY = 86_400


def language_of(player_language: str, device_language: str) -> str:
    """The player's chosen language, else the one their device registered with, else English."""
    known = {code for code, _name in settings.LANGUAGES}
    for language in (player_language, device_language):
        if language in known:
            return language
    return "en"


def note(
    kind: str,
    *,
    table: int,
    language: str,
    message: str,
    phase: str = "",
    name: str = "",
    deadline: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> Note:
    """The notification of `kind` for table `table`: one per table on the device (its collapse id),
    kept by the provider until the deadline it announces (or a day)."""
    fields: dict[str, object] = {"table": table, "name": name}
    body_key = kind
    if kind == "turn":
        body_key = f"turn:{phase}"
    ttl = DAY
    if deadline is not None and now is not None:
        left = max(0, int((deadline - now).total_seconds()))
        ttl = max(60, min(ttl * 28, left))
        if kind == "reminder":
            hours = round(left / 3600)
            body_key = "reminder:hours" if hours >= 2 else "reminder:minutes"
            fields.update(hours=hours, minutes=max(1, round(left / 60)))
    with translation.override(language):
        title = gettext(TITLES[kind]) % fields
        body = gettext(BODIES[body_key]) % fields
    return Note(
        title=title,
        body=body,
        collapse=f"table-{table}",
        data={"kind": kind, "table": str(table), "message": message},
        ttl=ttl,
        language=language,
    )
