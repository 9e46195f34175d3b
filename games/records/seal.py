"""Sealing a game that is over: its move log becomes one GameRecord row, its Move, Hand and
ScoreRow rows go (the record and the engine rebuild them exactly), and its engine state goes too
when the replay gives it back exactly (docs/data.md#sealed-records)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from games.engine import state_to_dict
from games.models import GameRecord, Hand, Move, ScoreRow, Table, Tournament
from games.records import codec
from games.records.log import hands_of, replay, score_rows_of

log = logging.getLogger(__name__)

_OVER = (Table.Status.FINISHED, Table.Status.ABANDONED)
# Tables this process found it cannot seal, at the version it tried: not tried again until they
# change (the record would not give their log back exactly, so they stay hot; logged once).
_refused: set[tuple[int, int]] = set()


def _cutoff(now: dt.datetime | None) -> dt.datetime:
    return (now or timezone.now()) - dt.timedelta(seconds=settings.SEAL_AFTER_SECONDS)


def _due() -> Q:
    """A table whose game is over, not archived, and holding rows to fold into a record (or no
    record yet); a tournament's only once the tournament is finished (its standings are read from
    the scoresheet rows while it runs)."""
    rows = Move.objects.filter(table_id=OuterRef("pk"))
    record = GameRecord.objects.filter(table_id=OuterRef("pk"))
    return (
        Q(status__in=_OVER, archive="", finished_at__isnull=False)
        & (Q(tournament__isnull=True) | Q(tournament__status=Tournament.Status.FINISHED))
        & (Exists(rows) | ~Exists(record))
    )


def _hand_key(h: Hand) -> tuple[object, ...]:
    return (h.number, h.pass_direction, h.seed, h.deal_commitment, h.finished)


def _row_key(r: ScoreRow) -> tuple[int, ...]:
    return (r.hand_number, r.position, r.points, r.total)


def seal(table_id: int, now: dt.datetime | None = None) -> bool:
    """Seal this table if it is due (over for SEAL_AFTER_SECONDS, not archived; a tournament's
    table once the tournament is finished): its rows become its record, in one transaction under
    the table's row lock, so racing callers seal it once. A move logged after the seal (a rematch
    vote) is folded into the record by the next seal. False when there was nothing to do, or the
    record would not give the log back exactly (the table then stays as it is)."""
    with transaction.atomic():
        table = (
            Table.objects.select_for_update(of=("self",))
            .filter(Q(pk=table_id) & _due() & Q(finished_at__lte=_cutoff(now)))
            .first()
        )
        if table is None or (table.pk, table.version) in _refused:
            return False
        rows = list(Move.objects.filter(table=table).order_by("seq"))
        stored = GameRecord.objects.filter(table=table).values_list("data", flat=True).first()
        earlier = [] if stored is None else codec.decode(table, bytes(stored))
        sealed = {m.seq for m in earlier}
        moves = [*earlier, *(m for m in rows if m.seq not in sealed)]
        moves.sort(key=lambda m: m.seq)
        try:
            data = codec.encode(table, moves)
            game = replay(table, moves)
        except codec.NotEncodable as exc:
            _refused.add((table.pk, table.version))
            log.warning("table %s stays hot: %s", table.pk, exc)
            return False
        hand_rows = list(Hand.objects.filter(table=table).order_by("number"))
        score_rows = list(ScoreRow.objects.filter(table=table).order_by("hand_number", "position"))
        if stored is None and (
            [_hand_key(h) for h in hand_rows] != [_hand_key(h) for h in hands_of(table, game, moves)]
            or [_row_key(r) for r in score_rows] != [_row_key(r) for r in score_rows_of(table, game)]
        ):
            _refused.add((table.pk, table.version))
            log.warning("table %s stays hot: its hands or scoresheet do not follow from its moves", table.pk)
            return False
        GameRecord.objects.update_or_create(table=table, defaults={"data": data})
        Move.objects.filter(table=table).delete()
        Hand.objects.filter(table=table).delete()
        ScoreRow.objects.filter(table=table).delete()
        if table.state is not None and game is not None and state_to_dict(game) == table.state:
            table.state = None  # the replay gives it back: reads rebuild it (games.records.log.state)
            table.save(update_fields=["state", "updated_at"])
    return True


def seal_due(now: dt.datetime | None = None, limit: int = 200) -> int:
    """Seal up to `limit` of the tables that are due, longest over first; how many were sealed."""
    ids = (
        Table.objects.filter(_due() & Q(finished_at__lte=_cutoff(now)))
        .order_by("finished_at", "pk")
        .values_list("pk", flat=True)
    )
    candidates = [pk for pk in ids[: limit + len(_refused)] if not any(r[0] == pk for r in _refused)]
    return sum(seal(pk, now) for pk in candidates[:limit])


def rename_player(table: Table, player_id: int, name: str) -> None:
    """Every stored copy of this player's name at this table becomes `name` (erasure passes a
    pseudonym, games.privacy): the table's seating, the seat_taken events of its moves (rows, the
    sealed record, the archive). Events name a player only in seat_taken (with its "player")."""
    with transaction.atomic():
        locked = Table.objects.select_for_update(of=("self",)).get(pk=table.pk)
        seating = [dict(s, name=name) if s["player"] == player_id else s for s in locked.seating]
        change = _renamer(player_id, name)
        for row in Move.objects.filter(table=locked):
            if change(row):
                row.save(update_fields=["events"])
        if locked.archive:
            from games.records import archive  # archive.py imports this package

            def renamed(moves: list[Move]) -> list[Move]:
                for move in moves:
                    change(move)
                return moves

            archive.rewrite(locked, renamed)
        else:
            stored = GameRecord.objects.filter(table=locked).values_list("data", flat=True).first()
            if stored is not None:
                moves = codec.decode(locked, bytes(stored))
                if [m for m in moves if change(m)]:
                    GameRecord.objects.filter(table=locked).update(data=codec.encode(locked, moves))
        if seating != locked.seating:
            Table.objects.filter(pk=locked.pk).update(seating=seating, updated_at=timezone.now())
        table.seating = seating


def _renamer(player_id: int, name: str) -> Callable[[Move], bool]:
    """A function that renames the player in one move's events, answering whether it changed any."""

    def change(move: Move) -> bool:
        changed = False
        events = []
        for event in move.events:
            kind, data, *rest = event
            if isinstance(data, dict) and data.get("player") == player_id and data.get("name", name) != name:
                data, changed = {**data, "name": name}, True
            events.append([kind, data, *rest])
        if changed:
            move.events = events
        return changed

    return change
