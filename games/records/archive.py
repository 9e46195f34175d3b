"""Archives: a game past its app's retention leaves the database for one compressed file in the
archive storage, still answering every read from there, and comes back on restore (docs/data.md)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import lzma
import secrets
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from games import records
from games.engine import Options, action_from_dict, replay, state_to_dict
from games.models import App, GameRecord, Move, Table, Tournament
from games.records import codec

log = logging.getLogger(__name__)

# The file: MAGIC, the compression (one byte), the CRC-32 of the body, the compressed body. The body:
# the table id and the length of the extra data (varints), the extra data (JSON, usually empty: the
# Table row keeps the seed, options and seating, and the engine replays the state), the record.
MAGIC = b"HGA\x01"
_DEFLATE, _LZMA, _STORED = 0, 1, 2
_LZMA_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]
SUFFIX = ".hga"
GUESTS = "guests"  # the folder of the tables no app owns
ORPHAN_AGE = dt.timedelta(hours=1)  # a file no table names is deleted once this old
CACHE_SIZE = 64  # archives kept decoded per process
_CLOSED = (Table.Status.FINISHED, Table.Status.ABANDONED)
_ACTIONS = (Move.Kind.PASS, Move.Kind.PLAY, Move.Kind.MOON)


class ArchiveError(Exception):
    """An archive file is missing or damaged: the table cannot be read until it is restored from a backup."""


@dataclass(frozen=True)
class Archived:
    """What an archived table's file holds: its record (games.records.codec) and, only when the
    engine's replay of the record would not give it exactly, the table's last engine state."""

    table_id: int
    name: str
    data: bytes
    stored_state: dict[str, Any] | None = None
    _moves: list[list[Move]] = field(default_factory=list, repr=False, compare=False)

    def moves(self, table: Table) -> list[Move]:
        """The move log (unsaved Move objects), decoded once per cached archive."""
        if not self._moves:
            self._moves.append(codec.decode(table, self.data))
        return [_copy(m) for m in self._moves[0]]


def _copy(move: Move) -> Move:
    """A fresh Move: callers may change what they get (a rename) without touching the cache."""
    fields = {f.attname: getattr(move, f.attname) for f in Move._meta.concrete_fields}
    fields["payload"] = json.loads(json.dumps(move.payload))
    fields["events"] = json.loads(json.dumps(move.events))
    return Move(**fields)


def replayed_state(table: Table, moves: list[Move]) -> dict[str, Any] | None:
    """The engine state the move log rebuilds (None when the game never started)."""
    if not any(m.kind == Move.Kind.START for m in moves):
        return None
    actions = [(m.position, action_from_dict(m.payload)) for m in moves if m.kind in _ACTIONS]
    played = [(seat, action) for seat, action in actions if seat is not None]
    return state_to_dict(replay(Options.from_dict(table.options), table.seed, played, table=str(table.pk)))


# -- the file -----------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = data[at]
        at += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, at


def pack(table_id: int, data: bytes, state: dict[str, Any] | None = None) -> bytes:
    """The archive file of a record: the smallest of deflate, LZMA and no compression."""
    extra = b"" if state is None else json.dumps({"state": state}, separators=(",", ":")).encode()
    body = _varint(table_id) + _varint(len(extra)) + extra + data
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    candidates = {
        _DEFLATE: deflater.compress(body) + deflater.flush(),
        _LZMA: lzma.compress(body, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS),
        _STORED: body,
    }
    method = min(candidates, key=lambda k: (len(candidates[k]), k))
    crc = zlib.crc32(body).to_bytes(4, "big")
    return MAGIC + bytes([method]) + crc + candidates[method]


def unpack(blob: bytes, name: str = "") -> tuple[int, bytes, dict[str, Any] | None]:
    """The table id, the record and the stored state (if any) of an archive file."""
    if blob[:4] != MAGIC or len(blob) < 9 or blob[4] not in (_DEFLATE, _LZMA, _STORED):
        raise ArchiveError(f"archive {name!r} is not an archive file")
    method, crc, packed = blob[4], blob[5:9], blob[9:]
    try:
        if method == _DEFLATE:
            body = zlib.decompress(packed, -15)
        elif method == _LZMA:
            body = lzma.decompress(packed, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS)
        else:
            body = packed
    except (zlib.error, lzma.LZMAError) as exc:
        raise ArchiveError(f"archive {name!r} is damaged: {exc}") from exc
    if zlib.crc32(body).to_bytes(4, "big") != crc:
        raise ArchiveError(f"archive {name!r} is damaged: checksum mismatch")
    table_id, at = _read_varint(body, 0)
    size, at = _read_varint(body, at)
    extra = json.loads(body[at : at + size]) if size else {}
    return table_id, body[at + size :], extra.get("state")


def storage() -> Storage:
    """The archive storage (settings.STORAGES["archives"]): a directory, or an S3 bucket's prefix."""
    return storages["archives"]


def folder_of(app_id: int | None) -> str:
    return GUESTS if app_id is None else str(app_id)


def _new_name(table: Table) -> str:
    """A fresh name: a run that crashed before its commit left at most an orphan, never a file a
    later run would take for its own."""
    return f"{folder_of(table.app_id)}/{table.pk}-{secrets.token_hex(6)}{SUFFIX}"


def _write(name: str, blob: bytes) -> None:
    saved = storage().save(name, ContentFile(blob))
    if saved != name:  # the storage chose another name: a 48-bit collision, not worth a retry loop
        storage().delete(saved)
        raise ArchiveError(f"archive {name!r} exists already")


def _read(name: str) -> bytes:
    try:
        with storage().open(name, "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, OSError) as exc:
        raise ArchiveError(f"archive {name!r} cannot be read: {exc}") from exc
    return bytes(data)


def _delete_later(name: str) -> None:
    """Delete a file once the transaction that stopped naming it has committed."""

    def delete() -> None:
        try:
            storage().delete(name)
        except Exception:  # left behind: the orphan sweep deletes it later
            log.warning("archive %s could not be deleted; the orphan sweep will", name, exc_info=True)

    transaction.on_commit(delete)


# -- the cache ----------------------------------------------------------------------------------

_cache: OrderedDict[tuple[int, str], Archived] = OrderedDict()
_cache_lock = threading.Lock()


def load(table: Table) -> Archived:
    """An archived table's file, decoded (cached per process by table and file name: a file is never
    changed in place, a rewrite gives it a new name)."""
    if not table.archive:
        raise ArchiveError(f"table {table.pk} is not archived")
    key = (table.pk, table.archive)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    found = _open(table.pk, table.archive)
    with _cache_lock:
        _cache[key] = found
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return found


def _open(table_id: int, name: str) -> Archived:
    owner, data, state = unpack(_read(name), name)
    if owner != table_id:
        raise ArchiveError(f"archive {name!r} belongs to table {owner}, not {table_id}")
    return Archived(table_id=table_id, name=name, data=data, stored_state=state)


def _forget(table_id: int) -> None:
    with _cache_lock:
        for key in [k for k in _cache if k[0] == table_id]:
            del _cache[key]


# -- archiving ----------------------------------------------------------------------------------


def _waits_for_tournament(table: Table) -> bool:
    """A tournament's standings read its tables' scoresheets until it is finished."""
    if table.tournament_id is None:
        return False
    status = Tournament.objects.filter(pk=table.tournament_id).values_list("status", flat=True).first()
    return status != Tournament.Status.FINISHED


def archivable(table: Table) -> bool:
    """Whether a table may be archived now, whatever its age: its game is over, it is not archived
    yet, and no unfinished tournament reads it."""
    return (
        table.status in _CLOSED
        and table.finished_at is not None
        and table.archived_at is None
        and not _waits_for_tournament(table)
    )


def _sealed(table: Table) -> bytes | None:
    """The table's record with every move folded in: a hot table (or a sealed one with moves logged
    since, a rematch vote) is sealed here first, whatever SEAL_AFTER_SECONDS says. None when it
    stays hot (its log does not encode exactly: games.records.seal logs why)."""
    records.seal(table.pk, now=timezone.now() + dt.timedelta(seconds=settings.SEAL_AFTER_SECONDS))
    found = GameRecord.objects.filter(table=table).values_list("data", flat=True).first()
    if found is None or Move.objects.filter(table=table).exists():
        return None
    return bytes(found)


def archive(table_id: int) -> bool:
    """Move a finished (or abandoned) table to the archive, sealing it first if it is still hot:
    one file written, then its record (or rows) deleted, its state cleared and the file's name
    stored, in one transaction. False when it is not archivable (not over, archived already, in
    an unfinished tournament, not encodable). A run killed after the write leaves an orphan file
    that nothing names (deleted by `sweep_orphans`); the table is as it was."""
    with transaction.atomic():
        table = Table.objects.select_for_update(of=("self",)).filter(pk=table_id).first()
        if table is None or not archivable(table):
            return False
        data = _sealed(table)
        if data is None:
            return False
        table.refresh_from_db(fields=["state"])  # the seal clears it when the replay gives it back
        moves = codec.decode(table, data)
        kept = table.state
        state = None if kept is None or replayed_state(table, moves) == kept else kept
        name = _new_name(table)
        _write(name, pack(table.pk, data, state))
        GameRecord.objects.filter(table=table).delete()
        Table.objects.filter(pk=table.pk).update(state=None, archived_at=timezone.now(), archive=name)
    log.info("table %s archived to %s", table_id, name)
    return True


def restore(table_id: int) -> bool:
    """Bring an archived table back to the database, sealed (one GameRecord row; its state on its
    row only when the replay would not give it back), as it was before archiving; the file is
    deleted once that is committed. The table stays for a whole retention period again
    (archive_due counts from the record's creation). False when it is not archived."""
    with transaction.atomic():
        table = Table.objects.select_for_update(of=("self",)).filter(pk=table_id).first()
        if table is None or table.archived_at is None or not table.archive:
            return False
        found = _open(table.pk, table.archive)
        name = table.archive
        GameRecord.objects.update_or_create(table=table, defaults={"data": found.data})
        state = found.stored_state  # as sealed: None when the replay gives it back
        Table.objects.filter(pk=table.pk).update(state=state, archived_at=None, archive="")
        _delete_later(name)
        transaction.on_commit(lambda: _forget(table_id))
    log.info("table %s restored from %s", table_id, name)
    return True


def rewrite(table: Table, change: Callable[[list[Move]], list[Move]]) -> None:
    """Re-encode an archived table's record after `change` to its moves (erasure's rename): a new
    file with a new name, named by the table in the caller's transaction; the old file is deleted
    once that commits (so no copy of what changed is left)."""
    with transaction.atomic():
        locked = Table.objects.select_for_update(of=("self",)).get(pk=table.pk)
        if locked.archived_at is None or not locked.archive:
            raise ArchiveError(f"table {table.pk} is not archived")
        old = _open(locked.pk, locked.archive)
        moves = change(old.moves(locked))
        data = codec.encode(locked, moves)
        name = _new_name(locked)
        _write(name, pack(locked.pk, data, old.stored_state))
        Table.objects.filter(pk=locked.pk).update(archive=name)
        table.archive = name
        _delete_later(old.name)
        transaction.on_commit(lambda: _forget(table.pk))


# -- what is due, and the storage's upkeep -----------------------------------------------------


def _due_groups(now: dt.datetime) -> Iterator[tuple[Q, dt.datetime]]:
    """(which tables, their cutoff) for every retention period in use: the apps that set one,
    grouped by it, then the guests' tables and the apps that set none (ARCHIVE_AFTER_DAYS)."""
    periods = App.objects.filter(retention_days__isnull=False).values_list("retention_days", flat=True)
    for days in sorted({d for d in periods if d is not None}):
        yield Q(app__retention_days=days), now - dt.timedelta(days=days)
    default = now - dt.timedelta(days=settings.ARCHIVE_AFTER_DAYS)
    yield Q(app__isnull=True) | Q(app__retention_days__isnull=True), default


def due(now: dt.datetime | None = None, limit: int | None = None) -> list[int]:
    """The ids of the sealed tables past their retention period, oldest first within a period. A
    restored table counts its period again from its restoring (its record's creation)."""
    moment = timezone.now() if now is None else now
    size = settings.ARCHIVE_BATCH if limit is None else limit
    ids: list[int] = []
    for which, cutoff in _due_groups(moment):
        if len(ids) >= size:
            break
        rows = (
            Table.objects.filter(which, finished_at__isnull=False, archived_at__isnull=True)
            .filter(finished_at__lte=cutoff, record__created_at__lte=cutoff)
            .order_by("finished_at")
            .values_list("pk", flat=True)[: size - len(ids)]
        )
        ids.extend(rows)
    return ids


def archive_due(now: dt.datetime | None = None, limit: int | None = None) -> int:
    """Archive the sealed tables past their retention period (at most `limit`, default
    ARCHIVE_BATCH); how many were archived. Hot tables are sealed first by seal_due."""
    done = 0
    for table_id in due(now, limit):
        try:
            done += archive(table_id)
        except ArchiveError:  # the storage refused a write: the table stays sealed, tried again later
            log.exception("table %s could not be archived", table_id)
    if done:
        log.info("archived %d tables", done)
    return done


def delete_app_archives(app_id: int) -> int:
    """Delete every archive file of an app (its deletion): the files its tables name (their names
    cleared) and any orphan in its folder. The files go once the caller's transaction commits.
    Returns how many files are deleted."""
    names = set(Table.objects.filter(app_id=app_id).exclude(archive="").values_list("archive", flat=True))
    Table.objects.filter(app_id=app_id).exclude(archive="").update(archive="")
    with contextlib.suppress(FileNotFoundError):  # no folder: no orphan either
        names.update(f"{app_id}/{f}" for f in storage().listdir(str(app_id))[1])
    for name in names:
        _delete_later(name)
    transaction.on_commit(partial(_forget_all, app_id))
    return len(names)


def _forget_all(app_id: int) -> None:
    """Drop the app's archives from this process's cache (their files are gone)."""
    folder = f"{app_id}/"
    with _cache_lock:
        for key in [k for k in _cache if k[1].startswith(folder)]:
            del _cache[key]


def _files() -> Iterator[str]:
    """Every archive file's name, folder by folder."""
    try:
        folders = storage().listdir("")[0]
    except FileNotFoundError:
        return
    for folder in folders:
        for name in storage().listdir(folder)[1]:
            if name.endswith(SUFFIX):
                yield f"{folder}/{name}"


def sweep_orphans(older_than: dt.timedelta = ORPHAN_AGE, limit: int = 1000) -> int:
    """Delete archive files no table names and older than `older_than` (a run that crashed
    between its write and its commit, a rewrite rolled back, a delete that failed): a younger
    file may be one an archive in progress is about to name. How many were deleted."""
    cutoff = timezone.now() - older_than
    deleted = 0
    batch: list[str] = []
    for name in _files():
        batch.append(name)
        if len(batch) >= 500:
            deleted += _sweep(batch, cutoff)
            batch = []
        if deleted >= limit:
            break
    return deleted + (_sweep(batch, cutoff) if batch else 0)


def _table_of(name: str) -> int | None:
    stem = name.rsplit("/", 1)[-1].split("-", 1)[0]
    return int(stem) if stem.isdigit() else None


def _sweep(names: list[str], cutoff: dt.datetime) -> int:
    ids = {t for t in map(_table_of, names) if t is not None}
    named = set(Table.objects.filter(pk__in=ids).exclude(archive="").values_list("archive", flat=True))
    deleted = 0
    for name in names:
        if name in named:
            continue
        try:
            if storage().get_modified_time(name) > cutoff:
                continue
            storage().delete(name)
        except Exception:  # gone meanwhile (on S3 a 404 is botocore's ClientError, not an OSError)
            log.debug("archive %s skipped by the orphan sweep", name, exc_info=True)
            continue
        log.info("orphan archive %s deleted", name)
        deleted += 1
    return deleted
