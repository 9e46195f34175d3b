"""The audit trail of configuration changes (docs/audit.md): appended rows chained by SHA-256.

Who changed an app's configuration, when, in which request, and what (the changed fields before and
after, never a secret). Two writers record here: the operations declared in games/operations (every
app-key call of a configuration operation, recorded by `Operation.__call__` in the operation's
own transaction, so a refused or rolled-back change leaves no row), and the Django admin's saves and
deletions (games/admin.py). Each row's `hash` is SHA-256 over the previous row's hash and the row's
canonical JSON (`canonical`), so changing or deleting a row breaks the chain at the next one, and
`verify` (`manage.py check_audit_chain`) names the first row that does not follow. Rows are appended
under a lock: PostgreSQL's transaction-level advisory lock (`pg_advisory_xact_lock`), held until
the commit, so two writers never chain to the same row; SQLite's transactions begin IMMEDIATE
(hearts_service/settings.py), which serialises writers already.

Why not django-pghistory: its triggers write in the database, where the calling key and the request
id are unknown unless every transaction sets them first, it needs PostgreSQL while SQLite is the
embedded default, and it keeps no hash chain. Recording in the operation layer knows the caller.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.db.models import QuerySet
from django.utils import timezone

from games import paging
from games.models import ApiKey, AuditEntry
from hearts_service import observability

if TYPE_CHECKING:
    from games.accounts import Principal

GENESIS = "0" * 64  # the previous hash of the first row
LOCK_KEY = 0x6175646974  # "audit": the advisory lock every appender takes (PostgreSQL)
PAGES = paging.Keyset("audit", ("-id",), (int,))  # newest first (games/paging.py)
HIDDEN = "(secret)"  # what a changed secret shows, before and after
# A field whose name says it holds a secret is never recorded, only that it changed.
SECRET_NAME = re.compile(r"secret|hash|salt|password|token|private|credential", re.IGNORECASE)
# The scopes whose operations change configuration: every app-key call of one is recorded.
CONFIG_SCOPES = frozenset(
    {"keys:write", "webhooks:write", "bots:write", "tournaments:write", "app:write", "erasure", "push:write"}
)


# -- the chain ----------------------------------------------------------------------------------


def canonical(row: AuditEntry) -> str:
    """A row's content as hashed: its fields (all but its id and own hash) as sorted, compact JSON."""
    at = row.at.astimezone(dt.UTC).isoformat(timespec="microseconds")
    body = {
        "app_id": row.app_id,
        "at": at,
        "actor_kind": row.actor_kind,
        "actor": row.actor,
        "request_id": row.request_id,
        "action": row.action,
        "target": row.target,
        "changes": row.changes,
        "prev_hash": row.prev_hash,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, cls=DjangoJSONEncoder)


def hash_of(prev_hash: str, row: AuditEntry) -> str:
    return hashlib.sha256((prev_hash + canonical(row)).encode()).hexdigest()


def _lock() -> None:
    """Hold the appenders' lock until this transaction ends (PostgreSQL; SQLite's IMMEDIATE
    transactions hold the database's write lock already)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])


def append(
    *,
    app_id: int | None,
    actor_kind: str,
    actor: str,
    action: str,
    target: str = "",
    changes: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one row to the chain (in the caller's transaction, if any): the request id is the
    current request's (hearts_service.observability)."""
    with transaction.atomic():
        _lock()
        last = AuditEntry.objects.order_by("-id").values_list("hash", flat=True).first()
        row = AuditEntry(
            app_id=app_id,
            at=timezone.now(),
            actor_kind=actor_kind,
            actor=actor[:150],
            request_id=str(observability.current().get("request_id") or "")[:64],
            action=action[:64],
            target=target[:64],
            changes=json.loads(json.dumps(changes or {}, cls=DjangoJSONEncoder)),
            prev_hash=last or GENESIS,
        )
        row.hash = hash_of(row.prev_hash, row)
        row.save()
    return row


@dataclass(frozen=True)
class Break:
    """The first row that does not follow the chain, and why."""

    row_id: int
    reason: str


def verify(rows: Iterator[AuditEntry] | None = None) -> tuple[int, Break | None]:
    """Walk the chain in order: the rows checked, and the first break (None: intact). A row edited
    breaks its own hash; a deleted row breaks the next row's link to its predecessor."""
    prev = GENESIS
    checked = 0
    source = rows if rows is not None else AuditEntry.objects.order_by("id").iterator(chunk_size=2000)
    for row in source:
        checked += 1
        if row.prev_hash != prev:
            return checked, Break(
                row.pk,
                "its prev_hash is not the previous row's hash (a row before it was deleted or changed)",
            )
        if hash_of(prev, row) != row.hash:
            return checked, Break(row.pk, "its hash does not match its content (the row was changed)")
        prev = row.hash
    return checked, None


# -- reading --------------------------------------------------------------------------------


def rows_of(app_id: int) -> QuerySet[AuditEntry]:
    """An app's rows (only its own), for paging newest first."""
    return AuditEntry.objects.filter(app_id=app_id)


def body(row: AuditEntry) -> dict[str, Any]:
    """A row as the API shows it (with its hash, so an app can keep its own copy of the chain)."""
    return {
        "id": row.pk,
        "at": row.at.isoformat().replace("+00:00", "Z"),
        "actor_kind": row.actor_kind,
        "actor": row.actor,
        "request_id": row.request_id,
        "action": row.action,
        "target": row.target,
        "changes": row.changes,
        "hash": row.hash,
        "prev_hash": row.prev_hash,
    }


# -- what changed -------------------------------------------------------------------------


def snapshot(obj: models.Model | None, fields: tuple[str, ...] | None = None) -> dict[str, Any] | None:
    """A row's recorded fields (all its concrete ones by default), secrets shown as HIDDEN."""
    if obj is None:
        return None
    names = fields if fields is not None else tuple(f.attname for f in obj._meta.concrete_fields)
    out: dict[str, Any] = {}
    for name in names:
        out[name] = HIDDEN if SECRET_NAME.search(name) else getattr(obj, name)
    plain: dict[str, Any] = json.loads(json.dumps(out, cls=DjangoJSONEncoder))  # as stored: JSON values
    return plain


def diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """{field: [before, after]} of the fields that changed (a creation: every field from null; a
    deletion: every field to null). A secret that changed shows HIDDEN on both sides."""
    names = list((before or {}).keys()) + [k for k in (after or {}) if k not in (before or {})]
    out: dict[str, Any] = {}
    for name in names:
        old = None if before is None else before.get(name)
        new = None if after is None else after.get(name)
        if before is not None and after is not None and old == new:
            continue
        out[name] = [old, new]
    return out


def key_actor(principal: Principal) -> str:
    """An app key as a row names it: `key <id> <label>` (never the key itself)."""
    key_id = getattr(principal, "credential_id", None)
    label = ApiKey.objects.filter(pk=key_id).values_list("name", flat=True).first() if key_id else None
    ident = f"key {key_id}" if key_id else f"key {principal.credential}"
    return f"{ident} {label}".strip() if label else ident


@dataclass(frozen=True)
class Audited:
    """How an operation's change is recorded: the kind of thing it changes (`kind`, a target's
    prefix), the model and fields recorded before and after (no model: only the target), and where
    the target's id comes from: `id_in`, an input (`webhook_id`); else the answer's `id` (a
    creation); `app=True`: the calling app itself."""

    kind: str
    model: type[models.Model] | None = None
    fields: tuple[str, ...] = ()
    id_in: str | None = None
    app: bool = False
    changed: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # extra changes from the input

    def target_id(self, app_id: int, data: dict[str, Any], answer: Any = None) -> Any:
        if self.app:
            return app_id
        if self.id_in is not None:
            return data.get(self.id_in)
        if isinstance(answer, dict):  # the answer's id, or its one object's ({"key": {...}, "secret"})
            inner = [v["id"] for v in answer.values() if isinstance(v, dict) and "id" in v]
            return answer.get("id", inner[0] if len(inner) == 1 else None)
        stored = getattr(answer, "response", None)  # a kept Idempotency-Key's answer: (status, body)
        return json.loads(stored[1]).get("id") if stored else None

    def state(self, target_id: Any) -> dict[str, Any] | None:
        if self.model is None or target_id is None:
            return None
        obj = self.model._default_manager.filter(pk=target_id).first()
        return snapshot(obj, self.fields)


def rotated(_: dict[str, Any]) -> dict[str, Any]:
    """The change of a secret's rotation: that it changed, never what to."""
    return {"secret": [HIDDEN, HIDDEN]}


# The rows an undeclared configuration operation changes, by its scope's area: what its target is
# called, the model and fields recorded before and after (the API keys' operations declare nothing).
GENERIC: dict[str, tuple[str, type[models.Model] | None, tuple[str, ...]]] = {
    "keys": ("key", ApiKey, ("name", "scopes", "expires_at", "revoked_at", "replaced_by_id")),
}


def generic(path: tuple[str, ...], scope: str | None) -> Audited:
    """The record of a configuration operation that declares none: its target named by its path's
    id (or, for a creation, by its answer's `id`; an `app:` operation without one: the app), with
    the fields GENERIC names for its area."""
    area = (scope or "").split(":")[0]
    name = next((p for p in path if p.endswith("_id")), None)
    kind, model, fields = GENERIC.get(area, (area, None, ()))
    if model is None and name is not None:
        kind = name.removesuffix("_id")
    return Audited(kind=kind, model=model, fields=fields, id_in=name, app=area == "app" and name is None)


def record_operation(
    spec: Audited,
    name: str,
    principal: Principal,
    data: dict[str, Any],
    before: dict[str, Any] | None,
    answer: Any,
) -> AuditEntry:
    """One app-key operation's row, after it ran (in its transaction)."""
    assert principal.app is not None
    target_id = spec.target_id(principal.app.pk, data, answer)
    changes = diff(before, spec.state(target_id)) if spec.model is not None else {}
    if spec.changed is not None:
        changes |= spec.changed(data)
    return append(
        app_id=principal.app.pk,
        actor_kind="app_key",
        actor=key_actor(principal),
        action=name,
        target=f"{spec.kind}:{target_id}" if target_id is not None else spec.kind,
        changes=changes,
    )
