"""Erasing a player (GDPR article 17, the App Store's account deletion): every personal field goes,
the games they played stay, with their seats under a stable pseudonym (games.privacy).

What happens follows games.privacy's classification, field by field: the rows that are only theirs
(tokens, devices, invites they made, exports, their stored answers, ratings, a quick-play wait) are
deleted; the Player row stays, its name the pseudonym and its other personal fields blank; every
copy of their name in game data (a table's seating, the events of its log, sealed records and
archives through games.records, webhook bodies, stored answers, tournaments) becomes the pseudonym.
An open table's seat is left as `leave` leaves it; a started game's seat is marked away, so the
server plays it to the end exactly as a seat that timed out too often, and the other players'
game, ratings and exports hold. All of it, and the `player.erased` webhook, is one transaction.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.files.storage import storages
from django.db import connection, transaction
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from games import reads, records, webhooks
from games.engine import GAME_OVER, state_from_dict
from games.errors import ServiceError
from games.models import (
    ExportJob,
    FormerSeat,
    IdempotentRequest,
    Invite,
    Move,
    Player,
    PlayerToken,
    PushDevice,
    QuickPlay,
    Rating,
    Seat,
    Table,
    Tournament,
    WebhookDelivery,
)
from games.privacy import pseudonym
from games.services import lobby, matchmaking
from games.services.common import UNSCOPED, Outcome, locked, run
from games.services.record import log as log_move
from games.services.record import plays_itself, public, seated

log = logging.getLogger(__name__)
M = TypeVar("M", bound=Model)

_UNFINISHED = (Table.Status.OPEN, Table.Status.PASSING, Table.Status.PLAYING, Table.Status.MOON_CHOICE)


@dataclass(frozen=True)
class Erased:
    """What erasing a player answers, the first time and every time after."""

    id: int
    erased_at: dt.datetime

    def body(self) -> dict[str, Any]:
        return {"id": self.id, "erased": True, "erased_at": reads.iso(self.erased_at)}


def scrub_names(obj: Any, player_id: int, name: str) -> Any:
    """`obj` (parsed JSON) with every copy of this player's name replaced by `name`: in each dict
    that is this player's (`"player"` is their id, or, in a player's own shape with an
    `"external_id"`, `"id"` is), a `"name"` becomes `name` and an `"external_id"` becomes empty.
    The one walker for every field games.privacy classifies as NAMES; anything else (another
    player's dict, a tournament's or a table's own `name`) is left exactly as it was."""
    if isinstance(obj, list):
        return [scrub_names(item, player_id, name) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {key: scrub_names(value, player_id, name) for key, value in obj.items()}
    owner = out.get("player") if "player" in out else out.get("id") if "external_id" in out else None
    if type(owner) is int and owner == player_id:
        if "name" in out:
            out["name"] = name
        if "external_id" in out:
            out["external_id"] = ""
    return out


def erase_player(player_id: int, *, by: str) -> Erased:
    """Erase one player (see the module's docstring); `by` says who asked ('app:2', 'player:7'),
    for the log. Erasing an erased player changes nothing and answers the same."""
    with transaction.atomic():
        player = Player.objects.select_for_update().filter(pk=player_id).first()
        if player is None:
            raise ServiceError("not_found", "no such player", kind="not_found")
        if player.erased_at is not None:
            return Erased(player.pk, player.erased_at)
        _erase(player)
    log.info("player %s erased (asked by %s)", player.pk, by)
    assert player.erased_at is not None
    return Erased(player.pk, player.erased_at)


def _erase(player: Player) -> None:
    pid, name = player.pk, pseudonym(player.pk)
    PlayerToken.objects.filter(player=player).delete()  # no hash is left to match a token
    # Every table whose data may name them: where they sit, and where they sat and left (whose log,
    # sealed record or archive still names them: games.services.record.log keeps FormerSeat).
    tables = set(Seat.objects.filter(player=player).values_list("table_id", flat=True))
    tables |= set(FormerSeat.objects.filter(player=player).values_list("table_id", flat=True))
    player.name, player.external_id, player.language = name, "", ""
    player.erased_at = timezone.now()
    player.save(update_fields=["name", "external_id", "language", "erased_at"])
    if QuickPlay.objects.filter(player=player).exists():
        matchmaking.leave(player=player)
    unfinished = Seat.objects.filter(player=player, table__status__in=_UNFINISHED)
    for table_id, status in unfinished.values_list("table_id", "table__status"):
        if status == Table.Status.OPEN:
            lobby.seat_leave(table_id=table_id, player=player)
        else:
            _played_by_the_server(table_id, player)
    for table in Table.objects.filter(pk__in=tables).order_by("pk"):
        records.rename_player(table, pid, name)
    _withdraw(pid)
    Invite.objects.filter(created_by=f"player:{pid}").delete()
    PushDevice.objects.filter(player=player).delete()  # their messages go with them (CASCADE)
    _delete_exports(ExportJob.objects.filter(Q(player=player) | Q(requested_by=f"player:{pid}")))
    Rating.objects.filter(player=player).delete()  # off the leaderboards; the history stays
    IdempotentRequest.objects.filter(owner=f"player:{pid}").delete()
    _scrub_stored_answers(pid, name)
    _scrub_deliveries(tables, pid, name)
    _scrub_tournaments(player, name)
    webhooks.record_app_event(
        player.app_id, webhooks.ERASED_TYPE, {"player": pid, "erased_at": reads.iso(player.erased_at)}
    )


def _played_by_the_server(table_id: int, player: Player) -> Outcome:
    """A started game's seat passes to the server: marked away (`seat_away`, in a move of its own),
    as the clock marks a seat that timed out too often, so the bots play it to the end."""

    def act() -> Outcome:
        table, seats = locked(table_id, UNSCOPED)
        seat = next((s for s in seats if s.player_id == player.pk), None)
        if seat is None or table.state is None or table.status not in _UNFINISHED:
            return Outcome(None)
        events = []
        if not seat.away:
            seat.away = True
            seat.save(update_fields=["away"])
            events.append(public("seat_away", seat=seat.position))
        seated(table, seats)
        log_move(table, Move.Kind.LEAVE, seat.position, {"player": player.pk}, events)
        state = state_from_dict(table.state)
        to_act = state.to_act()
        table.bot_turn = state.phase != GAME_OVER and any(plays_itself(table, s) for s in to_act)
        if all(plays_itself(table, s) for s in to_act):  # no person's clock runs now
            table.deadline = table.reminder_at = None
        table.save()
        return Outcome(table)

    return run(act, None)


def _holding(rows: QuerySet[M], field: str, item: Any) -> list[M]:
    """The rows whose JSON list `field` holds `item`: one indexed query on PostgreSQL (its JSON
    `@>`); SQLite (the embedded run) has no JSON containment, so there the rows are filtered here."""
    if connection.vendor == "postgresql":
        return list(rows.filter(**{f"{field}__contains": [item]}))
    wanted = json.loads(json.dumps(item))
    return [
        row
        for row in rows.exclude(**{field: []})
        if any(_covers(element, wanted) for element in getattr(row, field) or [])
    ]


def _covers(element: Any, wanted: Any) -> bool:
    """JSON containment of one list element, as PostgreSQL's `@>` decides it."""
    if isinstance(wanted, dict):
        return isinstance(element, dict) and all(
            key in element and _covers(element[key], value) for key, value in wanted.items()
        )
    return bool(element == wanted)


def _withdraw(player_id: int) -> None:
    """Their id leaves every table's invited list and rematch votes (rows locked: a change saves
    the whole row)."""
    rows = Table.objects.select_for_update().order_by("pk")
    named = {
        t.pk: t for t in _holding(rows, "invited", player_id) + _holding(rows, "rematch_votes", player_id)
    }
    for table in named.values():
        table.invited = [p for p in table.invited if p != player_id]
        table.rematch_votes = [p for p in table.rematch_votes if p != player_id]
        table.save(update_fields=["invited", "rematch_votes"])


def _delete_exports(jobs: Iterable[ExportJob]) -> None:
    storage = storages["exports"]
    for job in jobs:
        if job.file and storage.exists(job.file):
            storage.delete(job.file)
        job.delete()


def _mentions(player_id: int) -> Q:
    """A JSON text that may hold this player's dict (a prefilter: the walker decides)."""
    return Q(body__contains=f'"player":{player_id}') | Q(body__contains=f'"id":{player_id}')


def _scrub_text(text: str, player_id: int, name: str, **dumps: Any) -> str | None:
    """The JSON text with the player's name scrubbed, or None when nothing changed."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    scrubbed = scrub_names(parsed, player_id, name)
    return None if scrubbed == parsed else json.dumps(scrubbed, separators=(",", ":"), **dumps)


def _scrub_stored_answers(player_id: int, name: str) -> None:
    """Stored answers of others' retried requests that show them (a table's seating, a player)."""
    for row in IdempotentRequest.objects.select_for_update().filter(_mentions(player_id)):
        body = _scrub_text(row.body, player_id, name, ensure_ascii=False)
        if body is not None:
            row.body = body
            row.save(update_fields=["body"])


def _scrub_deliveries(tables: set[int], player_id: int, name: str) -> None:
    """Webhook bodies of their tables' moves (seat_taken names them), sent or still to send."""
    rows = (
        WebhookDelivery.objects.select_for_update().filter(table_id__in=tables).filter(_mentions(player_id))
    )
    for row in rows:
        body = _scrub_text(row.body, player_id, name)
        if body is not None:
            row.body = body
            row.save(update_fields=["body"])


def _scrub_tournaments(player: Player, name: str) -> None:
    if player.app_id is None:  # a guest plays in no tournament
        return
    entered = _holding(
        Tournament.objects.select_for_update().filter(app_id=player.app_id), "entrants", {"player": player.pk}
    )
    for tournament in entered:
        tournament.entrants = scrub_names(tournament.entrants, player.pk, name)
        tournament.standings = scrub_names(tournament.standings, player.pk, name)
        tournament.save(update_fields=["entrants", "standings"])
