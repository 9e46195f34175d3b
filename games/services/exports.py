"""A player's data export (GDPR article 20) as one JSON document, the jobs that make it, and an app's
whole data for its operator: exported as JSON Lines, or deleted with its archive and export files.

The player's document (`FORMAT`, its JSON Schema in docs/schemas/player-export.schema.json) holds
what games.privacy marks `exported`, and never anything the player may not see: a finished game is
whole (games.exports: every card is public once it is over), a table not finished only as that
player reads it now (games.reads), and their moves only their own seat's. Hashes of tokens and
invite codes, device keys and other players' cards are never in it.

A job (ExportJob) is done in the request when the player sat at few tables
(EXPORT_INLINE_MAX_TABLES); otherwise the task `games.run_export` makes it on the bulk lane. The
document is written as plain JSON (UTF-8) to the "exports" storage under `<uuid>.json`, so a rerun
of the task overwrites it and never leaves a second copy, and is deleted at `expires_at` (`expire`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.db import DatabaseError, transaction
from django.utils import timezone

from games import exports as game_exports
from games import reads, records
from games.accounts import Principal
from games.errors import ServiceError
from games.infra import jobs
from games.infra.ratelimit import Rate, RateLimited
from games.models import (
    App,
    BotEndpoint,
    ExportJob,
    IdempotentRequest,
    Invite,
    Move,
    Player,
    PlayerToken,
    PushCredential,
    PushDevice,
    Rating,
    RatingChange,
    Seat,
    Table,
    Tournament,
    WebhookEndpoint,
)

log = logging.getLogger(__name__)

FORMAT = "hearts-player-export/1"
SCHEMA_PATH = "/api/v1/exports/schema"  # the document's JSON Schema, served (docs/privacy.md)
APP_FORMAT = "hearts-app-export/1"  # the first line of an app's JSON Lines export
CREATE_RATE = Rate.parse("1/minute")  # export jobs one player may have made
STALE_AFTER = dt.timedelta(minutes=15)  # a pending job whose task was lost is queued again
DEVICE_TOKEN_SHOWN = 6  # the last characters of a device's token in the export
_ACTIONS = (Move.Kind.PASS, Move.Kind.PLAY, Move.Kind.MOON)


def _exports() -> Storage:
    return storages["exports"]


def document_name(job: ExportJob) -> str:
    """The document's name in the export storage: derived from the job, so a rerun overwrites it."""
    return f"{job.uuid}.json"


# -- the player's document ---------------------------------------------------------------------


def player_document(player: Player, now: dt.datetime | None = None) -> dict[str, Any]:
    """Everything the service keeps about `player` that is theirs to have (games.privacy's
    `exported` fields), as one JSON document of `FORMAT`."""
    viewer = Principal(app=player.app, player=player)
    seats = dict(Seat.objects.filter(player=player).values_list("table_id", "position"))
    tables, moves = [], []
    for table in Table.objects.filter(pk__in=list(seats)).order_by("pk"):
        seat = seats[table.pk]
        tables.append(_table_entry(table, seat, viewer))
        moves += [_move_entry(table.pk, m) for m in _moves_of(table) if m.position == seat]
    return {
        "format": FORMAT,
        "schema": SCHEMA_PATH,
        "generated_at": reads.iso(now or timezone.now()),
        "profile": {
            "id": player.pk,
            "app": player.app_id,
            "name": player.name,
            "external_id": player.external_id,
            "language": player.language,
            "created_at": reads.iso(player.created_at),
        },
        "tokens": [
            {
                "created_at": reads.iso(created),
                "revoked_at": reads.iso(revoked),
                "expires_at": reads.iso(expires),
            }
            for created, revoked, expires in PlayerToken.objects.filter(player=player)
            .order_by("pk")
            .values_list("created_at", "revoked_at", "expires_at")
        ],
        "tables": tables,
        "moves": moves,
        "ratings": [
            {
                "family": r.family,
                "mu": r.mu,
                "sigma": r.sigma,
                "score": r.score,
                "games": r.games,
                "updated_at": reads.iso(r.updated_at),
            }
            for r in Rating.objects.filter(player=player).order_by("family")
        ],
        "rating_history": [
            _rating_change(c) for c in RatingChange.objects.filter(player=player).order_by("pk")
        ],
        "invites": [
            {
                "table": i.table_id,
                "hint": i.hint,
                "created_at": reads.iso(i.created_at),
                "expires_at": reads.iso(i.expires_at),
                "uses_left": i.uses_left,
                "revoked_at": reads.iso(i.revoked_at),
            }
            for i in Invite.objects.filter(created_by=f"player:{player.pk}").order_by("pk")
        ],
        "devices": [
            {
                "id": d.pk,
                "kind": d.kind,
                "label": d.label,
                "topic": d.topic,
                "language": d.language,
                "token_end": d.token[-DEVICE_TOKEN_SHOWN:],
                "created_at": reads.iso(d.created_at),
                "expires_at": reads.iso(d.expires_at),
                "last_pushed_at": reads.iso(d.last_pushed_at),
            }
            for d in PushDevice.objects.filter(player=player).order_by("pk")
        ],
    }


def _rating_change(c: RatingChange) -> dict[str, Any]:
    """One rated game's effect on a player's rating, as both exports (a player's, an app's) write it."""
    return {
        "table": c.table_id,
        "family": c.family,
        "seat": c.position,
        "place": c.place,
        "mu_before": c.mu_before,
        "sigma_before": c.sigma_before,
        "mu_after": c.mu_after,
        "sigma_after": c.sigma_after,
        "at": reads.iso(c.created_at),
    }


def _table_entry(table: Table, seat: int, viewer: Principal) -> dict[str, Any]:
    """A table the player sat at: the whole game once it is finished, else the table as they see it."""
    finished = table.status == Table.Status.FINISHED
    return {
        "id": table.pk,
        "status": str(table.status),
        "seat": seat,
        "created_at": reads.iso(table.created_at),
        "finished_at": reads.iso(table.finished_at),
        "options": table.options,
        "game": game_exports.game_document(table) if finished else None,
        "view": None if finished else reads.table_body(table, viewer),
    }


def _moves_of(table: Table) -> list[Move]:
    """The table's move log, wherever it is kept (rows, sealed record or archive)."""
    return records.moves(table)


def _move_entry(table_id: int, move: Move) -> dict[str, Any]:
    return {
        "table": table_id,
        "seq": move.seq,
        "hand": move.hand,
        "kind": move.kind,
        "seat": move.position,
        "action": move.payload if move.kind in _ACTIONS else None,
        "at": reads.iso(move.created_at),
    }


# -- jobs --------------------------------------------------------------------------------------


def _player_for(principal: Principal, player_id: int) -> Player:
    """The player whose export this caller may ask for: themselves, or one of the app's own."""
    if principal.player is not None:
        if principal.player.pk != player_id:
            raise ServiceError("not_found", "no such player", kind="not_found")
        return principal.player
    player = Player.objects.filter(pk=player_id, app=principal.app, app__isnull=False).first()
    if player is None:
        raise ServiceError("not_found", "no such player", kind="not_found")
    return player


def request_export(principal: Principal, player_id: int) -> ExportJob:
    """A new export of `player_id`'s data, asked by the player or their app. Done before this
    returns when the player sat at no more than EXPORT_INLINE_MAX_TABLES tables; otherwise pending
    until the task `games.run_export` makes it. One job per player per CREATE_RATE window
    (RateLimited, answered 429): the player's row is locked while it is checked, so two requests
    at once cannot both pass."""
    player = _player_for(principal, player_id)
    now = timezone.now()
    with transaction.atomic():
        Player.objects.select_for_update().filter(pk=player.pk).first()
        since = now - dt.timedelta(seconds=CREATE_RATE.seconds)
        last = (
            ExportJob.objects.filter(player=player, created_at__gt=since)
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        if last is not None:
            wait = max(1, int((last - since).total_seconds() + 0.999))
            raise RateLimited("export", CREATE_RATE, wait)
        job = ExportJob.objects.create(
            uuid=uuid.uuid4(), app=player.app, player=player, requested_by=principal.owner
        )
        if Seat.objects.filter(player=player).count() <= settings.EXPORT_INLINE_MAX_TABLES:
            _complete(job)
        else:
            key = str(job.uuid)
            transaction.on_commit(lambda: jobs.run_export(key))
    job.refresh_from_db()  # eager mode (the embedded run): the task has made it on commit
    return job


def _complete(job: ExportJob) -> None:
    """Make the job's document, write it (over any earlier attempt's) and mark the job done."""
    assert job.player is not None
    data = json.dumps(player_document(job.player), separators=(",", ":")).encode()
    storage, name = _exports(), document_name(job)
    if storage.exists(name):
        storage.delete(name)  # a rerun after a worker died past the write: the same name again
    saved = storage.save(name, ContentFile(data))
    now = timezone.now()
    job.file, job.size, job.status = saved, len(data), ExportJob.Status.DONE
    job.finished_at, job.expires_at = now, now + dt.timedelta(hours=settings.EXPORT_TTL_HOURS)
    job.save(update_fields=["file", "size", "status", "finished_at", "expires_at"])


def run_export(job_uuid: str) -> str:
    """The task's work: make a pending job's document. Safe under duplicate delivery and a worker
    killed mid-run: the job's row is locked for the run (a second delivery meanwhile skips it;
    a killed worker's lock dies with its connection and the redelivered task runs again), a job
    no longer pending is left alone, and the document's name is the job's. Answers what it did."""
    try:
        with transaction.atomic():
            job = (
                ExportJob.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("player__app")
                .filter(uuid=job_uuid)
                .first()
            )
            if job is None:
                return "busy or gone"
            if job.status != ExportJob.Status.PENDING or job.player is None:
                return str(job.status)
            _complete(job)
            return "done"
    except DatabaseError:
        raise  # retried by the task
    except Exception as exc:
        log.exception("export %s failed", job_uuid)
        ExportJob.objects.filter(uuid=job_uuid, status=ExportJob.Status.PENDING).update(
            status=ExportJob.Status.FAILED,
            error=f"the export could not be made ({type(exc).__name__})",
            finished_at=timezone.now(),
            expires_at=timezone.now() + dt.timedelta(hours=settings.EXPORT_TTL_HOURS),
        )
        return "failed"


def job_of(principal: Principal, job_uuid: str) -> ExportJob:
    """A player's export job, for the player it is about or their app; any other caller (and an
    operator's app-level job) finds none (not_found)."""
    try:
        key = uuid.UUID(str(job_uuid))
    except ValueError:
        raise ServiceError("not_found", "no such export", kind="not_found") from None
    job = ExportJob.objects.filter(uuid=key, player__isnull=False).first()
    if job is None or not _may_read(principal, job):
        raise ServiceError("not_found", "no such export", kind="not_found")
    return job


def _may_read(principal: Principal, job: ExportJob) -> bool:
    if principal.player is not None:
        return job.player_id == principal.player.pk
    return principal.app is not None and job.app_id == principal.app.pk


def job_body(job: ExportJob) -> dict[str, Any]:
    """A job as both APIs answer it; `document` is the download's URL path once it is done."""
    done = job.status == ExportJob.Status.DONE
    return {
        "id": str(job.uuid),
        "player": job.player_id,
        "status": str(job.status),
        "size": job.size,
        "error": job.error or None,
        "created_at": reads.iso(job.created_at),
        "finished_at": reads.iso(job.finished_at),
        "expires_at": reads.iso(job.expires_at),
        "document": f"/api/v1/exports/{job.uuid}/document" if done else None,
    }


def document_bytes(principal: Principal, job_uuid: str) -> bytes:
    """The finished document (JSON, UTF-8) of a job this caller may read; not_found for anyone
    else, and not_finished while the job is pending (or failed, or its file expired)."""
    job = job_of(principal, job_uuid)
    storage = _exports()
    if job.status != ExportJob.Status.DONE or not job.file or not storage.exists(job.file):
        raise ServiceError("not_finished", "this export has no document (yet)", kind="rules")
    with storage.open(job.file, "rb") as stored:
        data: bytes = stored.read()
    return data


def expire(now: dt.datetime | None = None) -> int:
    """Housekeeping of exports (called by `games.housekeeping`): every job past `expires_at` is
    deleted with its document; a pending job whose task was lost (older than STALE_AFTER) is
    queued again. Answers how many jobs were deleted."""
    moment = now or timezone.now()
    storage, deleted = _exports(), 0
    for job in ExportJob.objects.filter(expires_at__lte=moment).order_by("pk")[:500]:
        if job.file and storage.exists(job.file):
            storage.delete(job.file)
        job.delete()
        deleted += 1
    stale = ExportJob.objects.filter(status=ExportJob.Status.PENDING, created_at__lte=moment - STALE_AFTER)
    for key in stale.values_list("uuid", flat=True)[:100]:
        jobs.run_export(str(key))
    return deleted


# -- an app's data, for its operator --------------------------------------------------------------


def app_lines(app: App) -> Iterator[dict[str, Any]]:
    """An app's whole data as JSON Lines records, each with its `type`: the app, its players
    (their exported fields), its tables (a finished one with its game document), ratings and
    rating changes, tournaments, webhooks and brought bots. No key hash, secret, salt, token or
    device address is in it."""
    yield {
        "type": "app",
        "format": APP_FORMAT,
        "id": app.pk,
        "name": app.name,
        "retention_days": app.retention_days,
        "created_at": reads.iso(app.created_at),
    }
    for p in Player.objects.filter(app=app).order_by("pk").iterator(chunk_size=500):
        yield {
            "type": "player",
            "id": p.pk,
            "name": p.name,
            "external_id": p.external_id,
            "language": p.language,
            "erased_at": reads.iso(p.erased_at),
            "created_at": reads.iso(p.created_at),
        }
    for t in Table.objects.filter(app=app).order_by("pk").iterator(chunk_size=100):
        finished = t.status == Table.Status.FINISHED
        yield {
            "type": "table",
            "id": t.pk,
            "status": str(t.status),
            "options": t.options,
            "seats": t.seating,
            "tournament": t.tournament_id,
            "rated": t.rated,
            "created_at": reads.iso(t.created_at),
            "finished_at": reads.iso(t.finished_at),
            "game": game_exports.game_document(t) if finished else None,
        }
    for r in Rating.objects.filter(app=app).order_by("pk").iterator(chunk_size=500):
        yield {
            "type": "rating",
            "player": r.player_id,
            "family": r.family,
            "mu": r.mu,
            "sigma": r.sigma,
            "score": r.score,
            "games": r.games,
            "updated_at": reads.iso(r.updated_at),
        }
    changes = RatingChange.objects.filter(table__app=app).order_by("pk")
    for c in changes.iterator(chunk_size=500):
        yield {
            "type": "rating_change",
            "player": c.player_id,
            **_rating_change(c),
        }
    for tour in Tournament.objects.filter(app=app).order_by("pk"):
        yield {
            "type": "tournament",
            "id": tour.pk,
            "name": tour.name,
            "status": str(tour.status),
            "entrants": tour.entrants,
            "options": tour.options,
            "clocks": tour.clocks,
            "deal_sets": tour.deal_sets,
            "seed": tour.seed if tour.status == Tournament.Status.FINISHED else None,
            "standings": tour.standings,
            "created_at": reads.iso(tour.created_at),
            "finished_at": reads.iso(tour.finished_at),
        }
    for w in WebhookEndpoint.objects.filter(app=app).order_by("pk"):
        yield {
            "type": "webhook",
            "id": w.pk,
            "url": w.url,
            "event_types": w.event_types,
            "description": w.description,
            "active": w.active,
            "created_at": reads.iso(w.created_at),
        }
    for b in BotEndpoint.objects.filter(app=app).order_by("pk"):
        yield {
            "type": "bot",
            "id": b.pk,
            "name": b.name,
            "url": b.url,
            "timeout_ms": b.timeout_ms,
            "enabled": b.enabled,
            "created_at": reads.iso(b.created_at),
        }


class Writer(Protocol):
    """Where an app's export is written: a text file, a command's output, an HTTP response."""

    def write(self, text: str, /) -> Any: ...


def write_app_export(app: App, out: Writer) -> int:
    """Write `app_lines(app)` to `out`, one JSON object a line; answers the number of lines."""
    count = 0
    for line in app_lines(app):
        out.write(json.dumps(line, separators=(",", ":"), sort_keys=True) + "\n")
        count += 1
    return count


def delete_app(app_id: int) -> dict[str, int]:
    """Delete an app and everything of it: its archive files (games.records), its export files and
    jobs, its players, tables, ratings, tournaments, webhooks, bots, push credentials and stored
    idempotent answers. The files go first, so a failure half-way leaves rows a rerun deletes,
    never rows pointing at nothing. not_found for an unknown app. Answers what was deleted."""
    app = App.objects.filter(pk=app_id).first()
    if app is None:
        raise ServiceError("not_found", "no such app", kind="not_found")
    archives = records.delete_app_archives(app_id)
    storage, files = _exports(), 0
    for name in ExportJob.objects.filter(app=app).exclude(file="").values_list("file", flat=True):
        if storage.exists(name):
            storage.delete(name)
            files += 1
    players = list(Player.objects.filter(app=app).values_list("pk", flat=True))
    owners = [f"app:{app_id}", *(f"player:{p}" for p in players)]
    with transaction.atomic():
        tables = Table.objects.filter(app=app).count()
        # Seats hold their players PROTECTed: the tables (and their seats) go before the players.
        while ids := list(Table.objects.filter(app=app).values_list("pk", flat=True)[:500]):
            Table.objects.filter(pk__in=ids).delete()
        IdempotentRequest.objects.filter(owner__in=owners).delete()
        PushCredential.objects.filter(scope=app_id).delete()
        app.delete()
    return {"archives": archives, "export_files": files, "players": len(players), "tables": tables}
